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
- awscli/clidriver.py: global options may come before the service (`aws --region r ec2 ...`) as well as
  after the operation.
- customizations/streamingoutputarg.py: an operation with a streaming output takes the output file as one
  required positional argument (`aws s3api get-object ... <outfile>`).
- An operation whose argument table another customization changes is refused until it is transcribed
  (tests/docs/aws_handlers.py lists them all, from awscli/handlers_registry.py).
- Hand-written commands (not in any service model): CUSTOM_COMMANDS in tests/docs/aws_customizations.py.
- `--region` must be a Region of botocore's data/endpoints.json (any partition).
- `--query` must be JMESPath (clidriver.py compiles it with the `jmespath` package), and a stack output it
  selects by name must be one hubspoke's stacks define: JMESPath reads null for a missing one and prints nothing.
A command the docs need that is not there fails with a message saying where to add it, with its source.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import jmespath
from botocore import xform_name
from jmespath.exceptions import JMESPathError

from tests.docs.aws_customizations import (
    ARGUMENT_RENAMES,
    AWS_CLI_SOURCE,
    CLI_INPUT_OPTIONS,
    CUSTOM_COMMANDS,
    FLAG,
    GLOBAL_OPTIONS,
    OPTIONAL_VALUE,
    PAGING_OPTIONS,
    SERVICE_RENAMES,
    TRANSCRIBED_HANDLERS,
    VALUE,
    VALUES,
    ArgTable,
    Opt,
)
from tests.docs.aws_handlers import COMMAND_TABLE_CHANGES, TRANSCRIBED_SERVICES, handlers
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
    options: dict[str, Opt] = {}
    required: set[str] = set()
    shape = op.input_shape
    for member, member_shape in shape.members.items() if shape is not None else []:
        name = xform_name(member, "-")
        if member_shape.type_name == "boolean":
            options[_renamed(cli_service, cli_operation, name)] = FLAG
            options[_renamed(cli_service, cli_operation, f"no-{name}")] = FLAG
        elif cli_service == "ec2" and _single_boolean_structure(member_shape):
            # toplevelbool runs after argrename on the same event (handlers_registry.py), so its pair keeps
            # its names: `--no-disable-api-termination` exists for modify-instance-attribute. The positive
            # takes an optional value (PositiveBooleanArgument: nargs '?').
            options[name], options[f"no-{name}"] = OPTIONAL_VALUE, FLAG
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
        positionals=(1, 1) if op.has_streaming_output else (0, 0),
        source=f"botocore {botocore_service} {op.name}",
        takes_cli_input=True,
    )


def untranscribed(cli_service: str, cli_operation: str) -> list[str]:
    """Customizations that change this operation's argument table and that tests/docs does not model."""
    modules = handlers(cli_service, cli_operation)
    return sorted(m for m in modules if m not in TRANSCRIBED_HANDLERS)


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


