"""Well-known Kubernetes names and mount paths: every manifest (jobs, prewarm, bench) imports them from here.

Claim names are the same in every Region because each Region has its own cluster; the PersistentVolume
names carry the Region so that `kubectl get pv` output pasted into a ticket says where it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

from hubspoke.config.schema import RegionConfig

# HyperPod resumes a PyTorchJob after a node fault only in the kubeflow namespace or one prefixed with hyperpod
# (SageMaker developer guide, "Running jobs using the SageMaker HyperPod CLI", Enabling job auto-resume).
NAMESPACE = "hyperpod-training"
# "-ro": new names, since a PV's source and a bound claim's spec are immutable (kubernetes
# pkg/apis/core/validation, ValidatePersistentVolumeUpdate, ValidatePersistentVolumeClaimUpdate); the old pair
# is pruned, its data retained.
DATASET_CLAIM = "hubspoke-dataset-ro"
CHECKPOINT_CLAIM = "hubspoke-checkpoints"
# Where containers see the volumes; the training script's defaults point here too.
DATASET_MOUNT_PATH = "/mnt/dataset"
CHECKPOINT_MOUNT_PATH = "/mnt/checkpoints"


@dataclass(frozen=True)
class ClaimNames:
    """What a pod in a Region's cluster uses to mount the shared volumes."""

    namespace: str
    dataset: str
    checkpoints: str
    dataset_mount_path: str
    checkpoint_mount_path: str


def claim_names(region: RegionConfig | None = None) -> ClaimNames:
    """The namespace, claim names and mount paths for a Region's cluster (the same in every Region today)."""
    del region  # accepted so callers need not change if claims ever become per-Region
    return ClaimNames(NAMESPACE, DATASET_CLAIM, CHECKPOINT_CLAIM, DATASET_MOUNT_PATH, CHECKPOINT_MOUNT_PATH)


# A volume's name carries its claim's namespace, so moving the namespace makes new volumes: the old claim's delete
# leaves a Retain volume Released, "not yet available for another claim" (Kubernetes docs, "Persistent Volumes",
# Retain), and the new claim would stay Pending. The old volumes are pruned; the data is in CNQ.
def dataset_volume_name(region: RegionConfig) -> str:
    return f"{NAMESPACE}-{DATASET_CLAIM}-{region.region}"


def checkpoint_volume_name(region: RegionConfig) -> str:
    return f"{NAMESPACE}-{CHECKPOINT_CLAIM}-{region.region}"
