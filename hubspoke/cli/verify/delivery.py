"""Verify's alarm-delivery rows: the alarm topics' subscriptions are confirmed, and no alarm action failed."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hubspoke.alarms import PlannedAlarm
from hubspoke.cli.checks import CheckResult
from hubspoke.cli.verify.live import Context

# CloudWatch "preserves alarm history for two weeks" (CloudWatch User Guide, "Using Amazon CloudWatch alarms",
# common features; awsdocs/amazon-cloudwatch-user-guide, doc_source/AlarmThatSendsEmail.md).
HISTORY = timedelta(days=14)
# "Amazon SNS automatically deletes unconfirmed subscriptions after 48 hours" (SNS Developer Guide, "Deleting an
# Amazon SNS subscription and topic").
UNCONFIRMED_KEPT_HOURS = 48


def delivery_rows(
    ctx: Context, region: str, planned: list[PlannedAlarm], live: dict[str, dict[str, Any]]
) -> list[CheckResult]:
    """The subscriptions of the topics hubspoke's alarms notify, and the alarms' failed actions."""
    return _subscriptions(ctx, region, live) + _failed_actions(ctx, region, planned)


def _our_topics(ctx: Context, live: dict[str, dict[str, Any]]) -> list[str]:
    """The SNS topics the live alarms act on, less the config's own (ops.alarm_topic_arns: another owner's)."""
    actions = {
        a for alarm in live.values() for key in ("AlarmActions", "OKActions") for a in alarm.get(key, [])
    }
    return sorted(
        a for a in actions if a.split(":")[2:3] == ["sns"] and a not in ctx.config.ops.alarm_topic_arns
    )


def _subscriptions(ctx: Context, region: str, live: dict[str, dict[str, Any]]) -> list[CheckResult]:
    sns = ctx.clients("sns", region)
    rows = []
    wanted = {e.lower(): e for e in ctx.config.ops.alarm_emails}
    for topic in _our_topics(ctx, live):
        # SubscriptionsPending: "the number of subscriptions pending confirmation for the topic" (botocore sns
        # service-2.json, GetTopicAttributes). A pending subscription has no ARN yet: Subscribe answers "the string
        # 'pending confirmation'" in its place (same file, SubscribeResponse); ListSubscriptionsByTopic shows it
        # so (ASSUMED: not stated for that call), hence pending endpoints are those without an ARN.
        pending_count = int(
            sns.get_topic_attributes(TopicArn=topic)["Attributes"].get("SubscriptionsPending", 0)
        )
        subscriptions = [
            s
            for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic)
            for s in page.get("Subscriptions", [])
        ]
        pending = sorted(s["Endpoint"] for s in subscriptions if not s["SubscriptionArn"].startswith("arn:"))
        listed = {s["Endpoint"].lower() for s in subscriptions if s.get("Protocol") == "email"}
        missing = sorted(e for key, e in wanted.items() if key not in listed)
        name = topic.split(":")[-1]
        if missing:
            rows.append(
                CheckResult(
                    region,
                    "alarm subscriptions",
                    "fail",
                    f"{', '.join(missing)} (ops.alarm_emails) has no subscription on {name}: SNS deletes a "
                    f"subscription not confirmed within {UNCONFIRMED_KEPT_HOURS} hours, so nobody there is told",
                    f"subscribe {missing[0]} to {topic} again (SNS console: Create subscription, protocol Email), "
                    f"then confirm from the email within {UNCONFIRMED_KEPT_HOURS} hours",
                )
            )
        elif not subscriptions:
            # Alarms also notify ops.alarm_topic_arns, but a topic nobody subscribes to tells nobody itself.
            rows.append(
                CheckResult(
                    region,
                    "alarm subscriptions",
                    "warn",
                    f"nobody subscribes to {name}: only the topics in ops.alarm_topic_arns (if any) are told",
                    f"list an address in ops.alarm_emails, or subscribe an endpoint to {topic}",
                )
            )
        elif pending or pending_count:
            rows.append(
                CheckResult(
                    region,
                    "alarm subscriptions",
                    "warn",
                    f"{max(len(pending), pending_count)} subscription(s) of {name} not confirmed"
                    + (f" ({', '.join(pending)})" if pending else "")
                    + f": they receive nothing, and SNS deletes them {UNCONFIRMED_KEPT_HOURS} hours after they "
                    "were made",
                    "confirm from SNS's 'Subscription Confirmation' email; once deleted, rerun verify for the "
                    "command that subscribes the address again",
                )
            )
        else:
            rows.append(
                CheckResult(
                    region,
                    "alarm subscriptions",
                    "pass",
                    f"{len(subscriptions)} confirmed subscription(s) on {name}",
                )
            )
    return rows


def _failed(item: dict[str, Any]) -> bool:
    """An Action history item of a failed action: HistoryData's actionState "Failed", or its summary "Failed to
    execute action <ARN>. Received error: ..." as the console shows it (aws-solutions/automated-security-response-
    on-aws#43, ASFHyP3/hyp3#762; a success reads "Successfully executed action" with actionState "Succeeded",
    aws/aws-sdk-java#1723)."""
    try:
        state = json.loads(item.get("HistoryData") or "{}").get("actionState")
    except (ValueError, AttributeError):
        state = None
    return state == "Failed" or str(item.get("HistorySummary", "")).startswith("Failed to execute action")


