"""CloudWatch's evaluation of metric-math expressions and metric alarms, as far as the User Guide states it.

Only documented behaviour is implemented; anything else raises NotImplementedError rather than guessing.
Source: Amazon CloudWatch User Guide, awsdocs/amazon-cloudwatch-user-guide@b355497 (2023-05-18, the last
revision before the repository was emptied; live pages under
docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/: using-metric-math.html, AlarmThatSendsEmail.html).

Metric math (doc_source/using-metric-math.md):
- arithmetic (+ - * /): "Missing values in a time series are treated as 0. If the value of a data point causes
  a function to attempt to divide by zero, the data point is dropped."
- comparison (== != <= >= < >) "returns a time series where each data point is either 0 (false) or 1 (true)";
  "between two time series, and only one of the time series has a value for a particular time stamp, the
  function treats the missing value in the other time series as 0". AND/OR: the documented example
  `(metric1 > 15 AND metric2 > 15)` gives 0 where metric2 has no value, i.e. the same rule.
- FILL(m, value) "Fills the missing values of a time series" (the function table); in an alarm "if ... the most
  recent minute never has data ... FILL replaces that missing data point with the requested value. That causes
  the latest data point for the metric to always be the FILL value": FILL gives a point at every timestamp of
  the query (`grid`, the alarm's evaluation range), its own value where it has one. Only a number as filler.
- IF(condition, trueValue, falseValue), "Using IF expressions": a condition data point is FALSE when 0, TRUE
  otherwise; for each condition data point the output has trueValue's value, or 0 "if the corresponding data
  point of metric1 is TRUE and the corresponding data point does not exist in metric2"; falseValue's value,
  or nothing ("is dropped") when it has none or is omitted. A timestamp the condition lacks is dropped.
ASSUMED (precedence is not documented): arithmetic binds tighter than a comparison and a comparison tighter
than AND/OR, as in the documented examples; an unparenthesized arithmetic operand of a comparison is refused.
NOT DOCUMENTED, so judged both ways: a series against a number (`sps >= 0`, `nfs / 2`). "Missing values in a
time series are treated as 0" can mean that the result has only the series' own timestamps, or that the series
counts as 0 at every other timestamp of the query (where another input has a point), making `sps >= 0` true
where `sps` has nothing. `evaluate` computes the expression under both readings and refuses it
(AmbiguousExpression) when the results differ: an alarm must not depend on which reading CloudWatch applies.
Series against series, AND/OR and IF follow the documented rules above under both readings.

Alarms (doc_source/AlarmThatSendsEmail.md, "Evaluating an alarm", "How alarm state is evaluated when data is
missing"): an alarm looks at an evaluation range longer than Evaluation Periods (N); with no missing point it
judges the latest N; with some missing but at least N real points, the latest N real points; with fewer than N
real points, all real points plus missing ones filled per TreatMissingData up to N. ALARM when at least
Datapoints to Alarm (M) are breaching. Only `breaching` and `notBreaching` are implemented
(test_cloudwatch_alarm.py reproduces the documented tables).

The evaluation range: "CloudWatch attempts to retrieve a higher number of data points than the number specified
as Evaluation Periods. The exact number ... depends on the length of the alarm period and whether it is based on
a metric with standard resolution or high resolution" (same page); its only number is the example's: Evaluation
Periods 3, Period 5 minutes, "5 is the evaluation range". For other alarms the length is not documented, so
`evaluate_every_minute` takes it as an argument and callers judge an alarm under several lengths.

Sliding evaluation (same page, "Evaluating an alarm"): "For any period of one minute or longer, an alarm is
evaluated every minute and the evaluation is based on the window of time defined by the Period and Evaluation
Periods ... if the Period is 5 minutes ... and Evaluation Periods is 1, then at the end of minute 5 the alarm
evaluates based on data from minutes 1 to 5. Then at the end of minute 6 ... minutes 2 to 6." So periods are
counted back from the minute of evaluation, not from fixed period boundaries (`evaluate_every_minute`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Series = dict[int, float]  # timestamp (any integer unit) -> value
Value = Series | float

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|([A-Za-z_]\w*)|(==|!=|<=|>=|&&|\|\||[-+*/<>(),]))")
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
}
_ARITHMETIC: dict[str, Callable[[float, float], float | None]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: None if b == 0 else a / b,  # "the data point is dropped"
}
_LOGICAL: dict[str, Callable[[float, float], bool]] = {
    "AND": lambda a, b: bool(a) and bool(b),
    "OR": lambda a, b: bool(a) or bool(b),
}


def _tokens(expression: str) -> list[str]:
    tokens, position = [], 0
    while position < len(expression.rstrip()):
        found = _TOKEN.match(expression, position)
        if not found:
            raise NotImplementedError(f"cannot read {expression[position:]!r}")
        tokens.append(found.group(found.lastindex or 0))
        position = found.end()
    return [{"&&": "AND", "||": "OR"}.get(t, t) for t in tokens]


class _Parser:
    """Recursive descent over the documented subset; each node is a tuple (kind, ...)."""

    def __init__(self, expression: str) -> None:
        self.tokens = _tokens(expression)
        self.at = 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise ValueError(f"expected {expected or 'more'} at token {self.at} of {self.tokens}")
        self.at += 1
        return token

    def parse(self) -> tuple[Any, ...]:
        node = self.logical()
        if self.peek() is not None:
            raise ValueError(f"unexpected {self.peek()!r}")
        return node

    def logical(self) -> tuple[Any, ...]:
        node = self.comparison()
        while self.peek() in _LOGICAL:
            node = ("logical", self.take(), node, self.comparison())
        return node

    def comparison(self) -> tuple[Any, ...]:
        node = self.additive()
        if self.peek() in _COMPARE:
            operator = self.take()
            right = self.additive()
            if "arithmetic" in (node[0], right[0]):
                raise NotImplementedError("arithmetic inside a comparison without parentheses")
            node = ("compare", operator, node, right)
        return node

    def additive(self) -> tuple[Any, ...]:
        node = self.multiplicative()
        while self.peek() in ("+", "-"):
            node = ("arithmetic", self.take(), node, self.multiplicative())
        return node

    def multiplicative(self) -> tuple[Any, ...]:
        node = self.primary()
        while self.peek() in ("*", "/"):
            node = ("arithmetic", self.take(), node, self.primary())
        return node

    def primary(self) -> tuple[Any, ...]:
        token = self.take()
        if token == "(":
            inner = self.logical()
            self.take(")")
            return ("group", inner)
        if token == "-":
            return ("arithmetic", "-", ("number", 0.0), self.primary())
        if re.fullmatch(r"\d+(?:\.\d+)?", token):
            return ("number", float(token))
        if self.peek() == "(":
            if token not in ("IF", "FILL"):
                raise NotImplementedError(f"function {token}")
            self.take("(")
            args = [self.logical()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.logical())
            self.take(")")
            if token == "FILL":
                if len(args) != 2 or args[1][0] != "number":
                    raise NotImplementedError("FILL other than FILL(series, number)")
                return ("fill", *args)
            if len(args) not in (2, 3):
                raise ValueError("IF takes a condition, a true value and an optional false value")
            return ("if", *args)
        if not token[0].islower():
            raise ValueError(f"an id starts with a lowercase letter: {token!r}")
        return ("id", token)


class AmbiguousExpression(ValueError):
    """The expression's result depends on an undocumented reading of missing values (module docstring)."""


