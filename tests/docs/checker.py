"""Every command shown in the docs, checked against the real definition of its tool.

`check(snippet)` returns what it checked and every problem, each naming the file, the line, the command and
what is wrong with it, so a failing `make test` says exactly what to fix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.docs import conventions
from tests.docs.argparse_cli import argparse_problem, hubspoke_parser, qq_parser
from tests.docs.aws_cli import aws_problems
from tests.docs.cdk_cli import cdk_problem
from tests.docs.markdown import SHELL_LANGUAGES, Snippet
from tests.docs.shell import Command, ShellSyntaxError, parse

CHECKED_TOOLS = ("aws", "qq", "hubspoke", "cdk", "kubectl", "date")
# Inline code that starts like a command but shows something else; each with the reason it is not one.
NOT_COMMANDS = {
    "hubspoke on_create:": "the prefix of every log line on_create.sh writes",
}


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


def tool_of(command: Command) -> tuple[str, int] | None:
    """The checked tool a command runs and the index of its first argument (`npx cdk` counts as cdk)."""
    argv = command.argv
    if not argv:
        return None
    if argv[0] == "npx" and len(argv) > 1 and argv[1] == "cdk":
        return "cdk", 2
    if argv[0] in CHECKED_TOOLS:
        return argv[0], 1
    return None


def command_problems(command: Command) -> list[str]:
    """Everything wrong with one simple command (empty for commands of tools not checked)."""
    found = tool_of(command)
    if found is None:
        return []
    tool, start = found
    args = command.words[start:]
    problems = conventions.guesswork_problems(command, metavariables=tool in ("qq", "hubspoke", "cdk"))
    if tool == "aws":
        problems += aws_problems(args)
    elif tool == "qq":
        problems += [f"qq: {p}" for p in [argparse_problem(qq_parser(), args)] if p]
    elif tool == "hubspoke":
        problems += [f"hubspoke: {p}" for p in [argparse_problem(hubspoke_parser(args), args)] if p]
    elif tool == "cdk":
        problems += [p for p in [cdk_problem(args)] if p]
    elif tool == "kubectl":
        problems += conventions.kubectl_problems(command)
    elif tool == "date":
        problems += conventions.date_problems(command)
    return problems


def _is_command(snippet: Snippet) -> bool:
    if snippet.kind == "block":
        return snippet.language in SHELL_LANGUAGES
    if snippet.text in NOT_COMMANDS:
        return False
    words = snippet.text.split()
    if len(words) <= 1 or words == ["npx", "cdk"]:
        return False  # the tool's name alone (`aws`, `npx cdk`) names the tool, it is not a command
    return words[0] in CHECKED_TOOLS or words[:2] == ["npx", "cdk"]


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
        for offset, text in enumerate(snippet.text.splitlines()):
            line = f"{snippet.path.relative_to(root)}:{snippet.line + offset}"
            for problem in conventions.placeholder_problems(text):
                report.findings.append(Finding(line, text.strip()[:120], problem))
        try:
            commands = parse(snippet.text, snippet.line)
        except ShellSyntaxError as exc:
            report.findings.append(
                Finding(where, snippet.text.splitlines()[0][:80], f"not valid shell: {exc}")
            )
            continue
        for command in commands:
            found = tool_of(command)
            if found is None:
                continue
            report.checked[found[0]] += 1
            line = f"{snippet.path.relative_to(root)}:{command.line}"
            for problem in command_problems(command):
                report.findings.append(Finding(line, str(command)[:120], problem))
    return report
