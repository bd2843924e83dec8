"""Compute's config rules: each refusal names the field and the fix in full, the README's bar for bad input.

Sources: SageMaker HyperPod's Regions (hubspoke/regions.py, dated, sourced there; af-south-1 is not one);
SageMaker HyperPod developer guide, "Setting up SageMaker HyperPod clusters with a custom Amazon VPC" (a VPC
without internet access needs an interface endpoint per service); docs/design.md §4 (compute mounts the dataset from
its own Region's CNQ).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.config.test_loader import problems
from tests.conftest import minimal


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
