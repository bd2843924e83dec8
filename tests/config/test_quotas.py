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
from hubspoke.config.quotas import (
    peer_path_rules_within_quota,
    peering_quota,
    routes_within_quota,
    vpc_cidr_blocks_within_quota,
)
from hubspoke.regions import REGIONS
from tests.config.test_loader import problems, valid
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


# Amazon VPC User Guide, "Amazon VPC quotas", VPC peering: "Active VPC peering connections per VPC", 50 by
# default, adjustable up to 125. The hub VPC holds one peering per spoke.
PEERINGS_DEFAULT = 50
PEERINGS_MAX = 125


def _spokes(count: int) -> dict[str, Any]:
    """A config with `count` spokes: the peering rule counts them, whatever else is wrong with them."""
    return {
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}] * count,
    }


@pytest.mark.parametrize("count", [0, 1, PEERINGS_DEFAULT])
def test_spokes_within_the_default_peering_quota_pass(count: int) -> None:
    assert list(peering_quota(valid(_spokes(count)))) == []


@pytest.mark.parametrize("count", [PEERINGS_DEFAULT + 1, PEERINGS_MAX])
def test_spokes_over_the_default_peering_quota_warn_with_the_increase(count: int) -> None:
    [problem] = peering_quota(valid(_spokes(count)))
    assert (problem.field, problem.severity) == ("spokes", "warning")
    assert (
        f"{count} spokes exceed the default quota of {PEERINGS_DEFAULT} active peerings per VPC"
        in problem.message
    )
    assert problem.message.endswith("; request an increase (Service Quotas, Amazon VPC) before deploying")


@pytest.mark.parametrize("count", [PEERINGS_MAX + 1, 200])
def test_spokes_over_the_peering_maximum_are_refused(count: int) -> None:
    [problem] = peering_quota(valid(_spokes(count)))
    assert (problem.field, problem.severity) == ("spokes", "error")
    assert f"{count} spokes need {count} peerings on the hub VPC" in problem.message
    assert f"AWS allows at most {PEERINGS_MAX}: split the environment" in problem.message


# Rules a hub CIDR adds to each spoke's cross-Region group: TCP 3713 (the hub's portal connections) and ICMP 3/4
# (PMTUD, RFC 1191); nothing on the hub calls a spoke's NFS or REST (docs/runbooks/mtu.md, ports table).
RULES_PER_HUB_CIDR = 2
# CNQ node interfaces carry two security groups; rules per group x groups per interface <= 1,000 (VPC quotas).
MAX_RULES_WITH_TWO_GROUPS = 1000 // 2


def _raw(hub_cidrs: int, spoke_cidrs: int, **hub: Any) -> dict[str, Any]:
    """Raw config: a hub with `hub_cidrs` CIDRs, one spoke per CIDR up to `spoke_cidrs` (only the counts matter)."""
    blocks = [f"10.{i // 16}.{(i % 16) * 16}.0/20" for i in range(hub_cidrs + spoke_cidrs)]
    return {
        "hub": {"region": "us-east-2", "cidr": blocks[0], "secondary_cidrs": blocks[1:hub_cidrs], **hub},
        "spokes": [{"region": "us-west-2", "cidr": c} for c in blocks[hub_cidrs:]],
    }


def test_a_spokes_group_counts_every_hub_cidr() -> None:
    """31 hub CIDRs need 62 rules in each spoke's group: over the default 60, at the spoke's own path."""
    problems_ = list(peer_path_rules_within_quota(valid(_raw(31, 1))))
    assert [p.field for p in problems_] == ["spokes[0].quotas.security_group_rules"]
    needed = 31 * RULES_PER_HUB_CIDR
    assert (
        f"the cross-Region security group in us-west-2 needs {needed} inbound rules "
        f"({RULES_PER_HUB_CIDR} per CIDR for every hub CIDR), over the AWS default of 60 rules per security group"
    ) in problems_[0].message
    assert problems_[0].message.endswith(
        f"then set spokes[0].quotas.security_group_rules: {needed}; or peer fewer CIDRs"
    )
    assert list(peer_path_rules_within_quota(valid(_raw(30, 1)))) == []


def test_the_hubs_group_counts_every_spoke_cidr_and_names_its_region() -> None:
    [problem] = peer_path_rules_within_quota(valid(_raw(1, 16)))
    assert problem.field == "hub.quotas.security_group_rules"
    assert (
        f"the cross-Region security group in us-east-2 needs {16 * RULES_PER_SPOKE_CIDR} inbound rules "
        f"({RULES_PER_SPOKE_CIDR} per CIDR for every spoke CIDR), over the AWS default of 60"
    ) in problem.message


