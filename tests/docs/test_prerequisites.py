"""Prerequisites are named once: docs/getting-started.md's "Before you start" lists everything the AWS path needs;
README.md keeps only what `make synth` and `make test` need and links there (issue 44, a new user's walk)."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def _section(path: str, heading: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## )", text, flags=re.M | re.S)
    assert found, f"{path} has no '## {heading}' section"
    return found.group(1)


# What the AWS path needs, as the new user's walk found it named in one place or the other.
AWS_PATH = ("python3-venv", "AWS CLI v2", "Session Manager plugin", "kubectl", "Docker", "amd64", "jq",
            "Qumulo Nexus login", "HyperPod quota")  # fmt: skip


def test_the_guide_names_every_prerequisite() -> None:
    before = _section("docs/getting-started.md", "Before you start")
    assert [p for p in AWS_PATH if p not in before] == []


def test_the_readme_names_only_the_local_ones_and_links_the_guide() -> None:
    readme = _section("README.md", "Prerequisites")
    for needed in ("Python 3.11+", "venv", "Node", "make", "`make synth`", "`make test`"):
        assert needed in readme
    # The AWS path's tools are the guide's to name: a second list drifts (the walk found jq in one list only).
    assert [t for t in ("Session Manager", "kubectl", "Docker", "jq") if re.search(rf"\b{t}\b", readme)] == []
    assert "(docs/getting-started.md#before-you-start)" in readme
