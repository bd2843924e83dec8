"""hubspoke's cache folder is where the README says, and a read-only home never stops a synth."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubspoke import cache


def test_the_cache_is_where_the_docs_say(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """README, "Set up and run": HUBSPOKE_CACHE_DIR, else $XDG_CACHE_HOME/hubspoke, else ~/.cache/hubspoke."""
    monkeypatch.setenv("HUBSPOKE_CACHE_DIR", str(tmp_path / "a"))
    assert cache.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("HUBSPOKE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache.cache_dir() == tmp_path / "x" / "hubspoke"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "hubspoke"


def test_a_folder_that_cannot_be_made_falls_back_to_a_temporary_one(tmp_path: Path) -> None:
    """A cache path under a file (or a read-only home) costs the synth its reuse, never the synth itself."""
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    chosen = cache.writable(blocked / "cache")
    assert chosen.is_dir() and not str(chosen).startswith(str(blocked))
    assert not (blocked / "cache").exists()
