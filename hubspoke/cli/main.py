"""Entry point of the `hubspoke` console script: one subcommand per module in hubspoke.cli.commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hubspoke import __version__
from hubspoke.cli.commands import COMMANDS
from hubspoke.config import ConfigError

EXIT_BAD_INPUT = 2


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser, with the full definition of only the command `argv` names (none for `hubspoke --help`).

    The other commands are listed by their summary alone, so running one never imports the others' SDKs.
    """
    parser = argparse.ArgumentParser(
        prog="hubspoke",
        description="Plan, check and operate a hub-and-spoke training environment.",
        epilog="Example: hubspoke validate config/dev.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, command in COMMANDS.items():
        if name == chosen:
            command.load().add_parser(sub, command.summary)
        else:
            sub.add_parser(name, help=command.summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):  # a listed command whose module was not loaded: cannot happen via argv
        parser.error(f"unknown command {args.command}")
    try:
        code: int = args.run(args)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