def _pointwise(
    op: Callable[[float, float], float | None], left: Value, right: Value, *, query_stamps: frozenset[int]
) -> Value:
    """`query_stamps` empty: a series against a number keeps its own timestamps; else it counts as 0 at these."""
    if isinstance(left, float) and isinstance(right, float):
        result = op(left, right)
        if result is None:
            raise ValueError("scalar division by zero")
        return result
    if isinstance(left, dict) and isinstance(right, dict):
        stamps = sorted(left.keys() | right.keys())  # missing values count as 0
        pairs = [(t, left.get(t, 0.0), right.get(t, 0.0)) for t in stamps]
    elif isinstance(left, dict):
        stamps = sorted(left.keys() | query_stamps)
        pairs = [(t, left.get(t, 0.0), float(right)) for t in stamps]  # type: ignore[arg-type]
    else:
        stamps = sorted(right.keys() | query_stamps)  # type: ignore[union-attr]
        pairs = [(t, float(left), right.get(t, 0.0)) for t in stamps]  # type: ignore[union-attr, arg-type]
    out: Series = {}
    for stamp, a, b in pairs:
        value = op(a, b)
        if value is not None:
            out[stamp] = value
    return out


def _if(condition: Value, true: Value, false: Value | None) -> Value:
    if not isinstance(condition, dict):
        raise NotImplementedError("IF with a scalar condition")
    out: Series = {}
    for stamp, holds in sorted(condition.items()):
        if holds != 0:
            out[stamp] = true if isinstance(true, float) else true.get(stamp, 0.0)
        elif isinstance(false, float):
            out[stamp] = false
        elif isinstance(false, dict) and stamp in false:
            out[stamp] = false[stamp]
    return out


