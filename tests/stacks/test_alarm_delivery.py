"""Every alarm action reaches a person: CloudWatch may publish into the topic and use the topic's key.

Sources (the oracle here, not the code under test):
- AWS Knowledge Center "cloudwatch-receive-sns-for-alarm-trigger": a topic policy that does not allow
  `cloudwatch.amazonaws.com` to `sns:Publish` makes every alarm action fail ("... is not authorized to perform:
  SNS:Publish"); the grant may be narrowed with `aws:SourceArn` = the alarm's ARN
  (arn:aws:cloudwatch:REGION:ACCOUNT:alarm:NAME).
- AWS Knowledge Center "cloudwatch-configure-alarm-sns": for an encrypted topic, the customer key's policy must
  allow `cloudwatch.amazonaws.com` `kms:Decrypt` and `kms:GenerateDataKey*`. The article's base statement has
  no Condition (its only optional one limits the key to an organization): a grant under a condition is not counted (one that does not match fails every alarm action, visible only in the alarm's history).
- SNS Developer Guide: a topic policy (AWS::SNS::TopicPolicy) replaces the topic's default policy, so only what
  the template writes applies.
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from tests.conftest import Templates, options, resources, synth, varied
from tests.shapes import SHAPES

CLOUDWATCH = "cloudwatch.amazonaws.com"
ACCOUNT = "123456789012"


def _render(value: Any, region: str, account: str) -> Any:
    """A template value with the pseudo parameters an ARN uses filled in (Fn::Join and Ref only)."""
    pseudo = {"AWS::Partition": "aws", "AWS::Region": region, "AWS::AccountId": account}
    if isinstance(value, dict) and "Ref" in value and value["Ref"] in pseudo:
        return pseudo[value["Ref"]]
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        rendered = [_render(p, region, account) for p in parts]
        return sep.join(rendered) if all(isinstance(p, str) for p in rendered) else value
    if isinstance(value, list):
        return [_render(v, region, account) for v in value]
    return value


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _principal_services(statement: dict[str, Any]) -> list[str]:
    principal = statement.get("Principal", {})
    return _as_list(principal.get("Service", [])) if isinstance(principal, dict) else []


def _allows(statement: dict[str, Any], action: str) -> bool:
    return statement.get("Effect") == "Allow" and any(
        fnmatch.fnmatchcase(action.lower(), a.lower()) for a in _as_list(statement.get("Action", []))
    )


def _denies_cloudwatch(statement: dict[str, Any], action: str) -> bool:
    """A Deny that would stop CloudWatch: any Deny naming the action, except the TLS-only one (CloudWatch uses TLS)."""
    if statement.get("Effect") != "Deny":
        return False
    if not any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in _as_list(statement.get("Action", []))):
        return False
    condition = statement.get("Condition", {})
    return condition != {"Bool": {"aws:SecureTransport": "false"}}


def _check_alarm_delivery(
    template: dict[str, Any], region: str, account: str, external: tuple[str, ...] = ()
) -> int:
    """Assert every alarm's actions reach CloudWatch-publishable, CloudWatch-usable topics; count the alarms.

    `external`: the config's own topics (ops.alarm_topic_arns); their policies are their owners' (docs/operations.md,
    "Who is told"), so only their Region is checked here, and every alarm must still reach one topic of ours."""
    res = template["Resources"]
    topic_policies = [r["Properties"] for _, r in resources(template, "AWS::SNS::TopicPolicy")]
    checked = 0
    alarms = [
        *resources(template, "AWS::CloudWatch::Alarm"),
        *resources(template, "AWS::CloudWatch::CompositeAlarm"),
    ]
    # A composite alarm notifies for the alarms its rule combines (CloudWatch User Guide, "Create a composite
    # alarm"): an alarm without actions must be one of those inputs, of a composite that notifies.
    notifying_rules = [
        json.dumps(a["Properties"]["AlarmRule"])
        for _, a in alarms
        if a["Type"] == "AWS::CloudWatch::CompositeAlarm" and a["Properties"].get("AlarmActions")
    ]
    for alarm_id, alarm in alarms:
        props = alarm["Properties"]
        alarm_arn = f"arn:aws:cloudwatch:{region}:{account}:alarm:{props['AlarmName']}"
        actions = props.get("AlarmActions", []) + props.get("OKActions", [])
        if not actions:
            assert any(alarm_id in rule or props["AlarmName"] in rule for rule in notifying_rules), (
                f"{alarm_id} notifies nobody and is no input of a composite alarm that does"
            )
            continue
        ours = [a for a in actions if isinstance(a, dict)]
        assert ours, f"{alarm_id} notifies only topics hubspoke cannot check"
        for action in actions:
            if isinstance(action, str):
                assert action in external and action.split(":")[3] == region, f"{alarm_id}: {action}"
                continue
            topic_id = action["Ref"]
            assert res[topic_id]["Type"] == "AWS::SNS::Topic"
            statements = [
                s
                for p in topic_policies
                if {"Ref": topic_id} in p["Topics"]
                for s in p["PolicyDocument"]["Statement"]
            ]
            grants = [
                s
                for s in statements
                if _allows(s, "sns:Publish")
                and CLOUDWATCH in _principal_services(s)
                and {"Ref": topic_id} in _as_list(s.get("Resource"))
            ]
            assert grants, f"{alarm_id}: topic {topic_id} does not let CloudWatch publish (KC article above)"
            for grant in grants:
                arns = _as_list(_render(grant["Condition"]["ArnLike"]["aws:SourceArn"], region, account))
                assert any(fnmatch.fnmatchcase(alarm_arn, a) for a in arns), (
                    f"{alarm_id}: {alarm_arn} is not among the ARNs the topic lets publish: {arns}"
                )
            assert not any(_denies_cloudwatch(s, "sns:Publish") for s in statements)
            key_id = res[topic_id]["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
            key_statements = res[key_id]["Properties"]["KeyPolicy"]["Statement"]
            for kms_action in ("kms:Decrypt", "kms:GenerateDataKey"):
                assert any(
                    _allows(s, kms_action) and CLOUDWATCH in _principal_services(s) and "Condition" not in s
                    for s in key_statements
                ), f"{alarm_id}: the key of {topic_id} does not let CloudWatch {kms_action} unconditionally"
                assert not any(_denies_cloudwatch(s, kms_action) for s in key_statements)
        checked += 1
    return checked


def test_every_dev_alarm_can_notify(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    regions = {f"ops-{s.region}": s.region for s in dev_config.spokes} | {
        f"dashboard-{dev_config.hub.region}": dev_config.hub.region
    }
    counted = {
        sid: _check_alarm_delivery(dev_templates[sid], region, ACCOUNT) for sid, region in regions.items()
    }
    # docs/operations.md, "Alarms": per spoke Ops stack canary-failing, the composites hub-unreachable-page and
    # portal-not-active-page, training-stalled, training-throughput-low, gpu-utilization-low and the composite cache-hit-ratio-low notify
    # (the composites' inputs do not); the hub's training alarms (stalled, throughput, GPU) are on the dashboard
    # stack.
    # Where a Region trains, its four node and fabric health alarms notify too (tests/constructs/test_node_health.py).
    # The job's pages, training-job-dead and training-crash-loop, notify in both (tests/constructs/test_job_alarms.py).
    assert counted == {"ops-us-west-2": 7 + 4 + 2, "dashboard-us-east-2": 3 + 4 + 2}


@pytest.mark.parametrize(
    "shape",
    # The shapes in the thorough tier, as every shape-wide invariant (tests/conftest.py shape_params); the fast
    # tier checks two environments whose synths it makes anyway: the verify tests' (a second spoke without
    # storage or compute) and the storage tests' varied one (a second spoke with storage and without compute).
    ["two-spokes", "varied", *(pytest.param(name, marks=pytest.mark.thorough) for name in sorted(SHAPES))],
)
def test_every_alarm_of_every_shape_can_notify(shape: str, config_from: Any) -> None:
    from tests.cli.verify_fixtures import TWO_SPOKES

    fast = {"two-spokes": TWO_SPOKES, "varied": varied()}
    config = config_from(fast.get(shape) or SHAPES[shape])
    for sid, template in synth(config).items():
        region = sid.split("-", 1)[1]
        if sid.startswith(("ops-", "dashboard-")):
            _check_alarm_delivery(template, config.region_config(region).region, config.account)


def test_alarms_also_reach_the_configs_topics_of_their_region(config_from: Any) -> None:
    data = options()  # the shared synth of several options (tests/conftest.py)
    east, west = "arn:aws:sns:us-east-2:111122223333:on-call", "arn:aws:sns:us-west-2:111122223333:on-call"
    assert data["ops"]["alarm_topic_arns"] == [east, west]
    config = config_from(data)
    templates = synth(config)
    assert (
        _check_alarm_delivery(templates["ops-us-west-2"], "us-west-2", config.account, (east, west))
        == 7 + 4 + 2
    )
    assert (
        _check_alarm_delivery(templates["dashboard-us-east-2"], "us-east-2", config.account, (east, west))
        == 3 + 4 + 2
    )
