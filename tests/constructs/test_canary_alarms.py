"""The canary's pages (hub-unreachable-page, portal-not-active-page), judged as CloudWatch evaluates them every minute.

Each page is a composite alarm, `ALARM(<probes>) AND OK(<gate>)`, over two synthesized metric alarms that run
through tests/fakes/cloudwatch_alarm.py's `evaluate_every_minute` (sliding evaluation, evaluation range,
TreatMissingData and FILL as the CloudWatch User Guide documents them, awsdocs/amazon-cloudwatch-user-guide@b355497,
doc_source/AlarmThatSendsEmail.md and using-metric-math.md); the rule is read from the template and judged by
`composite_state` (doc_source/Create_Composite_Alarm.md), with its inputs' changes of one minute applied in every
order (`composite_states_in_any_order`), since nothing says two alarms change state at the same instant.

The evaluation range is not documented for these periods (the only number given is 5 for Evaluation Periods 3),
so every scenario runs with probe ranges 3, 5 and 10 minutes and gate ranges 1 and 3 days, and must give what
docs/operations.md promises, written here, not imported: a page 3 minutes after the last good minute, and never
a page on a fresh deploy before the canary has reported. The canary publishes one record per minute
(docs/operations.md, "The canary"): HubReachable 1 or 0, PortalStatus 2 (ACTIVE) .. 0, -1 unreadable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Templates, properties
from tests.fakes.cloudwatch_alarm import (
    composite_state,
    composite_states_in_any_order,
    evaluate_every_minute,
)

PROMISED_MINUTES = 3  # docs/operations.md, "What each alarm catches": "3 minutes after the last good probe"
RANGES = (3, 5, 10)
GATE_RANGES = (1, 3)
DAY = 1440  # minutes
HEALTHY = {"HubReachable": 1.0, "PortalStatus": 2.0}
FAILING = {"HubReachable": 0.0, "PortalStatus": 1.0}  # no hub answers; the portal DEGRADED
# page -> (its probes input, the canary metric that input reads); the gate of both: canary-silent-for-a-day.
PAGES = {
    "hub-unreachable-page": ("hub-probes-failing", "HubReachable"),
    "portal-not-active-page": ("portal-probes-not-active", "PortalStatus"),
}
GATE = "canary-silent-for-a-day"
Records = dict[str, dict[int, list[float]]]


@dataclass(frozen=True)
class Page:
    key: str
    metric: str
    composite: dict[str, Any]
    rule: str  # the template's rule, each input named by its logical ID
    inputs: dict[str, dict[str, Any]]  # logical ID -> metric alarm properties
    probes: str  # logical ID of the probes input
    gate: str


@pytest.fixture(scope="module")
def pages(dev_templates: Templates) -> list[Page]:
    found = []
    for stack, template in dev_templates.items():
        if not stack.startswith("ops-"):
            continue
        metric_alarms = dict(properties(template, "AWS::CloudWatch::Alarm"))
        for _, composite in properties(template, "AWS::CloudWatch::CompositeAlarm"):
            key = next((k for k in PAGES if composite["AlarmName"].endswith(f"-{k}")), None)
            if key is None:
                continue
            # The rule names its inputs by ARN (Fn::GetAtt); resolve each to the input's logical ID.
            parts = composite["AlarmRule"]["Fn::Join"][1]
            rule = "".join(p if isinstance(p, str) else p["Fn::GetAtt"][0] for p in parts)
            inputs = {
                p["Fn::GetAtt"][0]: metric_alarms[p["Fn::GetAtt"][0]] for p in parts if not isinstance(p, str)
            }
            by_key = {
                k: logical
                for logical, props in inputs.items()
                for k in (PAGES[key][0], GATE)
                if props["AlarmName"].endswith(f"-{k}")
            }
            assert set(by_key) == {PAGES[key][0], GATE}, rule
            found.append(
                Page(key, PAGES[key][1], composite, rule, inputs, by_key[PAGES[key][0]], by_key[GATE])
            )
    assert sorted(p.key for p in found) == sorted(PAGES)
    return found


def canary(first: int, until: int, then: str | None = None, *, after: int = 30) -> Records:
    """Healthy records for minutes first..until, then `after` minutes of failing probes ("failing") or nothing."""
    out: Records = {metric: {m: [v] for m in range(first, until + 1)} for metric, v in HEALTHY.items()}
    if then == "failing":
        for metric, v in FAILING.items():
            out[metric].update({m: [v] for m in range(until + 1, until + 1 + after)})
    return out


def states(props: dict[str, Any], data: Records, minutes: list[int], *, span: int, late: bool) -> list[str]:
    """The alarm's state at the end of each of `minutes`. `late`: at the end of minute t the record of minute t has
    not arrived yet (FILL fills it in the probes input)."""
    if not late:
        return evaluate_every_minute(props, data, minutes=minutes, evaluation_range=span)
    return [
        evaluate_every_minute(
            props,
            {name: {m: v for m, v in by.items() if m < t} for name, by in data.items()},
            minutes=[t],
            evaluation_range=span,
        )[0]
        for t in minutes
    ]


def run(
    page: Page, data: Records, minutes: list[int], *, span: int, gate_span: int, late: bool = False
) -> dict[str, Any]:
    """Per minute: the probes input's state, the gate's, and every state the composite passes through."""
    probes = states(page.inputs[page.probes], data, [minutes[0] - 1, *minutes], span=span, late=late)
    gate = states(page.inputs[page.gate], data, [minutes[0] - 1, *minutes], span=gate_span, late=late)
    composite = [
        composite_states_in_any_order(
            page.rule,
            {page.probes: probes[i], page.gate: gate[i]},
            {page.probes: probes[i + 1], page.gate: gate[i + 1]},
        )
        for i in range(len(minutes))
    ]
    return {"probes": probes[1:], "gate": gate[1:], "composite": composite}


def first_pages(page: Page, data: Records, start: int, *, late: bool = False) -> set[int | None]:
    """Minutes after `start` at whose end the composite first is (or passes through) ALARM, per pair of ranges."""
    found = set()
    minutes = list(range(start - 5, start + 20))
    for span in RANGES:
        for gate_span in GATE_RANGES:
            composite = run(page, data, minutes, span=span, gate_span=gate_span, late=late)["composite"]
            paged = [m - start for m, seen in zip(minutes, composite, strict=True) if "ALARM" in seen]
            found.add(paged[0] if paged else None)
    return found


def test_the_pages_are_composites_of_a_probes_alarm_and_the_gate(pages: list[Page]) -> None:
    """Only the composites notify; the probes alarm and the gate notify nobody (PutMetricAlarm AlarmActions
    absent), so neither can page by itself on a fresh deploy."""
    for page in pages:
        assert page.composite["AlarmActions"], page.key
        assert "ALARM(" in page.rule and "OK(" in page.rule, page.rule
        for props in page.inputs.values():
            assert not props.get("AlarmActions") and not props.get("OKActions"), props["AlarmName"]


@pytest.mark.parametrize("late", [False, True], ids=["on-time", "a-minute-late"])
def test_a_fresh_deploy_never_pages_before_or_at_the_canarys_first_records(
    pages: list[Page], late: bool
) -> None:
    """Issue 23 item 4: "a fresh deploy must not page before the canary's first datapoint". Before any record the
    probes alarm is in ALARM (FILL fills the whole query in the model; were the query left empty, missing data
    breaching gives ALARM too; INSUFFICIENT_DATA, the created state, is judged as well) and the gate INSUFFICIENT_DATA (no datapoint at
    all: "missing" keeps it there, doc_source/AlarmThatSendsEmail.md); OK(gate) is false, so no page. When the
    canary's first records come in healthy, no order of the two alarms' changes pages either."""
    first = 30
    minutes = list(range(0, first + 15))
    data = canary(first, first + 20)
    for page in pages:
        for span in RANGES:
            for gate_span in GATE_RANGES:
                got = run(page, data, minutes, span=span, gate_span=gate_span, late=late)
                before = slice(0, first)
                assert set(got["probes"][before]) == {"ALARM"}, page.key
                assert set(got["gate"][before]) == {"INSUFFICIENT_DATA"}, page.key
                paged = [m for m, seen in zip(minutes, got["composite"], strict=True) if "ALARM" in seen]
                assert paged == [], (page.key, span, gate_span, paged)
                # FILL not filling an empty metric: the probes alarm stays as created, the composite too.
                assert (
                    composite_state(
                        page.rule, {page.probes: "INSUFFICIENT_DATA", page.gate: "INSUFFICIENT_DATA"}
                    )
                    == "OK"
                )
                assert got["gate"][-1] == "OK", page.key


def test_a_fresh_deploy_whose_probes_fail_from_the_first_record_pages_at_the_third(pages: list[Page]) -> None:
    """A hub that never answered: the gate lets the page through once the canary has reported, 3 failing minutes
    in (docs/operations.md)."""
    first = 30
    for page in pages:
        data = canary(first, first - 1, "failing")
        assert first_pages(page, data, first - 1) == {PROMISED_MINUTES}, page.key


def test_a_silent_canary_pages_three_minutes_after_its_last_record(pages: list[Page]) -> None:
    for page in pages:
        data = canary(0, 20)
        assert first_pages(page, data, 20) == {PROMISED_MINUTES}, page.key
        # At that minute the probes alarm is in ALARM and the gate still OK (the canary reported today).
        got = run(page, data, [20 + PROMISED_MINUTES], span=5, gate_span=1)
        assert (got["probes"], got["gate"]) == (["ALARM"], ["OK"]), page.key


def test_failing_probes_page_after_three_minutes(pages: list[Page]) -> None:
    for page in pages:
        assert first_pages(page, canary(0, 20, "failing"), 20) == {PROMISED_MINUTES}, page.key


def test_a_record_that_arrives_a_minute_late_is_not_a_page(pages: list[Page]) -> None:
    """FILL fills the newest minute when its record is late (using-metric-math.md warns of exactly this): one
    breaching point of three, never a page while the canary is healthy; with every record a minute late, silence
    and failed probes still page 3 minutes after the last good minute (docs/operations.md)."""
    for page in pages:
        assert first_pages(page, canary(0, 40), 40, late=True) == {PROMISED_MINUTES}, page.key
        assert first_pages(page, canary(0, 40, "failing"), 40, late=True) == {PROMISED_MINUTES}, page.key


def test_after_a_day_of_silence_the_gate_closes_and_the_page_returns_to_ok_without_telling_anyone(
    pages: list[Page],
) -> None:
    """The gate's period is one day (CloudWatch's longest, doc_source/cloudwatch_concepts.md): about a day after the
    last record (later if CloudWatch's undocumented evaluation range reaches further back) it leaves OK, OK(gate) is
    false and the composite returns to OK although nothing recovered. So the canary's pages have no OK action
    (docs/operations.md, "What each alarm catches"): an OK then would resolve the incident in an on-call tool."""
    last = 20
    data = canary(0, last)
    for page in pages:
        assert "OKActions" not in page.composite, page.key
        # The gate counts the records of the last day: 3 or more OK, fewer ALARM, none INSUFFICIENT_DATA.
        at = [last + DAY - 3, last + DAY - 2, last + DAY - 1, last + DAY]
        got = run(page, data, at, span=5, gate_span=1)
        assert got["gate"] == ["OK", "ALARM", "ALARM", "INSUFFICIENT_DATA"], page.key
        assert set(got["probes"]) == {"ALARM"}, page.key
        assert got["composite"][0] == {"ALARM"} and "ALARM" not in got["composite"][2], page.key
        # An evaluation range of several days (undocumented) reaches back to the last full day once the newest is
        # empty: the gate is OK again for another day and the page is sent once more (docs/operations.md).
        longer = run(page, data, at, span=5, gate_span=3)
        assert longer["gate"] == ["OK", "ALARM", "ALARM", "OK"], page.key
        assert "ALARM" in longer["composite"][3], page.key


def test_without_fill_silence_waits_for_the_evaluation_range(pages: list[Page]) -> None:
    """The former alarm (the plain metric, missing data breaching) on the same silence: it fires only once the last
    healthy point has left the evaluation range, so its detection time is the undocumented range (5 minutes with
    the documented example's range), not 3. This is why the probes alarms read FILL(m, value)."""
    page = pages[0]
    props = page.inputs[page.probes]
    [stat] = [q for q in props["Metrics"] if "MetricStat" in q]
    metric = stat["MetricStat"]
    plain = {k: v for k, v in props.items() if k != "Metrics"}
    plain.update(
        Namespace=metric["Metric"]["Namespace"],
        MetricName=metric["Metric"]["MetricName"],
        Statistic=metric["Stat"],
        Period=metric["Period"],
    )
    data = canary(0, 20)
    minutes = list(range(15, 40))
    for span in RANGES:
        history = evaluate_every_minute(plain, data, minutes=minutes, evaluation_range=span)
        assert minutes[history.index("ALARM")] - 20 == span
