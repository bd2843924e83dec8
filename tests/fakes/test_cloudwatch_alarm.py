"""The metric-math and alarm fake agrees with every documented example before it judges our alarms.

Examples copied as data from the Amazon CloudWatch User Guide, awsdocs/amazon-cloudwatch-user-guide@b355497:
doc_source/using-metric-math.md ("Comparison and logical operators", "Using IF expressions") and
doc_source/AlarmThatSendsEmail.md ("How alarm state is evaluated when data is missing": both tables, columns
BREACHING and NOT BREACHING), doc_source/Create_Composite_Alarm.md ("Rule expressions": the three example
rules and what each is documented to mean). In the documented series `-` is a timestamp without a value.
"""

from __future__ import annotations

import pytest

from tests.fakes.cloudwatch_alarm import (
    AmbiguousExpression,
    Series,
    alarm_state,
    composite_state,
    evaluate,
    evaluate_every_minute,
    insights_query,
)


def series(*values: float | None) -> Series:
    return {t: float(v) for t, v in enumerate(values) if v is not None}


def as_list(result: Series, length: int) -> list[float | None]:
    return [result.get(t) for t in range(length)]


# "suppose we have two time series: metric1 has values of [30, 20, 0, 0] and metric2 has values of
# [20, -, 20, -]"
OPERANDS = {"metric1": series(30, 20, 0, 0), "metric2": series(20, None, 20, None)}


@pytest.mark.parametrize(
    ("expression", "documented"),
    [
        ("(metric1 < metric2)", [0, 0, 1, 0]),
        ("(metric1 >= 30)", [1, 0, 0, 0]),
        ("(metric1 > 15 AND metric2 > 15)", [1, 0, 0, 0]),
    ],
)
def test_comparison_and_logical_operators_as_documented(expression: str, documented: list[float]) -> None:
    assert as_list(evaluate(expression, OPERANDS), 4) == documented


# The IF tables: metric1 [1, 1, 0, 0, -], metric2 [30, -, 0, 0, 30], metric3 [0, 0, 20, -, 20], scalars 5.
IF_OPERANDS = {
    "metric1": series(1, 1, 0, 0, None),
    "metric2": series(30, None, 0, 0, 30),
    "metric3": series(0, 0, 20, None, 20),
}


@pytest.mark.parametrize(
    ("expression", "documented"),
    [
        ("IF(metric1, metric2, metric3)", [30, 0, 20, None, None]),
        ("IF(metric1, 5, metric3)", [5, 5, 20, None, None]),
        ("IF(metric1, metric2, 5)", [30, 0, 5, 5, None]),
    ],
)
def test_if_as_documented(expression: str, documented: list[float | None]) -> None:
    assert as_list(evaluate(expression, IF_OPERANDS), 5) == documented


def test_if_without_a_false_value_drops_false_points() -> None:
    # "is dropped, if the corresponding data point of metric1 is FALSE and ... metric3 is omitted"
    assert as_list(evaluate("IF(metric1, metric2)", IF_OPERANDS), 5) == [30, 0, None, None, None]


def test_division_by_zero_drops_the_point_and_missing_values_count_as_zero() -> None:
    # "Missing values in a time series are treated as 0. If the value of a data point causes a function to
    # attempt to divide by zero, the data point is dropped."
    result = evaluate("metric1 / metric2", {"metric1": series(10, 10, None), "metric2": series(5, 0, 5)})
    assert as_list(result, 3) == [2, None, 0]


# Minutes 0-1: a job reports samples/s and GPUs report; minutes 2-3: an idle cluster, GPUs only (at 0 %).
IDLE_AFTER_A_JOB = {"sps": series(115, 115, None, None), "gpu": series(99, 99, 0, 0)}


def test_a_series_against_a_number_where_it_has_no_point_is_refused() -> None:
    """ "Missing values in a time series are treated as 0" (using-metric-math.md): if that holds at the other
    inputs' timestamps, `sps >= 0` is 1 where no job reported and the idle GPUs' 0 % would pass the guard.
    The page does not say which reading applies, so the fake refuses an expression whose result depends on it."""
    with pytest.raises(AmbiguousExpression):
        evaluate("IF(sps >= 0 AND gpu >= 0, gpu)", IDLE_AFTER_A_JOB)


def test_a_presence_guard_on_sample_counts_holds_under_both_readings() -> None:
    # A SampleCount series has no point (or, read the other way, 0) where nothing was published: `n > 0` is
    # false either way.
    counts = {"sps_n": series(2, 2, None, None), "gpu_n": series(16, 16, 16, 16)}
    result = evaluate("IF(sps_n > 0 AND gpu_n > 0, gpu)", {**IDLE_AFTER_A_JOB, **counts})
    assert as_list(result, 4) == [99, 99, None, None]


