"""`npx cdk` commands checked against the pinned CDK CLI's own help (node_modules/.bin/cdk, package.json).

The help is read once per build of the CLI, then kept under .cache/cdk-help for every test process: `cdk --help`
for the commands, `cdk <command> --help` for each command's options, their types and its positional arguments.
The CLI itself (yargs, without strict mode: node_modules/aws-cdk/lib/cli/parse-command-line-arguments.js)
silently ignores an option it does not know, which is how a typo in a runbook survives; this check refuses any
option the command's help does not list. Every `[array]` option there takes one value per occurrence
(`nargs: 1` in that file; test_cdk_cli.py keeps the fact checked when the CLI is bumped).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from tests.docs.shell import Word

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / "node_modules" / ".bin" / "cdk"
HELP_CACHE = ROOT / ".cache" / "cdk-help"
VALUE_TYPES = frozenset({"string", "array", "number"})
_OPTION_LINE = re.compile(r"^  (?P<names>-{1,2}[\w-]+(?:, -{1,2}[\w-]+)*)(?:\s{2,}|$)")
_TYPE = re.compile(r"\[(boolean|string|array|number|count)\]")


@dataclass(frozen=True)
class CdkCommand:
    """One command's options (every spelling -> its type, and its choices where the help lists them) and how
    many positional arguments it takes."""

    name: str
    options: dict[str, str]
    required: frozenset[str]
    max_positionals: int | None  # None: any number
    min_positionals: int
    choices: dict[str, tuple[str, ...]] = field(default_factory=dict)


def cli_build() -> str:
    """The installed CLI's build: its package.json (which names its version) and the option table its help
    prints from."""
    package = CDK.parent.parent / "aws-cdk"
    digest = hashlib.sha256()
    for part in (package / "package.json", package / "lib" / "cli" / "parse-command-line-arguments.js"):
        digest.update(part.read_bytes())
    return digest.hexdigest()[:16]


def run_help(*args: str) -> str:
    """`cdk <args> --help` as the pinned CLI prints it now: its own bin first on PATH, and CI=true as in CI, so the
    text does not depend on where it was read."""
    env = {**os.environ, "PATH": f"{CDK.parent}{os.pathsep}{os.environ.get('PATH', '')}", "CI": "true"}
    done = subprocess.run(
        [str(CDK), *args, "--help"], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"`cdk {' '.join(args)} --help` failed: {done.stderr.strip()[:500]}")
    return done.stdout


def _help(*args: str) -> str:
    """run_help's text, kept per build of the CLI (cli_build) and shared by the test processes and later runs:
    each run of the CLI is a second or two of Node start-up (seven runs in a session)."""
    kept = HELP_CACHE / cli_build() / f"{'-'.join(('cdk', *args))}.txt"
    if kept.exists():
        return kept.read_text()
    text = run_help(*args)
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=kept.parent, suffix=".tmp", delete=False) as out:
        out.write(text)
    os.replace(out.name, kept)  # whole or not at all: another process may be reading it
    return text


@cache
def cdk_commands() -> dict[str, str]:
    """Every command name and alias of the pinned CLI -> its canonical name."""
    names: dict[str, str] = {}
    current = ""
    for line in _help().split("Options:")[0].splitlines():
        found = re.match(r"^  cdk (?P<name>[\w-]+)", line)
        if found:
            current = names[found["name"]] = found["name"]
        # An alias note may wrap onto the description's next line.
        for alias in re.findall(r"\[aliases: ([^\]]+)\]", line):
            for each in alias.split(","):
                names[each.strip()] = current
    return names


@cache
def cdk_command(name: str) -> CdkCommand:
    text = _help(name)
    usage = text.splitlines()[0]
    positionals = re.findall(r"(\[[A-Z_]+(?:\.\.)?\]|<[A-Z_]+(?:\.\.)?>)", usage)
    options: dict[str, str] = {}
    required: set[str] = set()
    blocks: list[tuple[list[str], str]] = []  # each option's spellings and its help text (may wrap)
    for line in text.split("Options:", 1)[1].splitlines():
        opening = _OPTION_LINE.match(line)
        if opening:
            blocks.append(([n.strip() for n in opening["names"].split(",")], ""))
        if blocks:
            blocks[-1] = (blocks[-1][0], blocks[-1][1] + " " + line.strip())
    choices: dict[str, tuple[str, ...]] = {}
    for names, help_text in blocks:
        for kind in _TYPE.findall(help_text)[:1]:
            for each in names:
                options.setdefault(each, kind)
        if "[required]" in help_text:
            required.update(names)
        # `[choices: "never", "any-change", ...]`, wrapped over lines like any help text.
        listed = re.search(r"\[choices: ([^\]]*)\]", help_text)
        if listed:
            choices |= dict.fromkeys(names, tuple(re.findall(r'"([^"]*)"', listed[1])))
    return CdkCommand(
        name=name,
        options=options,
        required=frozenset(required),
        max_positionals=None if any(".." in p for p in positionals) else len(positionals),
        min_positionals=sum(1 for p in positionals if p.startswith("<")),
        choices=choices,
    )


def cdk_problem(words: list[Word]) -> str | None:
    """None if `cdk <command> ...` uses only what the command's help lists, else what is wrong."""
    if not words:
        return "no command after `cdk`"
    commands = cdk_commands()
    name = words[0].text
    if name not in commands:
        return f"`cdk {name}` is not a command of the pinned CDK CLI ({', '.join(sorted(set(commands.values())))})"
    command = cdk_command(commands[name])
    positionals = 0
    seen: set[str] = set()
    rest = iter(words[1:])
    for word in rest:
        text = word.text
        if text == "--":
            positionals += sum(1 for _ in rest)
            break
        if not text.startswith("-") or text == "-" or word.dynamic:
            positionals += 1
            continue
        option, has_inline, inline_value = text.partition("=")
        kind = command.options.get(option)
        if kind is None and option.startswith("--no-"):
            positive = "--" + option.removeprefix("--no-")
            if command.options.get(positive) == "boolean":
                kind = "negated"
        if kind is None:
            return f"`cdk {command.name}` has no option {option} (see `npx cdk {command.name} --help`)"
        seen.add(option)
        value = Word(inline_value) if has_inline else None
        if kind in VALUE_TYPES and value is None:
            value = next(rest, None)
            if value is None:
                return f"`cdk {command.name} {option}` needs a value"
        allowed = command.choices.get(option, ())
        if (
            allowed
            and value is not None
            and not value.dynamic
            and value.text[:1] != "<"
            and value.text not in allowed
        ):
            return f"`cdk {command.name} {option} {value.text}`: not one of {', '.join(allowed)}"
    if command.max_positionals is not None and positionals > command.max_positionals:
        return f"`cdk {command.name}` takes at most {command.max_positionals} positional argument(s)"
    if positionals < command.min_positionals:
        return f"`cdk {command.name}` needs {command.min_positionals} positional argument(s)"
    missing = {o for o in command.required if o.startswith("--")} - seen
    if missing:
        return f"`cdk {command.name}` requires {', '.join(sorted(missing))}"
    return None
