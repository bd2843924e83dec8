"""Invariants over the synthesized Storage stacks: nodes as configured, data retained and encrypted, no secret
in any template, Qumulo's ingress rules, exactly one portal per spoke pointing at its hub, policy clean;
nodes that install the staged release on the pinned image, pin the peer MTU, and never change with a deploy
that changes nothing about them."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from typing import Any

import pytest
import yaml

from hubspoke.config import HubSpokeConfig, load
from hubspoke.constructs.cnq.runtime.resources import (
    NODE_PROTECTION_RESOURCE,
    NODE_SHAPE_RESOURCE,
    PERSISTENT_STORAGE_RESOURCE,
)
from hubspoke.stacks.storage import (
    CLUSTER_RESOURCE,
    PORTAL_RESOURCE,
)
from hubspoke.topology import stack_name
from tests.conftest import (
    ROOT,
    Templates,
    load_shape,
    properties,
    resources,
    shape_params,
    synth,
    varied,
    with_pins,
    write_config,
)

QUMULO_VPC_PORTS = {
    ("tcp", 2049),
    ("udp", 2049),
    ("tcp", 111),
    ("udp", 111),
    ("tcp", 3713),
    ("tcp", 8000),
}


# Qumulo's write-cache volumes per node (aws-terraform-cnq 6.3, modules/qcluster variables.tf ec2_map:
# wcacheSlots, wcacheSize GiB, wcacheIOPSgp3, wcacheTput); DKV 4 x 4 GiB at 3000 IOPS / 125 MB/s; no read-cache
# volumes on these types (rcacheSlots 0: the instance store is the read cache); boot drive 256 GiB gp3.
QUMULO_WRITE_CACHE = {
    "i4i.8xlarge": (16, 16, 3000, 125),
    "i7i.4xlarge": (8, 16, 3000, 125),
    "m6idn.8xlarge": (18, 16, 6944, 289),
}


def storage_templates(config: HubSpokeConfig, templates: Templates) -> dict[str, dict[str, Any]]:
    return {r.region: templates[f"storage-{r.region}"] for r in config.regions() if r.storage.enabled}


@pytest.fixture(scope="module")
def varied_config(tmp_path_factory: pytest.TempPathFactory) -> HubSpokeConfig:
    """Two spokes with their own sizes, an admin CIDR, a read-write spoke, a lower peer MTU, a shorter wait
    (tests/conftest.py varied(), whose synth tests/stacks/test_ops.py shares)."""
    data = varied()
    return load(write_config(tmp_path_factory.mktemp("config"), data)).config


@pytest.fixture(scope="module")
def varied_templates(varied_config: HubSpokeConfig) -> Templates:
    # Synthesizing runs cdk-nag and the hubspoke policy pack as validation plugins: any unacknowledged
    # finding fails synth, so reaching the assertions means the stacks are policy-clean.
    return synth(varied_config)


@pytest.fixture(params=[*shape_params(), "varied"])
def case(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[HubSpokeConfig, Templates]:
    """Each storage invariant holds for every topology shape (config/dev.yaml and tests/shapes.py) and for a
    config that varies every storage knob."""
    if request.param == "varied":
        return request.getfixturevalue("varied_config"), request.getfixturevalue("varied_templates")
    shape = load_shape(request.param, tmp_path_factory)
    return shape.config, shape.templates


def test_nodes_as_configured_imdsv2_encrypted_retained_volumes(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        storage = config.region_config(region_code).storage
        nodes = [res["Properties"] for _, res in resources(template, "AWS::EC2::Instance")]
        assert len(nodes) == storage.node_count, region_code
        assert {n["InstanceType"] for n in nodes} == {storage.instance_type}
        assert {n["ImageId"] for n in nodes} == {storage.ami_id}, "the pinned image, as a literal"
        assert not template.get("Parameters", {}).keys() - {"BootstrapVersion"}, (
            "nothing asked at deploy time"
        )
        [(template_id, launch)] = properties(template, "AWS::EC2::LaunchTemplate")
        [(key_id, _)] = resources(template, "AWS::KMS::Key")
        for node in nodes:
            assert node["MetadataOptions"]["HttpTokens"] == "required", "IMDSv2 only"
            # Issue 22 item 10: the hop limit reported of Qumulo's launch settings, 3 (ASSUMED, a setting).
            assert node["MetadataOptions"]["HttpPutResponseHopLimit"] == 3
            assert "DisableApiTermination" not in node, "a protected node could not roll back a failed create"
            assert node["LaunchTemplate"] == {
                "LaunchTemplateId": {"Ref": template_id},
                "Version": {"Fn::GetAtt": [template_id, "LatestVersionNumber"]},
            }
        mappings = launch["LaunchTemplateData"]["BlockDeviceMappings"]
        for mapping in mappings:
            assert mapping["Ebs"]["Encrypted"] is True and mapping["Ebs"]["DeleteOnTermination"] is False
            assert mapping["Ebs"]["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
        slots, size, iops, throughput = QUMULO_WRITE_CACHE[storage.instance_type]
        layout = [
            (m["Ebs"]["VolumeSize"], m["Ebs"].get("Iops"), m["Ebs"].get("Throughput")) for m in mappings
        ]
        assert layout == [(256, None, None)] + [(size, iops, throughput)] * slots + [(4, 3000, 125)] * 4
        assert {m["Ebs"]["VolumeType"] for m in mappings} == {"gp3"}
        for _, node in resources(template, "AWS::EC2::Instance"):
            assert f"EBS_VOLUMES={len(mappings)}\n" in _boot_script(node["Properties"])
        enis = [res["Properties"] for _, res in resources(template, "AWS::EC2::NetworkInterface")]
        # Qumulo moves the floating IPs between interfaces: no count for CloudFormation to reconcile on any of
        # them (runtime/floating.py). Custom::CnqFloatingIps assigns, without floating_ip_count, 3 per node, as
        # releases before it created (so an existing cluster keeps its addresses).
        assert not any("SecondaryPrivateIpAddressCount" in e for e in enis)
        [(_, assign)] = resources(template, "Custom::CnqFloatingIps")
        assert assign["Properties"]["Counts"] == ["3"] * storage.node_count
        assert len(assign["Properties"]["NetworkInterfaceIds"]) == storage.node_count


def _boot_script(node: dict[str, Any]) -> str:
    script = node["UserData"]["Fn::Base64"]
    assert isinstance(script, str), "the first-boot script is a literal: no Ref, no token, no other stack"
    return script


def test_nodes_install_the_staged_release_read_only(case: tuple[HubSpokeConfig, Templates]) -> None:
    """Qumulo's CNQ guide: <bucket>/<prefix>/qumulo-core-install/<version>/qumulo-core.deb on stock Ubuntu."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        core = config.region_config(region_code).storage.qumulo_core
        assert core is not None
        [(param_id, parameter)] = [
            (k, p)
            for k, p in properties(template, "AWS::SSM::Parameter")
            if p["Name"].endswith("/qumulo-core")
        ]
        staged = core.install_uri + core.version + "/qumulo-core.deb"
        assert parameter["Value"] == f"{staged} {core.version}"
        for _, node in resources(template, "AWS::EC2::Instance"):
            assert f"INSTALL_PARAMETER={parameter['Name']}" in _boot_script(node["Properties"])
            assert param_id in node["DependsOn"], "the parameter exists before the first boot reads it"
        statements = [
            s
            for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")  # CDK's overflow policies too
            for _, policy in properties(template, kind)
            for s in policy["PolicyDocument"]["Statement"]
            if "staging" in json.dumps(s.get("Resource"))
        ]
        bucket, folder = (
            staged.removeprefix("s3://").split("/", 1)[0],
            staged.removeprefix("s3://").rsplit("/", 1)[0],
        )
        assert [(s["Action"], s["Resource"]) for s in statements] == [
            ("s3:GetObject", {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":s3:::{folder}/*"]]})
        ], f"read-only, one release's folder in {bucket}"