def test_undocumented_precedence_and_functions_are_refused() -> None:
    with pytest.raises(NotImplementedError):
        evaluate("metric1 / 2 >= 1", OPERANDS)
    with pytest.raises(NotImplementedError):
        evaluate("FILL(metric1, 0)", OPERANDS)


def points(text: str) -> list[float | None]:
    """A documented row (oldest first): 0 not breaching, X breaching, - missing, against threshold 1."""
    return [{"0": 0.0, "X": 2.0, "-": None}[c] for c in text.split()]


# (row, M, BREACHING, NOT BREACHING) from the two tables; evaluation range 5, Evaluation Periods 3.
DOCUMENTED_ROWS = [
    ("0 - X - X", 3, "OK", "OK"),
    ("0 - - - -", 3, "OK", "OK"),
    ("- - - - -", 3, "ALARM", "OK"),
    ("0 X X - X", 3, "ALARM", "ALARM"),
    ("- - X - -", 3, "ALARM", "OK"),
    ("0 - X - X", 2, "ALARM", "ALARM"),
    ("0 0 X 0 X", 2, "ALARM", "ALARM"),
    ("0 - X - -", 2, "ALARM", "OK"),
    ("- - - - 0", 2, "ALARM", "OK"),
    ("- - - X -", 2, "ALARM", "OK"),
]


@pytest.mark.parametrize(("row", "m", "breaching", "not_breaching"), DOCUMENTED_ROWS)
def test_alarm_state_with_missing_data_as_documented(
    row: str, m: int, breaching: str, not_breaching: str
) -> None:
    for treatment, documented in (("breaching", breaching), ("notBreaching", not_breaching)):
        state = alarm_state(
            points(row),
            threshold=1,
            comparison="GreaterThanThreshold",
            evaluation_periods=3,
            datapoints_to_alarm=m,
            treat_missing_data=treatment,
        )
        assert state == documented, f"{row}, {m} of 3, missing {treatment}"


# The IGNORE column of the same tables (awsdocs/amazon-cloudwatch-user-guide@cd4004c, doc_source/
# AlarmThatSendsEmail.md, "How alarm state is evaluated when data is missing"): (row, M, documented state), None
# for "Retain current state".
DOCUMENTED_IGNORE_ROWS = [
    ("0 - X - X", 3, "OK"),
    ("0 - - - -", 3, "OK"),
    ("- - - - -", 3, None),
    ("0 X X - X", 3, "ALARM"),
    ("- - - - X", 3, None),
    ("0 - X - X", 2, "ALARM"),
    ("0 0 X 0 X", 2, "ALARM"),
    ("0 - X - -", 2, "OK"),
    ("- - - - 0", 2, "OK"),
    ("- - - - X", 2, None),
]


@pytest.mark.parametrize(("row", "m", "documented"), DOCUMENTED_IGNORE_ROWS)
def test_ignore_keeps_the_state_only_where_the_guide_says_so(
    row: str, m: int, documented: str | None
) -> None:
    for current in ("OK", "ALARM", "INSUFFICIENT_DATA"):
        state = alarm_state(
            points(row),
            threshold=1,
            comparison="GreaterThanThreshold",
            evaluation_periods=3,
            datapoints_to_alarm=m,
            treat_missing_data="ignore",
            current=current,
        )
        assert state == (documented or current), f"{row}, {m} of 3, from {current}"


# "ALARM(CPUUtilizationTooHigh) AND ALARM(DiskReadOpsTooHigh)": ALARM only if both are in ALARM.
# "ALARM(CPUUtilizationTooHigh) AND NOT ALARM(DeploymentInProgress)".
# "(ALARM(CPUUtilizationTooHigh) OR ALARM(DiskReadOpsTooHigh)) AND OK(NetworkOutTooHigh)".
@pytest.mark.parametrize(
    ("rule", "states", "documented"),
    [
        ("ALARM(CPUUtilizationTooHigh) AND ALARM(DiskReadOpsTooHigh)", ("ALARM", "ALARM"), "ALARM"),
        ("ALARM(CPUUtilizationTooHigh) AND ALARM(DiskReadOpsTooHigh)", ("ALARM", "OK"), "OK"),
        ("ALARM(CPUUtilizationTooHigh) AND NOT ALARM(DeploymentInProgress)", ("ALARM", "OK"), "ALARM"),
        ("ALARM(CPUUtilizationTooHigh) AND NOT ALARM(DeploymentInProgress)", ("ALARM", "ALARM"), "OK"),
        (
            '(ALARM("CPUUtilizationTooHigh") OR ALARM("DiskReadOpsTooHigh")) AND OK("NetworkOutTooHigh")',
            ("OK", "ALARM", "OK"),
            "ALARM",
        ),
        (
            '(ALARM("CPUUtilizationTooHigh") OR ALARM("DiskReadOpsTooHigh")) AND OK("NetworkOutTooHigh")',
            ("ALARM", "OK", "ALARM"),
            "OK",
        ),
    ],
)
def test_composite_rules_as_documented(rule: str, states: tuple[str, ...], documented: str) -> None:
    import re

    names = list(dict.fromkeys(re.findall(r"\(\"?(\w+)\"?\)", rule)))
    assert composite_state(rule, dict(zip(names, states, strict=True))) == documented


