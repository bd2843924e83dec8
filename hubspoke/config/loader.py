"""Read a config file into a HubSpokeConfig, or fail with every problem at once (file, YAML, schema, rules)."""

from __future__ import annotations

import copy
import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from hubspoke.config import rules
from hubspoke.config.schema import HubSpokeConfig, Refusals
from hubspoke.config.sections import Problem

# A field that takes a mapping, where YAML gave a list (a "- " in front of its keys) or a scalar.
_MAPPING_FIX = "a mapping (key: value lines under it), not a list: remove the '- ' in front of its keys"


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


def _field_at(loc: tuple[int | str, ...]) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The config section a location points into and the field it names there (its description is the fix)."""
    model: Any = HubSpokeConfig
    info: FieldInfo | None = None
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or part not in model.model_fields:
            return None, None
        info = model.model_fields[part]
        model = _unwrap(info.annotation)
    return (model if isinstance(model, type) and issubclass(model, BaseModel) else None), info


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


def _describe(error: ErrorDetails) -> list[Problem]:
    """Pydantic's error as the user's problems: the field's own message, or pydantic's with the field's description
    (found by the error's whole location, never by the key's bare name) as what to write."""
    loc = tuple(error["loc"])
    field, kind, value = _dotted(loc), error["type"], error.get("input")
    if kind == "value_error":
        refused = error.get("ctx", {}).get("error")
        if isinstance(refused, Refusals):
            return [Problem(_dotted((*loc, key)), message) for key, message in refused.problems]
        return [Problem(field, error["msg"].removeprefix("Value error, "))]
    if kind == "extra_forbidden":
        parent, _ = _field_at(loc[:-1])
        allowed = sorted(parent.model_fields) if parent else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean '{close[0]}'?" if close else "remove it"
        return [Problem(field, f"unknown key; {hint} (allowed here: {', '.join(allowed)})")]
    section, info = _field_at(loc)
    expected = info.description if info is not None and info.description else "see docs/configuration.md"
    if kind == "missing":
        return [Problem(field, f"required but missing; add it: {expected}")]
    if value is None and section is not None:
        default = "" if info is None or info.is_required() else ", or remove the line to take the defaults"
        return [Problem(field, f"has no value (nothing after the colon): write its keys under it{default}")]
    if kind in ("model_type", "dict_type") and isinstance(value, list):
        return [Problem(field, f"got a list ({value!r}); write {_MAPPING_FIX}")]
    if kind in ("model_type", "dict_type"):
        return [Problem(field, f"got {value!r}; write its keys under it (key: value lines), not a value")]
    if kind == "string_pattern_mismatch":
        return [Problem(field, f"'{value}' is not valid here; write {expected}")]
    quote = ""
    if kind == "string_type" and isinstance(value, int | float):
        # YAML 1.1 reads an unquoted 1.30 as the float 1.3: the digits the user wrote are already lost.
        quote = (
            " (quote it: YAML reads unquoted 1.30 as the number 1.3)"
            if isinstance(value, float)
            else " (quote it)"
        )
    return [
        Problem(
            field, f"{error['msg'][:1].lower()}{error['msg'][1:]}, got {value!r}{quote}; expected {expected}"
        )
    ]


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
    try:
        config = HubSpokeConfig.model_validate(raw)
    except ValidationError as exc:
        problems = [problem for error in exc.errors() for problem in _describe(error)]
        # Every problem at once: the environment-wide rules also judge what the schema accepted, the refused
        # values left to their defaults, when that remainder is a valid config (else they wait for a fix).
        refused = [error["loc"] for error in exc.errors()]
        remainder = _valid_remainder(raw, refused)
        if remainder is not None:
            # A rule about a refused value's default would be about a value nobody wrote: left out.
            dropped = tuple(_dotted(loc) for loc in refused)
            problems += [
                p
                for p in rules.check(remainder)
                if p.severity == "error"
                and not any(p.field == d or p.field.startswith(f"{d}.") for d in dropped)
            ]
        raise ConfigError(path, problems) from None
    # The environment-wide rules read a valid config (the schema has refused nothing).
    findings = rules.check(config)
    problems = [p for p in findings if p.severity == "error"]
    if problems:
        raise ConfigError(path, problems)
    return LoadedConfig(path, config, tuple(p for p in findings if p.severity == "warning"))


def _valid_remainder(raw: Mapping[str, Any], locations: list[tuple[int | str, ...]]) -> HubSpokeConfig | None:
    """The config `raw` describes with the value at each refused location dropped (its field then takes its
    default), or None when a refused location is not a key of a mapping or the remainder is still refused."""
    remainder = copy.deepcopy(dict(raw))
    for loc in locations:
        parent: Any = remainder
        for part in loc[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                return None
        if not loc or not isinstance(loc[-1], str) or not isinstance(parent, dict):
            return None
        parent.pop(loc[-1], None)
    try:
        return HubSpokeConfig.model_validate(remainder)
    except ValidationError:
        return None


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
