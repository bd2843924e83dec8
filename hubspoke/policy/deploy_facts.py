"""Deploy-time facts a first deploy depends on, as rules: alarms that can notify, groups within their quota, no
reserved concurrency a new account cannot give.

Facts they rest on:
- A topic policy replaces SNS's default one, so CloudWatch may publish to a topic only if its policy says so
  (AWS Knowledge Center, "cloudwatch-receive-sns-for-alarm-trigger").
- "Inbound or outbound rules per security group": 60 by default, adjustable (Amazon VPC quotas, L-0EA8095F);
  CloudFormation fails on the first rule past it.
- Lambda keeps at least 100 executions unreserved (Lambda Developer Guide, "Configuring reserved
  concurrency"); accounts with a low concurrency limit refuse any reservation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.model import PolicyRule, Template, Violation, referenced
from hubspoke.topology import stack_name

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
                grants |= {referenced(topic) for topic in policy.get("Topics", [])}
        resources = t.body.get("Resources", {})
        # Composite alarms notify through SNS exactly as metric alarms do (AWS::CloudWatch::CompositeAlarm
        # AlarmActions/OKActions).
        every_alarm = [
            *t.resources("AWS::CloudWatch::Alarm"),
            *t.resources("AWS::CloudWatch::CompositeAlarm"),
        ]
        for logical_id, alarm in every_alarm:
            actions = [*alarm.get("AlarmActions", []), *alarm.get("OKActions", [])]
            for topic in {referenced(a) for a in actions} - grants - {None}:
                if resources.get(topic, {}).get("Type") != "AWS::SNS::Topic":
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


def _stack_of(t: Template) -> str:
    meta = t.meta
    return f"{meta.get('environment')}/{meta.get('kind')}/{meta.get('spoke') or meta.get('region')}"


def _group_key(group_id: Any, t: Template, stacks: Mapping[str, Template]) -> tuple[str, str] | None:
    """(stack, logical ID) of the security group a rule's GroupId points at, across weak references."""
    if isinstance(group_id, Mapping) and "Fn::GetStackOutput" in group_id:
        ref = group_id["Fn::GetStackOutput"]
        producer = stacks.get(ref.get("StackName", ""))
        if producer is None:
            return None
        value = producer.body.get("Outputs", {}).get(ref.get("OutputName"), {}).get("Value")
        return _group_key(value, producer, stacks)
    logical_id = referenced(group_id)
    return None if logical_id is None else (_stack_of(t), logical_id)


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


DEPLOY_FACT_RULES: tuple[PolicyRule, ...] = (
    alarm_topics_let_cloudwatch_publish,
    inbound_rules_within_quota,
    reserved_concurrency_only_when_opted_in,
)
