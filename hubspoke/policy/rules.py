"""Our rule pack over synthesized templates: one rule, one small function, one fix a user can act on.

Rules take every template of one environment at once (the peering rule needs both sides) and the
config that produced them. No CDK import: tests run the same rules as invariants over cdk.out.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.cnq.runtime.nodes import CLUSTER_TAG
from hubspoke.outputs import PEERING_CONNECTION, PRIVATE_ROUTE_TABLE
from hubspoke.policy.deploy_facts import DEPLOY_FACT_RULES
from hubspoke.policy.model import METADATA_KEY, PolicyRule, Template, Violation, referenced
from hubspoke.policy.waiters import custom_resource_waits_within_service_timeout
from hubspoke.topology import stack_name

__all__ = ["METADATA_KEY", "RULES", "PolicyRule", "Template", "Violation", "check"]


def _ingress(template: Template) -> Iterator[tuple[str, Mapping[str, Any]]]:
    yield from template.resources("AWS::EC2::SecurityGroupIngress")
    for logical_id, props in template.resources("AWS::EC2::SecurityGroup"):
        for rule in props.get("SecurityGroupIngress", []):
            yield logical_id, rule


def no_ingress_from_world(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-NoWorldIngress: nothing we deploy is reachable from the whole internet."""
    for t in templates:
        for logical_id, rule in _ingress(t):
            if rule.get("CidrIp") == "0.0.0.0/0" or rule.get("CidrIpv6") == "::/0":
                yield Violation(
                    "HubSpoke-NoWorldIngress",
                    t.path,
                    logical_id,
                    "security group ingress from 0.0.0.0/0 or ::/0",
                    "allow the peer VPC CIDR or the configured admin CIDR instead",
                )


