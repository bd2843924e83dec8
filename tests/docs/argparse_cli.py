"""`qq` and `hubspoke` commands parsed by the tools' own argparse parsers, exactly as they would run.

- qq: the parser `qq` builds (qumulo-api, qumulo/lib/qq.py `make_parser` + qumulo/lib/opts.py
  `add_subcommands` over every command class in qumulo/commands/). Its `--host` is required unless the
  machine is a Qumulo node (`os.path.exists('/opt/qumulo/lib')`); an operator's host is not, so the parser is
  built as on such a host.
- hubspoke: `hubspoke.cli.main.build_parser`, the console script's own parser (built, as it is at run time,
  with the full definition of the command the arguments name).

Values the docs cannot know (placeholders, shell variables, command substitutions) are accepted by every
typed or choice-restricted option; everything else goes through the real conversion and checks.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
from collections.abc import Iterator
from functools import cache
from typing import Any

from tests.docs.shell import Word

UNKNOWN_VALUE_MARK = "\x00unknown\x00"


class _ParseError(Exception):
    pass


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class _AnyUnknown(list[Any]):
    """argparse choices that also admit a value only known at run time."""

    def __contains__(self, value: object) -> bool:
        return value == UNKNOWN_VALUE_MARK or super().__contains__(value)


def _or_unknown(convert: Any) -> Any:
    @functools.wraps(convert)  # argparse names the type in its messages ("invalid int value")
    def accept(value: str) -> Any:
        return value if value == UNKNOWN_VALUE_MARK else convert(value)

    return accept


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            # qq wraps the choices (qumulo/lib/opts.py HelpfulSubparserChoicesWrapper): once a command line
            # has been parsed, iterating it yields only names near the last one typed; keys() yields them all.
            names = action.choices.keys()
            for sub in {id(action.choices[name]): action.choices[name] for name in names}.values():
                yield from _parsers(sub)


def _tolerant(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make every parser raise instead of exiting, and let unknown values through types and choices."""
    for each in _parsers(parser):

        def error(message: str) -> None:
            raise _ParseError(message)

        def exit_(status: int = 0, message: str | None = None) -> None:
            raise _Exit(status)

        each.error = error  # type: ignore[method-assign,assignment]
        each.exit = exit_  # type: ignore[method-assign,assignment]
        for action in each._actions:
            if callable(action.type):
                action.type = _or_unknown(action.type)
            if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
                action.choices = _AnyUnknown(action.choices)
    return parser


@cache
def qq_parser() -> argparse.ArgumentParser:
    import qumulo.commands.all_commands  # noqa: F401  (registers every qq subcommand class)
    from qumulo.lib import opts, qq

    parser = argparse.ArgumentParser(prog="qq", description="Qumulo CLI", add_help=True)
    qq.host_options(parser, host_required=True, os_exists=lambda _path: False)
    qq.main_options(parser)
    opts.add_subcommands(parser)
    return _tolerant(parser)


@cache
def _hubspoke_parser(command: str | None) -> argparse.ArgumentParser:
    from hubspoke.cli.main import build_parser

    return _tolerant(build_parser([command] if command else []))


def hubspoke_parser(words: list[Word]) -> argparse.ArgumentParser:
    """The console script's parser as it is built for these arguments: only the named command in full."""
    return _hubspoke_parser(next((w.text for w in words if not w.text.startswith("-")), None))


def _values(words: list[Word]) -> list[str]:
    # A placeholder or a shell expansion stands for one value; its real text is unknown here.
    return [UNKNOWN_VALUE_MARK if w.dynamic or w.text.startswith("<") else w.text for w in words]


def choice_values(parser: argparse.ArgumentParser) -> dict[str, frozenset[str]]:
    """Option spelling -> the values its action is restricted to (argparse `choices`), over every subparser."""
    return {
        option: frozenset(map(str, action.choices))
        for each in _parsers(parser)
        for option, action in each._option_string_actions.items()
        if action.choices is not None
    }


def argparse_problem(parser: argparse.ArgumentParser, words: list[Word]) -> str | None:
    """None if the parser accepts the arguments, else argparse's own message."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            parser.parse_args(_values(words))
        except _ParseError as exc:
            return str(exc).replace(UNKNOWN_VALUE_MARK, "<value>")
        except _Exit as exc:
            return None if exc.status == 0 else f"exits with status {exc.status}"
    return None


@cache
def _full_hubspoke_parser() -> argparse.ArgumentParser:
    from hubspoke.cli.reference import full_parser

    return full_parser()


def hubspoke_name_problem(words: list[Word]) -> str | None:
    """None if the words name a hubspoke command and options it has (`hubspoke cost --job-hours`), whatever a run
    would still need: how --help text names a command."""
    parser, path = _full_hubspoke_parser(), ["hubspoke"]
    for word in (w.text for w in words):
        option = word.partition("=")[0]
        if word.startswith("-"):
            if option not in parser._option_string_actions:
                return f"`{' '.join(path)}` has no option {option}"
            continue
        commands = next(
            (a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None
        )
        if commands is None:
            continue  # a value
        if word not in commands:
            return f"`{' '.join(path)}` has no command {word!r} (choose from {', '.join(commands)})"
        parser, path = commands[word], [*path, word]
    return None
