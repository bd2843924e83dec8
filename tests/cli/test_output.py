"""The shared output module: rich tables on a terminal, plain aligned text in a pipe."""

from __future__ import annotations

import io

from hubspoke.cli.output import Table, print_tables, render_plain


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _table() -> Table:
    table = Table("Checks", ("region", "status", "detail"))
    table.add("us-east-2", "pass", "one line")
    table.add("us-west-2", "fail", "first line\nsecond line")
    return table


def test_plain_text_when_piped_aligns_columns_and_keeps_multiline_cells_in_their_column() -> None:
    stream = io.StringIO()
    print_tables([_table()], notes=["a note"], stream=stream)
    out = stream.getvalue()
    assert out == render_plain([_table()], ["a note"])
    lines = out.splitlines()
    detail_column = lines[1].index("detail")
    assert lines[4].index("first line") == detail_column
    assert lines[5].index("second line") == detail_column and lines[5][:detail_column].strip() == ""
    assert "\x1b[" not in out


def test_rich_table_on_a_terminal() -> None:
    stream = _Terminal()
    print_tables([_table()], notes=["a note"], stream=stream)
    out = stream.getvalue()
    assert out != render_plain([_table()], ["a note"])
    for cell in ("Checks", "us-east-2", "fail", "second line", "a note"):
        assert cell in out
    assert "─" in out  # rich's table rule, never in the plain form
