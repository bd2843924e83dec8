"""Our rule pack over synthesized templates: one rule, one small function, one fix a user can act on.

Rules take every template of one environment at once (the peering rule needs both sides) and the
config that produced them. No CDK import: tests run the same rules as invariants over cdk.out.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hubspoke.config.layout import route_table_az_ids
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.outputs import PEERING_CONNECTION, PRIVATE_ROUTE_TABLE
from hubspoke.topology import stack_name

# Every template we emit carries this metadata (stage.py) so rules know which stack they read.
METADATA_KEY = "hubspoke"


@dataclass(frozen=True)
class Template:
    """One synthesized stack template and what stage.py recorded about it."""

    path: str
    body: Mapping[str, Any]

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.body.get("Metadata", {}).get(METADATA_KEY, {})

    def resources(self, kind: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for logical_id, res in self.body.get("Resources", {}).items():
            if res.get("Type") == kind:
                yield logical_id, res.get("Properties", {})


@dataclass(frozen=True)
class Violation:
    """A rule broken by one resource, with the fix."""

    rule: str
    template: str
    logical_id: str
    message: str
    fix: str


PolicyRule = Callable[[list[Template], HubSpokeConfig], Iterator[Violation]]


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


def _ref(value: Any) -> Any:
    return value.get("Ref") if isinstance(value, Mapping) else value


def _output_of(value: Any, stack: str) -> Any:
    """The output name a Fn::GetStackOutput reads, if it reads stack `stack` (else None)."""
    if isinstance(value, Mapping) and "Fn::GetStackOutput" in value:
        ref = value["Fn::GetStackOutput"]
        if ref.get("StackName") == stack:
            return ref.get("OutputName")
    return None


CLOUDWATCH_SERVICE = "cloudwatch.amazonaws.com"


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _publishes(statement: Mapping[str, Any]) -> bool:
    principal = statement.get("Principal")
    services = _as_list(principal.get("Service", [])) if isinstance(principal, Mapping) else []
    actions = [a.lower() for a in _as_list(statement.get("Action", [])) if isinstance(a, str)]
    return (
        statement.get("Effect") == "Allow"
        and CLOUDWATCH_SERVICE in services
        and any(a in ("sns:publish", "sns:*", "*") for a in actions)
    )


def alarm_topics_let_cloudwatch_publish(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-AlarmTopicPublish: an alarm's topic policy lets CloudWatch publish (a topic policy replaces SNS's default)."""
    for t in templates:
        grants: set[str] = set()
        for _, policy in t.resources("AWS::SNS::TopicPolicy"):
            statements = policy.get("PolicyDocument", {}).get("Statement", [])
            if any(_publishes(s) for s in statements):
                grants |= {_ref(topic) for topic in policy.get("Topics", [])}
        for logical_id, alarm in t.resources("AWS::CloudWatch::Alarm"):
            actions = [*alarm.get("AlarmActions", []), *alarm.get("OKActions", [])]
            for topic in {_ref(a) for a in actions if isinstance(_ref(a), str)} - grants:
                if t.body.get("Resources", {}).get(topic, {}).get("Type") != "AWS::SNS::Topic":
                    continue
                yield Violation(
                    "HubSpoke-AlarmTopicPublish",
                    t.path,
                    logical_id,
                    f"alarm notifies topic {topic}, whose policy does not allow {CLOUDWATCH_SERVICE} sns:Publish: "
                    "a topic policy replaces SNS's default one, so every alarm action fails (AWS Knowledge Center, "
                    "cloudwatch-receive-sns-for-alarm-trigger)",
                    "allow cloudwatch.amazonaws.com sns:Publish on the topic, conditioned on the alarms' ARNs "
                    "(hubspoke.constructs.alarms.AlarmTopic does)",
                )


