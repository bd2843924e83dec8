"""`aws` commands checked against botocore's service models (the pinned botocore in .venv) and the AWS CLI
v2's customizations, the way the CLI builds its argument tables.

Sources, aws/aws-cli branch v2 at 73fb33bb171ace3e9eaa03308f76e5de50c21393 (2.36.7), transcribed as facts:
- awscli/clidriver.py `ServiceOperation._create_argument_table`: one `--<xform_name(member, '-')>` per input
  member; required = in the shape's `required` and not an idempotency token; `list` members take zero or more
  values, `boolean` members are flags with a `--no-` twin (awscli/arguments.py ListArgument, BooleanArgument);
  every other member takes one value.
- awscli/data/cli.json: the global options, accepted anywhere on the line.
- awscli/handlers_registry.py: every operation also takes --cli-input-json/--cli-input-yaml
  (customizations/cliinput.py) and --generate-cli-skeleton (customizations/generatecliskeleton.py);
  paginated operations take --starting-token, --max-items and, with a limit key, --page-size
  (customizations/paginate.py); command renames s3 -> s3api, codedeploy -> deploy, config -> configservice.
- customizations/toplevelbool.py: in ec2, a member that is a structure of one boolean `Value` becomes a
  flag pair `--x`/`--no-x`; customizations/argrename.py ARGUMENT_RENAMES (the entries of services used here).
- Hand-written commands (not in any service model): CUSTOM_COMMANDS in tests/docs/aws_customizations.py.
A command the docs need that is not there fails with a message saying where to add it, with its source.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
from botocore import xform_name

from tests.docs.aws_customizations import (
    ARGUMENT_RENAMES,
    AWS_CLI_SOURCE,
    CLI_INPUT_OPTIONS,
    CUSTOM_COMMANDS,
    FLAG,
    GLOBAL_OPTIONS,
    OPTIONAL_VALUE,
    OUTPUT_CHOICES,
    PAGING_OPTIONS,
    SERVICE_RENAMES,
    VALUE,
    VALUES,
    ArgTable,
)
from tests.docs.aws_query import query_problems
from tests.docs.shell import Word


@cache
def _session() -> Any:
    return botocore.session.get_session()


@cache
def cli_services() -> dict[str, str]:
    """CLI command name -> botocore service name, for every service botocore models."""
    names = {SERVICE_RENAMES.get(s, s): s for s in _session().get_available_services()}
    return names


@cache
def operations(cli_service: str) -> dict[str, str]:
    """CLI operation name (kebab case, as the CLI spells it) -> botocore operation name."""
    model = _session().get_service_model(cli_services()[cli_service])
    return {xform_name(op, "-"): op for op in model.operation_names}


def _single_boolean_structure(shape: Any) -> bool:
    members = getattr(shape, "members", None) or {}
    return (
        shape.type_name == "structure"
        and list(members) == ["Value"]
        and members["Value"].type_name == "boolean"
    )


def _renamed(service: str, operation: str, name: str) -> str:
    return ARGUMENT_RENAMES.get(f"{service}.{operation}.{name}") or ARGUMENT_RENAMES.get(
        f"{service}.*.{name}", name
    )


@cache
def arg_table(cli_service: str, cli_operation: str) -> ArgTable:
    """The argument table the CLI builds for one modelled operation."""
    botocore_service = cli_services()[cli_service]
    model = _session().get_service_model(botocore_service)
    op = model.operation_model(operations(cli_service)[cli_operation])
    options: dict[str, str] = {}
    required: set[str] = set()
    shape = op.input_shape
    for member, member_shape in shape.members.items() if shape is not None else []:
        name = xform_name(member, "-")
        if member_shape.type_name == "boolean":
            options[_renamed(cli_service, cli_operation, name)] = FLAG
            options[_renamed(cli_service, cli_operation, f"no-{name}")] = FLAG
        elif cli_service == "ec2" and _single_boolean_structure(member_shape):
            # toplevelbool runs after argrename on the same event (handlers_registry.py), so its pair keeps
            # its names: `--no-disable-api-termination` exists for modify-instance-attribute.
            options[name] = options[f"no-{name}"] = FLAG
        else:
            options[_renamed(cli_service, cli_operation, name)] = (
                VALUES if member_shape.type_name == "list" else VALUE
            )
        if member in shape.required_members and not member_shape.metadata.get("idempotencyToken"):
            required.add(_renamed(cli_service, cli_operation, name))
    options |= CLI_INPUT_OPTIONS
    paginator = _paginator(botocore_service, op.name)
    if paginator is not None:
        options |= PAGING_OPTIONS
        if "limit_key" in paginator:
            options["page-size"] = VALUE
    return ArgTable(
        options,
        frozenset(required),
        source=f"botocore {botocore_service} {op.name}",
        takes_cli_input=True,
        output_shape=op.output_shape,
    )


def _paginator(service: str, operation: str) -> dict[str, Any] | None:
    try:
        config = _session().get_paginator_model(service)
    except Exception:
        return None
    try:
        result: dict[str, Any] = config.get_paginator(operation)
        return result
    except ValueError:
        return None


def command_table(words: list[Word]) -> tuple[str, str, ArgTable] | str:
    """(service, operation, its table) for `aws <service> <operation> ...`, or why there is none."""
    names = [w.text for w in words if not w.text.startswith("-")][:2]
    if len(names) < 2:
        return "an aws command needs a service and an operation"
    service, operation = names
    if (service, operation) in CUSTOM_COMMANDS:
        return service, operation, CUSTOM_COMMANDS[(service, operation)]
    if service not in cli_services():
        return f"`aws {service}` is not a service of the AWS CLI (botocore has no model named so)"
    if operation not in operations(service):
        close = sorted(o for o in operations(service) if _similar(o, operation))
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return (
            f"`aws {service} {operation}` is not an operation of {service}{hint} (if it is a hand-written "
            f"AWS CLI command, add it to CUSTOM_COMMANDS in tests/docs/aws_customizations.py with its {AWS_CLI_SOURCE} file)"
        )
    return service, operation, arg_table(service, operation)


def _similar(a: str, b: str) -> bool:
    wa, wb = set(a.split("-")), set(b.split("-"))
    return len(wa & wb) >= max(2, min(len(wa), len(wb)) - 1)


@cache
def _global_endpoint_prefixes() -> frozenset[str]:
    """Services with one global endpoint (botocore data/endpoints.json, aws partition, isRegionalized false)."""
    data = json.loads((Path(botocore.__file__).parent / "data" / "endpoints.json").read_text())
    aws = next(p for p in data["partitions"] if p["partition"] == "aws")
    return frozenset(k for k, v in aws["services"].items() if v.get("isRegionalized") is False)


def is_regional(cli_service: str) -> bool:
    """Whether the service's resources live in one Region (so a runbook command must say which)."""
    botocore_service = cli_services().get(cli_service, cli_service)
    try:
        prefix = _session().get_service_model(botocore_service).endpoint_prefix
    except Exception:
        prefix = cli_service
    return prefix not in _global_endpoint_prefixes()


