"""Invariants over the synthesized Storage stacks: nodes as configured, data retained and encrypted, no secret
in any template, Qumulo's ingress rules, exactly one portal per spoke pointing at its hub, policy clean."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig, load
from hubspoke.mtu import peer_mtu
from hubspoke.stacks.storage import (
    CLUSTER_RESOURCE,
    PORTAL_RESOURCE,
)
from hubspoke.topology import stack_name
from tests.conftest import Templates, minimal, resources, synth, write_config

QUMULO_VPC_PORTS = {
    ("tcp", 2049),
    ("udp", 2049),
    ("tcp", 111),
    ("udp", 111),
    ("tcp", 3712),
    ("tcp", 3713),
    ("tcp", 8000),
}


def storage_templates(config: HubSpokeConfig, templates: Templates) -> dict[str, dict[str, Any]]:
    return {r.region: templates[f"storage-{r.region}"] for r in config.regions() if r.storage.enabled}


@pytest.fixture(scope="module")
def varied_config(tmp_path_factory: pytest.TempPathFactory) -> HubSpokeConfig:
    """Two spokes with their own sizes, an admin CIDR, a fixed hub AMI, a read-write spoke, a lower peer MTU."""
    data = minimal(
        inter_region_mtu=8000,
        hub={"region": "us-east-2", "cidr": "10.10.0.0/16",
             "storage": {"node_count": 5, "instance_type": "i7i.4xlarge", "ami_id": "ami-0123456789abcdef0",
                         "admin_cidr": "192.168.10.0/24"}},
        spokes=[
            {"region": "us-west-2", "cidr": "10.20.0.0/16", "storage": {"node_count": 3, "instance_type": "m6idn.8xlarge"}},
            {"region": "eu-west-1", "cidr": "10.30.0.0/16", "portal": {"mode": "read_write", "eviction_free_threshold": 0.2},
             "compute": {"enabled": False}},
        ],
    )  # fmt: skip
    return load(write_config(tmp_path_factory.mktemp("config"), data)).config


@pytest.fixture(scope="module")
def varied_templates(varied_config: HubSpokeConfig) -> Templates:
    # Synthesizing runs cdk-nag and the hubspoke policy pack as validation plugins: any unacknowledged
    # finding fails synth, so reaching the assertions means the stacks are policy-clean.
    return synth(varied_config)


@pytest.fixture(params=["dev", "varied"])
def case(request: pytest.FixtureRequest) -> tuple[HubSpokeConfig, Templates]:
    """Each storage invariant holds for config/dev.yaml and for a config that varies every storage knob."""
    return request.getfixturevalue(f"{request.param}_config"), request.getfixturevalue(
        f"{request.param}_templates"
    )


def test_nodes_as_configured_imdsv2_encrypted_retained_volumes(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        storage = config.region_config(region_code).storage
        nodes = [res["Properties"] for _, res in resources(template, "AWS::EC2::Instance")]
        assert len(nodes) == storage.node_count, region_code
        assert {n["InstanceType"] for n in nodes} == {storage.instance_type}
        for node in nodes:
            assert node["MetadataOptions"]["HttpTokens"] == "required", "IMDSv2 only"
            for mapping in node["BlockDeviceMappings"]:
                assert mapping["Ebs"]["Encrypted"] is True and mapping["Ebs"]["DeleteOnTermination"] is False
        enis = [res["Properties"] for _, res in resources(template, "AWS::EC2::NetworkInterface")]
        assert {e["SecondaryPrivateIpAddressCount"] for e in enis} == {storage.floating_ips_per_node}
        image_params = [
            k for k, p in template.get("Parameters", {}).items() if p["Type"] == "AWS::EC2::Image::Id"
        ]
        if storage.ami_id:
            assert {n["ImageId"] for n in nodes} == {storage.ami_id} and not image_params
        else:
            [(param_id, _)] = [
                (k, p) for k, p in template["Parameters"].items() if p["Type"] == "AWS::EC2::Image::Id"
            ]
            assert all(n["ImageId"] == {"Ref": param_id} for n in nodes), "no AMI lookup at synth"


def test_every_bucket_key_and_secret_is_retained_and_encrypted(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        storage = config.region_config(region_code).storage
        kinds = ("AWS::S3::Bucket", "AWS::KMS::Key", "AWS::SecretsManager::Secret")
        data = [(kind, res) for kind in kinds for _, res in resources(template, kind)]
        assert (
            sum(1 for kind, _ in data if kind == "AWS::S3::Bucket") == storage.bucket_count + 1
        )  # + access logs
        for kind, res in data:
            assert (res["DeletionPolicy"], res["UpdateReplacePolicy"]) == ("Retain", "Retain"), (
                region_code,
                kind,
            )
        for _, bucket in resources(template, "AWS::S3::Bucket"):
            props = bucket["Properties"]
            assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
            assert all(props["PublicAccessBlockConfiguration"].values())
        persistent = [
            b["Properties"]
            for _, b in resources(template, "AWS::S3::Bucket")
            if "LoggingConfiguration" in b["Properties"]
        ]
        assert len(persistent) == storage.bucket_count
        for props in persistent:
            rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
                "ServerSideEncryptionByDefault"
            ]
            assert rule["SSEAlgorithm"] == "aws:kms" and "KMSMasterKeyID" in rule, "customer KMS key"
        policies = [
            p["Properties"]["PolicyDocument"] for _, p in resources(template, "AWS::S3::BucketPolicy")
        ]
        ssl_only = [s for doc in policies for s in doc["Statement"] if s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"]  # fmt: skip
        assert len(ssl_only) == storage.bucket_count + 1
        assert all(k["Properties"]["EnableKeyRotation"] for _, k in resources(template, "AWS::KMS::Key"))


def test_no_secret_in_any_template(varied_templates: Templates, dev_templates: Templates) -> None:
    for templates in (varied_templates, dev_templates):
        for stack_id, template in templates.items():
            text = json.dumps(template)
            assert "resolve:secretsmanager" not in text, f"{stack_id} resolves a secret into the template"
            for _, secret in resources(template, "AWS::SecretsManager::Secret"):
                assert (
                    "SecretString" not in secret["Properties"]
                    and "GenerateSecretString" in secret["Properties"]
                )
            for output in template.get("Outputs", {}).values():
                assert "Password" not in json.dumps(output["Value"]) or "Ref" in output["Value"]
            for _, custom in resources(template, CLUSTER_RESOURCE):
                assert not any("password" in k.lower() for k in custom["Properties"]), "only the secret's ARN"


def _ingress(template: dict[str, Any], sg_id: str) -> list[dict[str, Any]]:
    rules = list(template["Resources"][sg_id]["Properties"].get("SecurityGroupIngress", []))
    rules += [
        res["Properties"]
        for _, res in resources(template, "AWS::EC2::SecurityGroupIngress")
        if res["Properties"]["GroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]}
    ]
    return rules


def test_qumulo_ports_from_the_vpc_and_admin_only_when_configured(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        region = config.region_config(region_code)
        [eni] = [res["Properties"] for _, res in resources(template, "AWS::EC2::NetworkInterface")][:1]
        own_sg = next(g["Fn::GetAtt"][0] for g in eni["GroupSet"] if "Fn::GetAtt" in g)
        peer_sg = [g for g in eni["GroupSet"] if "Fn::GetStackOutput" in g]
        assert len(peer_sg) == 1, "the nodes carry the Network stack's cross-Region security group"
        assert peer_sg[0]["Fn::GetStackOutput"]["StackName"] == stack_name(config, "network", region_code)
        rules = _ingress(template, own_sg)
        by_cidr: dict[str, set[tuple[str, int]]] = {}
        for rule in rules:
            if "CidrIp" in rule:
                by_cidr.setdefault(rule["CidrIp"], set()).add((rule["IpProtocol"], rule["FromPort"]))
            else:
                assert rule["SourceSecurityGroupId"] == {"Fn::GetAtt": [own_sg, "GroupId"]}, (
                    "only node-to-node"
                )
        expected = {cidr: QUMULO_VPC_PORTS for cidr in region.all_cidrs}
        if region.storage.admin_cidr:
            expected[region.storage.admin_cidr] = {("tcp", 22), ("tcp", 8000)}
        assert by_cidr == expected


def _one_portal(template: dict[str, Any]) -> dict[str, Any]:
    portals = [res["Properties"] for _, res in resources(template, PORTAL_RESOURCE)]
    assert len(portals) == 1
    return portals[0]


def test_exactly_one_portal_per_spoke_pointing_at_its_hub(case: tuple[HubSpokeConfig, Templates]) -> None:
    config, templates = case
    hub = config.hub
    assert not list(resources(templates[f"storage-{hub.region}"], PORTAL_RESOURCE)), (
        "the hub never names a spoke"
    )
    hub_outputs = templates[f"storage-{hub.region}"]["Outputs"]
    # The output contract (hubspoke/outputs.py), written out: a rename breaks deployed spokes.
    assert {"FloatingIps", "AdminSecretArn"} <= set(hub_outputs)
    for spoke in config.spokes:
        portal = _one_portal(templates[f"storage-{spoke.region}"])
        for key, output in (("HubRestAddresses", "FloatingIps"), ("HubPortalHosts", "FloatingIps"),
                            ("HubSecretArn", "AdminSecretArn")):  # fmt: skip
            ref = portal[key]["Fn::GetStackOutput"]
            assert (ref["StackName"], ref["Region"], ref["OutputName"]) == (
                stack_name(config, "storage", hub.region),
                hub.region,
                output,
            ), "a weak reference to the hub's Storage stack, in the hub's Region"
        assert (portal["HubRoot"], portal["SpokeRoot"]) == (
            hub.storage.dataset_path,
            spoke.storage.dataset_path,
        )
        assert portal["Mode"] == spoke.portal.mode
        assert float(portal["EvictionFreeThreshold"]) == spoke.portal.eviction_free_threshold


def test_cluster_resource_carries_the_peer_mtu_and_local_exports(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        region = config.region_config(region_code)
        [(_, cluster)] = list(resources(template, CLUSTER_RESOURCE))
        props = cluster["Properties"]
        assert props["PeerMtu"] == str(peer_mtu(config))
        assert props["ClientCidrs"] == list(region.all_cidrs)
        local = {region.storage.checkpoint_path}
        if region is config.hub:
            local.add(region.storage.dataset_path)
        assert set(props["ExportPaths"]) == local, "a spoke's dataset path belongs to its portal"


def test_provisioner_runs_in_the_vpc_and_reaches_only_rest_and_https(dev_templates: Templates) -> None:
    template = dev_templates["storage-us-west-2"]
    functions = [res["Properties"] for _, res in resources(template, "AWS::Lambda::Function")]
    handler = next(f for f in functions if f.get("Handler", "").endswith("on_event"))
    assert handler["VpcConfig"]["SubnetIds"]
    [sg_id] = [s["Fn::GetAtt"][0] for s in handler["VpcConfig"]["SecurityGroupIds"]]
    egress = template["Resources"][sg_id]["Properties"]["SecurityGroupEgress"]
    assert {(e["IpProtocol"], e["FromPort"]) for e in egress} == {("tcp", 8000), ("tcp", 443)}
