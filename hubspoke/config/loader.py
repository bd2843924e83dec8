"""Read a config file into a HubSpokeConfig, or fail with every problem at once (file, YAML, schema, rules)."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from hubspoke.config import rules
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem, partial_view, view

# Field-specific advice where pydantic's own words would not tell the user what to write.
_EXAMPLES = {
    # The schema's pattern: a lowercase letter, then up to 15 lowercase letters, digits or hyphens.
    "environment": "a short lowercase name such as dev (a letter, then at most 15 letters, digits or hyphens)",
    "ami_id": "the image's ID, ami- and 8 to 17 hex digits; `hubspoke ami --region <code>` prints the line to paste",
    "version": "the Qumulo Core release as numbers, e.g. 7.10.2.1 (a name such as latest is not a pinned release)",
    "account": 'twelve digits in quotes, e.g. "123456789012"',
    "region": "a Region code such as us-west-2",
    "cidr": "an IPv4 CIDR such as 10.20.0.0/16",
    "hub": "a mapping with region and cidr",
}
# A field that takes a mapping, where YAML gave a list (a "- " in front of its keys) or a scalar.
_MAPPING_FIX = "a mapping (key: value lines under it), not a list: remove the '- ' in front of its keys"
# Keys earlier releases read, with what replaces them: said beside the schema's "unknown key".
_RETIRED: dict[tuple[str, ...], str] = {
    ("storage", "floating_ips_per_node"): (
        "replaced by storage.floating_ip_count, the cluster's total as Qumulo counts it (3 to 100): "
        "write floating_ip_count: <node_count x floating_ips_per_node> to keep today's addresses"
    ),
}


@dataclass(frozen=True)
class LoadedConfig:
    """A valid config and the warnings it still deserves."""

    path: Path
    config: HubSpokeConfig
    warnings: tuple[Problem, ...]


class ConfigError(Exception):
    """A config file that cannot be used, with every problem found in it."""

    def __init__(self, path: Path, problems: list[Problem]):
        self.path = path
        self.problems = problems
        self.lines = [format_problem(path, p) for p in problems]
        super().__init__("\n".join(self.lines))

    def __str__(self) -> str:
        return "\n".join(self.lines)


def format_problem(path: Path | str, problem: Problem) -> str:
    prefix = "warning: " if problem.severity == "warning" else ""
    return f"{path}: {problem.field}: {prefix}{problem.message}"


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice, which PyYAML would silently let the last one win."""


