"""`hubspoke verify`'s alarm delivery rows (issue 42 item 4): unconfirmed or deleted subscriptions of the alarm
topics, and alarm actions CloudWatch failed to execute, from its alarm history.

Sources, written here and not imported: SNS "automatically deletes unconfirmed subscriptions after 48 hours" (SNS
Developer Guide, "Deleting an Amazon SNS subscription and topic"); GetTopicAttributes' SubscriptionsPending counts
them and Subscribe answers "pending confirmation" where a confirmed one has its ARN (botocore sns service-2.json).
CloudWatch keeps alarm history two weeks (User Guide, "Using Amazon CloudWatch alarms"); a failed action is an
Action item "Failed to execute action <topic>. Received error: ..." (as users quote the console:
aws-solutions/automated-security-response-on-aws#43, ASFHyP3/hyp3#762), a success "Successfully executed action"
(aws/aws-sdk-java#1723). moto 5.2.5 has no DescribeAlarmHistory (tests/cli/alarm_history.py keeps it) and never
leaves an email subscription pending, so that state is written into moto's backend objects.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from pathlib import Path

from botocore.awsrequest import AWSResponse
from moto.backends import get_backend

from hubspoke.cli.checks import CheckResult
from tests.cli.test_verify import ALARMS, rows, verify
from tests.cli.verify_world import ACCOUNT, DeployedWorld

REGION = "us-west-2"
PAGE = "hubspoke-dev-ops-us-west-2-training-stalled"  # a notifying alarm of the spoke's Ops stack


def _verify(
    world: DeployedWorld, config_path: Path, areas: Collection[str] | None = ALARMS, **config: object
) -> list[CheckResult]:
    """`hubspoke verify --region us-west-2`, its alarm rows alone (test_verify.only_areas) unless `areas` says
    otherwise (None: every area), with the `ops` settings of `config` changed."""
    changed = (
        world.config.model_copy(update={"ops": world.config.ops.model_copy(update=config)})
        if config
        else None
    )
    return verify(world, config_path, config=changed, only={REGION}, areas=areas)


def _topic_with(world: DeployedWorld, *emails: str) -> str:
    """An alarm topic the page notifies, subscribed by `emails` (moto confirms at once)."""
    sns = world.clients("sns", REGION)
    topic = sns.create_topic(Name="hubspoke-dev-alarms")["TopicArn"]
    for email in emails:
        sns.subscribe(TopicArn=topic, Protocol="email", Endpoint=email)
    world.clients("cloudwatch", REGION).put_metric_alarm(
        AlarmName=PAGE,
        Namespace="HubSpoke/Training",
        MetricName="SamplesPerSecond",
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=10,
        Threshold=0,
        ComparisonOperator="LessThanOrEqualToThreshold",
        AlarmActions=[topic],
        OKActions=[topic],
    )
    return topic


def _pending(topic: str, email: str) -> None:
    """As SNS holds a subscription awaiting its confirmation link: no ARN yet, counted in SubscriptionsPending."""
    backend = get_backend("sns")[ACCOUNT][REGION]
    [subscription] = [s for s in backend.subscriptions.values() if s.endpoint == email]
    subscription.arn = "PendingConfirmation"
    subscription.attributes["PendingConfirmation"] = "true"
    backend.topics[topic].subscriptions_pending = 1


def test_a_healthy_world_has_no_failed_alarm_action(deployed: DeployedWorld, deployed_config: Path) -> None:
    [row] = rows(_verify(deployed, deployed_config), "alarm actions", REGION)
    assert row.status == "pass" and "14 days" in row.detail


def test_confirmed_subscriptions_pass(deployed: DeployedWorld, deployed_config: Path) -> None:
    _topic_with(deployed, "ops@example.com")
    [row] = rows(_verify(deployed, deployed_config, alarm_emails=["ops@example.com"]), "alarm subscriptions")
    assert row.status == "pass" and "1 confirmed" in row.detail


def test_an_unconfirmed_subscription_warns_that_sns_deletes_it(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    topic = _topic_with(deployed, "ops@example.com")
    _pending(topic, "ops@example.com")
    [row] = rows(_verify(deployed, deployed_config, alarm_emails=["ops@example.com"]), "alarm subscriptions")
    assert row.status == "warn", row
    assert "ops@example.com" in row.detail and "48 hours" in row.detail
    assert "Subscription Confirmation" in row.fix


def test_a_deleted_subscription_fails_with_the_command_that_restores_it(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """An address the config names with no subscription left: SNS deleted it unconfirmed (or it never was)."""
    topic = _topic_with(deployed, "other@example.com")
    [row] = rows(_verify(deployed, deployed_config, alarm_emails=["ops@example.com"]), "alarm subscriptions")
    assert row.status == "fail" and "ops@example.com" in row.detail and "48 hours" in row.detail
    assert topic in row.fix


def test_a_failed_alarm_action_fails_naming_the_alarm_and_the_error(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    now = datetime.now(UTC)
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:on-call"
    history = deployed.clients.history[REGION]
    history.succeeded_action(PAGE, topic, now - timedelta(hours=2))
    history.failed_action("someone-elses-alarm", topic, now - timedelta(hours=1))
    history.failed_action(PAGE, topic, now - timedelta(days=15))  # older than CloudWatch keeps
    assert rows(_verify(deployed, deployed_config), "alarm actions", REGION)[0].status == "pass"
    history.failed_action(
        "hubspoke-dev-ops-us-west-2-hub-unreachable-page", topic, now - timedelta(minutes=30), composite=True
    )
    [row] = rows(_verify(deployed, deployed_config), "alarm actions", REGION)
    assert row.status == "fail", row
    assert "hub-unreachable-page" in row.detail and "not authorized to perform: SNS:Publish" in row.detail
    assert "Who is told" in row.fix


def test_a_failure_fixed_since_passes_and_only_a_latest_failed_attempt_fails(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """issue 42 review item 6: CloudWatch keeps an action's failure in the history two weeks (User Guide, "Using
    Amazon CloudWatch alarms"), also after the topic's policy was fixed; a later "Successfully executed action" of
    the same alarm to the same topic shows the fix. A success to another topic proves nothing about this one."""
    now = datetime.now(UTC)
    topic, chat = (f"arn:aws:sns:{REGION}:{ACCOUNT}:{name}" for name in ("on-call", "chat"))
    history = deployed.clients.history[REGION]
    history.failed_action(PAGE, topic, now - timedelta(days=3))
    history.succeeded_action(PAGE, topic, now - timedelta(days=1))
    [row] = rows(_verify(deployed, deployed_config), "alarm actions", REGION)
    assert row.status == "pass", row
    history.failed_action(PAGE, chat, now - timedelta(days=2))
    history.succeeded_action(PAGE, topic, now - timedelta(hours=1))
    [row] = rows(_verify(deployed, deployed_config), "alarm actions", REGION)
    assert row.status == "fail" and "chat" in row.detail, row
    history.succeeded_action(PAGE, chat, now - timedelta(minutes=5))
    history.failed_action(PAGE, topic, now - timedelta(minutes=1))
    [row] = rows(_verify(deployed, deployed_config), "alarm actions", REGION)
    assert row.status == "fail" and "on-call" in row.detail and "chat" not in row.detail, row


def test_an_alarm_topic_nobody_subscribes_to_warns(deployed: DeployedWorld, deployed_config: Path) -> None:
    """issue 42 review item 1: a topic with no subscription delivers to nobody (SNS Developer Guide, "Subscribing
    to an Amazon SNS topic": a topic delivers to its subscribed endpoints)."""
    _topic_with(deployed)
    [row] = rows(_verify(deployed, deployed_config, alarm_emails=[]), "alarm subscriptions")
    assert row.status == "warn" and "nobody subscribes" in row.detail, row


def _since(world: DeployedWorld, name: str) -> str:
    """When the alarm last changed state, to the minute, as CloudWatch DescribeAlarms reports it
    (StateUpdatedTimestamp of a MetricAlarm or CompositeAlarm, botocore cloudwatch service-2.json)."""
    found = world.clients("cloudwatch", REGION).describe_alarms(
        AlarmNames=[name], AlarmTypes=["MetricAlarm", "CompositeAlarm"]
    )
    (alarm,) = [*found["MetricAlarms"], *found["CompositeAlarms"]]
    return f"{alarm['StateUpdatedTimestamp']:%Y-%m-%d %H:%M} UTC"


def _runbook(world: DeployedWorld, name: str) -> str:
    """The runbook the Ops template's AlarmDescription names for the alarm ("... Runbook: docs/runbooks/X.md")."""
    (description,) = [
        r["Properties"].get("AlarmDescription", "")
        for r in world.templates["ops-us-west-2"]["Resources"].values()
        if r["Type"].startswith("AWS::CloudWatch::") and r["Properties"].get("AlarmName") == name
    ]
    return description.rsplit("Runbook: ", 1)[1].split()[0]


def test_each_alarm_row_names_the_alarm_its_state_since_when_and_what_to_do(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """StateValue is OK, ALARM or INSUFFICIENT_DATA with a StateReason (CloudWatch DescribeAlarms); an alarm in
    ALARM that notifies someone fails with its runbook, an input of a composite that notifies nobody warns and
    points at that composite, no data yet warns, and a planned alarm that is missing fails with its stack's deploy."""
    name = "hubspoke-dev-ops-us-west-2-{}".format
    deployed.alarm(REGION, name("hub-unreachable-page"), "ALARM", "3 out of 3 datapoints < 1")
    deployed.alarm(REGION, name("hub-probes-failing"), "ALARM", "3 out of 3 datapoints < 1")
    deployed.alarm(REGION, name("training-stalled"), "INSUFFICIENT_DATA", "Unchecked: Initial alarm creation")
    deployed.clients("cloudwatch", REGION).delete_alarms(AlarmNames=[name("checkpoint-too-old")])
    results = _verify(deployed, deployed_config)

    def row(key: str) -> tuple[str, str, str]:
        (found,) = rows(results, f"alarm {key}", REGION)
        return found.status, found.detail, found.fix

    page, probes, stalled, ok = (
        name(k) for k in ("hub-unreachable-page", "hub-probes-failing", "training-stalled", "canary-failing")
    )
    assert row("hub-unreachable-page") == (
        "fail",
        f"{page} is in ALARM since {_since(deployed, page)}: 3 out of 3 datapoints < 1",
        f"follow {_runbook(deployed, page)}",
    )
    status, detail, fix = row("hub-probes-failing")
    assert (status, detail.split(" (", 1)[0]) == (
        "warn",
        f"{probes} is in ALARM since {_since(deployed, probes)}",
    )
    assert "notifies nobody" in detail and detail.endswith("): 3 out of 3 datapoints < 1")
    # The composite that reads it, whose own row says whether it pages.
    assert fix.startswith("expected with hub-unreachable-page,") and fix.endswith(
        "; otherwise see docs/runbooks/hub-outage.md"
    )
    assert row("training-stalled") == (
        "warn",
        f"{stalled} is INSUFFICIENT_DATA since {_since(deployed, stalled)}: Unchecked: Initial alarm creation",
        f"normal in the first minutes after a deploy; otherwise see {_runbook(deployed, stalled)}",
    )
    assert row("canary-failing") == ("pass", f"{ok} is OK since {_since(deployed, ok)}", "")
    assert row("checkpoint-too-old") == (
        "fail",
        f"{name('checkpoint-too-old')} does not exist",
        f"deploy its stack: npx cdk deploy -c config={deployed_config} --exclusively hubspoke-dev/ops-us-west-2",
    )


def _deny_subscriptions(world: DeployedWorld) -> None:
    """SNS refusing ListSubscriptionsByTopic as it refuses a caller without the permission: 403 with the code of
    AuthorizationErrorException, "AuthorizationError" ("the user has been denied access", botocore sns model)."""

    def deny(**_: object) -> tuple[AWSResponse, dict[str, object]]:
        body = {"Error": {"Code": "AuthorizationError", "Message": "not authorized"}}
        return AWSResponse("https://stub", 403, {}, None), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    world.clients("sns", REGION).meta.events.register("before-call.sns.ListSubscriptionsByTopic", deny)


def test_a_refused_sns_read_fails_the_delivery_row_alone(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    _topic_with(deployed, "ops@example.com")
    _deny_subscriptions(deployed)
    # Every area: the delivery row is the Region's only failure.
    results = _verify(deployed, deployed_config, None, alarm_emails=["ops@example.com"])
    (row,) = [r for r in results if r.status == "fail"]
    assert (row.region, row.check) == (REGION, "alarm delivery")
    assert rows(results, "alarm training-stalled", REGION)[0].status == "pass"


def test_a_denied_sns_read_names_its_permission(deployed: DeployedWorld, deployed_config: Path) -> None:
    """The IAM action is sns:ListSubscriptionsByTopic (Service Authorization Reference, "Actions defined by
    Amazon SNS")."""
    _topic_with(deployed, "ops@example.com")
    _deny_subscriptions(deployed)
    (row,) = [
        r for r in _verify(deployed, deployed_config, alarm_emails=["ops@example.com"]) if r.status == "fail"
    ]
    assert row.fix == "allow sns:ListSubscriptionsByTopic (read-only) for these credentials"


def test_the_alarms_are_read_in_one_describe_alarms_call_per_hundred_names(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """DescribeAlarms takes at most 100 AlarmNames (botocore cloudwatch service-2.json, AlarmNames max 100): the
    Region's alarms, those its Ops template creates, fit in one call that names each once."""
    created = {
        r["Properties"]["AlarmName"]
        for r in deployed.templates["ops-us-west-2"]["Resources"].values()
        if r["Type"] in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
    }
    asked: list[list[str]] = []

    def record(params: dict[str, object], **_: object) -> None:
        asked.append(list(params.get("AlarmNames", [])))  # type: ignore[call-overload]

    deployed.clients("cloudwatch", REGION).meta.events.register(
        "before-parameter-build.cloudwatch.DescribeAlarms", record
    )
    _verify(deployed, deployed_config, None)  # every area: the Region's only DescribeAlarms call
    assert 0 < len(created) <= 100
    assert len(asked) == 1 and sorted(asked[0]) == sorted(created)
