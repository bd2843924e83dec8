"""Secondary VPC blocks AWS would refuse to associate are refused by validation, before a deploy fails on them.

Oracle: Amazon VPC User Guide, "IPv4 CIDR block association restrictions" (awsdocs/amazon-vpc-user-guide@a16ab76,
doc_source/vpc-cidr-blocks.md), its table written out case by case below.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from hubspoke.config import ConfigError, load
from tests.conftest import minimal, write_config

REFUSED = [
    ("10.20.0.0/16", "172.16.0.0/16"),  # 10/8 primary: other RFC 1918 ranges
    ("10.20.0.0/16", "192.168.0.0/20"),
    ("10.20.0.0/16", "198.19.0.0/20"),  # ... and 198.19.0.0/16
    ("10.1.0.0/16", "10.0.4.0/22"),  # a block in 10.0.0.0/15 keeps 10.0.0.0/16 out
    ("172.24.0.0/16", "10.30.0.0/16"),  # 172.16/12 primary: other RFC 1918 ranges
    ("172.24.0.0/16", "172.31.0.0/20"),  # ... and 172.31.0.0/16
    ("192.168.0.0/20", "172.24.0.0/20"),  # 192.168/16 primary: other RFC 1918 ranges
    ("198.19.0.0/20", "10.30.0.0/20"),  # 198.19/16 primary: any RFC 1918 range
    ("100.64.0.0/20", "192.168.0.0/20"),  # 100.64/10 or public primary: RFC 1918 ...
    ("100.64.0.0/20", "198.19.0.0/20"),  # ... and 198.19.0.0/16
]
ACCEPTED = [
    ("10.20.0.0/16", "10.21.0.0/16"),  # any other unrestricted 10/8 block
    ("10.20.0.0/16", "100.64.0.0/20"),
    ("10.20.0.0/16", "44.192.0.0/20"),  # publicly routable
    ("172.24.0.0/16", "172.25.0.0/16"),
    ("192.168.0.0/20", "192.168.16.0/20"),
    ("100.64.0.0/20", "100.64.16.0/20"),
]


def _spoke_with(tmp_path: Path, primary: str, secondary: str) -> Path:
    data = minimal()
    data["spokes"][0].update({"cidr": primary, "secondary_cidrs": [secondary]})
    return write_config(tmp_path, data)


@pytest.mark.parametrize(("primary", "secondary"), REFUSED)
def test_a_restricted_secondary_block_is_refused_naming_the_field(
    tmp_path: Path, primary: str, secondary: str
) -> None:
    path = _spoke_with(tmp_path, primary, secondary)
    with pytest.raises(ConfigError) as caught:
        load(path)
    lines = [line.removeprefix(f"{path}: ") for line in str(caught.value).splitlines()]
    assert any(
        line.startswith(f"spokes[0].secondary_cidrs[0]: AWS does not associate {secondary}") for line in lines
    ), lines


@pytest.mark.parametrize(("primary", "secondary"), ACCEPTED)
def test_a_permitted_secondary_block_is_accepted(tmp_path: Path, primary: str, secondary: str) -> None:
    load(_spoke_with(tmp_path, primary, secondary))


def test_a_service_cidr_clash_suggests_a_block_no_vpc_uses(tmp_path: Path) -> None:
    """EKS (botocore eks model, serviceIpv4Cidr): the block must overlap no block of the VPC, and it is set only
    when a cluster is created. A VPC block on the default service CIDR is told to move to a block no other VPC and
    no service CIDR uses; a service CIDR the config sets is told to move to one no VPC uses."""
    data = minimal()
    data["spokes"][0]["cidr"] = "172.20.0.0/16"
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    (line,) = [x for x in str(caught.value).splitlines() if "spokes[0].cidr:" in x]
    suggested = ipaddress.IPv4Network(line.split("e.g. ", 1)[1].split(";", 1)[0])
    assert not suggested.overlaps(ipaddress.IPv4Network("172.20.0.0/16"))
    assert not suggested.overlaps(ipaddress.IPv4Network("10.10.0.0/16"))  # the hub's block
    explicit = minimal()
    explicit["spokes"][0]["compute"] = {"service_cidr": "10.10.0.0/16"}
    with pytest.raises(ConfigError) as caught:
        load(write_config(tmp_path, explicit, "explicit.yaml"))
    (line,) = [x for x in str(caught.value).splitlines() if "spokes[0].compute.service_cidr" in x]
    suggested = ipaddress.IPv4Network(line.split("e.g. ", 1)[1].split(" ", 1)[0])
    assert not suggested.overlaps(ipaddress.IPv4Network("10.10.0.0/16"))
    assert suggested.subnet_of(ipaddress.IPv4Network("172.16.0.0/12"))
