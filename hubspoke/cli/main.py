"""Entry point of the `hubspoke` console script: one subcommand per module in COMMANDS."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from hubspoke.config import ConfigError

# Each module exposes add_parser(subparsers) and run(args) -> exit code; imported lazily so that
# `hubspoke validate` does not pay for boto3 or graphviz.
COMMANDS = {
    "validate": "hubspoke.cli.validate",
    "render": "hubspoke.cli.render",
    "bench": "hubspoke.cli.bench",
    "plan": "hubspoke.cli.plan",
    "preflight": "hubspoke.cli.preflight",
    "ami": "hubspoke.cli.ami",
    "cost": "hubspoke.cli.cost",
    "diagram": "hubspoke.cli.diagram",
}

EXIT_BAD_INPUT = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hubspoke",
        description="Plan, check and operate a hub-and-spoke training environment.",
        epilog="Example: hubspoke validate config/dev.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
