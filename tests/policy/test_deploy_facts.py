"""Deploy-time facts a template can show, as policy rules: each passes dev and catches its mutated template.

Sources: AWS Knowledge Center "cloudwatch-receive-sns-for-alarm-trigger" (a topic policy must allow
cloudwatch.amazonaws.com sns:Publish); Amazon VPC User Guide "Amazon VPC quotas" (60 inbound rules per security
group by default, L-0EA8095F); Lambda Developer Guide "Configuring reserved concurrency" (reservations must
leave 100 executions unreserved).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.rules import Template, check
from tests.conftest import Templates, minimal

DEFAULT_RULES_PER_GROUP = 60  # Amazon VPC quotas, "Inbound or outbound rules per security group"


def _violations(templates: Templates, config: HubSpokeConfig, rule: str) -> list[str]:
    return [
        v.logical_id for v in check([Template(k, t) for k, t in templates.items()], config) if v.rule == rule
    ]


def _unsaid(templates: Templates, config: HubSpokeConfig, rule: str, words: tuple[str, ...]) -> list[str]:
    """The words a reader needs (as written, case and all) missing from any of `rule`'s findings; "\n" anchors
    a message's or fix's start or end."""
    found = [v for v in check([Template(k, t) for k, t in templates.items()], config) if v.rule == rule]
    assert found, rule
    return [w for v in found for w in words if w not in f"\n{v.message}\n{v.fix}\n"]


def test_dev_templates_pass_the_deploy_rules(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    for rule in ("AlarmTopicPublish", "SecurityGroupRuleQuota", "ReservedConcurrency"):
        assert _violations(dev_templates, dev_config, f"HubSpoke-{rule}") == []


def test_an_alarm_topic_without_a_cloudwatch_publish_grant_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    broken = copy.deepcopy(dev_templates)
    for res in broken["ops-us-west-2"]["Resources"].values():
        if res["Type"] == "AWS::SNS::TopicPolicy":
            statements = res["Properties"]["PolicyDocument"]["Statement"]
            # What enforce_ssl alone writes: the TLS-only Deny, nothing that lets CloudWatch publish.
            statements[:] = [s for s in statements if s["Effect"] == "Deny"]
    hits = _violations(broken, dev_config, "HubSpoke-AlarmTopicPublish")
    notifying = [
        k
        for k, v in broken["ops-us-west-2"]["Resources"].items()
        if v["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
        and v["Properties"].get("AlarmActions")
    ]
    # A spoke's Ops stack pages on the composites hub-unreachable-page and portal-not-active-page, training-stalled,
    # throughput-low, gpu-utilization-low and the composite cache-hit-ratio-low (docs/operations.md); the
    # composites' inputs (the hit ratio's, the canary's probes and gate) notify nobody.
    # canary-failing notifies, and so do the four node and fabric health alarms (tests/constructs/test_node_health.py).
    # training-job-dead and training-crash-loop page too (tests/constructs/test_job_alarms.py).
    assert sorted(hits) == sorted(notifying) and len(notifying) == 7 + 4 + 2
    # The source docs/policy.md gives and the grant to add, as the reader will look them up.
    assert _unsaid(broken, dev_config, "HubSpoke-AlarmTopicPublish", (
        ": a topic policy replaces SNS's default one", "(AWS Knowledge Center, cloudwatch-receive-sns-for-alarm-trigger)\n",
        "\nallow cloudwatch.amazonaws.com sns:Publish on the topic", "alarms' ARNs (hubspoke.constructs.alarms.AlarmTopic does)\n",
    )) == []  # fmt: skip


def _extra_hub_ingress(templates: Templates, count: int) -> Templates:
    """`count` more rules on the hub's cross-Region group, added the way a Link stack adds them."""
    broken = copy.deepcopy(templates)
    link = broken["link-us-west-2"]["Resources"]
    model = next(v for v in link.values() if v["Type"] == "AWS::EC2::SecurityGroupIngress")
    for n in range(count):
        rule = copy.deepcopy(model)
        rule["Properties"].update(FromPort=20000 + n, ToPort=20000 + n, IpProtocol="tcp")
        link[f"Extra{n}"] = rule
    return broken


def _hub_rules(templates: Templates) -> int:
    return sum(
        1
        for v in templates["link-us-west-2"]["Resources"].values()
        if v["Type"] == "AWS::EC2::SecurityGroupIngress"
    )


def test_more_inbound_rules_than_the_quota_on_one_group_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, config_from: Any
) -> None:
    have = _hub_rules(dev_templates)
    at_quota = _extra_hub_ingress(dev_templates, DEFAULT_RULES_PER_GROUP - have)
    assert _violations(at_quota, dev_config, "HubSpoke-SecurityGroupRuleQuota") == []
    over = _extra_hub_ingress(dev_templates, DEFAULT_RULES_PER_GROUP - have + 1)
    [group] = _violations(over, dev_config, "HubSpoke-SecurityGroupRuleQuota")
    hub_groups = [
        k
        for k, v in dev_templates["network-us-east-2"]["Resources"].items()
        if v["Type"] == "AWS::EC2::SecurityGroup"
    ]
    assert group in hub_groups
    assert _unsaid(over, dev_config, "HubSpoke-SecurityGroupRuleQuota", (
        "(Amazon VPC quotas: 'Inbound or outbound rules per security group', 60 by default, L-0EA8095F); "
        "CloudFormation fails on the first rule past the quota\n",
    )) == []  # fmt: skip
    # A config that states a raised quota for the hub accepts the same templates.
    raised = config_from(
        minimal(hub={"region": "us-east-2", "cidr": "10.10.0.0/16", "quotas": {"security_group_rules": 100}})
    )
    assert _violations(over, raised, "HubSpoke-SecurityGroupRuleQuota") == []


