"""Network rules at the cases no other test reached: duplicate AZ IDs, the accelerator AZ's Region, CNQ's admin
CIDR open to the world, and a file with one field the schema refuses next to a finding.

Sources: Amazon EC2 User Guide, "Availability Zone IDs" (an AZ ID names its Region: usw2-az1 is us-west-2's);
docs/configuration.md (`storage.admin_cidr` opens SSH and the Qumulo REST API; `compute.public_access_cidrs`
opens the EKS API); 0.0.0.0/0 is every IPv4 address (RFC 4632, section 3.1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hubspoke.config import load
from tests.config.test_loader import problems
from tests.conftest import minimal, write_config


def _spoke(**spoke: Any) -> dict[str, Any]:
    return minimal(spokes=[{"region": "us-west-2", "cidr": "10.20.0.0/16", **spoke}])


def test_an_az_listed_twice_is_refused(tmp_path: Path) -> None:
    assert problems(tmp_path, _spoke(az_ids=["usw2-az1", "usw2-az1"])) == [
        "spokes[0].az_ids: lists an AZ ID twice; list each AZ once"
    ]


def test_the_accelerator_az_must_be_in_its_region(tmp_path: Path) -> None:
    assert problems(tmp_path, _spoke(accelerator_az_id="use2-az1")) == [
        "spokes[0].accelerator_az_id: AZ ID 'use2-az1' is not in us-west-2; its AZ IDs look like usw2-az1"
    ]


def test_cnq_admin_access_open_to_the_world_is_refused(tmp_path: Path) -> None:
    assert problems(tmp_path, _spoke(storage={"admin_cidr": "0.0.0.0/0"})) == [
        "spokes[0].storage.admin_cidr: 0.0.0.0/0 opens this endpoint to the whole internet; list your admin "
        "network's CIDR instead"
    ]


def test_the_eks_api_open_to_the_world_is_refused(tmp_path: Path) -> None:
    assert problems(tmp_path, _spoke(compute={"public_access_cidrs": ["198.51.100.0/24", "0.0.0.0/0"]})) == [
        "spokes[0].compute.public_access_cidrs[1]: 0.0.0.0/0 opens this endpoint to the whole internet; list your "
        "admin network's CIDR instead"
    ]


def test_only_regions_with_compute_have_a_service_cidr_to_check(tmp_path: Path) -> None:
    """The hub runs no Kubernetes (compute off), so its unused default service CIDR overlapping its own VPC is
    no problem; the spoke's, used by its EKS cluster, is, and is reported after the hub is passed over."""
    data = minimal(hub={"region": "us-east-2", "cidr": "172.20.0.0/16", "compute": {"enabled": False}})
    assert problems(tmp_path, data) == [
        "hub.cidr: 172.20.0.0/16 overlaps the default Kubernetes service CIDR 172.20.0.0/16 "
        "(spokes[0].compute.service_cidr); pods could not reach those addresses: pick a block outside it, "
        # The first /16 of 10.0.0.0/8 that no other VPC (10.20.0.0/16) and no service CIDR overlaps.
        "e.g. 10.0.0.0/16; or set spokes[0].compute.service_cidr, but changing a deployed cluster's service_cidr "
        "replaces that EKS cluster (it is set only at creation)"
    ]


def test_a_new_spoke_clashing_with_the_default_service_cidr_is_told_to_move_its_own_block(
    tmp_path: Path,
) -> None:
    """Three clusters on EKS's default service CIDR (172.20.0.0/16 here, the schema's default) and a new spoke
    whose VPC takes that block: one problem, on the new block, with a free block first. The service CIDR of a
    deployed cluster cannot change ("You can only specify a custom CIDR block when you create a cluster",
    botocore eks 2017-11-01, KubernetesNetworkConfigRequest.serviceIpv4Cidr), so it is offered only with that
    consequence said."""
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
        {"region": "ap-northeast-1", "cidr": "172.20.0.0/16", "compute": {"enabled": False}},
    ]
    data = minimal(hub={"region": "us-east-2", "cidr": "10.10.0.0/16"}, spokes=spokes)
    found = problems(tmp_path, data)
    assert len(found) == 1, found
    (only,) = found
    assert only.startswith("spokes[2].cidr: 172.20.0.0/16 overlaps the default Kubernetes service CIDR")
    assert "e.g. 10.0.0.0/16" in only and "replaces that EKS cluster" in only


def test_a_service_cidr_the_config_sets_is_blamed_with_its_consequence(tmp_path: Path) -> None:
    data = minimal()
    data["spokes"][0]["compute"] = {"service_cidr": "10.10.0.0/16"}
    (only,) = problems(tmp_path, data)
    assert only.startswith(
        "spokes[0].compute.service_cidr: Kubernetes service CIDR 10.10.0.0/16 overlaps hub.cidr"
    )
    assert "replaces that EKS cluster" in only


def test_regions_aws_added_are_known_from_botocores_endpoint_data(tmp_path: Path) -> None:
    """botocore's endpoints.json (partitions[aws].regions) lists ap-east-2 (Asia Pacific (Taipei)) and ap-southeast-6
    (Asia Pacific (New Zealand)); hubspoke's own table does not have their AZ IDs, so the config must list them,
    and whether HyperPod runs there is a warning for preflight to settle, not a refusal."""
    spoke = {"region": "ap-southeast-6", "cidr": "10.30.0.0/16", "compute": {"enabled": False}}
    data = minimal(spokes=[minimal()["spokes"][0], spoke])
    (only,) = problems(tmp_path, data)
    assert only.startswith("spokes[1].az_ids: hubspoke has no default AZ IDs for ap-southeast-6")
    assert "aws ec2 describe-availability-zones --region ap-southeast-6" in only
    spoke = {"region": "ap-east-2", "cidr": "10.30.0.0/16", "az_ids": ["ape2-az1", "ape2-az2"]}
    loaded = load(write_config(tmp_path, minimal(spokes=[minimal()["spokes"][0], spoke])))
    assert loaded.config.spokes[1].resolved_az_ids == ("ape2-az1", "ape2-az2")
    assert any("HyperPod" in w.message and "ap-east-2" in w.message for w in loaded.warnings)
    typo = minimal(spokes=[{"region": "ap-southeast-66", "cidr": "10.30.0.0/16"}])
    assert any("did you mean ap-southeast-6" in p for p in problems(tmp_path, typo))
