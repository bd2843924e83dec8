"""The model export Job: schema-valid, CPU only, unprivileged, the checkpoint claim read-only, run as the service
account the Compute stack's Pod Identity association names.

Sources: EKS User Guide, "Assign an IAM role to a Kubernetes service account" (the association names a namespace
and a service account; a pod gets the role by running as it, PodSpec.serviceAccountName); Kubernetes API,
PersistentVolumeClaimVolumeSource.readOnly and VolumeMount.readOnly.
"""

from __future__ import annotations

from typing import Any

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.export import export_job
from tests.k8s.crd_schemas import k8s_validate

BUCKET = "compute-us-west-2-modelexportbucket-abc123"


def _job(config: HubSpokeConfig, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    account, job = export_job(config, config.region_config("us-west-2"), bucket=BUCKET, **kwargs)
    return account, job


@pytest.mark.parametrize("code", ["us-east-2", "us-west-2"])
def test_the_manifests_are_valid_kubernetes(dev_config: HubSpokeConfig, code: str) -> None:
    region = dev_config.region_config(code)
    for manifest in export_job(dev_config, region, bucket=BUCKET, step=500):
        k8s_validate(manifest, region.compute.kubernetes_version)


def test_the_job_runs_as_the_associated_service_account(dev_config: HubSpokeConfig) -> None:
    account, job = _job(dev_config)
    assert (account["kind"], account["metadata"]["namespace"]) == ("ServiceAccount", "hyperpod-training")
    assert job["metadata"]["namespace"] == "hyperpod-training"
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]


def test_the_job_reads_only_the_checkpoint_claim_read_only(dev_config: HubSpokeConfig) -> None:
    _, job = _job(dev_config)
    spec = job["spec"]["template"]["spec"]
    assert spec["volumes"] == [
        {
            "name": "checkpoints",
            "persistentVolumeClaim": {"claimName": "hubspoke-checkpoints", "readOnly": True},
        }
    ]
    (container,) = spec["containers"]
    assert container["volumeMounts"] == [
        {"name": "checkpoints", "mountPath": "/mnt/checkpoints", "readOnly": True}
    ]
    assert not any("gpu" in k or "efa" in k for s in container["resources"].values() for k in s)
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False and security["readOnlyRootFilesystem"] is True


def test_the_job_exports_the_run_to_environment_region_run(dev_config: HubSpokeConfig) -> None:
    _, job = _job(dev_config, run="hubspoke-run-2", step=500)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[:2] == ["python", "/opt/hubspoke/export_model.py"]
    assert "--run=hubspoke-run-2" in command and "--step=500" in command
    assert f"--bucket={BUCKET}" in command
    assert f"--prefix={dev_config.environment}/us-west-2/hubspoke-run-2" in command
    # The bench Jobs' results directory (docs/runbooks/cache-warm-up.md).
    assert "--results-dir=/mnt/checkpoints/.hubspoke/bench" in command
    assert {"name": "AWS_REGION", "value": "us-west-2"} in container["env"]
    assert job["metadata"]["name"] == "hubspoke-export-hubspoke-run-2"
    # Exit 2 is bad input (workload/export_model.py): retrying cannot help.
    [rule] = job["spec"]["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [2]
    _, latest = _job(dev_config)
    assert not any(
        a.startswith("--step") for a in latest["spec"]["template"]["spec"]["containers"][0]["command"]
    )
