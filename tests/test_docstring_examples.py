"""Docstring examples are code a reader copies: each must parse, and each call of the documented class or
function must pass its required keyword arguments and no argument it does not take."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
from collections.abc import Iterator
from typing import Any

import hubspoke


def _modules() -> Iterator[Any]:
    for info in pkgutil.walk_packages(hubspoke.__path__, "hubspoke."):
        # Lambda runtimes import their SDKs; CLI modules are covered by their own --help tests.
        if ".runtime" in info.name:
            continue
        yield importlib.import_module(info.name)


def _examples(obj: Any) -> Iterator[str]:
    doc = inspect.getdoc(obj) or ""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("Example::"):
            block: list[str] = []
            for follow in lines[i + 1 :]:
                if follow.strip() and not follow.startswith((" ", "\t")):
                    break
                block.append(follow)
            yield textwrap.dedent("\n".join(block)).strip()


def documented() -> Iterator[tuple[str, Any, str]]:
    for module in _modules():
        for name, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__ or not callable(obj):
                continue
            for example in _examples(obj):
                yield f"{module.__name__}.{name}", obj, example


def _call_problems(obj: Any, call: ast.Call) -> list[str]:
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = list(inspect.signature(target).parameters.values())
    if inspect.isclass(obj):
        params = params[1:]  # self
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return []
    given = {k.arg for k in call.keywords if k.arg}
    named = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    required = {p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    problems = [f"takes no argument {k}" for k in sorted(given - named)]
    problems += [f"misses required argument {k}" for k in sorted(required - given)]
    return problems


def test_every_example_parses_and_calls_with_the_right_arguments() -> None:
    seen = 0
    failures: list[str] = []
    for where, obj, example in documented():
        seen += 1
        try:
            tree = ast.parse(example)
        except SyntaxError as exc:
            failures.append(f"{where}: example does not parse: {exc}")
            continue
        namespace = vars(importlib.import_module(obj.__module__))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            # The documented object, or anything of ours its module defines or imports (not CDK classes,
            # whose jsii signatures inspect cannot read).
            called = namespace.get(node.func.id)
            if callable(called) and getattr(called, "__module__", "").startswith("hubspoke"):
                failures += [f"{where}: example {p}" for p in _call_problems(called, node)]
    assert seen >= 15, "the walk found too few examples: is it still looking in the right place?"
    assert not failures, "\n".join(failures)


def test_the_checker_catches_a_missing_required_argument() -> None:
    def construct(scope: object, construct_id: str, *, vpc: object, code: object, ports: object = ()) -> None:
        """A construct.

        Example::

            construct(stack, "Canary", vpc=vpc, port=1)
        """

    [(_, _, example)] = [("x", construct, e) for e in _examples(construct)]
    [call] = [n for n in ast.walk(ast.parse(example)) if isinstance(n, ast.Call)]
    assert _call_problems(construct, call) == ["takes no argument port", "misses required argument code"]
