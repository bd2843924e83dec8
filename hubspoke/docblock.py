"""A block of a doc page that `make docs` generates between two markers: spliced in, or checked to be current."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

END = "<!-- END generated -->"


def splice(document: str, block: str, *, begin: str) -> str:
    """`document` with the text from the `begin` marker to END replaced by `block` (markers included)."""
    start, end = document.find(begin), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the markers {begin!r} and {END!r} are missing")
    return document[:start] + block + document[end + len(END) :]


def main(
    argv: Sequence[str] | None,
    *,
    description: str | None,
    page: Path,
    spliced: Callable[[str], str],
    where: str,
    stale: str,
) -> int:
    """Rewrite `page` with its block as `spliced` makes it, or with --check exit 1 (printing `stale`) when the
    committed page differs; exit 2 naming `where` the markers go when they are missing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is not what it renders to")
    parser.add_argument("path", nargs="?", type=Path, default=page)
    args = parser.parse_args(argv)
    current = args.path.read_text()
    try:
        wanted = spliced(current)
    except ValueError as error:
        print(f"{args.path}: {error}; put them {where}", file=sys.stderr)
        return 2
    if args.check:
        if current != wanted:
            print(f"{args.path} {stale}", file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        args.path.write_text(wanted)
    return 0
