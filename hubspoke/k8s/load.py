"""The dataset load Job for the hub Region: workload/load.py driving Shift-From, hashing through the dataset claim.

Its AWS rights come from the service account SERVICE_ACCOUNT (EKS Pod Identity, created with the hub's Compute
stack by hubspoke/constructs/dataset_loader.py), and the hub's REST address, Shift user and login secret from the
ConfigMap SETTINGS, which the same construct fills from the hub Storage stack's outputs at deploy: rendering
needs no AWS call.
"""

from __future__ import annotations

import hashlib
import re

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.cpu_job import cpu_job, image_for
from hubspoke.k8s.names import DATASET_CLAIM, DATASET_MOUNT_PATH
from hubspoke.k8s.storage import Manifest

SERVICE_ACCOUNT = "hubspoke-dataset-loader"
SETTINGS = "hubspoke-dataset-loader"
# The ConfigMap's keys -> the container's environment variables they fill.
SETTING_KEYS = {
    "rest-address": "HUB_REST_ADDRESS",
    "shift-user": "SHIFT_USER",
    "secret-arn": "QUMULO_SECRET_ARN",
}
# A Job's name becomes its pods' `job-name` label value, at most 63 characters (Kubernetes API, "Labels and
# Selectors": label values); a hash of name/version keeps two versions whose slugs collide apart.
_NAME_ROOM = 63


def job_name(name: str, version: str) -> str:
    """One Job per version: a rerun finds the Job of the run it resumes by this name."""
    slug = re.sub(r"[^a-z0-9-]+", "-", f"{name}-{version}".lower()).strip("-")
    digest = hashlib.sha256(f"{name}/{version}".encode()).hexdigest()[:8]
    prefix = "hubspoke-load-"
    return f"{prefix}{slug[: _NAME_ROOM - len(prefix) - 9].rstrip('-')}-{digest}"


def load_job(
    config: HubSpokeConfig,
    *,
    name: str,
    version: str,
    source: str,
    bucket_region: str,
    token_bytes: int,
    vocab_size: int,
    image: str | None = None,
    poll_seconds: float = 30.0,
    hash_workers: int = 4,
) -> Manifest:
    """The Job loading `source` into `<hub dataset_path>/<name>/<version>` on the hub's cluster."""
    hub = config.hub
    job = cpu_job(
        config=config,
        region=hub,
        name=job_name(name, version),
        tool="load",
        image=image_for(config, hub, image),
        args=[
            # $(VAR) is expanded from the container's env (Kubernetes docs, "Define a Command and Arguments for a
            # Container": "Use environment variables to define arguments").
            "--rest-address=$(HUB_REST_ADDRESS)",
            "--shift-user=$(SHIFT_USER)",
            "--secret-arn=$(QUMULO_SECRET_ARN)",
            f"--dataset-path={hub.storage.dataset_path}",
            f"--mount={DATASET_MOUNT_PATH}",
            f"--name={name}",
            f"--version={version}",
            f"--source={source}",
            f"--bucket-region={bucket_region}",
            f"--token-bytes={token_bytes}",
            f"--vocab-size={vocab_size}",
            f"--poll-seconds={poll_seconds:g}",
            f"--hash-workers={hash_workers}",
        ],
        env=[
            *(
                {"name": var, "valueFrom": {"configMapKeyRef": {"name": SETTINGS, "key": key}}}
                for key, var in SETTING_KEYS.items()
            ),
            # boto3 takes its Region from here (botocore/configprovider.py: 'region' <- AWS_DEFAULT_REGION); Pod
            # Identity sets the credentials only.
            {"name": "AWS_DEFAULT_REGION", "value": hub.region},
        ],
        # Read-only, volume and mount: the load only reads what Shift-From wrote; it seals through REST.
        volume_mounts=[{"name": "dataset", "mountPath": DATASET_MOUNT_PATH, "readOnly": True}],
        volumes=[
            {"name": "dataset", "persistentVolumeClaim": {"claimName": DATASET_CLAIM, "readOnly": True}}
        ],
        # The copy is the cluster's; the pod polls, then hashes a few files at once (16 MiB reads each).
        cpu="1",
        memory="1Gi",
        # A rerun resumes, so a lost node costs little; a Shift-From job that fails fails again on a retry (exit 1
        # needs a fix first), so few retries.
        backoff_limit=2,
    )
    job["spec"]["template"]["spec"]["serviceAccountName"] = SERVICE_ACCOUNT
    return job
