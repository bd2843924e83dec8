"""CloudWatch Logs' matching of a space-delimited metric-filter pattern against one log event, as
`aws logs test-metric-filter` reports it (matched or not, and the values extracted per field).

Only what the documentation states is implemented; anything else raises NotImplementedError rather than
guessing. Source: CloudWatch Logs User Guide, awsdocs/amazon-cloudwatch-logs-user-guide@26c12c3,
doc_source/FilterAndPatternSyntax.md, "Using metric filters to extract values from space-delimited log
events":
- an event's fields are separated by spaces; characters between brackets ([]) or double quotes ("") are one
  field, and the extracted value leaves the brackets or quotes out (the documented `$timestamp` and
  `$request` values);
- a pattern names the fields in brackets, separated by commas; `...` stands for any number of unnamed fields;
- a field may carry conditions with =, !=, <, <=, >, >= and `*` as a wildcard (`request =*.html*` holds for a
  value containing `.html`; `status_code = 4*` for one beginning with 4), joined with && or ||
  (`status_code = 404 || status_code = 410`).
ASSUMED (no source says; nothing hubspoke ships depends on it): extra fields after the last name are not
allowed (the count must match unless `...` is used); a quoted value compares as an exact string; a bare
number compares numerically and a field that is not a number does not satisfy it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TERM = re.compile(r'\s*([A-Za-z_][\w-]*)\s*(!=|<=|>=|=|<|>)\s*("(?:[^"\\]|\\.)*"|[^\s,&|\]]+)\s*')


@dataclass(frozen=True)
class _Slot:
    name: str  # "..." for an ellipsis
    terms: tuple[tuple[str, str, str], ...] = ()  # (field, operator, value as written)
    joiner: str = ""  # "&&" or "||" between terms


def event_fields(message: str) -> list[str]:
    fields: list[str] = []
    i = 0
    while i < len(message):
        if message[i] == " ":
            i += 1
            continue
        closing = {"[": "]", '"': '"'}.get(message[i])
        if closing:
            end = message.find(closing, i + 1)
            end = len(message) if end < 0 else end
            fields.append(message[i + 1 : end])
            i = end + 1
        else:
            end = message.find(" ", i)
            end = len(message) if end < 0 else end
            fields.append(message[i:end])
            i = end
    return fields


def _split_top_level(body: str) -> list[str]:
    parts, depth_quote, current = [], False, []
    for ch in body:
        if ch == '"':
            depth_quote = not depth_quote
        if ch == "," and not depth_quote:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _slot(text: str) -> _Slot:
    if text == "...":
        return _Slot("...")
    if re.fullmatch(r"[A-Za-z_][\w-]*", text):
        return _Slot(text)
    joiners = set(re.findall(r"&&|\|\|", re.sub(r'"(?:[^"\\]|\\.)*"', "", text)))
    if len(joiners) > 1:
        raise NotImplementedError(f"&& and || mixed in one field: precedence is not documented ({text})")
    joiner = joiners.pop() if joiners else ""
    pieces = re.split(r"\s*(?:&&|\|\|)\s*(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", text) if joiner else [text]
    terms = []
    for piece in pieces:
        found = _TERM.fullmatch(piece)
        if not found:
            raise ValueError(f"not a field condition: {piece!r}")
        terms.append((found[1], found[2], found[3]))
    return _Slot(terms[0][0], tuple(terms), joiner)


def parse_pattern(pattern: str) -> list[_Slot]:
    text = pattern.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise NotImplementedError("only space-delimited patterns ([...]) are implemented")
    slots = [_slot(p) for p in _split_top_level(text[1:-1])]
    if sum(s.name == "..." for s in slots) > 1:
        raise NotImplementedError("more than one ellipsis")
    return slots


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _holds(value: str, operator: str, written: str) -> bool:
    if written.startswith('"'):
        literal = re.sub(r"\\(.)", r"\1", written[1:-1])
        if "*" in literal:
            raise NotImplementedError("a wildcard inside quotes: its meaning is not documented")
        if operator not in ("=", "!="):
            raise NotImplementedError("ordering comparison with a quoted value")
        return (value == literal) == (operator == "=")
    if "*" in written:
        if operator not in ("=", "!="):
            raise NotImplementedError("ordering comparison with a wildcard")
        regex = ".*".join(re.escape(part) for part in written.split("*"))
        return bool(re.fullmatch(regex, value, flags=re.S)) == (operator == "=")
    expected, actual = _number(written), _number(value)
    if expected is None:
        if operator not in ("=", "!="):
            raise NotImplementedError("ordering comparison with a bare word")
        return (value == written) == (operator == "=")
    if actual is None:
        return False
    return {
        "=": actual == expected,
        "!=": actual != expected,
        "<": actual < expected,
        "<=": actual <= expected,
        ">": actual > expected,
        ">=": actual >= expected,
    }[operator]


def match(pattern: str, message: str) -> dict[str, str] | None:
    """The extracted fields (`$name` -> value) if the pattern matches the event, else None."""
    slots = parse_pattern(pattern)
    fields = event_fields(message)
    named = [s for s in slots if s.name != "..."]
    if "..." in [s.name for s in slots]:
        cut = [s.name for s in slots].index("...")
        after = len(slots) - cut - 1
        if len(fields) < len(named):
            return None
        bound = list(zip(slots[:cut], fields[:cut], strict=True))
        bound += list(zip(slots[cut + 1 :], fields[len(fields) - after :], strict=True))
    else:
        if len(fields) != len(slots):
            return None
        bound = list(zip(slots, fields, strict=True))
    values = {slot.name: value for slot, value in bound}
    for slot, _ in bound:
        if not slot.terms:
            continue
        results = []
        for field, operator, written in slot.terms:
            if field not in values:
                raise ValueError(f"condition on {field!r}, which the pattern does not name")
            results.append(_holds(values[field], operator, written))
        if not (any(results) if slot.joiner == "||" else all(results)):
            return None
    return {f"${name}": value for name, value in values.items()}