@functools.cache
def _tree(expression: str) -> tuple[Any, ...]:
    """An expression's parse tree (tuples, so shared safely): a minute-by-minute replay evaluates each alarm's
    expression thousands of times."""
    return _Parser(expression).parse()


def evaluate(expression: str, metrics: Mapping[str, Series], *, grid: Sequence[int] | None = None) -> Series:
    """The time series an expression yields from its input series (ids as in the expression).

    `grid`: the query's timestamps (the alarm's evaluation range), which FILL needs. Raises AmbiguousExpression
    when the two readings of a series against a number disagree (module docstring).
    """
    tree = _tree(expression)
    stamps = frozenset(grid) if grid is not None else None
    own = _evaluate(tree, metrics, query_stamps=frozenset(), grid=stamps)
    filled = _evaluate(
        tree,
        metrics,
        query_stamps=frozenset(t for s in metrics.values() for t in s) | (stamps or frozenset()),
        grid=stamps,
    )
    if own != filled:
        differ = sorted(t for t in own.keys() | filled.keys() if own.get(t) != filled.get(t))
        raise AmbiguousExpression(
            f"{expression!r} gives different results where a series compared with or combined with a number "
            f"has no point of its own (timestamps {differ[:5]}): with only its own points "
            f"{[own.get(t) for t in differ[:5]]}, counting it as 0 {[filled.get(t) for t in differ[:5]]}"
        )
    return own


def _evaluate(
    tree: tuple[Any, ...],
    metrics: Mapping[str, Series],
    *,
    query_stamps: frozenset[int],
    grid: frozenset[int] | None = None,
) -> Series:
    def walk(node: tuple[Any, ...]) -> Value:
        kind = node[0]
        if kind == "number":
            return float(node[1])
        if kind == "id":
            if node[1] not in metrics:
                raise KeyError(f"no series for id {node[1]!r}")
            return dict(metrics[node[1]])
        if kind == "group":
            return walk(node[1])
        if kind == "arithmetic":
            return _pointwise(_ARITHMETIC[node[1]], walk(node[2]), walk(node[3]), query_stamps=query_stamps)
        if kind == "compare":
            test = _COMPARE[node[1]]
            return _pointwise(
                lambda a, b: float(test(a, b)), walk(node[2]), walk(node[3]), query_stamps=query_stamps
            )
        if kind == "logical":
            logic = _LOGICAL[node[1]]
            return _pointwise(
                lambda a, b: float(logic(a, b)), walk(node[2]), walk(node[3]), query_stamps=query_stamps
            )
        if kind == "if":
            return _if(walk(node[1]), walk(node[2]), walk(node[3]) if len(node) > 3 else None)
        if kind == "fill":
            if grid is None:
                raise NotImplementedError("FILL needs the query's timestamps (grid)")
            series, filler = walk(node[1]), float(node[2][1])
            if not isinstance(series, dict):
                raise NotImplementedError("FILL of a number")
            return {t: series.get(t, filler) for t in sorted(grid | series.keys())}
        raise AssertionError(kind)

    result = walk(tree)
    if not isinstance(result, dict):
        raise ValueError("an alarm's expression must yield a time series")
    return result


