"""Config rules on operations: the alarms reach somebody in every Region that has them, or the file says nobody."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem


def _alarm_regions(config: HubSpokeConfig) -> list[tuple[str, str]]:
    """(dotted path, Region code) of every Region whose stacks hold alarms (hubspoke/alarms.py planned_alarms):
    the hub when it trains (its training alarms), a spoke whose CNQ caches the hub's (its Ops stack). A Region
    """
    found = []
    hub_storage = False
    for region in config.regions():
        code = region.region
        if region.is_hub:
            hub_storage = region.storage_on is not None
            if region.compute_on is not None:
                found.append((region.path, code))
        elif hub_storage and region.storage_on is not None:
            found.append((region.path, code))
    return found


def _topic_region(arn: str) -> str | None:
    parts = arn.split(":")
    return parts[3] if len(parts) == 6 and parts[2] == "sns" else None


# Each alarm's AlarmActions and OKActions list at most 5 ARNs (CloudWatch API Reference, PutMetricAlarm and
# PutCompositeAlarm, AlarmActions/OKActions "Maximum number of 5 items"; botocore cloudwatch service-2.json,
# ResourceList max 5). CloudFormation passes the list through, so a sixth fails the stack's deploy.
ACTIONS_PER_STATE = 5
# Every alarm that notifies publishes to its stack's own topic (hubspoke/constructs/alarms.py, AlarmTopic) as well.
_OWN_TOPICS = 1


def _actions_per_state(alarm_regions: list[tuple[str, str]], topics: list[str]) -> Iterator[Problem]:
    """Too many topics of one Region: its alarms would name more actions per state than CloudWatch accepts."""
    for path, code in alarm_regions:
        here = [i for i, arn in enumerate(topics) if _topic_region(arn) == code]
        if _OWN_TOPICS + len(here) > ACTIONS_PER_STATE:
            yield Problem(
                f"ops.alarm_topic_arns[{here[ACTIONS_PER_STATE - _OWN_TOPICS]}]",
                f"{len(here)} topics of {code} ({path}) plus the stack's own alarm topic make {len(here) + 1} "
                f"actions per alarm state, and CloudWatch accepts at most {ACTIONS_PER_STATE} (PutMetricAlarm "
                f"AlarmActions, OKActions), so the deploy fails: keep at most {ACTIONS_PER_STATE - _OWN_TOPICS} "
                f"topics of {code}, or subscribe the other endpoints to one of them",
            )


def alarms_reach_somebody(config: HubSpokeConfig) -> Iterator[Problem]:
    """An alarm nobody hears is no alarm: every Region with alarms needs an address or a topic of its own Region.

    A topic receives only the alarms of its own Region: ASSUMED, no CloudWatch page we read says whether an alarm
    action may name a topic in another Region, so hubspoke never does (docs/operations.md, "Who is told").
    """
    ops = config.ops
    emails, topics, nobody = ops.alarm_emails, ops.alarm_topic_arns, ops.alarms_notify_nobody
    alarm_regions = _alarm_regions(config)
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
    yield from _actions_per_state(alarm_regions, topics)
    for i, arn in enumerate(topics):
        region = _topic_region(arn)
        if region is not None and region not in {code for _, code in alarm_regions}:
            yield Problem(
                f"ops.alarm_topic_arns[{i}]",
                f"{region} has no alarms in this environment, so this topic receives nothing: use a topic of "
                f"{', '.join(code for _, code in alarm_regions) or 'a Region with alarms'}",
                severity="warning",
            )
