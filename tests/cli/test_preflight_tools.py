"""The "local tools" preflight row, against a fake PATH of stub programs (no real tool is run)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from hubspoke.cli.preflight import run_preflight
from hubspoke.cli.preflight.tools import check_local_tools
from hubspoke.config import load
from tests.cli.preflight_world import (
    LOCAL_TOOLS,
    V1,
    Unsupported,
    World,
    fake_path,
    preflight_config,
    rows_of,
)


def test_every_tool_present_passes(tmp_path: Path) -> None:
    (row,) = check_local_tools("us-east-2", path=fake_path(tmp_path))
    assert row.status == "pass" and row.check == "local tools"
    assert row.detail == "AWS CLI v2, session-manager-plugin, kubectl, docker on PATH"


@pytest.mark.parametrize(
    ("missing", "pointer"),
    [
        ("aws", "Installing or updating to the latest version of the AWS CLI"),
        ("session-manager-plugin", "Install the Session Manager plugin for the AWS CLI"),
        ("kubectl", "Install Tools"),
        # docs/getting-started.md, "Before you start": Docker on an amd64 host, the nodes' architecture.
        ("docker", "Docker docs, 'Install Docker Engine' (the training image builds on an amd64 host)"),
    ],
)
def test_each_missing_tool_fails_with_where_to_install_it(missing: str, pointer: str, tmp_path: Path) -> None:
    (row,) = check_local_tools(
        "us-east-2", path=fake_path(tmp_path, *(t for t in LOCAL_TOOLS if t != missing))
    )
    assert row.status == "fail" and f"{missing} is not on PATH" in row.detail and pointer in row.fix


def test_aws_cli_v1_fails(tmp_path: Path) -> None:
    (row,) = check_local_tools("us-east-2", path=fake_path(tmp_path, aws_says=V1))
    assert (
        row.status == "fail" and row.detail == "aws is AWS CLI 1.32.65; hubspoke runs AWS CLI v2's commands"
    )
    assert "AWS CLI v2" in row.fix


def test_an_aws_that_prints_no_version_is_quoted(tmp_path: Path) -> None:
    """Whatever an `aws` on PATH prints instead of aws-cli/<version> (a wrapper, another program) is quoted as text."""
    (row,) = check_local_tools("us-east-2", path=fake_path(tmp_path, aws_says="hello from a wrapper"))
    assert (
        row.status == "fail"
        and row.detail == "`aws --version` said 'hello from a wrapper', not aws-cli/<version>"
    )


def test_an_empty_path_fails_every_tool(tmp_path: Path) -> None:
    rows = check_local_tools("us-east-2", path=str(tmp_path))
    assert [r.status for r in rows] == ["fail"] * 4


def test_preflight_reports_it_once_with_the_hub(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.deployed_dev()
    monkeypatch.setenv("PATH", fake_path(tmp_path, "aws", "kubectl", "docker"))
    results = run_preflight(load(preflight_config(tmp_path)).config, Unsupported(world.clients))
    (row,) = rows_of(results, "local tools")
    assert row.region == "us-east-2" and row.status == "fail" and "session-manager-plugin" in row.detail


@pytest.mark.parametrize(
    "error", [subprocess.TimeoutExpired(["aws", "--version"], 20), PermissionError(13, "Permission denied")]
)
def test_an_aws_that_does_not_run_fails_naming_the_program_found(tmp_path: Path, error: Exception) -> None:
    """subprocess.run raises TimeoutExpired past its timeout, which it is given, and OSError when the file cannot
    be executed (Python docs, subprocess): the row names the `aws` found on PATH and why it did not answer, with
    where to install AWS CLI v2."""

    def run(*_: Any, **kwargs: Any) -> Any:
        # It is asked with a time limit, so an `aws` that hangs cannot hang preflight.
        assert kwargs.get("timeout") and kwargs["timeout"] > 0, kwargs
        raise error

    folder = fake_path(tmp_path)
    (row,) = check_local_tools("us-east-2", path=folder, run=run)
    assert row.status == "fail" and row.detail == f"`{folder}/aws --version` did not run ({error})"
    assert "AWS CLI v2" in row.fix