def _construct_mapping(
    loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False
) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key '{key}' is given twice; keep one", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, [Problem("(file)", "file not found; check the path or create it")]) from None
    except IsADirectoryError:
        raise ConfigError(
            path, [Problem("(file)", "is a directory, not a config file; give the path of a .yaml file")]
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            path,
            [
                Problem(
                    "(file)",
                    f"is not UTF-8 text ({exc.reason} at byte {exc.start}): a binary file? Give a YAML config",
                )
            ],
        ) from None
    except PermissionError as exc:
        raise ConfigError(
            path, [Problem("(file)", f"cannot read it ({exc}); check its permissions")]
        ) from None
    except OSError as exc:
        raise ConfigError(path, [Problem("(file)", f"cannot read it ({exc})")]) from None
    if not text.strip():
        raise ConfigError(
            path, [Problem("(file)", "file is empty; start from the minimal config in README.md")]
        )
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = "(yaml)"
        if mark:
            # At the end of the stream PyYAML marks the line after the last; name the last line instead.
            lines = text.splitlines() or [""]
            line = min(mark.line, len(lines) - 1)
            column = mark.column if line == mark.line else len(lines[line])
            where = f"(yaml line {line + 1}, column {column + 1})"
        what = " ".join(str(exc.problem or exc.context or "syntax error").split())
        if "'\\t'" in what:
            # YAML 1.1/1.2: tabs may not indent ("tab characters must not be used in indentation").
            what, fix = "a tab character here", "YAML does not allow tabs for indentation: indent with spaces"
        else:
            fix = "fix the YAML syntax there"
        raise ConfigError(path, [Problem(where, f"{what}; {fix}")]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, [Problem("(yaml)", f"{exc}; fix the YAML syntax")]) from None


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The config section a location points into, to list its allowed keys."""
    model: Any = HubSpokeConfig
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None
        model = _unwrap(model.model_fields[part].annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (list, typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation = args[0]
        else:
            return annotation


def _describe(error: ErrorDetails) -> Problem:
    loc = tuple(error["loc"])
    field = _dotted(loc)
    kind = error["type"]
    value = error.get("input")
    name = next((p for p in reversed(loc) if isinstance(p, str)), "")
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        allowed = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean '{close[0]}'?" if close else "remove it"
        return Problem(field, f"unknown key; {hint} (allowed here: {', '.join(allowed)})")
    if kind == "missing":
        example = _EXAMPLES.get(name, "see README.md, 'Configuration'")
        return Problem(field, f"required but missing; add it: {example}")
    if kind == "value_error":
        return Problem(field, error["msg"].removeprefix("Value error, "))
    if name == "inter_region_mtu" and kind == "less_than_equal":
        return Problem(
            field, f"{value} exceeds 8500, the most inter-Region VPC peering carries; set 8500 or less"
        )
    if name == "soft_capacity_limit_tb" and kind == "greater_than_equal":
        # Releases before issue 22 accepted any positive limit; Qumulo's range starts at 50 TB
        # (qumulo-terraform-aws @ 8a6e4d57, variables.tf soft_capacity_limit_tb "50 to 50000").
        return Problem(
            field,
            f"{value} TB is below Qumulo's minimum soft capacity limit, 50 TB; set 50 or more. On a cluster "
            "an earlier hubspoke release deployed with less, the raise is an ordinary capacity increase "
            "(docs/runbooks/qumulo-core.md, 'Soft capacity limits below 50 TB')",
        )
    if kind == "string_pattern_mismatch" and name in _EXAMPLES:
        return Problem(field, f"'{value}' is not valid here; write {_EXAMPLES[name]}")
    if name == "count" and kind == "greater_than_equal":
        return Problem(
            field,
            f"{value} nodes: a HyperPod instance group needs at least 1; set compute.enabled: false for none",
        )
    if kind in ("model_type", "dict_type") and isinstance(value, list | str | int | float):
        got = type(value).__name__
        return Problem(field, f"got a {got} ({value!r}); write {_EXAMPLES.get(name, _MAPPING_FIX)}")
    if kind.endswith("_type") or kind in ("model_type", "dict_type", "list_type"):
        hint = (
            f"expected {_EXAMPLES[name]}"
            if name in _EXAMPLES
            else "docs/configuration.md gives every key's type"
        )
        got = type(value).__name__ if value is not None else "nothing"
        quote = ""
        if kind == "string_type" and isinstance(value, int | float):
            # YAML 1.1 reads an unquoted 1.30 as the float 1.3: the digits the user wrote are already lost.
            quote = (
                " (quote it: YAML reads unquoted 1.30 as the number 1.3)"
                if isinstance(value, float)
                else " (quote it)"
            )
        return Problem(field, f"{error['msg'].lower()}, got {got} {value!r}{quote}; {hint}")
    return Problem(field, f"{error['msg']} (got {value!r})")


def load(path: Path | str) -> LoadedConfig:
    """Parse and validate one config file; raises ConfigError listing every problem found."""
    path = Path(path)
    raw = _read_yaml(path)
    if raw is None:
        raise ConfigError(
            path,
            [Problem("(file)", "file is empty (only comments); start from the minimal config in README.md")],
        )
    if not isinstance(raw, Mapping):
        raise ConfigError(
            path, [Problem("(top level)", "expected a mapping of keys (environment, account, hub, spokes)")]
        )
    problems: list[Problem] = []
    config: HubSpokeConfig | None = None
    try:
        config = HubSpokeConfig.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors():
            problems.append(_describe(error))
            retired = _RETIRED.get(tuple(p for p in error["loc"] if isinstance(p, str))[-2:])
            if error["type"] == "extra_forbidden" and retired:
                problems.append(Problem(_dotted(tuple(error["loc"])), retired))
    # The rules read the typed config; where the schema refused a part they read the rest (every problem at once).
    findings = rules.check(view(config) if config is not None else partial_view(raw))
    problems += [p for p in findings if p.severity == "error"]
    if problems or config is None:
        raise ConfigError(path, problems)
    return LoadedConfig(path, config, tuple(p for p in findings if p.severity == "warning"))


def load_environments(target: Path | str) -> list[LoadedConfig]:
    """Every environment to synthesize: one file, or each *.yaml in a directory; all problems of all files at once."""
    target = Path(target)
    paths = sorted(target.glob("*.yaml")) if target.is_dir() else [target]
    # `make synth`, CI and `cdk synth` read *.yaml only: a *.yml beside them would be skipped without a word.
    skipped = sorted(target.glob("*.yml")) if target.is_dir() else []
    if skipped:
        raise ConfigError(
            target,
            [
                Problem("(file)", f"{p.name} is not read (configs are *.yaml): rename it to {p.stem}.yaml")
                for p in skipped
            ],
        )
    if not paths:
        raise ConfigError(
            target, [Problem("(file)", "no *.yaml config in this directory; add config/<env>.yaml")]
        )
    loaded: list[LoadedConfig] = []
    errors: list[str] = []
    for path in paths:
        try:
            loaded.append(load(path))
        except ConfigError as exc:
            errors += exc.lines
    seen: dict[str, Path] = {}
    for item in loaded:
        env = item.config.environment
        if env in seen:
            errors.append(
                format_problem(
                    item.path,
                    Problem("environment", f"'{env}' is also the environment of {seen[env]}; rename one"),
                )
            )
        seen.setdefault(env, item.path)
    if errors:
        combined = ConfigError(target, [])
        combined.lines = errors
        raise combined
    return loaded
