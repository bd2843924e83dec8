"""Every command in README.md and docs/ is one its tool accepts: a typo, a renamed operation, a missing
required parameter or Region, or a placeholder in another style fails here with file, line and reason.

The definitions are the tools' own (tests/docs/checker.py): botocore's models and the AWS CLI v2's
customizations, qumulo-api's `qq` parsers, hubspoke's parser, the pinned CDK CLI's help, and the kubectl and
POSIX facts in tests/docs/conventions.py.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.conftest import ROOT
from tests.docs.checker import CHECKED_TOOLS, Report, check
from tests.docs.markdown import doc_files, snippets


@cache
def _report() -> Report:
    return check((s for path in doc_files(ROOT) for s in snippets(path)), ROOT)


@pytest.mark.long
def test_every_documented_command_matches_its_tool() -> None:
    findings = _report().findings
    assert not findings, f"{len(findings)} problem(s) in documented commands:\n" + "\n".join(
        map(str, findings)
    )


def test_the_docs_commands_are_all_reached() -> None:
    # If extraction broke (a fence or span no longer recognized), the test above would pass on nothing.
    checked = _report().checked
    assert set(checked) == set(CHECKED_TOOLS), checked
    assert sum(checked.values()) >= 150, checked
