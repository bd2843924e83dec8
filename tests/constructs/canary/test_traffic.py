"""The Ops stack's flow-log metric filters, as synthesized, count the bytes they are named for and no others.

Each pattern is run by tests/fakes/cloudwatch_filter.py (CloudWatch's documented space-delimited matching,
itself checked on the documentation's examples) over records in the default flow-log format (VPC User
Guide, "Flow log records"; the field order and the '-' of NODATA/SKIPDATA records are from its examples).
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig, load
from tests.conftest import Templates, options, properties, synth, write_config
from tests.fakes.cloudwatch_filter import match

IN, OUT, NFS = "InterRegionBytesIn", "InterRegionBytesOut", "NfsReadBytesLogged"


def record(src: str, dst: str, srcport: int, dstport: int, nbytes: int, action: str = "ACCEPT") -> str:
    """One default-format record: version account-id interface-id srcaddr dstaddr srcport dstport protocol
    packets bytes start end action log-status."""
    return f"2 123456789012 eni-0a1b2c3d4e5f60718 {src} {dst} {srcport} {dstport} 6 10 {nbytes} 1700000000 1700000060 {action} OK"


def counted(template: dict[str, Any], records: list[str]) -> dict[str, int]:
    """What CloudWatch would add to each metric: the `$bytes` of every record each filter matches."""
    totals: dict[str, int] = defaultdict(int)
    for _, filt in properties(template, "AWS::Logs::MetricFilter"):
        [transform] = filt["MetricTransformations"]
        assert transform["MetricValue"] == "$bytes" and transform["DefaultValue"] == 0
        for line in records:
            found = match(filt["FilterPattern"], line)
            if found is not None:
                totals[transform["MetricName"]] += int(found["$bytes"])
    return dict(totals)


def test_dev_spoke_counts_each_kind_of_flow_once(dev_templates: Templates) -> None:
    ops = dev_templates["ops-us-west-2"]  # spoke 10.20.0.0/16, hub 10.10.0.0/16 (config/dev.yaml)
    cases = {
        # hub CNQ -> spoke CNQ over the peering (a cache miss being filled): bytes in from the hub
        "miss fill": (record("10.10.1.10", "10.20.1.5", 3713, 41000, 1_000_000), {IN: 1_000_000}),
        # spoke -> hub (portal requests, canary probes): bytes out
        "to hub": (record("10.20.1.5", "10.10.1.10", 41000, 3713, 5_000), {OUT: 5_000}),
        # spoke CNQ replies to an NFS read, logged at the server's and at the client's interface
        "nfs reply": (record("10.20.1.5", "10.20.64.7", 2049, 800, 70_000), {NFS: 70_000}),
        # the hub answering the canary's NFS-port probe: from the hub, but not the spoke serving reads
        "hub reply to canary": (record("10.10.1.10", "10.20.3.9", 2049, 51000, 60), {IN: 60}),
        # the canary's probe towards the hub's NFS port
        "canary probe": (record("10.20.3.9", "10.10.1.10", 51000, 2049, 60), {OUT: 60}),
        # rejected traffic moved no data
        "rejected": (record("10.10.1.10", "10.20.1.5", 2049, 800, 9_999, "REJECT"), {}),
        # look-alike addresses: 10.100.x and 110.10.x are not 10.10.x; 10.2.x is not 10.20.x
        "look-alikes": (record("10.100.1.1", "110.10.2.2", 2049, 1, 1_234), {}),
        "other vpc": (record("10.2.0.1", "10.20.1.1", 2049, 1, 4_321), {}),
        # no data, skipped data
        "nodata": ("2 123456789012 eni-0a1b2c3d4e5f60718 - - - - - - - 1431280876 1431280934 - NODATA", {}),
        "skipdata": (
            "2 123456789012 eni-0a1b2c3d4e5f60718 - - - - - - - 1431280876 1431280934 - SKIPDATA",
            {},
        ),
    }
    for name, (line, expected) in cases.items():
        assert counted(ops, [line]) == expected, name


def test_values_are_quoted_as_the_vpc_guides_example_and_fit_one_pattern(dev_templates: Templates) -> None:
    patterns = [
        f["FilterPattern"] for _, f in properties(dev_templates["ops-us-west-2"], "AWS::Logs::MetricFilter")
    ]
    assert patterns and all('action="ACCEPT"' in p and len(p) <= 1024 for p in patterns)
    assert sum('srcport="2049"' in p for p in patterns) == 1


@pytest.fixture(scope="module")
def narrow_hub(tmp_path_factory: pytest.TempPathFactory) -> tuple[HubSpokeConfig, Templates]:
    """A hub /17 with a /25 secondary, and a spoke /20: blocks that do not end on an octet."""
    data = options()  # the shared synth of several options (tests/conftest.py)
    assert (data["hub"]["cidr"], data["hub"]["secondary_cidrs"]) == ("10.10.0.0/17", ["10.12.5.0/25"])
    assert [s["cidr"] for s in data["spokes"]] == ["10.20.16.0/20"]
    config = load(write_config(tmp_path_factory.mktemp("narrow"), data)).config
    return config, synth(config)


def test_a_hub_cidr_between_17_and_23_synthesizes_and_counts_by_address(
    narrow_hub: tuple[HubSpokeConfig, Templates],
) -> None:
    """Every address of the environment's VPCs is counted by where it really is (ipaddress membership in the
    configured CIDRs, not the pattern builder's rule). Addresses in no VPC here are written out case by case."""
    config, templates = narrow_hub
    ops = templates["ops-us-west-2"]
    hub = [ipaddress.ip_network(c) for c in config.hub.all_cidrs]
    own = [ipaddress.ip_network(c) for c in config.spokes[0].all_cidrs]
    in_vpcs = ["10.10.0.1", "10.10.127.254", "10.12.5.1", "10.12.5.127", "10.20.16.1", "10.20.31.254"]
    for address in in_vpcs:
        ip = ipaddress.ip_address(address)
        from_hub = counted(ops, [record(address, "10.20.17.5", 3713, 40000, 100)])
        assert from_hub == ({IN: 100} if any(ip in n for n in hub) else {}), address
        # An NFS reply: the spoke serving a read if it comes from the spoke, bytes from the hub if from the hub.
        reply = counted(ops, [record(address, "10.20.17.9", 2049, 700, 10)])
        assert reply == ({NFS: 10} if any(ip in n for n in own) else {IN: 10}), address
    # Outside every VPC of the environment: nothing in the spoke's VPC talks to these, except 10.12.5.128-255,
    # which patterns match as part of the hub's /25's /24 (text, not ranges: docs/operations.md). Validation
    # keeps every VPC of the environment out of that /24 (tests/test_flow_logs.py).
    outside = {"10.10.128.1": {}, "10.10.255.1": {}, "10.12.6.1": {}, "10.12.5.200": {IN: 100}}
    for address, expected in outside.items():
        assert counted(ops, [record(address, "10.20.17.5", 3713, 40000, 100)]) == expected, address
    for address in ["10.20.32.1", "10.20.15.9"]:
        assert counted(ops, [record(address, "10.20.17.9", 2049, 700, 10)]) == {}, address