def test_nodes_pin_the_peer_mtu_to_exactly_their_peer_cidrs(case: tuple[HubSpokeConfig, Templates]) -> None:
    """Inter-Region peering carries at most 8500 bytes (EC2 User Guide, 'Network MTU'); a Region's nodes read
    the routes published in their Region: a spoke's Storage stack publishes its hub, Link stacks the spokes."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        region = config.region_config(region_code)
        published = [
            p["Value"]
            for t in templates.values()
            if t["Metadata"]["hubspoke"]["region"] == region_code
            for _, p in properties(t, "AWS::SSM::Parameter")
            if "/peer-mtu/" in p.get("Name", "")
        ]
        want_mtu = min(config.inter_region_mtu, 8500)
        assert sorted(published) == sorted(f"{c} {want_mtu}" for c in config.peer_cidrs(region))
        hub_template = region is config.hub
        own = [p for _, p in properties(template, "AWS::SSM::Parameter") if "/peer-mtu/" in p.get("Name", "")]
        assert bool(own) is not hub_template, "the hub's own template never names a spoke"
        for _, node in resources(template, "AWS::EC2::Instance"):
            script = _boot_script(node["Properties"])
            assert f"--path /hubspoke/{config.environment}/peer-mtu/" in script
            assert "hubspoke-peer-mtu.timer" in script


def test_the_wait_fits_cloudformations_custom_resource_limit(case: tuple[HubSpokeConfig, Templates]) -> None:
    """CDK Provider: the waiter retries every queryInterval up to totalTimeout; CloudFormation allows a custom
    resource at most 3600 s (ServiceTimeout 1..3600)."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        minutes = config.region_config(region_code).storage.formation_timeout_minutes
        [(_, machine)] = list(properties(template, "AWS::StepFunctions::StateMachine"))
        text = "".join(p for p in machine["DefinitionString"]["Fn::Join"][1] if isinstance(p, str))
        interval = int(re.search(r'"IntervalSeconds":(\d+)', text).group(1))  # type: ignore[union-attr]
        attempts = int(re.search(r'"MaxAttempts":(\d+)', text).group(1))  # type: ignore[union-attr]
        assert interval * attempts == minutes * 60 < 3600
        for kind in (CLUSTER_RESOURCE, PORTAL_RESOURCE):
            for _, custom in properties(template, kind):
                assert int(custom["ServiceTimeout"]) == 3600 and custom["WaitSeconds"] == str(minutes * 60)


