"""How every `hubspoke` command prints: rich tables on a terminal, plain aligned text when piped, JSON on request."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

# Colours for status words in check tables; plain output prints the word alone.
_STYLES = {"pass": "green", "warn": "yellow", "fail": "bold red", "not checked": "dim"}


@dataclass
class Table:
    """A titled table of strings; the same object renders as rich or plain text."""

    title: str
    columns: Sequence[str]
    rows: list[Sequence[str]] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append(tuple("" if c is None else str(c) for c in cells))


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def print_tables(tables: Sequence[Table], *, notes: Sequence[str] = (), stream: TextIO | None = None) -> None:
    """Print tables, then free-text notes (commands, sources), in the form that suits the stream."""
    out = stream or sys.stdout
    if is_terminal(out):
        _print_rich(tables, notes, out)
    else:
        out.write(render_plain(tables, notes))


def render_plain(tables: Sequence[Table], notes: Sequence[str] = ()) -> str:
    """Tables as aligned plain text: stable for pipes, grep and tests."""
    chunks: list[str] = []
    for table in tables:
        widths = [len(c) for c in table.columns]
        for row in table.rows:
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], *(len(line) for line in cell.splitlines() or [""]))
        lines = [
            table.title,
            _plain_row(table.columns, widths),
            _plain_row(["-" * w for w in widths], widths),
        ]
        for row in table.rows:
            # A multi-line cell continues on the next lines, under its own column.
            cells = [c.splitlines() or [""] for c in row]
            for n in range(max(len(c) for c in cells)):
                lines.append(_plain_row([c[n] if n < len(c) else "" for c in cells], widths))
        chunks.append("\n".join(lines))
    if notes:
        chunks.append("\n".join(notes))
    return "\n\n".join(chunks) + "\n"


def _plain_row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)).rstrip()


def _print_rich(tables: Sequence[Table], notes: Sequence[str], out: TextIO) -> None:
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table as RichTable

    console = Console(file=out)
    for table in tables:
        rich_table = RichTable(title=table.title, title_justify="left", box=box.SIMPLE_HEAD)
        for column in table.columns:
            rich_table.add_column(column, overflow="fold")
        for row in table.rows:
            rich_table.add_row(*(_styled(cell, escape(cell)) for cell in row))
        console.print(rich_table)
    for note in notes:
        console.print(escape(note), soft_wrap=True, highlight=False)


def _styled(raw: str, escaped: str) -> str:
    style = _STYLES.get(raw)
    return f"[{style}]{escaped}[/]" if style else escaped


def print_json(data: Any, *, stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    json.dump(data, out, indent=2, sort_keys=False)
    out.write("\n")


def fail(message: str) -> int:
    """Report bad command-line input the way `hubspoke validate` does: one line on stderr, exit 2."""
    print(f"hubspoke: {message}", file=sys.stderr)
    return 2


def missing_extra(modules: Sequence[str], *, extra: str, command: str) -> int | None:
    """None when every module imports; else the refusal (exit 2) naming the extra that installs them."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return fail(
        f"{command} needs the optional '{extra}' packages ({', '.join(missing)} not installed): "
        f"pip install 'hubspoke[{extra}]' (make setup installs every extra)"
    )
