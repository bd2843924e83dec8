"""Config rules on operations: the alarms reach somebody in every Region that has them, or the file says nobody."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.raw import Problem, enabled, regions, section


def _alarm_regions(raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(dotted path, Region code) of every Region whose stacks hold alarms (hubspoke/alarms.py planned_alarms):
    the hub when it trains (its training alarms), a spoke whose CNQ caches the hub's (its Ops stack)."""
    found = []
    hub_storage = False
    for path, region in regions(raw):
        code = region.get("region")
        if not isinstance(code, str):
            continue
        if path == "hub":
            hub_storage = enabled(section(region, "storage"))
            if enabled(section(region, "compute")):
                found.append((path, code))
        elif hub_storage and enabled(section(region, "storage")):
            found.append((path, code))
    return found


def _topic_region(arn: Any) -> str | None:
    parts = arn.split(":") if isinstance(arn, str) else []
    return parts[3] if len(parts) == 6 and parts[2] == "sns" else None


def alarms_reach_somebody(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """An alarm nobody hears is no alarm: every Region with alarms needs an address or a topic of its own Region.

    A topic receives only the alarms of its own Region: ASSUMED, no CloudWatch page we read says whether an alarm
    action may name a topic in another Region, so hubspoke never does (docs/operations.md, "Who is told").
    """
    ops = section(raw, "ops")
    emails = ops.get("alarm_emails") or []
    topics = ops.get("alarm_topic_arns") or []
    nobody = ops.get("alarms_notify_nobody") is True
    alarm_regions = _alarm_regions(raw)
    topic_regions = {_topic_region(t) for t in topics} - {None}
    if nobody and (emails or topics):
        yield Problem(
            "ops.alarms_notify_nobody",
            "true, yet ops.alarm_emails or ops.alarm_topic_arns name recipients: remove the opt-out (the "
            "recipients are told) or the recipients",
        )
        return
    if not alarm_regions or nobody:
        return
    if not emails and not topics:
        yield Problem(
            "ops.alarm_emails",
            f"the alarms of {', '.join(code for _, code in alarm_regions)} notify nobody: add an address here, "
            "or an SNS topic ARN of that Region to ops.alarm_topic_arns (an on-call or chat integration), or "
            "write ops.alarms_notify_nobody: true to accept that nobody is told",
        )
        return
    if not emails:
        for path, code in alarm_regions:
            if code not in topic_regions:
                yield Problem(
                    "ops.alarm_topic_arns",
                    f"no topic in {code} ({path}), so its alarms notify nobody: alarms publish to topics of "
                    f"their own Region; add a topic ARN of {code} or an address to ops.alarm_emails",
                )
    for i, arn in enumerate(topics):
        region = _topic_region(arn)
        if region is not None and region not in {code for _, code in alarm_regions}:
            yield Problem(
                f"ops.alarm_topic_arns[{i}]",
                f"{region} has no alarms in this environment, so this topic receives nothing: use a topic of "
                f"{', '.join(code for _, code in alarm_regions) or 'a Region with alarms'}",
                severity="warning",
            )