def test_reserved_concurrency_without_the_opt_in_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, config_from: Any
) -> None:
    broken = copy.deepcopy(dev_templates)
    [canary] = [
        k for k, v in broken["ops-us-west-2"]["Resources"].items() if v["Type"] == "AWS::Lambda::Function"
    ]
    broken["ops-us-west-2"]["Resources"][canary]["Properties"]["ReservedConcurrentExecutions"] = 1
    assert _violations(broken, dev_config, "HubSpoke-ReservedConcurrency") == [canary]
    assert _unsaid(broken, dev_config, "HubSpoke-ReservedConcurrency", (
        "\nfunction reserves concurrency: Lambda keeps at least 100 executions unreserved",
        "with a low concurrency limit", "refuse the stack\n", "\nremove ReservedConcurrentExecutions, or set "
        "ops.reserve_canary_concurrency: true for the canary", "let `hubspoke preflight` check the account\n",
    )) == []  # fmt: skip
    opted_in = config_from(minimal(ops={"reserve_canary_concurrency": True}))
    assert _violations(broken, opted_in, "HubSpoke-ReservedConcurrency") == []
    # The opt-in is for the canary: a reservation elsewhere is still caught.
    compute = broken["compute-us-west-2"]["Resources"]
    other = next(k for k, v in compute.items() if v["Type"] == "AWS::Lambda::Function")
    compute[other]["Properties"]["ReservedConcurrentExecutions"] = 1
    assert _violations(broken, opted_in, "HubSpoke-ReservedConcurrency") == [other]


def _topic_with(statement: dict[str, Any]) -> Template:
    """One topic, its policy holding `statement` alone, and an alarm notifying the topic."""
    return Template(
        "ops",
        {
            "Resources": {
                "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
                "TopicPolicy": {
                    "Type": "AWS::SNS::TopicPolicy",
                    "Properties": {
                        "PolicyDocument": {"Version": "2012-10-17", "Statement": [statement]},
                        "Topics": [{"Ref": "Topic"}],
                    },
                },
                "Alarm": {
                    "Type": "AWS::CloudWatch::Alarm",
                    "Properties": {"AlarmActions": [{"Ref": "Topic"}]},
                },
            }
        },
    )


CLOUDWATCH = {"Service": "cloudwatch.amazonaws.com"}


@pytest.mark.parametrize(
    ("statement", "grants"),
    [
        ({"Effect": "Allow", "Principal": CLOUDWATCH, "Action": "sns:Publish"}, True),
        # IAM JSON policy reference, "Action": action names are case-insensitive; Action and Service take a
        # string or a list; `sns:*` and `*` match every SNS action.
        ({"Effect": "Allow", "Principal": CLOUDWATCH, "Action": ["SNS:PUBLISH"]}, True),
        ({"Effect": "Allow", "Principal": CLOUDWATCH, "Action": ["sns:*"]}, True),
        ({"Effect": "Allow", "Principal": CLOUDWATCH, "Action": "*"}, True),
        (
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "cloudwatch.amazonaws.com"]},
                "Action": ["sns:Subscribe", "sns:Publish"],
            },
            True,
        ),
        ({"Effect": "Deny", "Principal": CLOUDWATCH, "Action": "sns:Publish"}, False),
        (
            {"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sns:Publish"},
            False,
        ),
        ({"Effect": "Allow", "Principal": CLOUDWATCH, "Action": ["sns:Subscribe"]}, False),
        ({"Effect": "Allow", "Principal": CLOUDWATCH}, False),
        ({"Effect": "Allow", "Action": "sns:Publish"}, False),
    ],
)
def test_only_an_allow_of_publish_to_cloudwatch_counts_as_the_grant(
    dev_config: HubSpokeConfig, statement: dict[str, Any], grants: bool
) -> None:
    """The grant the Knowledge Center article asks for: Effect Allow, Principal Service cloudwatch.amazonaws.com,
    Action sns:Publish (IAM JSON policy elements: Effect, Principal, Action)."""
    found = check([_topic_with(statement)], dev_config)
    hits = [v.logical_id for v in found if v.rule == "HubSpoke-AlarmTopicPublish"]
    assert hits == ([] if grants else ["Alarm"])


