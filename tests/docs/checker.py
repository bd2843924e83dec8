"""Every command shown in the docs, checked against the real definition of its tool.

`check(snippet)` returns what it checked and every problem, each naming the file, the line, the command and
what is wrong with it, so a failing `make test` says exactly what to fix.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs import conventions
from tests.docs.argparse_cli import (
    argparse_problem,
    choice_values,
    hubspoke_name_problem,
    hubspoke_parser,
    qq_parser,
)
from tests.docs.aws_cli import aws_problems, command_table, region_problem
from tests.docs.cdk_cli import cdk_command, cdk_commands, cdk_problem
from tests.docs.markdown import SHELL_LANGUAGES, Snippet, command_text
from tests.docs.shell import Command, ShellSyntaxError, Word, parse

CHECKED_TOOLS = ("aws", "qq", "hubspoke", "cdk", "kubectl", "date")
# Inline code that starts like a command but shows something else; each with the reason it is not one.
NOT_COMMANDS = {
    "hubspoke on_create:": "the prefix of every log line on_create.sh writes",
}
# Commands that run the command given as their remaining arguments: sudo(8); env(1), nice(1), nohup(1) and
# timeout(1) of GNU coreutils; watch(1) of procps-ng; xargs(1) of GNU findutils; the shell's `exec` and
# `command` (POSIX Shell Command Language 2.14, 2.9.1.1). The wrapped command is the first later word that
# runs something checked: a wrapper's own option values are not parsed, so a value spelled like a tool would
# be read as one (a loud false finding, never a silent pass).
WRAPPERS = frozenset({"sudo", "env", "nice", "nohup", "timeout", "watch", "xargs", "exec", "command"})
_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")


@dataclass(frozen=True)
class Invocation:
    """The checked tool a command runs, where its own arguments start, and anything wrong with how it is run."""

    tool: str
    start: int
    problem: str | None = None
    appended: bool = False  # xargs adds arguments at run time, after the last one written


@dataclass(frozen=True)
class Finding:
    where: str
    command: str
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: `{self.command}`: {self.problem}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    checked: Counter[str] = field(default_factory=Counter)


def _runs(word: str) -> bool:
    name = word.rsplit("/", 1)[-1]
    return name in WRAPPERS or name in CHECKED_TOOLS or name == "npx" or bool(_PYTHON.fullmatch(name))


def tool_of(command: Command) -> Invocation | None:
    """The checked tool a command runs, looking through wrappers (`sudo`, `env`, `xargs`, ...), paths
    (`.venv/bin/hubspoke`), `npx cdk` and `python -m`."""
    argv, at, appended = command.argv, 0, False
    while at < len(argv):
        name = argv[at].rsplit("/", 1)[-1]
        if name in WRAPPERS:
            wrapped = next((i for i in range(at + 1, len(argv)) if _runs(argv[i])), len(argv))
            # GNU xargs appends the input's words to the command unless -I/-i/--replace names a placeholder.
            replaces = any(a.startswith(("-I", "-i", "--replace")) for a in argv[at + 1 : wrapped])
            appended |= name == "xargs" and not replaces
            at = wrapped
            continue
        if name == "npx":
            # npx runs a package's binary: the CDK CLI's is `cdk` (package.json, node_modules/.bin).
            first = next((i for i in range(at + 1, len(argv)) if not argv[i].startswith("-")), len(argv))
            return (
                Invocation("cdk", first + 1, appended=appended)
                if argv[first : first + 1] == ["cdk"]
                else None
            )
        if _PYTHON.fullmatch(name):
            module = argv[at + 2] if argv[at + 1 : at + 2] == ["-m"] and len(argv) > at + 2 else ""
            if module.split(".")[0] != "hubspoke":
                return None
            # `python -m` runs a package's __main__ module (Python docs, "-m"): hubspoke has none, and
            # hubspoke/cli/main.py runs main() when run as a script.
            problem = None
            if module != "hubspoke.cli.main":
                problem = f"`python -m {module}` does not run hubspoke (no __main__ module): use `hubspoke`"
            return Invocation("hubspoke", at + 3, problem, appended)
        return Invocation(name, at + 1, appended=appended) if name in CHECKED_TOOLS else None
    return None


def _choices(tool: str, args: list[Word]) -> dict[str, frozenset[str]]:
    """Option spelling -> its listed choices, for telling an upper-case choice from a metavariable."""
    if tool == "qq":
        return choice_values(qq_parser())
    if tool == "hubspoke":
        return choice_values(hubspoke_parser(args))
    if tool == "cdk" and args and args[0].text in cdk_commands():
        return {o: frozenset(c) for o, c in cdk_command(cdk_commands()[args[0].text]).choices.items()}
    return {}


def _region_problems(args: list[Word]) -> list[str]:
    """`--region` values of hubspoke's commands must be Regions too (its parser takes any string)."""
    problems = []
    for i, word in enumerate(args):
        name, has_inline, inline = word.text.partition("=")
        if name != "--region" or word.dynamic:
            continue
        value = Word(inline) if has_inline else args[i + 1] if i + 1 < len(args) else None
        if value is not None and (wrong := region_problem(value)):
            problems.append(f"hubspoke: --region {wrong}")
    return problems


