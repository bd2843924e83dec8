"""Kubernetes manifests as plain dicts, rendered from config: one renderer for the Compute stack and the CLI.

Imports no CDK. Other manifests (prewarm, benchmark) take their namespace, claim names and mount paths
from `hubspoke.k8s.names`.
"""

from hubspoke.k8s.names import (
    CHECKPOINT_CLAIM,
    CHECKPOINT_MOUNT_PATH,
    DATASET_CLAIM,
    DATASET_MOUNT_PATH,
    NAMESPACE,
    ClaimNames,
    claim_names,
)

__all__ = [
    "CHECKPOINT_CLAIM",
    "CHECKPOINT_MOUNT_PATH",
    "DATASET_CLAIM",
    "DATASET_MOUNT_PATH",
    "NAMESPACE",
    "ClaimNames",
    "claim_names",
]