@pytest.mark.parametrize(
    ("kind", "actions"),
    [
        ("AWS::CloudWatch::Alarm", "OKActions"),
        ("AWS::CloudWatch::CompositeAlarm", "AlarmActions"),
        ("AWS::CloudWatch::CompositeAlarm", "OKActions"),
    ],
)
def test_ok_actions_and_composite_alarms_need_the_grant_too(
    dev_config: HubSpokeConfig, kind: str, actions: str
) -> None:
    """Both alarm types notify SNS topics through AlarmActions and OKActions (CloudFormation template reference,
    AWS::CloudWatch::Alarm and AWS::CloudWatch::CompositeAlarm)."""
    template = _topic_with({"Effect": "Allow", "Principal": CLOUDWATCH, "Action": "sns:Subscribe"})
    template.body["Resources"]["Alarm"] = {"Type": kind, "Properties": {actions: [{"Ref": "Topic"}]}}
    hits = [v.logical_id for v in check([template], dev_config) if v.rule == "HubSpoke-AlarmTopicPublish"]
    assert hits == ["Alarm"]


def _stack(
    kind: str, region: str, resources: dict[str, Any], outputs: dict[str, Any] | None = None
) -> Template:
    meta = {"environment": "dev", "kind": kind, "region": region}
    body = {"Metadata": {"hubspoke": meta}, "Resources": resources, "Outputs": outputs or {}}
    return Template(f"{kind}-{region}", body)


def _ingress_rules(count: int, group: Any) -> dict[str, Any]:
    return {
        f"In{n}": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": group,
                "IpProtocol": "tcp",
                "FromPort": n,
                "ToPort": n,
                "CidrIp": "10.20.0.0/16",
            },
        }
        for n in range(count)
    }


@pytest.mark.parametrize(
    ("rules", "caught"), [(DEFAULT_RULES_PER_GROUP, False), (DEFAULT_RULES_PER_GROUP + 1, True)]
)
def test_rules_added_through_a_re_exported_output_count_on_the_group(
    dev_config: HubSpokeConfig, rules: int, caught: bool
) -> None:
    """Fn::GetStackOutput "returns the value of an output from another stack" (CloudFormation template
    reference, Fn::GetStackOutput), so an output may itself pass on another stack's output (ASSUMED: the page
    does not forbid it in Outputs): rules reaching a group through two such hops count on that group, against
    the 60 per group of Amazon VPC quotas (dev states no other)."""
    group = _stack(
        "network", "us-east-2",
        {"Group": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "peers"}}},
        {"GroupOut": {"Value": {"Fn::GetAtt": ["Group", "GroupId"]}}},
    )  # fmt: skip
    hop = {"StackName": "hubspoke-dev-network-us-east-2", "OutputName": "GroupOut"}
    middle = _stack("peer-access", "us-east-2", {}, {"Again": {"Value": {"Fn::GetStackOutput": hop}}})
    again = {"Fn::GetStackOutput": {"StackName": "hubspoke-dev-peer-access-us-east-2", "OutputName": "Again"}}
    link = _stack("link", "us-east-2", _ingress_rules(rules, again))
    link.body["Metadata"]["hubspoke"]["spoke"] = "us-west-2"
    found = _violations(
        {t.path: dict(t.body) for t in (group, middle, link)}, dev_config, "HubSpoke-SecurityGroupRuleQuota"
    )
    assert found == (["Group"] if caught else [])


def test_the_reservation_finding_cites_the_source_docs_policy_md_names(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The finding names its source as docs/policy.md's table does for HubSpoke-ReservedConcurrency (Lambda
    Developer Guide, "Configuring reserved concurrency"), so a reader can look it up by that title."""
    from tests.conftest import ROOT

    row = re.search(
        r"^\| `HubSpoke-ReservedConcurrency` \| .*? \| (.*?) \|$",
        (ROOT / "docs" / "policy.md").read_text(),
        re.M,
    )
    assert row, "docs/policy.md lists HubSpoke-ReservedConcurrency"
    source = row[1].replace('"', "'")
    broken = copy.deepcopy(dev_templates)
    [canary] = [
        k for k, v in broken["ops-us-west-2"]["Resources"].items() if v["Type"] == "AWS::Lambda::Function"
    ]
    broken["ops-us-west-2"]["Resources"][canary]["Properties"]["ReservedConcurrentExecutions"] = 1
    [message] = [
        v.message
        for v in check([Template(k, t) for k, t in broken.items()], dev_config)
        if v.rule == "HubSpoke-ReservedConcurrency"
    ]
    assert source in message, (source, message)


def test_a_rule_reading_a_stack_without_outputs_counts_on_no_group(dev_config: HubSpokeConfig) -> None:
    """A template's Outputs section is optional (CloudFormation template anatomy): a rule whose GroupId reads an
    output of a stack that declares none names no group, and nothing fails."""
    empty = _stack("peer-access", "us-east-2", {})
    del empty.body["Outputs"]  # type: ignore[attr-defined]
    ref = {"Fn::GetStackOutput": {"StackName": "hubspoke-dev-peer-access-us-east-2", "OutputName": "Gone"}}
    link = _stack("link", "us-east-2", _ingress_rules(DEFAULT_RULES_PER_GROUP + 1, ref))
    found = _violations(
        {t.path: dict(t.body) for t in (empty, link)}, dev_config, "HubSpoke-SecurityGroupRuleQuota"
    )
    assert found == []
