"""The canary's alarms (hub-unreachable, portal-not-active), judged as CloudWatch evaluates them every minute.

The synthesized alarms run through tests/fakes/cloudwatch_alarm.py's `evaluate_every_minute` (sliding
evaluation, evaluation range, TreatMissingData and FILL as the CloudWatch User Guide documents them,
awsdocs/amazon-cloudwatch-user-guide@b355497, doc_source/AlarmThatSendsEmail.md and using-metric-math.md). The
evaluation range of a 1-minute alarm is not documented (the only number given is 5 for Evaluation Periods 3),
so every scenario runs with ranges 3, 5 and 10 and must give the detection time docs/operations.md promises:
3 minutes after the last good minute, written here, not imported. The canary publishes one record per minute
(docs/operations.md, "The canary"): HubReachable 1 or 0, PortalStatus 2 (ACTIVE) .. 0, -1 unreadable.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Templates, properties
from tests.fakes.cloudwatch_alarm import evaluate_every_minute

PROMISED_MINUTES = 3  # docs/operations.md, "What each alarm catches": "3 minutes after the last good probe"
RANGES = (3, 5, 10)
HEALTHY = {"HubReachable": 1.0, "PortalStatus": 2.0}
FAILING = {"HubReachable": 0.0, "PortalStatus": 1.0}  # no hub answers; the portal DEGRADED
KEYS = {"hub-unreachable": "HubReachable", "portal-not-active": "PortalStatus"}


@pytest.fixture(scope="module")
def canary_alarms(dev_templates: Templates) -> list[tuple[str, dict[str, Any]]]:
    found = [
        (key, props)
        for stack, template in dev_templates.items()
        if stack.startswith("ops-")
        for _, props in properties(template, "AWS::CloudWatch::Alarm")
        for key in KEYS
        if props["AlarmName"].endswith(f"-{key}")
    ]
    assert {key for key, _ in found} == set(KEYS)
    return found


def records(metric: str, until: int, then: float | None) -> dict[str, Any]:
    """Healthy records for minutes 0..until, then `then` every minute (None: the canary is silent)."""
    out = {m: [HEALTHY[metric]] for m in range(until + 1)}
    if then is not None:
        out.update({m: [then] for m in range(until + 1, until + 30)})
    return {metric: out}


def first_alarm(
    props: dict[str, Any], data: dict[str, Any], start: int, *, late: bool = False
) -> set[int | None]:
    """Minutes after `start` at whose end the alarm is first in ALARM, under each evaluation range. `late`: the
    newest minute's record has not arrived yet at each evaluation (FILL fills it)."""
    found = set()
    for span in RANGES:
        minutes = list(range(start - 5, start + 20))
        if late:
            # At the end of minute t the record of minute t has not arrived: each evaluation sees minutes < t.
            history = [
                evaluate_every_minute(
                    props,
                    {name: {m: v for m, v in by.items() if m < t} for name, by in data.items()},
                    minutes=[t],
                    evaluation_range=span,
                )[0]
                for t in minutes
            ]
        else:
            history = evaluate_every_minute(props, data, minutes=minutes, evaluation_range=span)
        alarmed = [m - start for m, state in zip(minutes, history, strict=True) if state == "ALARM"]
        found.add(alarmed[0] if alarmed else None)
    return found


def test_a_silent_canary_alarms_three_minutes_after_its_last_record(
    canary_alarms: list[tuple[str, dict[str, Any]]],
) -> None:
    for key, props in canary_alarms:
        data = records(KEYS[key], until=20, then=None)
        assert first_alarm(props, data, 20) == {PROMISED_MINUTES}, key


def test_failing_probes_alarm_after_three_minutes(canary_alarms: list[tuple[str, dict[str, Any]]]) -> None:
    for key, props in canary_alarms:
        data = records(KEYS[key], until=20, then=FAILING[KEYS[key]])
        assert first_alarm(props, data, 20) == {PROMISED_MINUTES}, key


def test_a_record_that_arrives_a_minute_late_is_not_an_alarm(
    canary_alarms: list[tuple[str, dict[str, Any]]],
) -> None:
    """FILL fills the newest minute when its record is late (using-metric-math.md warns of exactly this): one
    breaching point of three, never an alarm while the canary is healthy; with every record a minute late, silence
    and failed probes still alarm 3 minutes after the last good minute (docs/operations.md)."""
    for key, props in canary_alarms:
        data = records(KEYS[key], until=40, then=None)
        assert first_alarm(props, data, 40, late=True) == {PROMISED_MINUTES}, key
        failing = records(KEYS[key], until=40, then=FAILING[KEYS[key]])
        assert first_alarm(props, failing, 40, late=True) == {PROMISED_MINUTES}, key


def test_without_fill_silence_waits_for_the_evaluation_range(
    canary_alarms: list[tuple[str, dict[str, Any]]],
) -> None:
    """The former alarm (the plain metric, missing data breaching) on the same silence: it fires only once the last
    healthy point has left the evaluation range, so its detection time is the undocumented range (5 minutes with
    the documented example's range), not 3. This is why the alarms read FILL(m, value)."""
    key, props = canary_alarms[0]
    [stat] = [q for q in props["Metrics"] if "MetricStat" in q]
    metric = stat["MetricStat"]
    plain = {k: v for k, v in props.items() if k != "Metrics"}
    plain.update(
        Namespace=metric["Metric"]["Namespace"],
        MetricName=metric["Metric"]["MetricName"],
        Statistic=metric["Stat"],
        Period=metric["Period"],
    )
    data = records(KEYS[key], until=20, then=None)
    minutes = list(range(15, 40))
    for span in RANGES:
        history = evaluate_every_minute(plain, data, minutes=minutes, evaluation_range=span)
        assert minutes[history.index("ALARM")] - 20 == span