def test_every_node_waits_for_the_node_shape_guard(case: tuple[HubSpokeConfig, Templates]) -> None:
    """The guard carries every node property CloudFormation applies by replacing or stopping the instance:
    ImageId, InstanceType, UserData (its sha256), the block devices and the ENI's subnet."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        storage = config.region_config(region_code).storage
        [(guard_id, guard)] = list(properties(template, NODE_SHAPE_RESOURCE))
        assert (guard["ImageId"], guard["InstanceType"]) == (storage.ami_id, storage.instance_type)
        nodes = [node for _, node in resources(template, "AWS::EC2::Instance")]
        assert all(guard_id in node["DependsOn"] for node in nodes)
        scripts = {_boot_script(node["Properties"]) for node in nodes}
        assert [hashlib.sha256(s.encode()).hexdigest() for s in scripts] == [guard["UserDataSha256"]]
        assert {json.dumps(e["SubnetId"]) for _, e in properties(template, "AWS::EC2::NetworkInterface")} == {
            json.dumps(guard["SubnetId"])
        }
        [(_, launch)] = properties(template, "AWS::EC2::LaunchTemplate")
        mapped = [
            {"device": m["DeviceName"], "type": m["Ebs"]["VolumeType"], "size_gib": m["Ebs"]["VolumeSize"],
             "iops": m["Ebs"].get("Iops"), "throughput_mibps": m["Ebs"].get("Throughput")}
            for m in launch["LaunchTemplateData"]["BlockDeviceMappings"]
        ]  # fmt: skip
        assert json.loads(guard["BlockDevices"]) == mapped
        reads = {
            a
            for _, policy in properties(template, "AWS::IAM::Policy")
            for st in policy["PolicyDocument"]["Statement"]
            for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
        }
        assert {"ec2:DescribeInstances", "ec2:DescribeVolumes", "ec2:DescribeInstanceAttribute"} <= reads
        # The protection switch rests only on keys every request context for the nodes holds (see below).
        for _, node in resources(template, "AWS::EC2::Instance"):
            assert _modify_allowed_by(template, _guaranteed_context(node["Properties"]["Tags"]))


def _guaranteed_context(tags: list[dict[str, Any]]) -> dict[str, str]:
    """The request context keys a ModifyInstanceAttribute on a node surely carries: its tags as
    aws:ResourceTag/<key> (IAM User Guide, "AWS global condition context keys": present when the resource has
    the tag). Not ec2:Attribute: the Service Authorization Reference lists it for EC2 Modify*Attribute, but
    public reports find it absent from the evaluated context (ModifySnapshotAttribute), so it is not here."""
    return {f"aws:ResourceTag/{t['Key']}": t["Value"] for t in tags}


def _modify_allowed_by(template: dict[str, Any], context: dict[str, str]) -> bool:
    """Whether an Allow statement for ec2:ModifyInstanceAttribute matches the context. IAM User Guide,
    "IAM JSON policy elements: Condition": every operator and key must match (AND), any listed value (OR); a key
    absent from the context fails a StringEquals-family operator unless ...IfExists."""
    operators = {"StringEquals": str.__eq__, "StringEqualsIgnoreCase": lambda a, b: a.lower() == b.lower()}
    for _, policy in properties(template, "AWS::IAM::Policy"):
        for st in policy["PolicyDocument"]["Statement"]:
            if st["Effect"] != "Allow" or "ec2:ModifyInstanceAttribute" not in json.dumps(st["Action"]):
                continue
            # an operator this model does not know counts as denying
            matched = all(
                operator in operators
                and key in context
                and any(
                    operators[operator](context[key], v)
                    for v in (wanted if isinstance(wanted, list) else [wanted])
                )
                for operator, keys in st.get("Condition", {}).items()
                for key, wanted in keys.items()
            )
            if matched:
                return True
    return False


def test_the_protection_switch_model_refuses_what_iam_refuses() -> None:
    """The model above is not vacuous: a statement on a key the context lacks (ec2:Attribute, as the
    previous policy had it) or on another cluster's tag allows nothing."""
    statement = {
        "Effect": "Allow",
        "Action": "ec2:ModifyInstanceAttribute",
        "Condition": {
            "StringEquals": {"aws:ResourceTag/hubspoke:cnq-cluster": ["dev-use2"]},
            "StringEqualsIgnoreCase": {"ec2:Attribute": "DisableApiTermination"},
        },
    }
    template = {"Resources": {"P": {"Type": "AWS::IAM::Policy", "Properties": {
        "PolicyDocument": {"Statement": [statement]}}}}}  # fmt: skip
    tags = [{"Key": "hubspoke:cnq-cluster", "Value": "dev-use2"}]
    assert not _modify_allowed_by(template, _guaranteed_context(tags))
    del statement["Condition"]["StringEqualsIgnoreCase"]
    assert _modify_allowed_by(template, _guaranteed_context(tags))
    assert not _modify_allowed_by(
        template, _guaranteed_context([{"Key": "hubspoke:cnq-cluster", "Value": "x"}])
    )


