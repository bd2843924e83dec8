"""`hubspoke validate PATH...`: check config files and print every problem, one per line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hubspoke.config import ConfigError, format_problem, load
from hubspoke.config.sections import Problem
from hubspoke.regions import opt_in_note


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "validate",
        help=summary,
        description="Check config files: exit 0 when all are valid, 2 otherwise, every problem on its own line.",
        epilog="Example: hubspoke validate config/*.yaml",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    failed = False
    # Synth builds every file of config/ into one app, where two stages of one environment clash
    # (load_environments): validate the files together the same way.
    environments: dict[str, Path] = {}
    for path in args.paths:
        try:
            loaded = load(path)
        except ConfigError as exc:
            failed = True
            for problem in exc.problems:
                print(format_problem(path, problem), file=sys.stderr)
            continue
        for warning in loaded.warnings:
            print(format_problem(path, warning), file=sys.stderr)
        cfg = loaded.config
        if cfg.environment in environments:
            failed = True
            problem = Problem(
                "environment",
                f"'{cfg.environment}' is also the environment of {environments[cfg.environment]}; rename one",
            )
            print(format_problem(path, problem), file=sys.stderr)
            continue
        environments[cfg.environment] = path
        spokes = ", ".join(s.region for s in cfg.spokes) or "none"
        print(f"{path}: ok: environment {cfg.environment}, hub {cfg.hub.region}, spokes {spokes}")
        note = opt_in_note([r.region for r in cfg.regions()])
        if note:
            print(f"{path}: note: {note}")
    return 2 if failed else 0
