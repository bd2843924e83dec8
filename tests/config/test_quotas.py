"""Validation refuses a topology the account's quotas cannot hold, and accepts what SageMaker itself accepts.

Sources: Amazon VPC User Guide, "Amazon VPC quotas" (Security groups: "Inbound or outbound rules per security
group", 60 by default, adjustable, L-0EA8095F; the quota times security groups per interface may not exceed
1,000); botocore's sagemaker service model (ClusterInstanceType: every HyperPod instance type).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import botocore
import pytest

from hubspoke.config import load
from hubspoke.regions import REGIONS
from tests.config.test_loader import problems
from tests.conftest import minimal, write_config

DEFAULT_RULES_PER_GROUP = 60
# Rules a spoke CIDR adds to the hub's cross-Region group: TCP 2049 (canary), 3713 (portal), 8000 (REST), ICMP 3/4.
RULES_PER_SPOKE_CIDR = 4


def _network_only_spokes(count: int) -> list[dict[str, Any]]:
    """`count` spokes with one CIDR each, in distinct Regions, peering only (no CNQ, no HyperPod needed)."""
    codes = [c for c in sorted(REGIONS) if c != "us-east-2"][:count]
    assert len(codes) == count
    return [
        {
            "region": c,
            "cidr": f"10.{20 + i}.0.0/16",
            "storage": {"enabled": False},
            "compute": {"enabled": False},
        }
        for i, c in enumerate(codes)
    ]


def test_default_quota_holds_fifteen_single_cidr_spokes(tmp_path: Path) -> None:
    spokes = DEFAULT_RULES_PER_GROUP // RULES_PER_SPOKE_CIDR
    load(write_config(tmp_path, minimal(spokes=_network_only_spokes(spokes))))


def test_one_spoke_more_than_the_default_quota_holds_is_refused_with_the_increase(tmp_path: Path) -> None:
    count = DEFAULT_RULES_PER_GROUP // RULES_PER_SPOKE_CIDR + 1
    [line] = problems(tmp_path, minimal(spokes=_network_only_spokes(count)))
    needed = count * RULES_PER_SPOKE_CIDR
    assert line.startswith("hub.quotas.security_group_rules: ")
    assert f"needs {needed} inbound rules" in line and "L-0EA8095F" in line
    assert f"set hub.quotas.security_group_rules: {needed}" in line


def test_secondary_cidrs_count(tmp_path: Path) -> None:
    spokes = _network_only_spokes(13)
    spokes[0]["secondary_cidrs"] = ["10.100.0.0/16", "10.101.0.0/16", "10.102.0.0/16"]  # 16 spoke CIDRs
    [line] = problems(tmp_path, minimal(spokes=spokes))
    assert f"needs {16 * RULES_PER_SPOKE_CIDR} inbound rules" in line


def test_a_stated_raised_quota_is_relied_on(tmp_path: Path) -> None:
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "quotas": {"security_group_rules": 80}}
    load(write_config(tmp_path, minimal(hub=hub, spokes=_network_only_spokes(20))))
    [line] = problems(tmp_path, minimal(hub=hub, spokes=_network_only_spokes(21)))
    assert "over the quota this file states of 80" in line


@pytest.mark.parametrize("value", [59, 501])
def test_stated_quota_is_one_aws_can_grant(tmp_path: Path, value: int) -> None:
    """At least the default 60; at most 500, since CNQ node interfaces carry two groups (1,000 / 2)."""
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "quotas": {"security_group_rules": value}}
    [line] = problems(tmp_path, minimal(hub=hub))
    assert line.startswith("hub.quotas.security_group_rules: ")


def _hyperpod_instance_types() -> list[str]:
    model = Path(botocore.__file__).parent / "data" / "sagemaker" / "2017-07-24" / "service-2.json.gz"
    shapes = json.loads(gzip.decompress(model.read_bytes()))["shapes"]
    return list(shapes["ClusterInstanceType"]["enum"])


def test_every_hyperpod_instance_type_is_accepted(tmp_path: Path) -> None:
    types = _hyperpod_instance_types()
    assert "ml.p6-b200.48xlarge" in types  # the hyphenated family the old pattern refused
    for n, itype in enumerate(types):
        data = minimal()
        data["spokes"][0]["compute"] = {"instance_groups": [{"instance_type": itype}]}
        load(write_config(tmp_path, data, name=f"t{n}.yaml"))
