"""`hubspoke validate`: exit codes, one line per problem in the contract's format, no traceback, no cdk.out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, minimal, write_config


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hubspoke.cli.main", "validate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_valid_files_exit_0(tmp_path: Path) -> None:
    result = run(str(ROOT / "config" / "dev.yaml"), cwd=tmp_path)
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


def test_usage_error_exits_2(tmp_path: Path) -> None:
    result = run(cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
