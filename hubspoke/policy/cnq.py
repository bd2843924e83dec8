"""Our rules on Cloud Native Qumulo nodes: created unprotected, on a pinned image and a literal boot script, with
the egress Qumulo needs, and its replication port closed."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.names import CNQ_CLUSTER_TAG
from hubspoke.policy.model import PolicyRule, Template, Violation, ingress
from hubspoke.ports import QUMULO_REPLICATION


def _cnq_nodes(t: Template) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for logical_id, props in t.resources("AWS::EC2::Instance"):
        if any(
            tag.get("Key") == CNQ_CLUSTER_TAG for tag in props.get("Tags", []) if isinstance(tag, Mapping)
        ):
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
                    "render the boot script from config-derived names only (hubspoke.cnq_boot)",
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
                    f"CNQ nodes in {t.meta.get('region')} but its network stack lacks {what}",
                    "keep nat: single or per_az where storage is enabled; keep the VPC's S3 gateway endpoint",
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
        for logical_id, rule in ingress(t):
            if _opens(rule, QUMULO_REPLICATION) and not _self_reference(logical_id, rule):
                what = "every protocol" if str(rule.get("IpProtocol")) == "-1" else "TCP"
                yield Violation(
                    "HubSpoke-NoUnusedQumuloPort",
                    t.path,
                    logical_id,
                    f"ingress on {what} {rule.get('FromPort', '')}-{rule.get('ToPort', '')} opens Qumulo "
                    "replication (3712), which nothing here uses",
                    "open only the ports in hubspoke/ports.py; portals need 3713",
                )


CNQ_RULES: tuple[PolicyRule, ...] = (
    no_termination_protection_in_templates,
    node_image_is_pinned,
    node_user_data_is_literal,
    cnq_regions_have_egress_and_s3_gateway,
    replication_port_closed,
)