def command_problems(command: Command) -> list[str]:
    """Everything wrong with one simple command (empty for commands of tools not checked)."""
    found = tool_of(command)
    if found is None:
        return []
    tool, start = found.tool, found.start
    args = command.words[start:] + ([Word("<appended by xargs>", dynamic=True)] if found.appended else [])
    problems = [found.problem] if found.problem else []
    problems += conventions.guesswork_problems(
        args, metavariables=tool in ("qq", "hubspoke", "cdk"), choices=_choices(tool, args)
    )
    if tool == "aws":
        problems += aws_problems(args)
    elif tool == "qq":
        problems += [f"qq: {p}" for p in [argparse_problem(qq_parser(), args)] if p]
    elif tool == "hubspoke":
        problems += [f"hubspoke: {p}" for p in [argparse_problem(hubspoke_parser(args), args)] if p]
        problems += _region_problems(args)
    elif tool == "cdk":
        problems += [p for p in [cdk_problem(args)] if p]
    elif tool == "kubectl":
        problems += conventions.kubectl_problems(command)
    elif tool == "date":
        problems += conventions.date_problems(command)
    return problems


def name_problems(command: Command) -> list[str]:
    """What is wrong with a command --help text names (`hubspoke image build`, `aws eks update-kubeconfig`): the
    command and its options must exist; what a run would also need is not asked for."""
    found = tool_of(command)
    if found is None:
        return []
    args = command.words[found.start :]
    if found.tool == "hubspoke":
        return [f"hubspoke: {p}" for p in [hubspoke_name_problem(args)] if p]
    if found.tool == "aws":
        names = [w.text for w in args if not w.text.startswith("-")][:2]
        table = command_table(*names) if len(names) == 2 else None
        return [table] if isinstance(table, str) else []
    return command_problems(command)


def _is_command(snippet: Snippet) -> bool:
    if snippet.kind == "block":
        return snippet.language in SHELL_LANGUAGES
    text = command_text(snippet)
    if text in NOT_COMMANDS:
        return False
    words = text.split()
    if len(words) <= 1 or words == ["npx", "cdk"]:
        return False  # the tool's name alone (`aws`, `npx cdk`) names the tool, it is not a command
    try:
        commands = parse(text)
    except ShellSyntaxError:
        # Not shell: a command only if it starts like one (then the syntax error is reported).
        return words[0] in CHECKED_TOOLS or words[:2] == ["npx", "cdk"]
    # `VAR=$(aws ...)`, `sudo aws ...`, `X=1 hubspoke ...`: any command of a checked tool in the span.
    return any(tool_of(c) is not None for c in commands)


def check(snippets: Iterable[Snippet], root: Path) -> Report:
    report = Report()
    for snippet in snippets:
        where = snippet.where(root)
        if snippet.kind == "block" and not snippet.language:
            report.findings.append(
                Finding(
                    where, "```", "a fenced block needs a language: ```sh for commands, ```text otherwise"
                )
            )
            continue
        if not _is_command(snippet):
            continue
        text = command_text(snippet)
        for offset, line_text in enumerate(text.splitlines()):
            line = f"{snippet.path.relative_to(root)}:{snippet.line + offset}"
            for problem in conventions.placeholder_problems(line_text):
                report.findings.append(Finding(line, line_text.strip()[:120], problem))
        try:
            commands = parse(text, snippet.line)
        except ShellSyntaxError as exc:
            report.findings.append(
                Finding(where, text.strip().splitlines()[0][:80], f"not valid shell: {exc}")
            )
            continue
        for command in commands:
            found = tool_of(command)
            if found is None:
                continue
            report.checked[found.tool] += 1
            line = f"{snippet.path.relative_to(root)}:{command.line}"
            judge = name_problems if snippet.generated and snippet.kind == "inline" else command_problems
            for problem in judge(command):
                report.findings.append(Finding(line, str(command)[:120], problem))
    return report
