"""Each rule of our pack passes the dev templates and catches the violation it exists for."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.rules import RULES, Template, check
from tests.conftest import Templates


def as_templates(templates: Templates) -> list[Template]:
    return [Template(sid, t) for sid, t in templates.items()]


def rules_hit(templates: Templates, config: HubSpokeConfig) -> set[str]:
    return {v.rule for v in check(as_templates(templates), config)}


def test_dev_templates_pass(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    assert check(as_templates(dev_templates), dev_config) == []


def test_every_rule_is_documented() -> None:
    assert all(rule.__doc__ and rule.__doc__.startswith("HubSpoke-") for rule in RULES)


def _ingress(templates: Templates, stack: str, cidr: str) -> Templates:
    broken = copy.deepcopy(templates)
    broken[stack]["Resources"]["Injected"] = {
        "Type": "AWS::EC2::SecurityGroupIngress",
        "Properties": {"CidrIp": cidr, "IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "GroupId": "sg-1"},
    }
    return broken


def test_world_ingress_is_caught(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    assert "HubSpoke-NoWorldIngress" in rules_hit(
        _ingress(dev_templates, "network-us-east-2", "0.0.0.0/0"), dev_config
    )


@pytest.mark.parametrize(
    ("stack", "cidr"),
    [
        ("network-us-east-2", "192.168.0.0/16"),
        ("link-us-west-2", "172.16.0.0/16"),
        ("network-us-west-2", "10.30.0.0/16"),
    ],
)
def test_ingress_from_unknown_cidr_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, stack: str, cidr: str
) -> None:
    assert "HubSpoke-PeerCidrIngress" in rules_hit(_ingress(dev_templates, stack, cidr), dev_config)


def _drop(templates: Templates, stack: str, kind: str, count: int = 1) -> Templates:
    broken = copy.deepcopy(templates)
    res: dict[str, Any] = broken[stack]["Resources"]
    victims = [
        k for k, v in res.items() if v["Type"] == kind and "VpcPeeringConnectionId" in v["Properties"]
    ][:count]
    assert victims
    for k in victims:
        del res[k]
    return broken


def test_missing_route_on_either_side_is_caught(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    assert "HubSpoke-PeeringRouted" in rules_hit(
        _drop(dev_templates, "network-us-west-2", "AWS::EC2::Route"), dev_config
    )
    assert "HubSpoke-PeeringRouted" in rules_hit(
        _drop(dev_templates, "link-us-west-2", "AWS::EC2::Route"), dev_config
    )
    without_link = {k: v for k, v in dev_templates.items() if k != "link-us-west-2"}
    assert "HubSpoke-PeeringRouted" in rules_hit(without_link, dev_config)


def test_spoke_to_spoke_route_is_caught(config_from: Any) -> None:
    from tests.conftest import synth

    config = config_from(
        {
            "environment": "two",
            "account": "123456789012",
            "hub": {
                "region": "us-east-2",
                "cidr": "10.10.0.0/16",
                "storage": {"enabled": False},
                "compute": {"enabled": False},
            },
            "spokes": [
                {
                    "region": "us-west-2",
                    "cidr": "10.20.0.0/16",
                    "storage": {"enabled": False},
                    "compute": {"enabled": False},
                },
                {
                    "region": "eu-west-1",
                    "cidr": "10.30.0.0/16",
                    "storage": {"enabled": False},
                    "compute": {"enabled": False},
                },
            ],
        }
    )
    templates = copy.deepcopy(synth(config))
    net = templates["network-us-west-2"]["Resources"]
    route = copy.deepcopy(
        next(
            v
            for v in net.values()
            if v["Type"] == "AWS::EC2::Route" and "VpcPeeringConnectionId" in v["Properties"]
        )
    )
    route["Properties"]["DestinationCidrBlock"] = "10.30.0.0/16"
    net["Transitive"] = route
    assert "HubSpoke-NoTransitiveRoute" in rules_hit(templates, config)


def _peering_violations(templates: Templates, config: HubSpokeConfig) -> list[tuple[str, str]]:
    return [
        (v.template, v.message)
        for v in check(as_templates(templates), config)
        if v.rule == "HubSpoke-PeeringRouted"
    ]


@pytest.mark.parametrize("table", ["PrivateRouteTableUse2Az1", "PrivateRouteTableUse2Az2"])
def test_a_missing_hub_side_route_is_reported_on_the_link_template(
    dev_config: HubSpokeConfig, dev_templates: Templates, table: str
) -> None:
    """Every hub route table needs the route (dev's hub has two, one per AZ ID); the fix belongs in the Link
    stack, which holds the hub's routes to the spoke, so that is the template named."""
    broken = copy.deepcopy(dev_templates)
    res = broken["link-us-west-2"]["Resources"]
    [victim] = [
        k
        for k, v in res.items()
        if v["Type"] == "AWS::EC2::Route"
        and v["Properties"]["RouteTableId"]["Fn::GetStackOutput"]["OutputName"] == table
    ]
    del res[victim]
    [(where, message)] = _peering_violations(broken, dev_config)
    assert where == "link-us-west-2" and "hub side lacks 1 route" in message


def test_a_link_route_over_another_stacks_output_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """Right output name, wrong stack: a route over the hub network's (non-existent) peering output."""
    broken = copy.deepcopy(dev_templates)
    routes = [
        r["Properties"]
        for r in broken["link-us-west-2"]["Resources"].values()
        if r["Type"] == "AWS::EC2::Route"
    ]
    routes[0]["VpcPeeringConnectionId"]["Fn::GetStackOutput"]["StackName"] = "hubspoke-dev-network-us-east-2"
    [(where, _)] = _peering_violations(broken, dev_config)
    assert where == "link-us-west-2"


def test_a_missing_spoke_network_template_is_reported_not_skipped(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    without = {k: v for k, v in dev_templates.items() if k != "network-us-west-2"}
    [(_, message)] = _peering_violations(without, dev_config)
    assert "no Network template for spoke us-west-2" in message