_BREACHES: dict[str, Callable[[float, float], bool]] = {
    "LessThanThreshold": lambda v, t: v < t,
    "LessThanOrEqualToThreshold": lambda v, t: v <= t,
    "GreaterThanThreshold": lambda v, t: v > t,
    "GreaterThanOrEqualToThreshold": lambda v, t: v >= t,
}


def alarm_state(
    points: Sequence[float | None],
    *,
    threshold: float,
    comparison: str,
    evaluation_periods: int,
    datapoints_to_alarm: int,
    treat_missing_data: str,
    current: str = "INSUFFICIENT_DATA",
) -> str:
    """The state ("ALARM", "OK" or "INSUFFICIENT_DATA") after the evaluation range `points`, oldest first, None
    where no value; `current` the state before (what `ignore` keeps; a created alarm is INSUFFICIENT_DATA, botocore
    cloudwatch service-2.json, PutMetricAlarm)."""
    if treat_missing_data not in ("breaching", "notBreaching", "missing", "ignore"):
        raise NotImplementedError(f"TreatMissingData {treat_missing_data}")
    if len(points) < evaluation_periods:
        raise ValueError("the evaluation range is at least Evaluation Periods long")
    breaches = _BREACHES[comparison]
    real = [breaches(p, threshold) for p in points if p is not None]
    # With N real points the treatment "is not needed and is ignored" (the guide), whatever it is.
    if None not in points[-evaluation_periods:]:
        judged = real[-evaluation_periods:]
    elif len(real) >= evaluation_periods:
        judged = real[-evaluation_periods:]  # "the most recent real data points", reaching back
    elif treat_missing_data == "missing":
        if not real:
            return "INSUFFICIENT_DATA"
        raise NotImplementedError("TreatMissingData missing with some points missing")
    elif treat_missing_data == "ignore":
        # "ignore: The current alarm state is maintained" (the guide), but not always: its tables give, for
        # fewer real points than Evaluation Periods, OK where a real point is not breaching (3 of 3: `0 - - - -`;
        # 2 of 3: `0 - X - -`, `- - - - 0`) and "Retain current state" where every real point breaches or there
        # is none (`- - - - X`, `X - - - -`, `- - - - -`). ALARM when the real breaching points alone reach
        # Datapoints to Alarm follows the guide's rule for all treatments; no table row shows it for ignore.
        if sum(real) >= datapoints_to_alarm:
            return "ALARM"
        return "OK" if not all(real) else current
    else:
        judged = real + [treat_missing_data == "breaching"] * (evaluation_periods - len(real))
    return "ALARM" if sum(judged) >= datapoints_to_alarm else "OK"


# Metrics Insights, the one query shape an alarm on a single aggregated series documents (User Guide, "Create a
# CloudWatch alarm based on a Metrics Insights query": SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE ...).
# Its aggregate over every matching series' datapoints in a period is the statistic over all of them; the WHERE
# filter is the caller's to honour (records hold only the matching series). No GROUP BY, ORDER BY or LIMIT.
_INSIGHTS = re.compile(
    r'SELECT (AVG|MAX|MIN|SUM|COUNT)\((\w+)\) FROM SCHEMA\("([^"]+)"(?:, *\w+)*\)(?: WHERE (.+))?'
)
_INSIGHTS_STATISTIC = {
    "AVG": "Average",
    "MAX": "Maximum",
    "MIN": "Minimum",
    "SUM": "Sum",
    "COUNT": "SampleCount",
}


