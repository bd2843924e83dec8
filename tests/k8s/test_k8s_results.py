"""The results pod: schema-valid, CPU only, unprivileged, the checkpoint claim read-only and nothing else,
gone by its deadline.

Sources: Kubernetes API (v1.35 schema descriptions): PodSpec.activeDeadlineSeconds is the "duration in seconds
the pod may be active on the node ... before the system will actively try to mark it failed and kill associated
containers"; restartPolicy Never keeps a container that exits from being started again.
"""

from __future__ import annotations

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.results import results_pod
from tests.k8s.crd_schemas import k8s_validate


@pytest.mark.parametrize("code", ["us-east-2", "us-west-2"])
def test_the_pod_is_valid_kubernetes(dev_config: HubSpokeConfig, code: str) -> None:
    region = dev_config.region_config(code)
    k8s_validate(results_pod(dev_config, region), region.compute.kubernetes_version)


def test_the_pod_reads_only_the_checkpoint_claim_and_holds_no_privilege(dev_config: HubSpokeConfig) -> None:
    pod = results_pod(dev_config, dev_config.region_config("us-west-2"))
    spec = pod["spec"]
    assert pod["metadata"]["namespace"] == "hyperpod-training"
    # The claim the bench and prewarm Jobs write results to (hubspoke/k8s/names.py names it; docs/cli.md too).
    assert spec["volumes"] == [
        {
            "name": "checkpoints",
            "persistentVolumeClaim": {"claimName": "hubspoke-checkpoints", "readOnly": True},
        }
    ]
    (container,) = spec["containers"]
    assert [(m["name"], m.get("readOnly")) for m in container["volumeMounts"]] == [("checkpoints", True)]
    assert container["volumeMounts"][0]["mountPath"] == "/mnt/checkpoints"
    assert not any("gpu" in k or "efa" in k for s in container["resources"].values() for k in s)
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False and security["capabilities"]["drop"] == ["ALL"]
    assert security["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize("hours", [1, 5])
def test_the_pod_ends_itself_at_its_deadline_and_never_restarts(
    dev_config: HubSpokeConfig, hours: int
) -> None:
    spec = results_pod(dev_config, dev_config.region_config("us-west-2"), hours=hours)["spec"]
    assert spec["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == hours * 3600
    # It idles as long as the deadline allows, no longer.
    (container,) = spec["containers"]
    assert container["command"][:2] == ["python", "-c"]
    assert f"time.sleep({hours * 3600})" in container["command"][2]
