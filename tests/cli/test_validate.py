"""`hubspoke validate`: exit codes, one line per problem in the contract's format, no traceback, no cdk.out."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from hubspoke.cli.main import main
from tests.conftest import ROOT, minimal, write_config

Validate = Callable[..., subprocess.CompletedProcess[str]]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`hubspoke validate ARGS` as a process: its exit code and what it printed."""
    return subprocess.run(
        [sys.executable, "-m", "hubspoke.cli.main", "validate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def validate(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Validate:
    """`hubspoke validate ARGS` in this process (main), answered as `run` answers; a usage error's exit, as
    argparse ends it, is its code. test_invalid_file_exits_2_with_every_problem_and_no_traceback runs the command as
    a process."""

    def validate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        monkeypatch.chdir(cwd)
        try:
            code = main(["validate", *args])
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["hubspoke", "validate", *args], code, out, err)

    return validate


def test_valid_files_exit_0(tmp_path: Path, validate: Validate) -> None:
    result = validate(str(ROOT / "config" / "dev.yaml"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_invalid_file_exits_2_with_every_problem_and_no_traceback(tmp_path: Path) -> None:
    data = minimal(inter_region_mtu=9001)
    data["spokes"][0]["cidr"] = "10.10.0.0/16"
    bad = write_config(tmp_path, data, "bad.yaml")
    good = write_config(tmp_path, minimal(), "good.yaml")
    result = run(str(good), str(bad), str(tmp_path / "missing.yaml"), cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert f"{bad}: inter_region_mtu: " in result.stderr
    assert f"{bad}: spokes[0].cidr: " in result.stderr
    assert f"{tmp_path / 'missing.yaml'}: (file): " in result.stderr
    assert all(line.count(": ") >= 2 for line in lines), lines
    assert f"{good}: ok" in result.stdout
    assert not (tmp_path / "cdk.out").exists()


def test_usage_error_exits_2(tmp_path: Path, validate: Validate) -> None:
    result = validate(cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_opt_in_regions_are_named(tmp_path: Path, validate: Validate) -> None:
    """af-south-1 (Cape Town) launched after March 20, 2019, so an account must enable it before use (Account
    Management Reference Guide, "Enable or disable AWS Regions in your account"); us-east-2 and us-west-2 are
    enabled by default and are not named."""
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "af-south-1", "cidr": "10.30.0.0/16", "compute": {"enabled": False}},
    ]
    path = write_config(tmp_path, minimal(spokes=spokes))
    result = validate(str(path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "note: opt-in Regions: af-south-1 " in result.stdout
    assert "aws account enable-region --region-name af-south-1" in result.stdout
    plain = validate(str(write_config(tmp_path, minimal())), cwd=tmp_path)
    assert "opt-in" not in plain.stdout


def test_two_files_of_one_environment_fail_validate_as_they_fail_synth(
    tmp_path: Path, validate: Validate
) -> None:
    """Synth builds every config/*.yaml into one app (hubspoke.config.load_environments), where two files of one
    environment are refused; validate, given both, must say so too rather than pass each alone."""
    first = write_config(tmp_path, minimal(), "a.yaml")
    second = write_config(tmp_path, minimal(), "b.yaml")
    result = validate(str(first), str(second), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{second}: environment: 'dev' is also the environment of {first}; rename one" in result.stderr


def test_a_yml_config_beside_the_yaml_ones_is_not_skipped_silently(tmp_path: Path) -> None:
    """make synth, CI and cdk synth read config/*.yaml; a .yml file there would be left out without a word."""
    from hubspoke.config import ConfigError, load_environments

    write_config(tmp_path, minimal(), "dev.yaml")
    write_config(tmp_path, minimal(environment="prod"), "prod.yml")
    try:
        load_environments(tmp_path)
    except ConfigError as exc:
        assert "prod.yml is not read (configs are *.yaml): rename it to prod.yaml" in str(exc)
    else:
        raise AssertionError("a .yml config was skipped without a word")
