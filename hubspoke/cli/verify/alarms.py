"""Verify's alarm check: every alarm the environment plans (hubspoke/alarms.py) exists, and which are in ALARM."""

from __future__ import annotations

from typing import Any

from hubspoke import alarms
from hubspoke.alarms import PlannedAlarm, planned_alarms
from hubspoke.cli.checks import CheckResult, guarded
from hubspoke.cli.verify.delivery import delivery_rows
from hubspoke.cli.verify.live import Context
from hubspoke.config import RegionConfig

# DescribeAlarms takes at most 100 AlarmNames per call (botocore cloudwatch service-2.json, AlarmNames).
_NAMES_PER_CALL = 100
_ALARM_TYPES = ["MetricAlarm", "CompositeAlarm"]
# When an input that notifies nobody is in ALARM by design (docs/operations.md, "Alarms").
_EXPECTED_ALARM = {
    alarms.CACHE_HIT_RATIO_BELOW_FLOOR: "while a cache is cold",
    alarms.DATASET_NOT_FULLY_CACHED: "while a cache is cold",
    alarms.HUB_PROBES_FAILING: f"with {alarms.HUB_UNREACHABLE}, whose row says whether it pages",
    alarms.PORTAL_PROBES_NOT_ACTIVE: f"with {alarms.PORTAL_NOT_ACTIVE}, whose row says whether it pages",
    alarms.TRAINING_JOB_UNFINISHED: f"while a job runs; with {alarms.TRAINING_JOB_DEAD}, whose row says whether it pages",
    alarms.TRAINING_REPORTS_MISSING: "while no job runs",
}


def alarm_rows(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    planned = [a for a in planned_alarms(ctx.config) if a.region == region.region]
    if not planned:
        return []
    live: dict[str, dict[str, Any]] = {}
    rows = guarded(region.region, "alarms", "cloudwatch", lambda: _rows(ctx, region.region, planned, live))
    # Apart: a denied SNS or history read fails its own row, not the alarm rows above.
    return rows + guarded(
        region.region, "alarm delivery", "sns", lambda: delivery_rows(ctx, region.region, planned, live)
    )


def _rows(
    ctx: Context, region: str, planned: list[PlannedAlarm], live: dict[str, dict[str, Any]]
) -> list[CheckResult]:
    """One row per planned alarm; `live` receives the alarms DescribeAlarms returned, by name."""
    cloudwatch = ctx.clients("cloudwatch", region)
    names = [a.name for a in planned]
    for start in range(0, len(names), _NAMES_PER_CALL):
        # CloudWatch DescribeAlarms: without AlarmTypes it returns metric alarms only, "even if composite
        # alarms ... exist" (botocore cloudwatch service-2.json, AlarmTypes), and cache-hit-ratio-low is a
        # composite. Both kinds carry StateValue OK | ALARM | INSUFFICIENT_DATA, StateReason and
        # StateUpdatedTimestamp.
        batch = {"AlarmNames": names[start : start + _NAMES_PER_CALL], "AlarmTypes": _ALARM_TYPES}
        for page in cloudwatch.get_paginator("describe_alarms").paginate(**batch):
            for alarm in [*page.get("MetricAlarms", []), *page.get("CompositeAlarms", [])]:
                live[alarm["AlarmName"]] = alarm
    rows = []
    for planned_alarm in planned:
        check = f"alarm {planned_alarm.key}"
        if planned_alarm.name not in live:
            rows.append(
                CheckResult(
                    region,
                    check,
                    "fail",
                    f"{planned_alarm.name} does not exist",
                    f"deploy its stack: {ctx.deploy_command(planned_alarm.stack_id)}",
                )
            )
            continue
        alarm = live[planned_alarm.name]
        state = alarm.get("StateValue")
        since = alarm.get("StateUpdatedTimestamp")
        when = f" since {since:%Y-%m-%d %H:%M} UTC" if since else ""
        if state == "ALARM" and not planned_alarm.notifies:
            # An input of a composite alarm (a cold cache, a canary not yet reporting): it pages nobody by itself;
            # the composite that reads it has a row of its own.
            rows.append(
                CheckResult(
                    region,
                    check,
                    "warn",
                    f"{planned_alarm.name} is in ALARM{when} (notifies nobody; it pages only through the "
                    f"composite alarm that reads it): {alarm.get('StateReason', '')}",
                    f"expected {_EXPECTED_ALARM.get(planned_alarm.key, 'at times')}; otherwise see "
                    f"{planned_alarm.runbook}",
                )
            )
        elif state == "ALARM":
            rows.append(
                CheckResult(
                    region,
                    check,
                    "fail",
                    f"{planned_alarm.name} is in ALARM{when}: {alarm.get('StateReason', '')}",
                    f"follow {planned_alarm.runbook}",
                )
            )
        elif state == "OK":
            rows.append(CheckResult(region, check, "pass", f"{planned_alarm.name} is OK{when}"))
        else:
            rows.append(
                CheckResult(
                    region,
                    check,
                    "warn",
                    f"{planned_alarm.name} is {state}{when}: {alarm.get('StateReason', 'no data yet')}",
                    f"normal in the first minutes after a deploy; otherwise see {planned_alarm.runbook}",
                )
            )
    return rows