def ingress_only_from_known_cidrs(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-PeerCidrIngress: ingress from outside a VPC comes only from its configured peers (or admin CIDR)."""
    for t in templates:
        region_code = t.meta.get("region")
        if region_code is None:
            continue
        region = config.region_config(region_code)
        own = [ipaddress.IPv4Network(c) for c in region.all_cidrs]
        allowed = set(config.peer_cidrs(region)) | set(region.compute.public_access_cidrs)
        if region.storage.admin_cidr:
            allowed.add(region.storage.admin_cidr)
        if t.meta.get("spoke"):  # a Link stack speaks for one spoke only
            allowed = set(config.spoke(t.meta["spoke"]).all_cidrs)
        for logical_id, rule in _ingress(t):
            cidr = rule.get("CidrIp")
            if not isinstance(cidr, str):
                continue
            net = ipaddress.IPv4Network(cidr, strict=False)
            if any(net.subnet_of(o) for o in own) or cidr in allowed:
                continue
            yield Violation(
                "HubSpoke-PeerCidrIngress",
                t.path,
                logical_id,
                f"ingress from {cidr}, which is neither this VPC nor a configured peer of {region_code}",
                f"allow only {', '.join(sorted(allowed)) or 'the VPC itself'}",
            )


def peerings_routed_on_both_sides(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-PeeringRouted: every peering has routes to the peer's CIDRs in every private route table, both sides."""
    by_kind = {(t.meta.get("kind"), t.meta.get("region"), t.meta.get("spoke")): t for t in templates}
    hub = config.hub
    hub_network = stack_name(config, "network", hub.region)
    hub_tables = {PRIVATE_ROUTE_TABLE.key(az) for az in route_table_az_ids(hub)}
    for spoke in config.spokes:
        net = by_kind.get(("network", spoke.region, None))
        link = by_kind.get(("link", hub.region, spoke.region))
        spoke_network = stack_name(config, "network", spoke.region)
        if net is None:
            yield Violation(
                "HubSpoke-PeeringRouted",
                spoke_network,
                spoke_network,
                f"no Network template for spoke {spoke.region}: its peering cannot be checked",
                "synthesize every stack of the environment before checking policy",
            )
            continue
        outputs = net.body.get("Outputs", {})
        tables = {_ref(outputs[k].get("Value")) for k in outputs if k.startswith(PRIVATE_ROUTE_TABLE.name)}
        for logical_id, _ in net.resources("AWS::EC2::VPCPeeringConnection"):
            want = {(table, cidr) for table in tables for cidr in hub.all_cidrs}
            have = {
                (_ref(r.get("RouteTableId")), r.get("DestinationCidrBlock"))
                for _, r in net.resources("AWS::EC2::Route")
                if _ref(r.get("VpcPeeringConnectionId")) == logical_id
            }
            if missing := want - have:
                yield Violation(
                    "HubSpoke-PeeringRouted",
                    net.path,
                    logical_id,
                    f"spoke side lacks {len(missing)} route(s) to the hub over this peering",
                    "route every hub CIDR in every private route table of the spoke via the peering",
                )
        if link is None:
            yield Violation(
                "HubSpoke-PeeringRouted",
                net.path,
                spoke_network,
                f"no Link template for spoke {spoke.region}: the hub has no routes back over its peering",
                f"deploy the Link stack for {spoke.region} with a route per hub private route table",
            )
            continue
        # The Link stack reads the hub's route tables and the spoke's peering by weak reference: both the
        # output and the stack it comes from must be the right ones.
        want = {(table, cidr) for table in hub_tables for cidr in spoke.all_cidrs}
        have = {
            (_output_of(r.get("RouteTableId"), hub_network), r.get("DestinationCidrBlock"))
            for _, r in link.resources("AWS::EC2::Route")
            if _output_of(r.get("VpcPeeringConnectionId"), spoke_network) == PEERING_CONNECTION.key()
        }
        if missing := want - have:
            yield Violation(
                "HubSpoke-PeeringRouted",
                link.path,
                spoke_network,
                f"hub side lacks {len(missing)} route(s) to spoke {spoke.region} over its peering",
                f"route every CIDR of {spoke.region} in every hub private route table "
                f"({', '.join(sorted(hub_tables))} of {hub_network}) via {PEERING_CONNECTION.key()} of {spoke_network}",
            )


def no_route_between_spokes(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-NoTransitiveRoute: peering is not transitive, so a spoke never routes to another spoke."""
    for t in templates:
        if t.meta.get("kind") != "network" or t.meta.get("region") == config.hub.region:
            continue
        others = {c for s in config.spokes if s.region != t.meta.get("region") for c in s.all_cidrs}
        for logical_id, route in t.resources("AWS::EC2::Route"):
            if route.get("DestinationCidrBlock") in others:
                yield Violation(
                    "HubSpoke-NoTransitiveRoute",
                    t.path,
                    logical_id,
                    f"route to another spoke's CIDR {route['DestinationCidrBlock']}",
                    "remove it: spoke-to-spoke traffic cannot cross the hub's peerings",
                )


# ----- SageMaker HyperPod: deploy-time constraints its documentation states and a template shows -----
HYPERPOD_CLUSTER = "AWS::SageMaker::Cluster"
HEALTH_AGENT = "health-monitoring-agent"
# SageMaker developer guide, "Getting started with Amazon EKS support in SageMaker HyperPod": VPC CNI 1.18.3+.
MIN_VPC_CNI = (1, 18, 3)


def _groups(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    groups = props.get("InstanceGroups", [])
    return groups if isinstance(groups, list) else []


def _volume_keys(props: Mapping[str, Any]) -> list[Any]:
    return [
        config.get("EbsVolumeConfig", {}).get("VolumeKmsKeyId")
        for group in _groups(props)
        for config in group.get("InstanceStorageConfigs", [])
        if config.get("EbsVolumeConfig", {}).get("VolumeKmsKeyId")
    ]


def hyperpod_key_needs_continuous(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodKeyNeedsContinuous: a customer managed volume key only with continuous node provisioning."""
    for t in templates:
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            if _volume_keys(props) and props.get("NodeProvisioningMode") != "Continuous":
                yield Violation(
                    "HubSpoke-HyperPodKeyNeedsContinuous", t.path, logical_id,
                    "an instance group sets VolumeKmsKeyId but the cluster's NodeProvisioningMode is not Continuous",
                    "set NodeProvisioningMode: Continuous, or drop VolumeKmsKeyId for the AWS owned key (SageMaker "
                    "developer guide, 'Customer managed AWS KMS key encryption for SageMaker HyperPod': supported "
                    "only for clusters using the continuous node provisioning mode)",
                )  # fmt: skip


def hyperpod_key_policy_without_context(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-HyperPodKeyPolicy: a HyperPod volume key's policy is not scoped by encryption context."""
    for t in templates:
        keys = dict(t.resources("AWS::KMS::Key"))
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            for key_id in {referenced(k) for k in _volume_keys(props)} & set(keys):
                if "kms:EncryptionContext" in str(keys[key_id].get("KeyPolicy", {})):
                    yield Violation(
                        "HubSpoke-HyperPodKeyPolicy", t.path, key_id,
                        f"the key encrypting {logical_id}'s volumes has kms:EncryptionContext conditions",
                        "remove the encryption-context conditions: HyperPod passes no encryption context, so the "
                        "cluster could not use the key (SageMaker developer guide, 'Customer managed AWS KMS key "
                        "encryption for SageMaker HyperPod')",
                    )  # fmt: skip


def _literal_start(value: Any) -> str:
    """The literal beginning of a template string: the string itself, or a Fn::Join's leading literal part."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        if separator == "" and parts and isinstance(parts[0], str):
            return parts[0]
    return ""  # a generated name or a reference: nothing is known of its start


def _bucket_name(t: Template, value: Any) -> str | None:
    """The known beginning of the name of the S3 bucket an s3:// URI names, when the template shows it."""
    if isinstance(value, str):
        return value.removeprefix("s3://").split("/")[0] if value.startswith("s3://") else None
    if isinstance(value, Mapping) and "Fn::Join" in value:
        parts = value["Fn::Join"][1]
        if parts and parts[0] == "s3://" and len(parts) > 1:
            bucket = t.body.get("Resources", {}).get(referenced(parts[1]) or "", {})
            return _literal_start(bucket.get("Properties", {}).get("BucketName"))
    return None


def hyperpod_lifecycle_bucket(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodLifecycleBucket: lifecycle scripts come from a bucket whose name starts with sagemaker-."""
    for t in templates:
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            for group in _groups(props):
                name = _bucket_name(t, group.get("LifeCycleConfig", {}).get("SourceS3Uri"))
                if name is not None and not name.startswith("sagemaker-"):
                    yield Violation(
                        "HubSpoke-HyperPodLifecycleBucket", t.path, logical_id,
                        f"instance group {group.get('InstanceGroupName')} reads its lifecycle scripts from bucket "
                        f"{name or '(a generated name)'}",
                        "name the bucket sagemaker-...: the SageMaker API reference (ClusterLifeCycleConfig."
                        "SourceS3Uri) marks it Important, because the managed AmazonSageMakerClusterInstanceRolePolicy "
                        "on the nodes' role reads only buckets with that prefix (the API's own pattern, "
                        "(https|s3)://([^/]+)/?(.*), accepts any bucket)",
                    )  # fmt: skip


def hyperpod_access_entry(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodAccessEntry: no access entry of our own for an instance group's execution role."""
    for t in templates:
        roles = {
            referenced(g.get("ExecutionRole"))
            for _, props in t.resources(HYPERPOD_CLUSTER)
            for g in _groups(props)
        } - {None}
        for logical_id, props in t.resources("AWS::EKS::AccessEntry"):
            if referenced(props.get("PrincipalArn")) in roles:
                yield Violation(
                    "HubSpoke-HyperPodAccessEntry", t.path, logical_id,
                    "an access entry for a HyperPod execution role, which HyperPod creates itself",
                    "remove it: HyperPod creates the execution role's access entry (SageMaker API reference, "
                    "ClusterMetadata.EksRoleAccessEntries) and EKS allows one access entry per principal (EKS API "
                    "reference, CreateAccessEntry principalArn)",
                )  # fmt: skip


def _version(text: str) -> tuple[int, ...] | None:
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(p) for p in match.groups()) if match else None


def hyperpod_vpc_cni(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodVpcCni: the VPC CNI add-on of a HyperPod orchestrator is 1.18.3 or newer."""
    for t in templates:
        if not any(True for _ in t.resources(HYPERPOD_CLUSTER)):
            continue
        for logical_id, props in t.resources("AWS::EKS::Addon"):
            if props.get("AddonName") != "vpc-cni":
                continue
            version = _version(str(props.get("AddonVersion", "")))
            if version is None or version < MIN_VPC_CNI:
                yield Violation(
                    "HubSpoke-HyperPodVpcCni", t.path, logical_id,
                    f"vpc-cni {props.get('AddonVersion', '(EKS default)')} on a HyperPod orchestrator",
                    "pin vpc-cni 1.18.3 or newer (SageMaker developer guide, 'Getting started with Amazon EKS "
                    "support in SageMaker HyperPod')",
                )  # fmt: skip


def hyperpod_health_agent_region(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodAgentRegion: the dependencies chart gets the health agent's Region as a value."""
    for t in templates:
        region = t.meta.get("region")
        for logical_id, props in t.resources("Custom::HyperPodDependencies"):
            try:
                agent = json.loads(props.get("Values", "")).get(HEALTH_AGENT, {})
            except (TypeError, ValueError, AttributeError):
                agent = {}
            if agent.get("region") != region:
                yield Violation(
                    "HubSpoke-HyperPodAgentRegion", t.path, logical_id,
                    f"the chart's {HEALTH_AGENT}.region is {agent.get('region')!r}, not the stack's {region}",
                    f"pass Values as one JSON string with {HEALTH_AGENT}.region set: before any node exists the "
                    "chart falls back to us-east-1 (aws/sagemaker-hyperpod-cli at the pinned commit, "
                    "charts/health-monitoring-agent/templates/_helpers.tpl)",
                )  # fmt: skip


def _ref(value: Any) -> Any:
    return value.get("Ref") if isinstance(value, Mapping) else value


def _output_of(value: Any, stack: str) -> Any:
    """The output name a Fn::GetStackOutput reads, if it reads stack `stack` (else None)."""
    if isinstance(value, Mapping) and "Fn::GetStackOutput" in value:
        ref = value["Fn::GetStackOutput"]
        if ref.get("StackName") == stack:
            return ref.get("OutputName")
    return None


# --- CNQ deploy-time constraints (issue 13) ------------------------------------------------------------------
# AWS::CloudFormation::CustomResource ServiceTimeout: "an integer from 1 to 3600" seconds (the default).
CUSTOM_RESOURCE_LIMIT_SECONDS = 3600
# Qumulo "Required networking ports": 3712 is replication; portals use 3713. Nothing here replicates.
QUMULO_REPLICATION_PORT = 3712


def _cnq_nodes(t: Template) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for logical_id, props in t.resources("AWS::EC2::Instance"):
        if any(tag.get("Key") == CLUSTER_TAG for tag in props.get("Tags", []) if isinstance(tag, Mapping)):
            yield logical_id, props


def no_termination_protection_in_templates(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-NoTemplateTerminationProtection: no instance is created protected (EC2 User Guide, termination
    protection: a protected instance cannot be terminated, so a failed create could not roll back), neither
    by its own properties nor by the launch template it is launched from."""
    for t in templates:
        launched = [(i, p) for i, p in t.resources("AWS::EC2::Instance")]
        launched += [
            (i, p.get("LaunchTemplateData") or {}) for i, p in t.resources("AWS::EC2::LaunchTemplate")
        ]
        for logical_id, props in launched:
            if props.get("DisableApiTermination") not in (None, False, "false"):
                yield Violation(
                    "HubSpoke-NoTemplateTerminationProtection",
                    t.path,
                    logical_id,
                    "DisableApiTermination is set in the template: a failed create would end in ROLLBACK_FAILED",
                    "drop it from the template; the Storage stack protects the nodes as its last step "
                    "(Custom::CnqNodeProtection)",
                )


def node_image_is_pinned(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-PinnedNodeImage: every CNQ node boots a literal AMI ID. CloudFormation resolves parameters and
    dynamic references again on every update, and a new ImageId replaces the instance: all nodes at once."""
    for t in templates:
        for logical_id, props in _cnq_nodes(t):
            image = props.get("ImageId")
            if not (isinstance(image, str) and image.startswith("ami-")):
                yield Violation(
                    "HubSpoke-PinnedNodeImage",
                    t.path,
                    logical_id,
                    f"ImageId is {json.dumps(image)[:80]}, resolved at deploy time",
                    "pin storage.ami_id in the config (hubspoke ami prints the current Ubuntu image)",
                )


def node_user_data_is_literal(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-StableNodeUserData: a CNQ node's UserData is a literal. A changed UserData stops and starts the
    instance (AWS::EC2::Instance, 'Update requires: Some interruptions'), so it may follow nothing that moves."""
    for t in templates:
        for logical_id, props in _cnq_nodes(t):
            user_data = props.get("UserData")
            inner = user_data.get("Fn::Base64") if isinstance(user_data, Mapping) else None
            if not isinstance(inner, str):
                yield Violation(
                    "HubSpoke-StableNodeUserData",
                    t.path,
                    logical_id,
                    "UserData is missing or built from references that can change between deploys",
                    "render the boot script from config-derived names only (hubspoke.constructs.cnq.node)",
                )


def cnq_regions_have_egress_and_s3_gateway(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-CnqNetworkNeeds: a Region with CNQ nodes has a NAT gateway and an S3 gateway endpoint. Qumulo's
    CNQ guide: nodes must reach api.missionq.qumulo.com and api.nexus.qumulo.com for deployment and quorum, and
    'it isn't possible to deploy your cluster without' the S3 gateway endpoint."""
    networks = {t.meta.get("region"): t for t in templates if t.meta.get("kind") == "network"}
    for t in templates:
        nodes = list(_cnq_nodes(t))
        if not nodes:
            continue
        net = networks.get(t.meta.get("region"))
        nat = net is not None and any(True for _ in net.resources("AWS::EC2::NatGateway"))
        s3 = net is not None and any(
            str(p.get("ServiceName", "")).endswith(".s3") and p.get("VpcEndpointType", "Gateway") == "Gateway"
            for _, p in net.resources("AWS::EC2::VPCEndpoint")
        )
        for missing, what in ((not nat, "a NAT gateway"), (not s3, "an S3 gateway endpoint")):
            if missing:
                yield Violation(
                    "HubSpoke-CnqNetworkNeeds",
                    t.path,
                    nodes[0][0],
                    f"CNQ nodes in {t.meta.get('region')} but its network stack has no {what}",
                    "keep nat: single or per_az where storage is enabled; keep the VPC's S3 gateway endpoint",
                )


def waits_fit_the_custom_resource_limit(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-WaitWithinCustomResourceLimit: a provider's waiter (interval x attempts, aws-cdk-lib Provider) ends
    before CloudFormation's 3600-s custom-resource limit, so the failure CloudFormation shows is ours."""
    for t in templates:
        for logical_id, props in t.resources("AWS::StepFunctions::StateMachine"):
            definition = props.get("DefinitionString")
            parts = (
                definition.get("Fn::Join", ["", []])[1] if isinstance(definition, Mapping) else [definition]
            )
            text = "".join(p for p in parts if isinstance(p, str))
            for interval, attempts in re.findall(r'"IntervalSeconds":(\d+),"MaxAttempts":(\d+)', text):
                if int(interval) * int(attempts) >= CUSTOM_RESOURCE_LIMIT_SECONDS:
                    yield Violation(
                        "HubSpoke-WaitWithinCustomResourceLimit",
                        t.path,
                        logical_id,
                        f"the waiter may poll {int(interval) * int(attempts)} s; CloudFormation gives up at "
                        f"{CUSTOM_RESOURCE_LIMIT_SECONDS} s",
                        "keep the provider's total_timeout under 3600 s (for CNQ: "
                        "storage.formation_timeout_minutes at 55 or less)",
                    )


def _self_reference(logical_id: str, rule: Mapping[str, Any]) -> bool:
    """Ingress from the group itself (node to node), inline or standalone."""
    source = rule.get("SourceSecurityGroupId")
    target = rule.get("GroupId", {"Fn::GetAtt": [logical_id, "GroupId"]})
    return source is not None and source == target


def _opens(rule: Mapping[str, Any], port: int) -> bool:
    """Whether a rule admits TCP `port`: IpProtocol -1 (every protocol and port) or tcp/6 over a range holding
    it (AWS::EC2::SecurityGroupIngress: "Use -1 to specify all protocols"; protocol names or numbers)."""
    protocol = str(rule.get("IpProtocol", "")).lower()
    if protocol == "-1":
        return True
    low, high = rule.get("FromPort"), rule.get("ToPort")
    if protocol not in ("tcp", "6") or not isinstance(low, int) or not isinstance(high, int):
        return False
    return low <= port <= high or low == -1


def replication_port_closed(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-NoUnusedQumuloPort: TCP 3712 (Qumulo replication) stays closed: portals use 3713 (Qumulo
    'Required networking ports') and nothing in this project replicates. Traffic between the members of one
    security group (Qumulo's node-to-node rule, every port) is not an opening."""
    for t in templates:
        for logical_id, rule in _ingress(t):
            if _opens(rule, QUMULO_REPLICATION_PORT) and not _self_reference(logical_id, rule):
                what = "every protocol" if str(rule.get("IpProtocol")) == "-1" else "TCP"
                yield Violation(
                    "HubSpoke-NoUnusedQumuloPort",
                    t.path,
                    logical_id,
                    f"ingress on {what} {rule.get('FromPort', '')}-{rule.get('ToPort', '')} opens Qumulo "
                    "replication (3712), which nothing here uses",
                    "open only the ports in hubspoke/ports.py; portals need 3713",
                )


RULES: tuple[PolicyRule, ...] = (
    no_ingress_from_world,
    ingress_only_from_known_cidrs,
    peerings_routed_on_both_sides,
    no_route_between_spokes,
    no_termination_protection_in_templates,
    node_image_is_pinned,
    node_user_data_is_literal,
    cnq_regions_have_egress_and_s3_gateway,
    waits_fit_the_custom_resource_limit,
    replication_port_closed,
    hyperpod_key_needs_continuous,
    hyperpod_key_policy_without_context,
    hyperpod_lifecycle_bucket,
    hyperpod_access_entry,
    hyperpod_vpc_cni,
    hyperpod_health_agent_region,
    custom_resource_waits_within_service_timeout,
    *DEPLOY_FACT_RULES,
)


def check(templates: list[Template], config: HubSpokeConfig) -> list[Violation]:
    return [v for rule in RULES for v in rule(templates, config)]