def command_table(service: str, operation: str) -> ArgTable | str:
    """The table of `aws <service> <operation>`, or why there is none."""
    if (service, operation) in CUSTOM_COMMANDS:
        return CUSTOM_COMMANDS[(service, operation)]
    if service in ("s3", "configure"):  # all hand-written (customizations/s3/subcommands.py, configure/)
        return (
            f"`aws {service} {operation}` is a hand-written AWS CLI command not transcribed here: add it to "
            f"CUSTOM_COMMANDS in tests/docs/aws_customizations.py with its {AWS_CLI_SOURCE} file"
        )
    if service not in TRANSCRIBED_SERVICES:
        if service not in cli_services():
            return f"`aws {service}` is not a service of the AWS CLI (botocore has no model named so)"
        return (
            f"`aws {service}`: its AWS CLI customizations are not transcribed here: add its entries of "
            f"awscli/handlers_registry.py ({AWS_CLI_SOURCE}) to tests/docs/aws_handlers.py"
        )
    change = COMMAND_TABLE_CHANGES.get(service, {}).get(operation)
    if change == "removed":
        return f"`aws {service} {operation}` is removed from the AWS CLI (awscli/customizations/removals.py)"
    if change == "custom":
        return (
            f"`aws {service} {operation}` is a hand-written AWS CLI command not transcribed here: add it to "
            f"CUSTOM_COMMANDS in tests/docs/aws_customizations.py with its {AWS_CLI_SOURCE} file"
        )
    if operation == "wait":
        return f"`aws {service} wait` (waiters, awscli/customizations/waiters.py) is not transcribed here"
    if operation not in operations(service):
        close = sorted(o for o in operations(service) if _similar(o, operation))
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return (
            f"`aws {service} {operation}` is not an operation of {service}{hint} (if it is a hand-written "
            f"AWS CLI command, add it to CUSTOM_COMMANDS in tests/docs/aws_customizations.py with its {AWS_CLI_SOURCE} file)"
        )
    missing = untranscribed(service, operation)
    if missing:
        return (
            f"`aws {service} {operation}` has its arguments changed by AWS CLI customizations that "
            f"tests/docs does not model ({', '.join(f'awscli/customizations/{m}.py' for m in missing)} at "
            f"{AWS_CLI_SOURCE}): transcribe them into tests/docs/aws_customizations.py before documenting it"
        )
    return arg_table(service, operation)


def _similar(a: str, b: str) -> bool:
    wa, wb = set(a.split("-")), set(b.split("-"))
    return len(wa & wb) >= max(2, min(len(wa), len(wb)) - 1)


@cache
def _endpoints() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (Path(botocore.__file__).parent / "data" / "endpoints.json").read_text()
    )
    return data


@cache
def _global_endpoint_prefixes() -> frozenset[str]:
    """Services with one global endpoint (botocore data/endpoints.json, aws partition, isRegionalized false)."""
    aws = next(p for p in _endpoints()["partitions"] if p["partition"] == "aws")
    return frozenset(k for k, v in aws["services"].items() if v.get("isRegionalized") is False)


@cache
def known_regions() -> frozenset[str]:
    """Every Region of every partition in botocore's data/endpoints.json."""
    return frozenset(r for p in _endpoints()["partitions"] for r in p["regions"])


def region_problem(value: Word) -> str | None:
    """Why `value` is not a Region (None when it is, or when the docs cannot know it: a placeholder, a variable)."""
    if value.dynamic or value.text.startswith("<") or value.text in known_regions():
        return None
    return f"{value.text} is not an AWS Region (botocore endpoints.json): e.g. us-east-2, us-west-2"


def is_regional(cli_service: str) -> bool:
    """Whether the service's resources live in one Region (so a runbook command must say which)."""
    botocore_service = cli_services().get(cli_service, cli_service)
    try:
        prefix = _session().get_service_model(botocore_service).endpoint_prefix
    except Exception:
        prefix = cli_service
    return prefix not in _global_endpoint_prefixes()


def stack_output_problem(key: str) -> str | None:
    """Why `key` is not an output hubspoke's stacks define (hubspoke/outputs.py, the one place they are named)."""
    from hubspoke.outputs import OUTPUTS

    for output in OUTPUTS:
        if not output.per_az and key == output.name:
            return None
        # Per-AZ outputs append the AZ ID in CamelCase: PrivateSubnetUse2Az1.
        suffix = key.removeprefix(output.name)
        if output.per_az and suffix != key and re.fullmatch(r"(?:[A-Z][a-z0-9]*)+", suffix):
            return None
    names = ", ".join(o.name + ("<AzId>" if o.per_az else "") for o in OUTPUTS)
    return f"no hubspoke stack has this output (hubspoke/outputs.py: {names})"


def query_problems(service: str, query: str) -> list[str]:
    """What is wrong with a --query: not JMESPath, or a stack output selected by a name no stack outputs."""
    try:
        jmespath.compile(query)
    except JMESPathError as exc:
        return [f"--query is not valid JMESPath: {exc}"]
    keys = re.findall(r"OutputKey\s*==\s*'([^']*)'", query) if service == "cloudformation" else []
    return [f"--query compares OutputKey with {k!r}: {p}" for k in keys if (p := stack_output_problem(k))]


