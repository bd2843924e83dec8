"""Each CNQ deploy-time rule (issue 13) passes the dev templates and catches the mutation it exists for."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.rules import Template, check
from tests.conftest import Templates, resources

Mutation = Callable[[Templates], None]


def _first_node(templates: Templates) -> dict[str, Any]:
    return next(res for _, res in resources(templates["storage-us-west-2"], "AWS::EC2::Instance"))[
        "Properties"
    ]


def _protect(templates: Templates) -> None:
    _first_node(templates)["DisableApiTermination"] = True


def _protect_by_launch_template(templates: Templates) -> None:
    template = next(res for _, res in resources(templates["storage-us-west-2"], "AWS::EC2::LaunchTemplate"))
    template["Properties"]["LaunchTemplateData"]["DisableApiTermination"] = True


def _resolve_image(templates: Templates) -> None:
    _first_node(templates)["ImageId"] = (
        "{{resolve:ssm:/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id}}"
    )


def _image_parameter(templates: Templates) -> None:
    templates["storage-us-west-2"].setdefault("Parameters", {})["NodeImage"] = {"Type": "AWS::EC2::Image::Id"}
    _first_node(templates)["ImageId"] = {"Ref": "NodeImage"}


def _moving_user_data(templates: Templates) -> None:
    node = _first_node(templates)
    node["UserData"] = {
        "Fn::Base64": {"Fn::Join": ["", [node["UserData"]["Fn::Base64"], {"Ref": "AWS::StackId"}]]}
    }


def _drop(kind: str, stack: str = "network-us-west-2") -> Mutation:
    def mutate(templates: Templates) -> None:
        res = templates[stack]["Resources"]
        for logical_id in [k for k, v in res.items() if v["Type"] == kind]:
            del res[logical_id]

    return mutate


def _replication_ingress(protocol: str, low: int, high: int) -> Mutation:
    """Ingress from the VPC that admits TCP 3712: tcp or its number 6 over a range, or -1 (every protocol;
    AWS::EC2::SecurityGroupIngress IpProtocol: 'Use -1 to specify all protocols')."""

    def mutate(templates: Templates) -> None:
        templates["storage-us-east-2"]["Resources"]["Injected"] = {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {"CidrIp": "10.10.0.0/16", "IpProtocol": protocol, "FromPort": low, "ToPort": high,
                           "GroupId": "sg-1"},
        }  # fmt: skip

    return mutate


@pytest.mark.parametrize(
    ("rule", "mutate"),
    [
        ("HubSpoke-NoTemplateTerminationProtection", _protect),
        ("HubSpoke-NoTemplateTerminationProtection", _protect_by_launch_template),
        ("HubSpoke-PinnedNodeImage", _resolve_image),
        ("HubSpoke-PinnedNodeImage", _image_parameter),
        ("HubSpoke-StableNodeUserData", _moving_user_data),
        ("HubSpoke-CnqNetworkNeeds", _drop("AWS::EC2::NatGateway")),
        ("HubSpoke-CnqNetworkNeeds", _drop("AWS::EC2::VPCEndpoint")),
        ("HubSpoke-NoUnusedQumuloPort", _replication_ingress("tcp", 3712, 3712)),
        ("HubSpoke-NoUnusedQumuloPort", _replication_ingress("6", 3000, 4000)),
        ("HubSpoke-NoUnusedQumuloPort", _replication_ingress("-1", -1, -1)),
    ],
)
def test_each_cnq_rule_catches_its_mutation(
    dev_config: HubSpokeConfig, dev_templates: Templates, rule: str, mutate: Mutation
) -> None:
    clean = {v.rule for v in check([Template(k, t) for k, t in dev_templates.items()], dev_config)}
    assert rule not in clean, "the dev templates pass the rule before the mutation"
    broken = copy.deepcopy(dev_templates)
    mutate(broken)
    hits = [v for v in check([Template(k, t) for k, t in broken.items()], dev_config) if v.rule == rule]
    assert hits and all(v.fix for v in hits)
