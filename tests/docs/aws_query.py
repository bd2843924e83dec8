"""`--query` expressions checked against the operation's output shape: JMESPath (the AWS CLI's query
language, awscli/clidriver.py `--query` via the `jmespath` package) returns null for a misspelled field
instead of failing, so a typo there prints nothing and no error.

The expression is parsed by the same `jmespath` package the CLI uses; every field it reads is looked up
in the botocore output shape it applies to. Constructs whose result shape is not tracked here (functions,
multi-selects, object projections) end the tracking without a verdict, never with a false one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError


@dataclass(frozen=True)
class ListOf:
    """The result of a projection: a list whose elements have `element`'s shape."""

    element: Any


def query_problems(
    output_shape: Any, query: str, *, literal_checks: Mapping[str, Callable[[str], str | None]] | None = None
) -> list[str]:
    """Fields the query reads that the output shape lacks; and, per field name in `literal_checks`, what is
    wrong with each literal it is compared with (`OutputKey=='FloatingIp'`: a stack output must exist)."""
    try:
        tree = jmespath.compile(query).parsed
    except JMESPathError as exc:
        return [f"--query is not valid JMESPath: {exc}"]
    problems: list[str] = []
    _walk(tree, output_shape, problems)
    for field, literal in _compared_literals(tree):
        check = (literal_checks or {}).get(field)
        if check is not None and isinstance(literal, str) and (wrong := check(literal)):
            problems.append(f"--query compares {field} with {literal!r}: {wrong}")
    return problems


def _compared_literals(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field, literal) of every comparison of a field with a literal, anywhere in the tree."""
    children = node.get("children", [])
    if node["type"] == "comparator" and len(children) == 2:
        kinds = {c["type"]: c for c in children}
        if set(kinds) == {"field", "literal"}:
            yield kinds["field"]["value"], kinds["literal"]["value"]
    for child in children:
        if isinstance(child, dict):
            yield from _compared_literals(child)


def _element(shape: Any) -> Any:
    if isinstance(shape, ListOf):
        return shape.element
    if shape is not None and getattr(shape, "type_name", None) == "list":
        return shape.member
    return None


def _walk(node: dict[str, Any], shape: Any, problems: list[str]) -> Any:
    kind, children = node["type"], node.get("children", [])
    if shape is None and kind not in ("filter_projection", "projection", "comparator"):
        for child in children:
            _walk(child, None, problems)
        return None
    if kind == "field":
        if isinstance(shape, ListOf):
            return ListOf(_walk(node, shape.element, problems))
        if getattr(shape, "type_name", None) == "structure":
            if node["value"] not in shape.members:
                problems.append(
                    f"--query reads {node['value']!r}, which {shape.name} does not have "
                    f"(members: {', '.join(shape.members)})"
                )
                return None
            return shape.members[node["value"]]
        if getattr(shape, "type_name", None) == "map":
            return shape.value
        return None
    if kind in ("subexpression", "pipe"):
        return _walk(children[1], _walk(children[0], shape, problems), problems)
    if kind == "index_expression":
        left = _walk(children[0], shape, problems)
        return _element(left) if children[1]["type"] == "index" else left
    if kind in ("projection", "filter_projection"):
        element = _element(_walk(children[0], shape, problems))
        if kind == "filter_projection":
            _walk(children[2], element, problems)
        right = _walk(children[1], element, problems)
        return ListOf(right) if element is not None else None
    if kind == "flatten":
        inner = _walk(children[0], shape, problems)
        element = _element(inner)
        return ListOf(_element(element) or element) if element is not None else None
    if kind in ("current", "identity"):
        return shape
    # Comparisons, boolean logic, functions, multi-selects, literals: check the fields they read.
    for child in children:
        _walk(child, shape, problems)
    return None
