"""`hubspoke render prewarm|bench|results`: the manifests on stdout, bad input as exit 2 with the field at fault."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hubspoke.cli.main import main

DEV = Path(__file__).resolve().parents[2] / "config" / "dev.yaml"
# As `hubspoke image build` records it (tests/cli/test_render_cli.py tests the record itself).
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32


def _render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(["render", *argv, "--image", IMAGE])
    out, err = capsys.readouterr()
    docs = [d for d in yaml.safe_load_all(out) if d] if code == 0 else []
    return code, docs, err


def test_render_prewarm_for_the_spoke(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _render(
        capsys, "prewarm", "--config", str(DEV), "--region", "us-west-2", "--rest-address", "10.20.64.10"
    )
    assert code == 0
    assert [d["kind"] for d in docs] == ["Job"]
    command = docs[0]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--host=10.20.64.10" in command
    assert not any(a.startswith("--max-bytes-per-second") for a in command), "no cap unless asked for"
    # config/dev.yaml pins dataset c4-llama3/v1: prewarm warms that version and reads its manifest over REST.
    assert "--root=/dataset/c4-llama3/v1" in command and "--version-manifest" in command


def test_render_prewarm_of_another_version_and_without_a_pin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--region", "us-west-2", "--rest-address", "10.20.64.10"]
    code, docs, _ = _render(capsys, "prewarm", "--config", str(DEV), *argv, "--dataset-version", "v2")
    assert code == 0
    assert "--root=/dataset/c4-llama3/v2" in docs[0]["spec"]["template"]["spec"]["containers"][0]["command"]
    code, _, err = _render(capsys, "prewarm", "--config", str(DEV), *argv, "--dataset-version", "../v1")
    assert code == 2 and err.startswith(f"{DEV}: --dataset-version: ")
    raw = yaml.safe_load(DEV.read_text())
    del raw["dataset"]["version"]
    unpinned = tmp_path / "dev.yaml"
    unpinned.write_text(yaml.safe_dump(raw))
    code, _, err = _render(capsys, "prewarm", "--config", str(unpinned), *argv)
    assert code == 2 and err.startswith(f"{unpinned}: dataset.version: ") and "Traceback" not in err


def test_render_prewarm_with_a_bandwidth_cap(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--region", "us-west-2", "--rest-address", "10.20.64.10", "--max-bytes-per-second", "5e8"]
    code, docs, _ = _render(capsys, "prewarm", "--config", str(DEV), *argv)
    assert code == 0
    assert (
        "--max-bytes-per-second=500000000" in docs[0]["spec"]["template"]["spec"]["containers"][0]["command"]
    )


def test_render_prewarm_rewarms_on_the_samples_verdict_only_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The sample's eviction rule is ASSUMED, so the rendered Job treats its verdict as advisory by default."""
    argv = ["--region", "us-west-2", "--rest-address", "10.20.64.10"]
    code, docs, _ = _render(capsys, "prewarm", "--config", str(DEV), *argv)
    assert (
        code == 0
        and "--rewarm-on-missing" not in docs[0]["spec"]["template"]["spec"]["containers"][0]["command"]
    )
    code, docs, _ = _render(capsys, "prewarm", "--config", str(DEV), *argv, "--rewarm-on-missing")
    assert (
        code == 0 and "--rewarm-on-missing" in docs[0]["spec"]["template"]["spec"]["containers"][0]["command"]
    )


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--region", "us-east-2", "--rest-address", "10.10.64.10"], "--region"),
        (["--region", "us-west-2", "--rest-address", "10.10.64.10"], "--rest-address"),
        (["--region", "us-west-2", "--rest-address", "spoke.example"], "--rest-address"),
        (["--region", "us-west-2", "--rest-address", "10.20.64.10", "--parallel", "0"], "--parallel"),
        (
            ["--region", "us-west-2", "--rest-address", "10.20.64.10", "--max-bytes-per-second", "0"],
            "--max-bytes-per-second",
        ),
    ],
)
def test_render_prewarm_rejects(capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> None:
    code, _, err = _render(capsys, "prewarm", "--config", str(DEV), *argv)
    assert code == 2
    assert err.startswith(f"{DEV}: {field}: ")
    assert "Traceback" not in err


def test_render_bench_in_every_region(capsys: pytest.CaptureFixture[str]) -> None:
    for region in ("us-east-2", "us-west-2"):
        code, docs, _ = _render(capsys, "bench", "--config", str(DEV), "--region", region, "--run", "r1")
        assert code == 0
        assert docs[0]["metadata"]["name"] == "hubspoke-bench-r1"


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--run", "Bad_Name"], "--run"),
        (["--phases", "cold,,warm"], "--phases"),
        (["--max-seconds", "0"], "--max-seconds"),
    ],
)
def test_render_bench_rejects(capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> None:
    code, _, err = _render(capsys, "bench", "--config", str(DEV), "--region", "us-west-2", *argv)
    assert code == 2
    assert err.startswith(f"{DEV}: {field}: ")


def test_render_results_for_an_hour_by_default_and_longer_when_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, docs, _ = _render(capsys, "results", "--config", str(DEV), "--region", "us-west-2")
    assert code == 0
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("Pod", "hubspoke-results")]
    assert docs[0]["spec"]["activeDeadlineSeconds"] == 3600
    code, docs, _ = _render(capsys, "results", "--config", str(DEV), "--region", "us-east-2", "--hours", "3")
    assert code == 0 and docs[0]["spec"]["activeDeadlineSeconds"] == 3 * 3600


@pytest.mark.parametrize("hours", ["0", "25", "-1"])
def test_render_results_refuses_a_lifetime_out_of_range(
    capsys: pytest.CaptureFixture[str], hours: str
) -> None:
    code, _, err = _render(capsys, "results", "--config", str(DEV), "--region", "us-west-2", "--hours", hours)
    assert code == 2 and err.startswith(f"{DEV}: --hours: ") and "Traceback" not in err