def insights_query(expression: str) -> tuple[str, str, str, dict[str, str]] | None:
    """(namespace, metric, statistic, {dimension: value} of the WHERE's ANDed equalities) of a Metrics Insights
    alarm query, None for a metric-math expression; refuses what the documented shape does not cover."""
    if not expression.lstrip().upper().startswith("SELECT"):
        return None
    found = _INSIGHTS.fullmatch(expression.strip())
    if not found:
        raise NotImplementedError(
            f"Metrics Insights beyond SELECT F(metric) FROM SCHEMA(...) WHERE: {expression}"
        )
    where: dict[str, str] = {}
    for condition in (found[4] or "").split(" AND ") if found[4] else ():
        equality = re.fullmatch(r"\s*(\w+) = '([^']*)'\s*", condition)
        if not equality:
            raise NotImplementedError(f"WHERE condition {condition!r}")
        where[equality[1]] = equality[2]
    return found[3], found[2], _INSIGHTS_STATISTIC[found[1]], where


def alarm_from_template(props: Mapping[str, Any]) -> tuple[str, dict[str, tuple[str, str, str]]]:
    """An AWS::CloudWatch::Alarm's expression and, per id, the (namespace, metric name, statistic) it reads.

    An alarm on one metric (MetricName, Statistic at the top) reads as the expression `m` over that metric, and so
    does an alarm on a Metrics Insights query (`insights_query`).
    """
    if "MetricName" in props:
        return "m", {"m": (props["Namespace"], props["MetricName"], props["Statistic"])}
    queries = props["Metrics"]
    [result] = [q for q in queries if q.get("ReturnData", True) and "Expression" in q]
    query = insights_query(str(result["Expression"]))
    if query is not None:
        return "m", {"m": query[:3]}
    inputs = {
        q["Id"]: (
            q["MetricStat"]["Metric"]["Namespace"],
            q["MetricStat"]["Metric"]["MetricName"],
            q["MetricStat"]["Stat"],
        )
        for q in queries
        if "MetricStat" in q
    }
    return str(result["Expression"]), inputs


_STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "Average": lambda values: sum(values) / len(values),
    "Maximum": max,
    "Minimum": min,
    "Sum": sum,
    "SampleCount": lambda values: float(len(values)),
}


