"""The metric-math and alarm fake agrees with every documented example before it judges our alarms.

Examples copied as data from the Amazon CloudWatch User Guide, awsdocs/amazon-cloudwatch-user-guide@b355497:
doc_source/using-metric-math.md ("Comparison and logical operators", "Using IF expressions") and
doc_source/AlarmThatSendsEmail.md ("How alarm state is evaluated when data is missing": both tables, columns
BREACHING and NOT BREACHING). In the documented series `-` is a timestamp without a value.
"""

from __future__ import annotations

import pytest

from tests.fakes.cloudwatch_alarm import Series, alarm_state, evaluate


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