def test_the_cap_is_reached_only_past_what_two_groups_allow() -> None:
    at_cap = MAX_RULES_WITH_TWO_GROUPS // RULES_PER_SPOKE_CIDR  # 125 spoke CIDRs: 500 rules, grantable
    [problem] = peer_path_rules_within_quota(valid(_raw(1, at_cap)))
    assert (
        "request 'Inbound or outbound rules per security group' (L-0EA8095F) of at least 500"
        in problem.message
    )
    [problem] = peer_path_rules_within_quota(valid(_raw(1, at_cap + 1)))
    assert problem.field == "hub.quotas.security_group_rules"
    assert problem.message == (
        f"the cross-Region security group in us-east-2 would need {(at_cap + 1) * RULES_PER_SPOKE_CIDR} inbound "
        f"rules ({RULES_PER_SPOKE_CIDR} per CIDR for every spoke CIDR); no account can hold more than 500 per "
        "group while CNQ nodes carry two groups (rules per group times groups per interface is capped at "
        "1,000): split the spokes over more environments or peer fewer CIDRs"
    )


def test_every_group_past_the_cap_is_reported() -> None:
    """Validation reports all errors at once (docs/design.md §3): two spokes whose groups would each need 502 rules
    are both named."""
    raw = _raw(251, 2)
    assert [p.field for p in peer_path_rules_within_quota(valid(raw))] == [
        "spokes[0].quotas.security_group_rules",
        "spokes[1].quotas.security_group_rules",
    ]


def test_more_cidr_blocks_than_the_vpc_quota_need_the_raised_quota_stated(tmp_path: Path) -> None:
    """Amazon VPC User Guide, "Amazon VPC quotas": 'IPv4 CIDR blocks per VPC' (L-83CA0A9D) is 5 by default,
    the primary block included. A sixth block fails at deploy unless the raised quota is stated."""
    from hubspoke.config import ConfigError, load
    from tests.conftest import minimal, write_config

    secondary = [f"100.{64 + n}.0.0/16" for n in range(5)]
    data = minimal()
    data["spokes"][0]["secondary_cidrs"] = secondary
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    (line,) = [x for x in str(caught.value).splitlines() if "L-83CA0A9D" in x]
    assert line.startswith(f"{path}: spokes[0].secondary_cidrs: 6 CIDR blocks")
    assert "--quota-code L-83CA0A9D --desired-value 6 --region us-west-2" in line
    assert "spokes[0].quotas.vpc_cidr_blocks: 6" in line
    data["spokes"][0]["quotas"] = {"vpc_cidr_blocks": 6}
    load(write_config(tmp_path, data, "raised.yaml"))
    data["spokes"][0]["secondary_cidrs"] = secondary[:4]
    del data["spokes"][0]["quotas"]
    load(write_config(tmp_path, data, "five.yaml"))


def test_the_hub_is_reported_before_the_spokes_in_config_order() -> None:
    """Findings name Regions in the order the whole tool lists them: the hub first, then every spoke in config
    order (HubSpokeConfig.regions; docs/operations.md, the dashboard's columns). 31 hub CIDRs and 16 spokes put
    every group over the default 60: the hub's (16 x 4 = 64 rules) and each spoke's (31 x 2 = 62)."""
    fields = [p.field for p in peer_path_rules_within_quota(valid(_raw(31, 16)))]
    assert fields == [
        "hub.quotas.security_group_rules",
        *(f"spokes[{i}].quotas.security_group_rules" for i in range(16)),
    ]


# Amazon VPC User Guide, "Amazon VPC quotas", Route tables: 'Routes per route table' (L-93826ACB), 50 by default,
# adjustable up to 1,000.
DEFAULT_ROUTES_PER_TABLE = 50
MAX_ROUTES_PER_TABLE = 1000


def _spokes_with_blocks(count: int, blocks: int) -> list[dict[str, Any]]:
    """`count` network-only spokes of `blocks` CIDR blocks each (the primary and blocks - 1 secondary)."""
    spokes = _network_only_spokes(count)
    for i, spoke in enumerate(spokes):
        spoke["secondary_cidrs"] = [f"10.{100 + i * 8 + n}.0.0/16" for n in range(blocks - 1)]
    return spokes


def test_more_peer_routes_than_the_route_table_quota_need_the_raised_quota_stated(tmp_path: Path) -> None:
    """13 spokes of 4 blocks put 52 routes over the peerings into each of the hub's private route tables: over the
    default 50 by the peer routes alone. Refused until the raised quota is stated (the security-group rules the
    same topology needs are stated so only the route finding is left)."""
    from hubspoke.config import ConfigError

    data = minimal(spokes=_spokes_with_blocks(13, 4))
    data["hub"]["quotas"] = {"security_group_rules": 13 * 4 * RULES_PER_SPOKE_CIDR}
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    (line,) = [x for x in str(caught.value).splitlines() if "L-93826ACB" in x]
    assert line.startswith(
        f"{path}: hub.quotas.routes_per_route_table: each private route table in us-east-2"
    )
    assert "52 over the peering" in line
    assert "--quota-code L-93826ACB --desired-value" in line and "--region us-east-2" in line
    data["hub"]["quotas"]["routes_per_route_table"] = MAX_ROUTES_PER_TABLE
    load(write_config(tmp_path, data, "raised.yaml"))


