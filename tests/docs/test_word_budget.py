"""The docs stay short enough for a reader to finish. Issue 43 item 5 ("Docs a reader can finish"): README at most
1,500 words, all docs at most 25,000 words, docs/development.md at most 2,000; its "Done when": the word counts
hold. Words are counted as `wc -w` counts them (issue 43: "measure with `wc -w`"): runs of non-space
characters, as POSIX wc defines a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT


def words(path: Path) -> int:
    return len(path.read_bytes().split())


def _all_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize(("page", "budget"), [("README.md", 1500), ("docs/development.md", 2000)])
def test_a_page_stays_within_its_budget(page: str, budget: int) -> None:
    assert words(ROOT / page) <= budget, f"{page} has {words(ROOT / page)} words; issue 43 allows {budget}"


def test_all_docs_together_stay_within_25000_words() -> None:
    counts = {str(p.relative_to(ROOT)): words(p) for p in _all_docs()}
    largest = sorted(counts.items(), key=lambda item: -item[1])[:5]
    assert sum(counts.values()) <= 25_000, f"{sum(counts.values())} words; the largest: {largest}"


def test_words_are_counted_as_wc_counts_them(tmp_path: Path) -> None:
    """POSIX wc: a word is a maximal string of non-white-space characters; table pipes and `-` bullets count."""
    page = tmp_path / "page.md"
    page.write_text("| a | b |\n- `--config PATH`: file\n\n")
    assert words(page) == 9
