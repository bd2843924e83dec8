"""The version has one home, pyproject.toml's `[project] version`, and everything else reads it.

The oracle is the file itself, read with tomllib here; CHANGELOG.md follows Keep a Changelog 1.1.0
(keepachangelog.com/en/1.1.0: one `## [version] - YYYY-MM-DD` heading per release, newest first, after an
`## [Unreleased]` section). Before 1.0 the version is 0.y.z (Semantic Versioning 2.0.0, item 4: "Major version zero
(0.y.z) is for initial development. Anything MAY change at any time").
"""

from __future__ import annotations

import re
import tomllib

import pytest

import hubspoke
from hubspoke.cli.main import main
from tests.conftest import ROOT

DEVELOPMENT = (ROOT / "docs" / "development.md").read_text()
DECLARED = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def test_hubspoke_version_prints_the_declared_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"hubspoke {DECLARED}\n"


def test_the_package_reads_the_declared_version() -> None:
    assert hubspoke.__version__ == DECLARED


def test_no_other_attribute_is_invented() -> None:
    with pytest.raises(AttributeError):
        hubspoke.__nonexistent__  # noqa: B018


def test_the_version_is_pre_1_0_until_the_compatibility_promise_starts() -> None:
    assert re.fullmatch(r"0\.\d+\.\d+", DECLARED), DECLARED


def test_the_changelog_s_newest_release_is_the_declared_version() -> None:
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", CHANGELOG, flags=re.M)
    assert releases and releases[0] == DECLARED, releases
    assert CHANGELOG.index("## [Unreleased]") < CHANGELOG.index(f"## [{DECLARED}]")


def test_the_compatibility_promise_is_written_down() -> None:
    """From 1.0, config keys and stack outputs are the public interface; docs/development.md says what breaks it."""
    promise = DEVELOPMENT[DEVELOPMENT.index("## Versioning") :]
    for word in ("config key", "stack output", "1.0", "breaking"):
        assert word in promise.lower(), word