def aws_problems(words: list[Word]) -> list[str]:
    """What is wrong with `aws <words>` against the CLI's definition (empty when nothing is)."""
    found = command_table(words)
    if isinstance(found, str):
        return [found]
    service, operation, table = found
    name = f"`aws {service} {operation}`"
    problems: list[str] = []
    seen: set[str] = set()
    positionals = -2  # the service and the operation come first
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.text.startswith("--") or word.dynamic:
            positionals += 1
            continue
        option, has_inline, inline = word.text[2:].partition("=")
        kind = table.options.get(option) or GLOBAL_OPTIONS.get(option)
        if kind is None:
            close = sorted(o for o in table.options if _similar(o, option) or option in o)
            hint = f" (did you mean {', '.join('--' + c for c in close[:4])}?)" if close else ""
            problems.append(
                f"{name} has no option --{option}{hint}; source: {table.source or AWS_CLI_SOURCE}"
            )
            continue
        seen.add(option)
        values: list[Word] = [Word(inline)] if has_inline else []
        if not has_inline and kind != FLAG:
            while i < len(words) and not (words[i].text.startswith("--") and not words[i].dynamic):
                values.append(words[i])
                i += 1
                if kind in (VALUE, OPTIONAL_VALUE):
                    break
        if kind == VALUE and not values:
            problems.append(f"{name} --{option} needs a value")
        if kind == FLAG and has_inline:
            problems.append(f"{name} --{option} is a flag and takes no value")
        if option == "output" and values and not values[0].dynamic and values[0].text not in OUTPUT_CHOICES:
            problems.append(f"--output {values[0].text} is not one of {', '.join(OUTPUT_CHOICES)}")
        if option == "query" and values and not values[0].dynamic and table.output_shape is not None:
            problems += [f"{name} {p}" for p in query_problems(table.output_shape, values[0].text)]
    low, high = table.positionals
    if not low <= max(positionals, 0) <= high:
        want = f"{low}" if low == high else f"{low} to {high}"
        problems.append(f"{name} takes {want} positional argument(s), got {max(positionals, 0)}")
    if not (table.takes_cli_input and seen & set(CLI_INPUT_OPTIONS)):
        missing = sorted(table.required - seen)
        if missing:
            problems.append(
                f"{name} requires {', '.join('--' + m for m in missing)} "
                f"(write a <placeholder> and say where its value comes from)"
            )
    if "region" not in seen and table.regional and is_regional(service):
        problems.append(
            f"{name} acts on a resource in one Region: add --region <region> (or the Region itself)"
        )
    return problems