def _is_option(word: Word) -> bool:
    return word.text.startswith("--") and not word.dynamic


def _values(words: list[Word], at: int, opt: Opt) -> tuple[list[Word], int]:
    """The words an option consumes from `at` (argparse: never a word that looks like an option)."""
    if opt.nargs == 0:
        return [], at
    most = {"?": 1, "*": len(words), "+": len(words)}.get(str(opt.nargs), opt.nargs)
    taken: list[Word] = []
    while at < len(words) and len(taken) < int(most) and not _is_option(words[at]):
        taken.append(words[at])
        at += 1
    return taken, at


def _option_problems(name: str, option: str, opt: Opt, values: list[Word], inline: bool) -> list[str]:
    problems = []
    if opt.nargs == 0 and inline:
        problems.append(f"{name} --{option} is a flag and takes no value")
    elif isinstance(opt.nargs, int) and opt.nargs > 0 and len(values) != opt.nargs:
        want = "a value" if opt.nargs == 1 else f"{opt.nargs} values"
        problems.append(f"{name} --{option} needs {want}, got {len(values)}")
    elif opt.nargs == "+" and not values:
        problems.append(f"{name} --{option} needs one or more values")
    for value in values:
        if (
            opt.choices
            and not (value.dynamic or value.text.startswith("<"))
            and value.text not in opt.choices
        ):
            problems.append(f"--{option} {value.text} is not one of {', '.join(opt.choices)}")
        if option == "region" and (wrong := region_problem(value)):
            problems.append(f"--region {wrong}")
    return problems


def aws_problems(words: list[Word]) -> list[str]:
    """What is wrong with `aws <words>` against the CLI's definition (empty when nothing is)."""
    problems: list[str] = []
    seen: set[str] = set()
    names: list[str] = []
    i = 0
    # Global options may precede the service and the operation (clidriver's main parser).
    while i < len(words) and len(names) < 2:
        word = words[i]
        i += 1
        if not _is_option(word):
            names.append(word.text)
            continue
        option, has_inline, inline = word.text[2:].partition("=")
        opt = GLOBAL_OPTIONS.get(option)
        if opt is None:
            problems.append(f"--{option} before the operation is not a global option of the AWS CLI")
            continue
        values, i = ([Word(inline)], i) if has_inline else _values(words, i, opt)
        seen.add(option)
        problems += _option_problems("`aws`", option, opt, values, bool(has_inline))
    if len(names) < 2:
        return [*problems, "an aws command needs a service and an operation"]
    service, operation = names
    found = command_table(service, operation)
    if isinstance(found, str):
        return [*problems, found]
    table = found
    name = f"`aws {service} {operation}`"
    positionals = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not _is_option(word):
            positionals += 1
            continue
        option, has_inline, inline = word.text[2:].partition("=")
        opt = table.options.get(option) or GLOBAL_OPTIONS.get(option)
        if opt is None:
            close = sorted(o for o in table.options if _similar(o, option) or option in o)
            hint = f" (did you mean {', '.join('--' + c for c in close[:4])}?)" if close else ""
            problems.append(
                f"{name} has no option --{option}{hint}; source: {table.source or AWS_CLI_SOURCE}"
            )
            continue
        values, i = ([Word(inline)], i) if has_inline else _values(words, i, opt)
        seen.add(option)
        problems += _option_problems(name, option, opt, values, bool(has_inline))
        if option == "query" and values and not values[0].dynamic:
            problems += [f"{name} {p}" for p in query_problems(service, values[0].text)]
    low, high = table.positionals
    if not low <= positionals <= high:
        want = f"{low}" if low == high else f"{low} to {high}"
        problems.append(f"{name} takes {want} positional argument(s), got {positionals}")
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
