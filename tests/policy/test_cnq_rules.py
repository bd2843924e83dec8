"""Each CNQ deploy-time rule (issue 13) passes the dev templates and catches the mutation it exists for."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.names import CNQ_CLUSTER_TAG
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


def _s3_endpoint_as_interface(templates: Templates) -> None:
    """An S3 endpoint of type Interface is no gateway endpoint (AWS::EC2::VPCEndpoint VpcEndpointType:
    Interface, Gateway or GatewayLoadBalancer; the gateway type is the one routed from route tables)."""
    for _, endpoint in resources(templates["network-us-west-2"], "AWS::EC2::VPCEndpoint"):
        endpoint["Properties"]["VpcEndpointType"] = "Interface"


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


# What a reader of each finding needs, as written (case and all): the property or setting to change and where
# the fix lives. "\n" anchors a message's or fix's start or end.
PROTECTED = (
    "\nDisableApiTermination is set in the template",
    "would end in ROLLBACK_FAILED\n",
    "\ndrop it from the template",
    "the Storage stack protects the nodes as its last step (Custom::",
)
PINNED = ("\npin storage.ami_id in the config", "(hubspoke ami prints the current Ubuntu image)\n")
NETWORK = ("\nkeep nat: single or per_az", "keep the VPC's S3 gateway endpoint\n")
REPLICATION = ("opens Qumulo replication (3712), which nothing here uses\n",
               "\nopen only the ports in hubspoke/ports.py", "portals need 3713\n")  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "mutate", "words"),
    [
        ("HubSpoke-NoTemplateTerminationProtection", _protect, PROTECTED),
        ("HubSpoke-NoTemplateTerminationProtection", _protect_by_launch_template, PROTECTED),
        ("HubSpoke-PinnedNodeImage", _resolve_image, (*PINNED, '\nImageId is "{{resolve:ssm:/aws/service/')),
        ("HubSpoke-PinnedNodeImage", _image_parameter, (*PINNED, '\nImageId is {"Ref": "NodeImage"}, resolved')),
        ("HubSpoke-StableNodeUserData", _moving_user_data,
         ("\nUserData is missing", "can change between deploys\n", "\nrender the boot script",
          "config-derived names only (hubspoke.cnq_boot)\n")),
        ("HubSpoke-CnqNetworkNeeds", _drop("AWS::EC2::NatGateway"), (*NETWORK, "stack lacks a NAT gateway\n")),
        ("HubSpoke-CnqNetworkNeeds", _drop("AWS::EC2::VPCEndpoint"),
         (*NETWORK, "stack lacks an S3 gateway endpoint\n")),
        ("HubSpoke-CnqNetworkNeeds", _s3_endpoint_as_interface, (*NETWORK, "stack lacks an S3 gateway endpoint\n")),
        ("HubSpoke-NoUnusedQumuloPort", _replication_ingress("tcp", 3712, 3712),
         (*REPLICATION, "\ningress on TCP 3712-3712 opens")),
        ("HubSpoke-NoUnusedQumuloPort", _replication_ingress("6", 3000, 4000), REPLICATION),
        ("HubSpoke-NoUnusedQumuloPort", _replication_ingress("-1", -1, -1),
         (*REPLICATION, "\ningress on every protocol -1--1 opens")),
    ],
)  # fmt: skip
def test_each_cnq_rule_catches_its_mutation(
    dev_config: HubSpokeConfig, dev_templates: Templates, rule: str, mutate: Mutation, words: tuple[str, ...]
) -> None:
    clean = {v.rule for v in check([Template(k, t) for k, t in dev_templates.items()], dev_config)}
    assert rule not in clean, "the dev templates pass the rule before the mutation"
    broken = copy.deepcopy(dev_templates)
    mutate(broken)
    hits = [v for v in check([Template(k, t) for k, t in broken.items()], dev_config) if v.rule == rule]
    assert hits and all(v.fix for v in hits)
    assert {v.template for v in hits} <= set(broken), "a finding names the template it is in"
    for v in hits:
        text = f"\n{v.message}\n{v.fix}\n"
        assert [w for w in words if w not in text] == [], text


def _launched(props: dict[str, Any], kind: str = "AWS::EC2::Instance") -> list[Template]:
    return [Template("storage", {"Resources": {"Node": {"Type": kind, "Properties": props}}})]


@pytest.mark.parametrize(
    ("props", "caught"),
    [
        ({}, False),
        ({"DisableApiTermination": False}, False),
        ({"DisableApiTermination": "false"}, False),  # CloudFormation takes booleans as strings too
        ({"DisableApiTermination": True}, True),
        ({"DisableApiTermination": "true"}, True),
        ({"DisableApiTermination": {"Ref": "Protect"}}, True),  # unknown until deploy: may protect
    ],
)
@pytest.mark.parametrize("where", ["AWS::EC2::Instance", "AWS::EC2::LaunchTemplate"])
def test_termination_protection_in_any_spelling_is_caught(
    dev_config: HubSpokeConfig, props: dict[str, Any], caught: bool, where: str
) -> None:
    """DisableApiTermination on the instance or in its launch template's LaunchTemplateData (AWS::EC2::Instance,
    AWS::EC2::LaunchTemplate LaunchTemplateData): a protected instance cannot be terminated (EC2 User Guide,
    "Enable termination protection"), so a failed create could not roll back."""
    templates = _launched(props if where == "AWS::EC2::Instance" else {"LaunchTemplateData": props}, where)
    hits = [
        v.logical_id
        for v in check(templates, dev_config)
        if v.rule == "HubSpoke-NoTemplateTerminationProtection"
    ]
    assert hits == (["Node"] if caught else [])


@pytest.mark.parametrize(
    ("protocol", "low", "high", "caught"),
    [
        ("tcp", 3712, 3712, True),
        ("TCP", 3700, 3712, True),  # protocol names are case-insensitive to EC2
        ("6", 3712, 3720, True),
        (6, 3712, 3712, True),  # the protocol number, as a number
        ("-1", 0, 0, True),  # every protocol: ports do not apply
        ("tcp", 3713, 3713, False),  # the portal port
        ("tcp", 3000, 3711, False),
        ("udp", 3712, 3712, False),
        ("17", 3712, 3712, False),
        ("icmp", -1, -1, False),
    ],
)
def test_only_an_ingress_admitting_tcp_3712_opens_replication(
    dev_config: HubSpokeConfig, protocol: str | int, low: int, high: int, caught: bool
) -> None:
    """Qumulo "Required networking ports": 3712 is replication, 3713 the portal. AWS::EC2::SecurityGroupIngress:
    IpProtocol tcp/udp/icmp or a protocol number (6 TCP, 17 UDP, IANA), -1 every protocol and port; FromPort to
    ToPort an inclusive range."""
    rule = {
        "CidrIp": "10.10.0.0/16",
        "IpProtocol": protocol,
        "FromPort": low,
        "ToPort": high,
        "GroupId": "sg-1",
    }
    templates = [
        Template("s", {"Resources": {"Open": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": rule}}})
    ]
    hits = [v for v in check(templates, dev_config) if v.rule == "HubSpoke-NoUnusedQumuloPort"]
    assert [v.logical_id for v in hits] == (["Open"] if caught else [])
    for v in hits:
        assert ("every protocol" in v.message) == (protocol == "-1"), v.message


def test_node_to_node_ingress_on_every_port_is_not_an_opening(dev_config: HubSpokeConfig) -> None:
    """Members of one security group reaching each other (SourceSecurityGroupId the group itself, inline or
    standalone) is Qumulo's node-to-node rule, not an opening to anyone else; another group's members are."""
    own = {"Fn::GetAtt": ["Nodes", "GroupId"]}
    every = {"IpProtocol": "-1"}
    body = {
        "Resources": {
            "Nodes": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"SecurityGroupIngress": [{**every, "SourceSecurityGroupId": own}]}},
            "Self": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": {**every, "GroupId": own, "SourceSecurityGroupId": own}},
            "Other": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": {**every, "GroupId": own, "SourceSecurityGroupId": {"Fn::GetAtt": ["Clients", "GroupId"]}}},
        }
    }  # fmt: skip
    hits = [
        v.logical_id
        for v in check([Template("s", body)], dev_config)
        if v.rule == "HubSpoke-NoUnusedQumuloPort"
    ]
    assert hits == ["Other"]


def test_the_termination_fix_names_the_resource_that_protects_the_nodes(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The fix sends the user to the resource that protects the nodes once created; it must be one each dev
    Storage stack holds, named by its CloudFormation type in parentheses at the end of the fix."""
    broken = copy.deepcopy(dev_templates)
    _protect(broken)
    [fix] = {
        v.fix
        for v in check([Template(k, t) for k, t in broken.items()], dev_config)
        if v.rule == "HubSpoke-NoTemplateTerminationProtection"
    }
    named = re.search(r"\((Custom::\w+)\)$", fix)
    assert named, fix
    for stack in ("storage-us-east-2", "storage-us-west-2"):
        assert named[1] in {r["Type"] for r in dev_templates[stack]["Resources"].values()}, stack


