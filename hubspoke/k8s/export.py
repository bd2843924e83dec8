"""The model export Job: workload/export_model.py copies a run's final checkpoint and results to the Region's bucket.

It mounts the checkpoint claim read-only and gets its S3 rights through the service account below, which the
Compute stack's EKS Pod Identity association maps to a role on that bucket only (constructs/model_export.py);
the association lives in EKS, not in any Kubernetes object (EKS User Guide, "Assign an IAM role to a
Kubernetes service account"; EKS API Reference, CreatePodIdentityAssociation), so a plain service account is
all it needs.
"""

from __future__ import annotations

from typing import Any

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.bench import RESULTS_DIR
from hubspoke.k8s.cpu_job import cpu_job, image_for
from hubspoke.k8s.names import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH, NAMESPACE
from hubspoke.k8s.storage import PART_OF, Manifest

# The service account the Pod Identity association names; the Compute stack and the Job both read it here.
SERVICE_ACCOUNT = "hubspoke-model-export"
JOB_PREFIX = "hubspoke-export-"
DEFAULT_RUN = "hubspoke-reference"


def export_prefix(config: HubSpokeConfig, region: RegionConfig, run: str) -> str:
    """Where a run's export lands in the bucket: <environment>/<region>/<run>."""
    return f"{config.environment}/{region.region}/{run}"


def service_account() -> Manifest:
    """The service account the export Job runs as (its rights come from the Pod Identity association)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE, "labels": dict(PART_OF)},
    }


def export_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    bucket: str,
    run: str = DEFAULT_RUN,
    step: int | None = None,
    image: str | None = None,
) -> list[Manifest]:
    """The service account and the Job exporting `run` (its newest complete checkpoint, or `step`)."""
    args = [
        f"--checkpoints={CHECKPOINT_MOUNT_PATH}",
        f"--run={run}",
        f"--bucket={bucket}",
        f"--prefix={export_prefix(config, region, run)}",
        f"--results-dir={RESULTS_DIR}",
    ]
    if step is not None:
        args.append(f"--step={step}")
    job = cpu_job(
        config=config,
        region=region,
        name=f"{JOB_PREFIX}{run}",
        tool="export_model",
        image=image_for(config, region, image),
        args=args,
        # boto3 finds the Pod Identity credentials itself (container credential provider; EKS User Guide, "Use
        # pod identity with the AWS SDK"), but not the Region: the bucket is in this one.
        env=[{"name": "AWS_REGION", "value": region.region}],
        volume_mounts=[{"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH, "readOnly": True}],
        volumes=[
            {
                "name": "checkpoints",
                "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM, "readOnly": True},
            }
        ],
        cpu="2",
        # boto3's transfer holds up to 10 parts of 64 MiB in memory (TransferConfig max_concurrency default 10,
        # export_model.py DEFAULT_PART), plus the interpreter.
        memory="2Gi",
        # A killed pod's successor skips what is already uploaded (export_model.py), so retrying is cheap.
        backoff_limit=3,
    )
    pod: dict[str, Any] = job["spec"]["template"]["spec"]
    pod["serviceAccountName"] = SERVICE_ACCOUNT
    return [service_account(), job]
