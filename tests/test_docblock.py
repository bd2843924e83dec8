"""The generated-block splice every `make docs` page uses: replaced between its markers, refused without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubspoke import docblock

BEGIN = "<!-- BEGIN test -->"


def test_the_block_between_the_markers_is_replaced_and_the_rest_kept() -> None:
    page = f"intro\n{BEGIN}\nold\n<!-- END generated -->\noutro\n"
    assert docblock.splice(page, f"{BEGIN}\nnew\n<!-- END generated -->", begin=BEGIN) == (
        f"intro\n{BEGIN}\nnew\n<!-- END generated -->\noutro\n"
    )


def test_check_exits_1_on_a_stale_page_2_without_markers_and_rewrites_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"{BEGIN}\nold\n<!-- END generated -->\n")
    settings = {
        "description": None,
        "page": page,
        "spliced": lambda d: docblock.splice(d, f"{BEGIN}\nnew\n<!-- END generated -->", begin=BEGIN),
        "where": "around the table",
        "stale": "is stale: run `make docs`",
    }
    assert docblock.main(["--check"], **settings) == 1  # type: ignore[arg-type]
    assert "page.md is stale: run `make docs`" in capsys.readouterr().err
    assert docblock.main([], **settings) == 0 and "new" in page.read_text()  # type: ignore[arg-type]
    assert docblock.main(["--check"], **settings) == 0  # type: ignore[arg-type]
    page.write_text("no markers\n")
    assert docblock.main([], **settings) == 2  # type: ignore[arg-type]
    assert "put them around the table" in capsys.readouterr().err