def test_fill_gives_every_timestamp_of_the_query_its_value() -> None:
    # using-metric-math.md, FILL: "if ... the most recent minute never has data ... FILL replaces that missing
    # data point with the requested value. That causes the latest data point ... to always be the FILL value".
    assert as_list(evaluate("FILL(m, 0)", {"m": series(1, None, 1, None)}, grid=[0, 1, 2, 3]), 4) == [
        1,
        0,
        1,
        0,
    ]
    with pytest.raises(NotImplementedError):
        evaluate("FILL(m, 0)", {"m": series(1)})  # without the query's timestamps there is nothing to fill


def one_metric_alarm(*, period_s: int, n: int, m: int, missing: str) -> dict[str, object]:
    """A template alarm on one metric, breaching above 1 (the tables' `X`)."""
    return {
        "Namespace": "Example",
        "MetricName": "M",
        "Statistic": "Maximum",
        "Period": period_s,
        "EvaluationPeriods": n,
        "DatapointsToAlarm": m,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": missing,
    }


@pytest.mark.parametrize(("breach_minute", "documented"), [(1, ["ALARM", "OK"]), (6, ["OK", "ALARM"])])
def test_a_five_minute_alarm_is_evaluated_every_minute_over_the_latest_five(
    breach_minute: int, documented: list[str]
) -> None:
    """AlarmThatSendsEmail.md, "Evaluating an alarm": Period 5 minutes, Evaluation Periods 1: "at the end of
    minute 5 the alarm evaluates based on data from minutes 1 to 5. Then at the end of minute 6 ... from minutes
    2 to 6". One breaching record in minute 1 is seen at the end of minute 5 and gone at the end of minute 6; one
    in minute 6 is seen at once, not at the end of minute 10 as fixed 5-minute periods would have it."""
    records = {"M": {minute: [2.0 if minute == breach_minute else 0.0] for minute in range(1, 7)}}
    alarm = one_metric_alarm(period_s=300, n=1, m=1, missing="notBreaching")
    assert evaluate_every_minute(alarm, records, minutes=[5, 6], evaluation_range=1) == documented


def test_a_silent_metric_alarms_when_its_last_real_point_leaves_the_evaluation_range() -> None:
    """The first table's second row, `0 - - - -` (Evaluation Periods 3, range 5, missing breaching), is OK, and
    "The next time this alarm is evaluated, if the data is still missing it will go to ALARM, as that
    non-breaching data point will no longer be in the evaluation range" (AlarmThatSendsEmail.md)."""
    records = {"M": {minute: [0.0] for minute in range(-10, 1)}}  # healthy up to minute 0, silent after
    alarm = one_metric_alarm(period_s=60, n=3, m=3, missing="breaching")
    history = evaluate_every_minute(alarm, records, minutes=range(1, 7), evaluation_range=5)
    assert history == [
        "OK",
        "OK",
        "OK",
        "OK",
        "ALARM",
        "ALARM",
    ]  # minute 4 is `0 - - - -`, minute 5 `- - - - -`


def test_a_metrics_insights_alarm_query_reads_as_its_aggregate_and_other_shapes_are_refused() -> None:
    """User Guide, "Create a CloudWatch alarm based on a Metrics Insights query": an alarm on one aggregated series
    is `SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE condition` (the page's aggregate-monitoring shape)."""
    query = "SELECT MAX(m) FROM SCHEMA(\"NS\", A, B) WHERE A = 'x' AND B = 'y'"
    assert insights_query(query) == ("NS", "m", "Maximum", {"A": "x", "B": "y"})
    assert insights_query("FILL(m, 0)") is None  # metric math
    for beyond in (
        'SELECT MAX(m) FROM SCHEMA("NS", A) GROUP BY A',  # several series: a multi-time-series alarm
        "SELECT MAX(m) FROM SCHEMA(\"NS\", A) WHERE A != 'x'",
    ):
        with pytest.raises(NotImplementedError):
            insights_query(beyond)
    props = {
        "Metrics": [{"Id": "q", "Expression": query, "Period": 60, "ReturnData": True}],
        "EvaluationPeriods": 1,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "TreatMissingData": "notBreaching",
    }
    # MAX over the matching series: one of two pods at 1 is the minute's 1.
    history = evaluate_every_minute(
        props, {"m": {0: [0.0, 0.0], 1: [0.0, 1.0]}}, minutes=[0, 1], evaluation_range=1
    )
    assert history == ["OK", "ALARM"]
