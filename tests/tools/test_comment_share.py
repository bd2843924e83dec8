"""tools/comment_share.py: comment and string characters over all characters, counted by hand below."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hubspoke_comment_share", ROOT / "tools" / "comment_share.py")
assert _spec and _spec.loader
tool = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tool
_spec.loader.exec_module(tool)


def test_a_line_with_a_string_and_a_comment() -> None:
    """`x = "ab"  # c` plus its newline is 14 characters: the string `"ab"` is 4, the comment `# c` 3."""
    assert tool.counts('x = "ab"  # c\n') == (7, 14)


def test_code_alone_counts_nothing_and_a_hash_inside_a_string_is_the_string() -> None:
    """`y = 1` is 6 characters with its newline; `s = "#x"` is 9, of which the string `"#x"` is 4."""
    assert tool.counts("y = 1\n") == (0, 6)
    assert tool.counts('s = "#x"\n') == (4, 9)


def test_a_directory_sums_its_python_files_only(tmp_path: Path) -> None:
    """A docstring module (`\"\"\"d\"\"\"` is 7 of 8 characters), a code module (0 of 6) and a text file (ignored)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text('"""d"""\n')
    (tmp_path / "pkg" / "b.py").write_text("y = 1\n")
    (tmp_path / "pkg" / "notes.txt").write_text("# not Python\n")
    assert tool.share([tmp_path / "pkg"]) == (7, 14)


def test_the_command_prints_the_share(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.py").write_text('x = "ab"  # c\n')
    assert tool.main([str(tmp_path / "a.py")]) == 0
    assert capsys.readouterr().out == "7/14 = 50.0%\n"