# The tag by which the rules know a CNQ node (an input here, not an expected value).
CNQ_TAG = [{"Key": CNQ_CLUSTER_TAG, "Value": "c"}]


@pytest.mark.parametrize(
    ("node", "caught"),
    [
        ({"Properties": {"ImageId": "ami-0123456789abcdef0", "Tags": CNQ_TAG}}, {"HubSpoke-StableNodeUserData"}),
        ({"Properties": {"ImageId": "ami-0", "Tags": CNQ_TAG, "UserData": "IyEvYmluL2Jhc2g="}}, {"HubSpoke-StableNodeUserData"}),
        ({"Properties": {"ImageId": "ami-0", "Tags": CNQ_TAG, "UserData": {"Fn::Base64": "#!/bin/bash"}}}, set()),
        ({}, set()),  # no Properties: not a CNQ node (no tag), nothing to judge
    ],
)  # fmt: skip
def test_a_node_without_literal_user_data_or_properties_is_judged_not_crashed(
    dev_config: HubSpokeConfig, node: dict[str, Any], caught: set[str]
) -> None:
    """UserData is optional on AWS::EC2::Instance, and a resource's Properties section is omitted when it has
    none to declare (CloudFormation template reference, "Resources" section): the rules read such resources
    without failing, and a CNQ node without a literal Fn::Base64 UserData is reported."""
    body = {"Resources": {"Node": {"Type": "AWS::EC2::Instance", **node}}}
    hits = {v.rule for v in check([Template("storage", body)], dev_config) if v.logical_id == "Node"}
    assert hits & {"HubSpoke-StableNodeUserData", "HubSpoke-PinnedNodeImage"} == caught


