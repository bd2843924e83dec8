"""`hubspoke bench report` on the committed synthetic sample and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hubspoke.cli.main import main

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "bench" / "synthetic-cold-warm.jsonl"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_report_on_the_synthetic_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "out" / "report.png"
    assert main(["bench", "report", str(SAMPLE), "--plot", str(plot), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert plot.read_bytes().startswith(PNG_MAGIC)
    cold, warm = doc["phases"]
    assert (cold["name"], warm["name"]) == ("cold", "warm")
    assert cold["synthetic"] and warm["synthetic"]
    # The sample's cold phase is 60 ms for 60 s, 8 ms for 30 s, then ~4 ms: the 8 ms windows are within
    # 1.5 x of neither level... 8 ms > 1.5 x 4 ms, so steady state starts when the 4 ms reads start, at 90 s.
    assert cold["time_to_steady_s"] == 90
    assert warm["time_to_steady_s"] == 0
    assert cold["p99_s"] > 0.05 > warm["p99_s"]
    assert warm["p50_s"] < cold["p50_s"] or cold["p50_s"] < 0.005
    assert cold["steady_p99_s"] < 0.005


def test_text_report_says_synthetic_and_compares_phases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "report", str(SAMPLE), "--plot", str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr().out
    assert "synthetic" in out.lower()
    assert "cold vs warm" in out
    assert "time to steady state  90 s" in out


def test_missing_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    assert main(["bench", "report", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{missing}: cannot read") and "Traceback" not in err


def test_garbage_file_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["bench", "report", str(bad), "--plot", str(tmp_path / "x.png")]) == 2
    assert "line 1: not JSON" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_report_without_the_plots_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """matplotlib is the optional 'plots' extra (pyproject.toml): without it, exit 2 naming the extra, no plot."""
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    plot = tmp_path / "r.png"
    assert main(["bench", "report", str(SAMPLE), "--plot", str(plot)]) == 2
    assert "pip install 'hubspoke[plots]'" in capsys.readouterr().err
    assert not plot.exists()


def test_report_prices_the_warm_up_for_a_job_of_a_given_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The synthetic sample's cold phase reaches steady state after 90 s (tests/data/bench/README.md: about 60 ms
    per read for the first minute, 8 ms for the next 30 s, then 4 ms). For a 24-hour job that is 90 / 86,400 = 0.104 %,
    and at $200 per GPU hour at most 90 / 3600 x 200 = $5.00 of GPU time."""
    argv = ["bench", "report", str(SAMPLE), "--plot", str(tmp_path / "r.png"), "--json"]
    assert main([*argv, "--job-hours", "24", "--gpu-usd-per-hour", "200"]) == 0
    warmup = json.loads(capsys.readouterr().out)["warmup"]
    assert warmup["phase"] == "cold" and warmup["warmup_seconds"] == 90
    assert round(warmup["share"], 5) == round(90 / 86400, 5) and round(warmup["usd_at_most"], 2) == 5.00
    assert main([*argv[:-1], "--gpu-usd-per-hour", "200"]) == 2, "a price without a job length"
    assert "--job-hours" in capsys.readouterr().err
