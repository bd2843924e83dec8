"""docs/cli.md's reference is each command's own --help (hubspoke/cli/reference.py renders it, `make docs` writes
it), as docs/configuration.md is the schema's: the committed page must be what the parsers render, every
command of `hubspoke --help` must have its section with usage, options and an example, and a stale page is
refused by `python -m hubspoke.cli.reference --check`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hubspoke.cli.commands import COMMANDS as REGISTERED
from hubspoke.cli.reference import main, splice
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "cli.md"
# The commands of `hubspoke --help` (issue 43 item 5: every command's usage, description, options and example),
# with the actions of those that take one (`hubspoke render job`, ...).
COMMANDS = [
    "validate",
    "render job",
    "render prewarm",
    "render bench",
    "render results",
    "render export",
    "image build",
    "bench report",
    "plan",
    "preflight",
    "verify",
    "connect",
    "ami",
    "cost",
    "diagram",
    "dataset load",
    "teardown",
]


def test_the_cli_reference_is_what_the_parsers_render() -> None:
    current = PAGE.read_text()
    assert current == splice(current), (
        "docs/cli.md is out of date with the parsers in hubspoke/cli/: run `make docs` and commit it"
    )


def _sections() -> dict[str, str]:
    text = PAGE.read_text()
    parts = re.split(r"^#{2,3} (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_usage_options_and_an_example(command: str) -> None:
    """An action without an example of its own (`render prewarm`) has its command's (`render`)."""
    section = _sections()[command]
    assert f"usage: hubspoke {command} " in section
    assert "\n- `--config`: " in section or command in ("validate", "ami", "bench report")
    if "```sh\n" not in section:
        command = command.split()[0]
        section = _sections()[command]
    example = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert re.search(rf"(^| )hubspoke {command}\b", example), example


def test_every_registered_command_has_a_section() -> None:
    """A command added to hubspoke/cli/commands.py is documented by `make docs`, with nothing else to edit."""
    headings = set(re.findall(r"^## (\S+)$", PAGE.read_text(), flags=re.M))
    assert set(REGISTERED) - headings == set(), "run `make docs` and commit docs/cli.md"


def test_a_stale_page_is_refused_and_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cli.md"
    page.write_text(PAGE.read_text().replace("--dataset-tb", "--dataset-tib", 1))
    assert main(["--check", str(page)]) == 1
    assert "run `make docs`" in capsys.readouterr().err
    assert main([str(page)]) == 0
    assert page.read_text() == PAGE.read_text()


def test_a_page_without_markers_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cli.md"
    page.write_text("# The `hubspoke` command line\n")
    assert main(["--check", str(page)]) == 2
    assert "markers" in capsys.readouterr().err