def _group_key(group_id: Any, t: Template, stacks: Mapping[str, Template]) -> tuple[str, str] | None:
    """(stack, logical ID) of the security group a rule's GroupId points at, across weak references."""
    if isinstance(group_id, Mapping) and "Fn::GetStackOutput" in group_id:
        ref = group_id["Fn::GetStackOutput"]
        producer = stacks.get(ref.get("StackName", ""))
        if producer is None:
            return None
        value = producer.body.get("Outputs", {}).get(ref.get("OutputName"), {}).get("Value")
        return _group_key(value, producer, stacks)
    if isinstance(group_id, Mapping) and "Fn::GetAtt" in group_id:
        return _stack_of(t), group_id["Fn::GetAtt"][0]
    if isinstance(group_id, Mapping) and "Ref" in group_id:
        return _stack_of(t), group_id["Ref"]
    return None


def _stack_of(t: Template) -> str:
    meta = t.meta
    return f"{meta.get('environment')}/{meta.get('kind')}/{meta.get('spoke') or meta.get('region')}"


def inbound_rules_within_quota(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-SecurityGroupRuleQuota: no security group holds more inbound rules than its Region's quota."""
    by_name = {stack_name(config, t.meta["kind"], t.meta.get("spoke") or t.meta["region"]): t
               for t in templates if t.meta.get("kind")}  # fmt: skip
    counts: dict[tuple[str, str], int] = {}
    homes: dict[tuple[str, str], Template] = {}
    for t in templates:
        for logical_id, props in t.resources("AWS::EC2::SecurityGroup"):
            key = (_stack_of(t), logical_id)
            counts[key] = counts.get(key, 0) + len(props.get("SecurityGroupIngress", []))
            homes[key] = t
        for _, props in t.resources("AWS::EC2::SecurityGroupIngress"):
            group = _group_key(props.get("GroupId"), t, by_name)
            if group is not None:
                counts[group] = counts.get(group, 0) + 1
    for key, count in counts.items():
        home = homes.get(key)
        region = home.meta.get("region") if home else None
        if home is None or region is None:
            continue
        quota = config.region_config(region).quotas.security_group_rules
        if count > quota:
            yield Violation(
                "HubSpoke-SecurityGroupRuleQuota",
                home.path,
                key[1],
                f"{count} inbound rules on one security group, over the {quota} the config relies on in {region} "
                "(Amazon VPC quotas: 'Inbound or outbound rules per security group', 60 by default, L-0EA8095F); "
                "CloudFormation fails on the first rule past the quota",
                f"request a higher quota and set quotas.security_group_rules for {region}, or peer fewer CIDRs",
            )


def reserved_concurrency_only_when_opted_in(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-ReservedConcurrency: no Lambda reserves concurrency unless the config opts the canary in."""
    for t in templates:
        allowed = config.ops.reserve_canary_concurrency and t.meta.get("kind") == "ops"
        for logical_id, props in t.resources("AWS::Lambda::Function"):
            if props.get("ReservedConcurrentExecutions") is not None and not allowed:
                yield Violation(
                    "HubSpoke-ReservedConcurrency",
                    t.path,
                    logical_id,
                    "function reserves concurrency: Lambda keeps at least 100 executions unreserved (Lambda "
                    "Developer Guide, 'Configuring reserved concurrency'), so accounts with a low concurrency "
                    "limit (new accounts often have 10) refuse the stack",
                    "remove ReservedConcurrentExecutions, or set ops.reserve_canary_concurrency: true for the "
                    "canary and let `hubspoke preflight` check the account",
                )


RULES: tuple[PolicyRule, ...] = (
    no_ingress_from_world,
    ingress_only_from_known_cidrs,
    peerings_routed_on_both_sides,
    no_route_between_spokes,
    alarm_topics_let_cloudwatch_publish,
    inbound_rules_within_quota,
    reserved_concurrency_only_when_opted_in,
)


def check(templates: list[Template], config: HubSpokeConfig) -> list[Violation]:
    return [v for rule in RULES for v in rule(templates, config)]