def _cnq_region(endpoint: dict[str, Any]) -> list[Template]:
    """A Region with one CNQ node, whose network stack has a NAT gateway and the given VPC endpoint."""
    network = {
        "Metadata": {"hubspoke": {"kind": "network", "region": "us-west-2"}},
        "Resources": {
            "Nat": {"Type": "AWS::EC2::NatGateway", "Properties": {}},
            "Endpoint": {"Type": "AWS::EC2::VPCEndpoint", "Properties": endpoint},
        },
    }
    node = {"Type": "AWS::EC2::Instance", "Properties": {"ImageId": "ami-0", "Tags": CNQ_TAG}}
    storage = {
        "Metadata": {"hubspoke": {"kind": "storage", "region": "us-west-2"}},
        "Resources": {"Node": node},
    }
    return [Template("network", network), Template("storage", storage)]


S3 = "com.amazonaws.us-west-2.s3"


@pytest.mark.parametrize(
    ("endpoint", "caught"),
    [
        ({"ServiceName": S3}, False),  # VpcEndpointType absent: a gateway endpoint
        ({"ServiceName": S3, "VpcEndpointType": "Gateway"}, False),
        ({"ServiceName": S3, "VpcEndpointType": "Interface"}, True),
        ({"ServiceName": "com.amazonaws.us-west-2.dynamodb", "VpcEndpointType": "Gateway"}, True),
    ],
)
def test_only_an_s3_gateway_endpoint_meets_cnqs_need(
    dev_config: HubSpokeConfig, endpoint: dict[str, Any], caught: bool
) -> None:
    """Qumulo's CNQ on AWS guide requires the S3 gateway endpoint. EC2 API reference (botocore ec2 2016-11-15,
    CreateVpcEndpoint VpcEndpointType): "Default: Gateway", so an endpoint that names no type is one; service
    names are com.amazonaws.<region>.<service>."""
    found = [v for v in check(_cnq_region(endpoint), dev_config) if v.rule == "HubSpoke-CnqNetworkNeeds"]
    assert [v.logical_id for v in found] == (["Node"] if caught else [])
    for v in found:
        assert v.template == "storage" and "S3 gateway endpoint" in v.message and "us-west-2" in v.message


def test_an_every_protocol_ingress_without_ports_names_no_missing_port(dev_config: HubSpokeConfig) -> None:
    """AWS::EC2::SecurityGroupIngress: with IpProtocol -1 the ports do not apply and may be left out; the
    finding then says every protocol is open and prints nothing for the absent ports."""
    rule = {"CidrIp": "10.10.0.0/16", "IpProtocol": "-1", "GroupId": "sg-1"}
    body = {"Resources": {"Open": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": rule}}}
    [found] = [v for v in check([Template("s", body)], dev_config) if v.rule == "HubSpoke-NoUnusedQumuloPort"]
    assert found.message.startswith("ingress on every protocol - opens Qumulo replication (3712)"), (
        found.message
    )
