"""The unique-address draw keeps two interfaces of one subnet from holding one address, as EC2 does."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from moto.ec2.models import elastic_network_interfaces

from tests.fakes.ec2_addresses import draw_unused_addresses


def test_a_repeated_draw_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto's draw answering 10.0.0.5 twice: without the fake both interfaces' secondary address would be
    10.0.0.5 (moto checks only the interface itself); with it the second is 10.0.0.6."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    answers: Iterator[str] = iter(["10.0.0.5", "10.0.0.5", "10.0.0.6"])
    monkeypatch.setattr(
        elastic_network_interfaces, "random_private_ip", lambda cidr=None, ipv6=False: next(answers)
    )
    draw_unused_addresses(monkeypatch)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-2")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
        first = ec2.create_network_interface(SubnetId=subnet, PrivateIpAddress="10.0.0.10")[
            "NetworkInterface"
        ]
        second = ec2.create_network_interface(SubnetId=subnet, PrivateIpAddress="10.0.0.11")[
            "NetworkInterface"
        ]
        secondary = []
        for eni in (first, second):
            ec2.assign_private_ip_addresses(
                NetworkInterfaceId=eni["NetworkInterfaceId"], SecondaryPrivateIpAddressCount=1
            )
            found = ec2.describe_network_interfaces(NetworkInterfaceIds=[eni["NetworkInterfaceId"]])
            secondary += [
                a["PrivateIpAddress"]
                for a in found["NetworkInterfaces"][0]["PrivateIpAddresses"]
                if not a["Primary"]
            ]
    assert secondary == ["10.0.0.5", "10.0.0.6"]
