"""Flow-log patterns scale with CIDR size instead of failing synth, and validation names what cannot fit.

The oracle is CloudWatch's documented matching (tests/fakes/cloudwatch_filter.py) and Python's ipaddress,
not the pattern builder; the 1024-character limit is botocore's logs model (PutMetricFilter filterPattern).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import botocore.session
import pytest

from hubspoke.config import ConfigError, load
from hubspoke.flow_logs import traffic_patterns
from tests.conftest import minimal, write_config
from tests.fakes.cloudwatch_filter import match


def _limit() -> int:
    model = botocore.session.get_session().get_service_model("logs")
    return int(model.operation_model("PutMetricFilter").input_shape.members["filterPattern"].metadata["max"])


@pytest.mark.parametrize(
    "hub_cidr", ["10.10.0.0/16", "10.10.0.0/17", "10.10.0.0/19", "10.10.0.0/20", "10.10.0.0/23"]
)
def test_every_hub_address_is_counted_once_and_no_other(hub_cidr: str) -> None:
    patterns = traffic_patterns(own_cidrs=["10.20.0.0/16"], hub_cidrs=[hub_cidr])["from_hub"]
    assert all(len(p) <= _limit() for p in patterns)
    hub = ipaddress.ip_network(hub_cidr)
    probes = [
        hub.network_address,
        hub.broadcast_address,
        hub.network_address + 256,
        hub.broadcast_address + 1,
    ]
    probes += [ipaddress.ip_address("10.100.0.1"), ipaddress.ip_address("110.10.0.1")]
    for address in probes:
        line = f"2 1 eni-1 {address} 10.20.0.5 3713 40000 6 1 100 1 2 ACCEPT OK"
        hits = sum(match(p, line) is not None for p in patterns)
        # /23 is matched as its two /24s: the wildcards cover exactly the CIDR when it ends on /24 or wider.
        assert hits == (1 if address in hub else 0), (hub_cidr, str(address), hits)


def test_a_17_needs_a_few_filters_not_one_per_24() -> None:
    kinds = traffic_patterns(own_cidrs=["10.20.0.0/20"], hub_cidrs=["10.10.0.0/17"])
    # 128 /24 wildcards per direction, packed under 1024 characters: a handful of patterns, not 128.
    assert 1 < len(kinds["from_hub"]) <= 8 and len(kinds["to_hub"]) == len(kinds["from_hub"])
    assert sum(p.count("srcaddr=10.10.") for p in kinds["from_hub"]) == 128


def test_validation_names_the_topology_whose_filters_do_not_fit(tmp_path: Path) -> None:
    many = [f"10.{i}.0.0/17" for i in range(30, 60)]
    data = minimal(hub={"region": "us-east-2", "cidr": "10.10.0.0/17", "secondary_cidrs": many})
    with pytest.raises(ConfigError) as caught:
        load(write_config(tmp_path, data))
    assert "spokes[0].secondary_cidrs: this spoke's traffic metrics need" in str(caught.value)
    assert "octet-aligned" in str(caught.value)
    fine = minimal(hub={"region": "us-east-2", "cidr": "10.10.0.0/17"})
    assert load(write_config(tmp_path, fine, name="fine.yaml")).config.hub.cidr == "10.10.0.0/17"