def _target(item: dict[str, Any]) -> str:
    """The action an Action item is about: HistoryData's notificationResource, else its summary's "action <ARN>"."""
    try:
        target = json.loads(item.get("HistoryData") or "{}").get("notificationResource")
    except (ValueError, AttributeError):
        target = None
    if target:
        return str(target)
    words = str(item.get("HistorySummary", "")).split()
    return words[words.index("action") + 1].rstrip(".") if "action" in words[:-1] else ""


def _failed_actions(ctx: Context, region: str, planned: list[PlannedAlarm]) -> list[CheckResult]:
    cloudwatch = ctx.clients("cloudwatch", region)
    ours = {a.name for a in planned if a.notifies}
    if not ours:
        return []
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for page in cloudwatch.get_paginator("describe_alarm_history").paginate(
        # Without AlarmTypes only metric alarms' history is returned (botocore cloudwatch service-2.json,
        # DescribeAlarmHistory AlarmTypes), and the canary's pages are composites.
        HistoryItemType="Action",
        AlarmTypes=["MetricAlarm", "CompositeAlarm"],
        StartDate=ctx.now - HISTORY,
        EndDate=ctx.now,
    ):
        for item in page.get("AlarmHistoryItems", []):
            if item.get("AlarmName") not in ours:
                continue
            key = (item["AlarmName"], _target(item))
            if key not in latest or item["Timestamp"] > latest[key]["Timestamp"]:
                latest[key] = item
    # Only an action whose latest attempt failed still fails: a later success of the same alarm's action to the same
    # topic shows the cause was fixed, though CloudWatch keeps the old failure two weeks.
    failed = [item for item in latest.values() if _failed(item)]
    if not failed:
        return [
            CheckResult(
                region,
                "alarm actions",
                "pass",
                f"no alarm action whose latest attempt failed in the last {HISTORY.days} days",
            )
        ]
    newest = sorted(failed, key=lambda i: i["Timestamp"], reverse=True)
    shown = "; ".join(
        f"{i['AlarmName']} at {i['Timestamp']:%Y-%m-%d %H:%M} UTC: {i.get('HistorySummary', '')}"
        for i in newest[:3]
    )
    return [
        CheckResult(
            region,
            "alarm actions",
            "fail",
            f"{len(failed)} alarm action(s) failed on their latest attempt, so nobody was told: {shown}",
            "a topic's policy or its key's policy does not let cloudwatch.amazonaws.com publish: see "
            "docs/operations.md, 'Who is told'",
        )
    ]