def test_no_persistent_storage_bucket_is_created_before_the_guard_passes(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    """A deploy the node-shape guard refuses must not leave new buckets behind: CloudFormation creates a
    resource only after those in its DependsOn (Template Reference, "DependsOn attribute"), so every
    persistent-storage bucket (the KMS-encrypted ones) names the guard. They stay Retain, not
    RetainExceptOnCreate ("DeletionPolicy attribute"): a rollback after add_object_storage_uris would
    otherwise delete buckets Qumulo writes to."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        [(guard_id, _)] = list(properties(template, NODE_SHAPE_RESOURCE))
        buckets = [
            (logical_id, bucket)
            for logical_id, bucket in resources(template, "AWS::S3::Bucket")
            if "aws:kms" in json.dumps(bucket["Properties"].get("BucketEncryption"))
        ]
        assert len(buckets) == config.region_config(region_code).storage.buckets
        for logical_id, bucket in buckets:
            assert guard_id in bucket.get("DependsOn", []), f"{region_code} {logical_id}"
            assert bucket["DeletionPolicy"] == "Retain", f"{region_code} {logical_id}"


def test_node_protection_is_the_last_step_and_reads_only_its_own_stack(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    """A failure anywhere in a Storage stack, the portal included, must roll back unprotected nodes: the
    protection resource depends on every other resource of its template but the bucket step (which comes
    after it, test_new_buckets_reach_qumulo_in_the_last_step) and lists every node."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        [(protection_id, protection)] = resources(template, NODE_PROTECTION_RESOURCE)
        [(buckets_id, _)] = resources(template, PERSISTENT_STORAGE_RESOURCE)
        # CDKMetadata (the CLI's version reporting) creates nothing and cannot be waited for: aws-cdk-lib 2.275.0
        # adds it at synth, after every construct (core/lib/private/synthesis.js, injectMetadataResources), as a
        # resource of type AWS::CDK::Metadata with only an Analytics property (metadata-resource.js).
        metadata = {k for k, _ in resources(template, "AWS::CDK::Metadata")}
        others = set(template["Resources"]) - {protection_id, buckets_id} - metadata
        assert set(protection["DependsOn"]) == others, region_code
        nodes = [{"Ref": k} for k, _ in resources(template, "AWS::EC2::Instance")]
        assert protection["Properties"]["NodeInstanceIds"] == nodes
        reads = [
            st
            for _, policy in properties(template, "AWS::IAM::Policy")
            for st in policy["PolicyDocument"]["Statement"]
            if "cloudformation:DescribeStacks" in json.dumps(st["Action"])
        ]
        assert [(r["Action"], r["Resource"]) for r in reads] == [
            ("cloudformation:DescribeStacks", {"Ref": "AWS::StackId"})
        ]


def test_new_buckets_reach_qumulo_in_the_last_step(case: tuple[HubSpokeConfig, Templates]) -> None:
    """Qumulo cannot give a bucket back (qumulo-api 7.10.2.1, qumulo/rest/object_storage.py: get_uris and
    add_uris only), so the step that hands it the buckets depends on every other resource of the Storage
    stack: whatever else an update changes has succeeded before, and only a failure of that step itself can
    roll the update back after the buckets reached the cluster. It lists every bucket the cluster lists."""
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        [(buckets_id, step)] = resources(template, PERSISTENT_STORAGE_RESOURCE)
        metadata = {k for k, _ in resources(template, "AWS::CDK::Metadata")}
        assert set(step["DependsOn"]) == set(template["Resources"]) - {buckets_id} - metadata, region_code
        [(_, cluster)] = list(resources(template, CLUSTER_RESOURCE))
        assert step["Properties"]["ObjectStorageUris"] == cluster["Properties"]["ObjectStorageUris"]
        assert step["Properties"]["UsableCapacityBytes"] == cluster["Properties"]["UsableCapacityBytes"]


def test_every_bucket_key_and_secret_is_retained_and_encrypted(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        storage = config.region_config(region_code).storage
        kinds = ("AWS::S3::Bucket", "AWS::KMS::Key", "AWS::SecretsManager::Secret")
        data = [(kind, res) for kind in kinds for _, res in resources(template, kind)]
        assert sum(1 for kind, _ in data if kind == "AWS::S3::Bucket") == storage.buckets + 1  # + access logs
        # Buckets Retain (Qumulo writes to them from formation; S3 deletes only an empty bucket); the key and
        # secrets RetainExceptOnCreate since 37eb777, so a rolled-back first create leaves none billed
        # (CloudFormation Template Reference, "DeletionPolicy attribute"); every one kept on replacement.
        for kind, res in data:
            deletion = "Retain" if kind == "AWS::S3::Bucket" else "RetainExceptOnCreate"
            assert (res["DeletionPolicy"], res["UpdateReplacePolicy"]) == (deletion, "Retain"), (
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
        assert len(persistent) == storage.buckets
        for props in persistent:
            rule = props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
                "ServerSideEncryptionByDefault"
            ]
            assert rule["SSEAlgorithm"] == "aws:kms" and "KMSMasterKeyID" in rule, "customer KMS key"
        policies = [
            p["Properties"]["PolicyDocument"] for _, p in resources(template, "AWS::S3::BucketPolicy")
        ]
        ssl_only = [s for doc in policies for s in doc["Statement"] if s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"]  # fmt: skip
        assert len(ssl_only) == storage.buckets + 1
        assert all(k["Properties"]["EnableKeyRotation"] for _, k in resources(template, "AWS::KMS::Key"))


def test_no_secret_in_any_template(case: tuple[HubSpokeConfig, Templates]) -> None:
    _, templates = case
    for stack_id, template in templates.items():
        text = json.dumps(template)
        assert "resolve:secretsmanager" not in text, f"{stack_id} resolves a secret into the template"
        for _, secret in resources(template, "AWS::SecretsManager::Secret"):
            assert (
                "SecretString" not in secret["Properties"] and "GenerateSecretString" in secret["Properties"]
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
    if not hub.storage.enabled:  # then no spoke has a CNQ either (validation refuses it): no portal anywhere
        assert not any(list(resources(t, PORTAL_RESOURCE)) for t in templates.values())
        return
    assert not list(resources(templates[f"storage-{hub.region}"], PORTAL_RESOURCE)), (
        "the hub never names a spoke"
    )
    hub_outputs = templates[f"storage-{hub.region}"]["Outputs"]
    # The output contract (hubspoke/outputs.py), written out: a rename breaks deployed spokes.
    assert {"FloatingIps", "AdminSecretArn"} <= set(hub_outputs)
    for spoke in (s for s in config.spokes if s.storage.enabled):
        portal = _one_portal(templates[f"storage-{spoke.region}"])
        for key, output in (("HubRestAddresses", "FloatingIps"), ("HubPortalHosts", "FloatingIps"),
                            ("HubSecretArn", "AdminSecretArn")):  # fmt: skip
            ref = portal[key]["Fn::GetStackOutput"]
            assert (ref["StackName"], ref["Region"]) == (
                stack_name(config, "storage", hub.region),
                hub.region,
            ), "a weak reference to the hub's Storage stack, in the hub's Region"
            # ...to the value the hub publishes under that name for the CLI (CDK reads it by its own output).
            assert hub_outputs[ref["OutputName"]]["Value"] == hub_outputs[output]["Value"], key
        assert (portal["HubRoot"], portal["SpokeRoot"]) == (
            hub.storage.dataset_path,
            spoke.storage.dataset_path,
        )
        assert portal["Mode"] == spoke.portal.mode
        assert float(portal["EvictionFreeThreshold"]) == spoke.portal.eviction_free_threshold


def test_cluster_resource_carries_the_release_and_local_exports(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for region_code, template in storage_templates(config, templates).items():
        region = config.region_config(region_code)
        [(_, cluster)] = list(resources(template, CLUSTER_RESOURCE))
        props = cluster["Properties"]
        assert region.storage.qumulo_core is not None
        assert props["QumuloCoreVersion"] == region.storage.qumulo_core.version
        # Stated, not hard-coded: the create call's product_type (qumulo-api 7.10.2.1, create_object_backed_cluster).
        assert props["ProductType"] == region.storage.product_type
        assert "PeerMtu" not in props, "host-managed networking: the MTU is the nodes' route table's business"
        # The floating IPs live in the nodes' subnet: the accelerator subnet, the VPC's first quarter (layout.py).
        first_quarter = next(ipaddress.IPv4Network(region.cidr).subnets(prefixlen_diff=2))
        assert props["FloatingNetmask"] == str(first_quarter)
        assert props["ClientCidrs"] == list(region.all_cidrs)
        assert props["ExportPaths"] == [region.storage.checkpoint_path], (
            "a spoke's dataset belongs to its portal"
        )
        # The hub's dataset over NFS read-only (issue 40 item 4): a sealed version is never written through it.
        hub_dataset = [region.storage.dataset_path] if region is config.hub else []
        assert props["ReadOnlyExportPaths"] == hub_dataset


def test_provisioner_runs_in_the_vpc_and_reaches_only_rest_and_https(
    case: tuple[HubSpokeConfig, Templates],
) -> None:
    config, templates = case
    for template in storage_templates(config, templates).values():
        functions = [res["Properties"] for _, res in resources(template, "AWS::Lambda::Function")]
        handler = next(f for f in functions if f.get("Handler", "").endswith("on_event"))
        assert handler["VpcConfig"]["SubnetIds"]
        [sg_id] = [s["Fn::GetAtt"][0] for s in handler["VpcConfig"]["SecurityGroupIds"]]
        egress = template["Resources"][sg_id]["Properties"]["SecurityGroupEgress"]
        assert {(e["IpProtocol"], e["FromPort"]) for e in egress} == {("tcp", 8000), ("tcp", 443)}


def test_a_deploy_that_changes_nothing_about_the_nodes_leaves_them_untouched(
    dev_config: HubSpokeConfig, dev_templates: Templates, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A node is replaced when its ImageId changes and stopped when its UserData or InstanceType does
    (CloudFormation, AWS::EC2::Instance 'Update requires'): a new release, more buckets, a higher limit,
    another portal mode or one more spoke must change none of them, in any Region. Nor their launch
    template: a new version is a new LaunchTemplate.Version on every node (Update requires: Replacement)."""
    data = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())
    for region in (data["hub"], *data["spokes"]):
        region["storage"]["qumulo_core"]["version"] = "7.11.0"
        region["storage"].update(soft_capacity_limit_tb=9000, bucket_count=20)
    data["spokes"][0]["portal"] = {"mode": "read_write"}
    core = data["hub"]["storage"]["qumulo_core"]
    data["spokes"].append({"region": "eu-west-1", "cidr": "10.30.0.0/16", "compute": {"enabled": False},
                           "storage": {"qumulo_core": dict(core)}})  # fmt: skip
    changed = synth(load(write_config(tmp_path_factory.mktemp("changed"), with_pins(data))).config)
    for region in dev_config.regions():
        stack = f"storage-{region.region}"
        for kind in ("AWS::EC2::Instance", "AWS::EC2::NetworkInterface", "AWS::EC2::LaunchTemplate"):
            # Properties only: DependsOn orders a deploy and changes nothing on a resource (more buckets can add
            # one of CDK's overflow policies to the node role, which the nodes wait for).
            before, after = ({k: r["Properties"] for k, r in resources(t[stack], kind)}
                             for t in (dev_templates, changed))  # fmt: skip
            expected = 1 if kind == "AWS::EC2::LaunchTemplate" else region.storage.node_count
            assert len(before) == expected and before == after, f"{stack}: {kind} changed"
    assert "eu-west-1" not in json.dumps(changed[f"storage-{dev_config.hub.region}"]), (
        "the hub never names a spoke"
    )
