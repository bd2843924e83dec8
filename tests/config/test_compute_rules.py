"""Compute's config rules: each refusal names the field and the fix in full, the README's bar for bad input.

Sources: SageMaker HyperPod's Regions (hubspoke/regions.py, dated, sourced there; af-south-1 is not one);
SageMaker HyperPod developer guide, "Setting up SageMaker HyperPod clusters with a custom Amazon VPC" (a VPC
without internet access needs an interface endpoint per service); docs/design.md §4 (compute mounts the dataset from
its own Region's CNQ).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import load
from tests.config.test_loader import problems
from tests.conftest import ROOT, minimal, write_config


def _spoke(**spoke: Any) -> dict[str, Any]:
    return minimal(spokes=[{"region": "us-west-2", "cidr": "10.20.0.0/16", **spoke}])


def test_compute_without_its_regions_storage_is_refused_with_both_fixes(tmp_path: Path) -> None:
    assert problems(tmp_path, _spoke(storage={"enabled": False})) == [
        "spokes[0].compute: compute mounts the dataset from this Region's own CNQ, but storage.enabled is false: "
        "enable storage here or set compute.enabled: false"
    ]


def test_compute_where_hyperpod_is_not_offered_names_both_ways_out(tmp_path: Path) -> None:
    lines = problems(tmp_path, _spoke(region="af-south-1"))
    assert [line for line in lines if line.startswith("spokes[0].compute: ")] == [
        "spokes[0].compute: SageMaker HyperPod is not offered in af-south-1 (hubspoke/regions.py, 2026-11-30); "
        "set compute.enabled: false for this Region or train in another one"
    ]


def test_compute_without_nat_names_the_services_and_both_ways_out(tmp_path: Path) -> None:
    lines = [line for line in problems(tmp_path, _spoke(nat="none")) if "HyperPod" in line]
    assert lines == [
        "spokes[0].nat: none leaves the HyperPod nodes and the compute stack's functions without a route to ECR, "
        "EKS, SageMaker and CloudWatch (hubspoke adds no interface endpoints): set nat: single (or per_az), or "
        "compute.enabled: false for this Region"
    ]


@pytest.mark.parametrize("version", ["1.32", "1.36"])
def test_a_kubernetes_version_outside_the_kubectl_layers_skew_is_refused_before_synth(
    tmp_path: Path, version: str
) -> None:
    """The layer pyproject.toml pins is kubectl 1.34 (aws-cdk.lambda-layer-kubectl-v34 2.2.2's description: kubectl
    1.34.5); a client works with the control plane's minor and one either side (EKS User Guide, "Update existing
    cluster to new Kubernetes version": "a 1.29 kubectl client works with Kubernetes 1.28, 1.29, and 1.30
    clusters"). So 1.32 and 1.36 are refused at validation, not by a synth traceback, and 1.33 to 1.35 load."""
    lines = problems(tmp_path, _spoke(compute={"kubernetes_version": version}))
    assert [line for line in lines if "kubernetes_version" in line] == [
        f"spokes[0].compute.kubernetes_version: {version}: hubspoke's kubectl 1.34 Lambda layer works with "
        "Kubernetes 1.33, 1.34, 1.35 only (one minor either side); set one of those (a deployed cluster moves one "
        "minor per deploy: docs/runbooks/compute.md, 'Upgrading Kubernetes')"
    ]
    for accepted in ("1.33", "1.34", "1.35"):
        load(
            write_config(tmp_path, _spoke(compute={"kubernetes_version": accepted}), name=f"{accepted}.yaml")
        )


def test_connectivity_check_on_one_node_is_refused_naming_the_field_and_both_fixes(tmp_path: Path) -> None:
    """InstanceConnectivity "requires at least 2 nodes" (SageMaker developer guide, "Deep health checks",
    docs.aws.eu/sagemaker/latest/dg/sagemaker-hyperpod-resiliency-slurm-deep-health-checks.html; the EKS page
    is silent: ASSUMED the same). The default checks are both, so a group of 1 that keeps the default is refused
    too; InstanceStress alone, no checks, or 2 nodes pass."""
    field = "spokes[0].compute.instance_groups[0].on_start_deep_health_checks"
    refusal = (
        f"{field}: InstanceConnectivity runs NCCL tests across a group's nodes and requires at least 2 nodes "
        "(SageMaker developer guide, 'Deep health checks'), but this group has count: 1: remove "
        "InstanceConnectivity from the list (keep InstanceStress, or [] for no checks), or set count: 2 or more"
    )
    for group in ({"count": 1, "on_start_deep_health_checks": ["InstanceConnectivity"]}, {"count": 1}):
        lines = problems(tmp_path, _spoke(compute={"instance_groups": [group]}))
        assert [line for line in lines if line.startswith(field)] == [refusal], group
    for group in (
        {"count": 1, "on_start_deep_health_checks": ["InstanceStress"]},
        {"count": 1, "on_start_deep_health_checks": []},
        {"count": 2},
    ):
        load(write_config(tmp_path, _spoke(compute={"instance_groups": [group]})))


def test_a_region_without_compute_does_not_stop_the_checks_of_the_next(tmp_path: Path) -> None:
    """The hub runs no HyperPod (compute off); the spoke after it is still checked, for its Region and its groups."""
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"enabled": False}}
    lines = problems(tmp_path, minimal(hub=hub, spokes=[{"region": "af-south-1", "cidr": "10.20.0.0/16"}]))
    assert any(
        line.startswith("spokes[0].compute: SageMaker HyperPod is not offered in af-south-1")
        for line in lines
    )
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "compute": {"instance_groups": [{"count": 1}]}}
    lines = problems(tmp_path, minimal(hub=hub, spokes=[spoke]))
    assert [line.split(": ", 1)[0] for line in lines] == [
        "spokes[0].compute.instance_groups[0].on_start_deep_health_checks"
    ]


def test_a_region_hubspoke_does_not_know_is_a_warning_naming_preflight(tmp_path: Path) -> None:
    """ap-east-2 is in botocore's endpoint data but not in hubspoke/regions.py: whether HyperPod runs there is
    for `hubspoke preflight` to settle, so a warning on the Region's compute, not a refusal."""
    spoke = {"region": "ap-east-2", "cidr": "10.30.0.0/16", "az_ids": ["ape2-az1", "ape2-az2"]}
    loaded = load(write_config(tmp_path, minimal(spokes=[minimal()["spokes"][0], spoke])))
    assert [(w.field, w.severity, w.message) for w in loaded.warnings] == [
        (
            "spokes[1].compute",
            "warning",
            "hubspoke does not know whether SageMaker HyperPod is offered in ap-east-2 (a Region newer than "
            "hubspoke/regions.py): `hubspoke preflight` checks the account's HyperPod quotas there before you "
            "deploy; set compute.enabled: false if it is not offered",
        )
    ]


@pytest.mark.thorough
def test_a_refused_config_exits_2_without_a_traceback(tmp_path: Path) -> None:
    """The CLI's answer to bad input: the message on stderr, exit code 2, no traceback."""
    import subprocess
    import sys

    path = write_config(tmp_path, _spoke(compute={"instance_groups": [{"count": 1}]}))
    run = subprocess.run(
        [sys.executable, "-c", "import sys; from hubspoke.cli.main import main; sys.exit(main())", "plan",
         "--config", str(path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "on_start_deep_health_checks: InstanceConnectivity" in run.stderr
    assert "Traceback" not in run.stderr