def test_a_spokes_route_tables_count_every_hub_block() -> None:
    """A hub of 50 blocks puts 50 routes over the peering into a spoke's private route tables, plus its own."""
    [problem] = [p for p in routes_within_quota(valid(_raw(50, 1))) if p.field.startswith("spokes[0].")]
    assert problem.field == "spokes[0].quotas.routes_per_route_table"
    assert "50 over the peering" in problem.message
    assert list(routes_within_quota(valid(_raw(1, 1)))) == []


@pytest.mark.parametrize("value", [DEFAULT_ROUTES_PER_TABLE - 1, MAX_ROUTES_PER_TABLE + 1])
def test_a_stated_routes_quota_outside_what_aws_allows_is_refused(tmp_path: Path, value: int) -> None:
    data = minimal()
    data["hub"]["quotas"] = {"routes_per_route_table": value}
    lines = problems(tmp_path, data)
    assert any(line.startswith("hub.quotas.routes_per_route_table: ") for line in lines), lines


def _routes_refusal(
    path: str, code: str, peers: int, whose: str, other: int, origin: str, allowed: int
) -> str:
    """The refusal as the route rule words it: the routes counted (the peer routes, then the VPC's own local
    routes, the S3 endpoint's and the NAT default route), the quota and the increase to request."""
    needed = peers + other
    return (
        f"each private route table in {code} needs {needed} routes ({peers} over the peering, one for {whose}, "
        f"and {other} local, S3 endpoint and NAT routes), over {origin} of {allowed} 'Routes per route table' "
        "(L-93826ACB, default 50, at most 1,000): peer fewer CIDRs, or request an increase (`aws service-quotas "
        "request-service-quota-increase --service-code vpc --quota-code L-93826ACB --desired-value "
        f"{needed} --region {code}`) and state it as {path}.quotas.routes_per_route_table: {needed}"
    )


def test_each_route_table_counts_its_local_s3_and_nat_routes() -> None:
    """A hub of 50 blocks and one single-block spoke: the spoke's tables hold 50 peer routes, its 1 local route,
    the S3 gateway endpoint's and the NAT default route (53); the hub's hold 1 peer route, 50 local ones and the
    same two (53). Both are over the default 50 (Amazon VPC quotas, L-93826ACB), each named with its own count."""
    found = list(routes_within_quota(valid(_raw(50, 1))))
    assert [(p.field, p.message) for p in found] == [
        (
            "hub.quotas.routes_per_route_table",
            _routes_refusal("hub", "us-east-2", 1, "every spoke CIDR", 50 + 2, "the AWS default", 50),
        ),
        (
            "spokes[0].quotas.routes_per_route_table",
            _routes_refusal("spokes[0]", "us-west-2", 50, "every hub CIDR", 1 + 2, "the AWS default", 50),
        ),
    ]


def test_without_nat_a_route_table_has_no_default_route_to_count() -> None:
    """`nat: none` leaves the NAT default route out: a spoke of 1 block peering 48 hub blocks needs 48 + 1 + 1
    = 50 routes, within the default, and 51 with a NAT route, over it (the hub's 1 + 48 + 1 without NAT fit)."""
    raw = _raw(48, 1, nat="none")
    assert [p.field for p in routes_within_quota(valid(raw))] == ["spokes[0].quotas.routes_per_route_table"]
    raw["spokes"][0]["nat"] = "none"
    assert list(routes_within_quota(valid(raw))) == []


def test_a_stated_routes_quota_is_named_as_the_files() -> None:
    raw = _raw(50, 1)
    raw["spokes"][0]["quotas"] = {"routes_per_route_table": 52}
    [problem] = [p for p in routes_within_quota(valid(raw)) if p.field.startswith("spokes[0].")]
    assert problem.message == _routes_refusal(
        "spokes[0]", "us-west-2", 50, "every hub CIDR", 3, "the quota this file states", 52
    )
    raw["spokes"][0]["quotas"] = {"routes_per_route_table": 53}
    assert [p.field for p in routes_within_quota(valid(raw))] == ["hub.quotas.routes_per_route_table"]


def test_the_cidr_block_refusal_in_full() -> None:
    """IPv4 CIDR blocks per VPC (L-83CA0A9D), 5 by default, the primary included (Amazon VPC quotas): a spoke of
    6 blocks is refused with the increase to request; the hub before it, with 5, is not; a stated 6 is relied on."""
    raw = _raw(5, 1)
    raw["spokes"][0]["secondary_cidrs"] = [f"10.{200 + n}.0.0/16" for n in range(5)]
    [problem] = vpc_cidr_blocks_within_quota(valid(raw))
    assert (problem.field, problem.message) == (
        "spokes[0].secondary_cidrs",
        "6 CIDR blocks on this VPC (the primary and 5 secondary) exceed the quota of 5 'IPv4 CIDR blocks per VPC' "
        "(L-83CA0A9D, default 5): list fewer, or request an increase (`aws service-quotas "
        "request-service-quota-increase --service-code vpc --quota-code L-83CA0A9D --desired-value 6 --region "
        "us-west-2`) and state it as spokes[0].quotas.vpc_cidr_blocks: 6",
    )
    raw["spokes"][0]["quotas"] = {"vpc_cidr_blocks": 6}
    assert list(vpc_cidr_blocks_within_quota(valid(raw))) == []