def period_minutes(props: Mapping[str, Any]) -> int:
    """An AWS::CloudWatch::Alarm's period in minutes (one period for all its queries, as alarms require)."""
    periods = {props["Period"]} if "Period" in props else set()
    periods |= {q["MetricStat"]["Period"] for q in props.get("Metrics", []) if "MetricStat" in q}
    periods |= {q["Period"] for q in props.get("Metrics", []) if "Period" in q}
    [seconds] = periods
    if seconds % 60:
        raise NotImplementedError("high-resolution alarms (periods under a minute)")
    return int(seconds // 60)


def evaluate_every_minute(
    props: Mapping[str, Any],
    records: Mapping[str, Mapping[int, Sequence[float]]],
    *,
    minutes: Sequence[int],
    evaluation_range: int,
    initial: str = "INSUFFICIENT_DATA",
) -> list[str]:
    """The state of a templated alarm at the end of each of `minutes`, evaluated as CloudWatch slides it, from
    `initial` (a created alarm's INSUFFICIENT_DATA; `ignore` keeps the state before).

    `records`: per metric name, the raw values published in each minute. At the end of minute `now`, period k
    (0 the newest) holds the records of minutes now - (k + 1) * Period + 1 .. now - k * Period (module
    docstring, "Sliding evaluation"); the alarm retrieves `evaluation_range` periods, the query's grid for FILL.
    """
    expression, inputs = alarm_from_template(props)
    period = period_minutes(props)
    n = props["EvaluationPeriods"]
    grid = list(range(-evaluation_range + 1, 1))  # period index: 0 the newest, -1 the one before, ...
    history: list[str] = []
    state = initial
    for now in minutes:
        series: dict[str, Series] = {}
        for metric_id, (_, name, statistic) in inputs.items():
            published = records.get(name, {})
            series[metric_id] = {}
            for stamp in grid:
                last = now + stamp * period
                values = [
                    v for minute in range(last - period + 1, last + 1) for v in published.get(minute, ())
                ]
                if values:
                    series[metric_id][stamp] = _STATISTICS[statistic](values)
        result = evaluate(expression, series, grid=grid)
        state = alarm_state(
            [result.get(stamp) for stamp in grid],
            threshold=props["Threshold"],
            comparison=props["ComparisonOperator"],
            evaluation_periods=n,
            datapoints_to_alarm=props.get("DatapointsToAlarm", n),
            treat_missing_data=props.get("TreatMissingData", "missing"),
            current=state,
        )
        history.append(state)
    return history


# Composite alarms (doc_source/Create_Composite_Alarm.md, "Rule expressions"): ALARM(name), OK(name) and
# INSUFFICIENT_DATA(name) are TRUE when that alarm is in that state; TRUE and FALSE are constants; AND, OR, NOT
# and parentheses combine them. The composite is in ALARM when its rule is TRUE. ASSUMED (not stated):
# NOT binds tighter than AND, AND tighter than OR, as in the documented examples, which parenthesize mixtures.
_RULE_TOKEN = re.compile(
    r'\s*(?:(ALARM|OK|INSUFFICIENT_DATA)\(\s*"?([^")]+)"?\s*\)|(TRUE|FALSE|AND|OR|NOT|\(|\)))'
)


def composite_state(rule: str, states: Mapping[str, str]) -> str:
    """ "ALARM" or "OK" for a composite alarm's rule, given the state of every alarm it names."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(rule.rstrip()):
        found = _RULE_TOKEN.match(rule, position)
        if not found:
            raise ValueError(f"cannot read the rule at {rule[position:]!r}")
        tokens.append((found[1], found[2]) if found[1] else (found[3], ""))
        position = found.end()
    at = 0

    def take() -> tuple[str, str]:
        nonlocal at
        if at >= len(tokens):
            raise ValueError(f"rule ends early: {rule!r}")
        at += 1
        return tokens[at - 1]

    def peek() -> str | None:
        return tokens[at][0] if at < len(tokens) else None

    def disjunction() -> bool:
        value = conjunction()
        while peek() == "OR":
            take()
            value = conjunction() or value
        return value

    def conjunction() -> bool:
        value = negation()
        while peek() == "AND":
            take()
            value = negation() and value
        return value

    def negation() -> bool:
        if peek() == "NOT":
            take()
            return not negation()
        kind, name = take()
        if kind == "(":
            value = disjunction()
            if take()[0] != ")":
                raise ValueError(f"unbalanced parentheses in {rule!r}")
            return value
        if kind in ("TRUE", "FALSE"):
            return kind == "TRUE"
        if kind in ("ALARM", "OK", "INSUFFICIENT_DATA"):
            return states[name] == kind
        raise ValueError(f"unexpected {kind} in {rule!r}")

    result = disjunction()
    if at != len(tokens):
        raise ValueError(f"unexpected {tokens[at][0]} in {rule!r}")
    return "ALARM" if result else "OK"


def composite_states_in_any_order(rule: str, before: Mapping[str, str], after: Mapping[str, str]) -> set[str]:
    """Every state the composite passes through while its inputs move from `before` to `after`, one at a time in
    any order. ASSUMED: the User Guide does not say that alarms evaluated in the same minute change state at the
    same instant, and a composite judges its rule on each input's change ("Create a composite alarm": its state
    follows the rule whenever an alarm it names changes), so any intermediate mix can be seen and acted on."""
    changed = [name for name in after if after[name] != before.get(name)]
    seen = set()
    for mask in range(1 << len(changed)):
        states = dict(before) | {name: after[name] for i, name in enumerate(changed) if mask >> i & 1}
        seen.add(composite_state(rule, states))
    return seen
