"""`hubspoke cost`: figures checked against hand computations written as arithmetic on the inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from hubspoke.cli.cost import DEFAULT_STORAGE, CostInputs, cold_start, spoke_cost
from hubspoke.cli.main import main
from tests.conftest import minimal, write_config

ROOT = Path(__file__).resolve().parents[2]


def _inputs(**overrides: Any) -> CostInputs:
    values: dict[str, Any] = {
        "dataset_tb": 100,
        "epochs": 3,
        "hit_rate": 0.95,
        "months": 2,
        "transfer_usd_per_gb": 0.02,
        "storage_usd_per_gb_month": 0.023,
    }
    values.update(overrides)
    return CostInputs(**values)


def test_reference_case_by_hand() -> None:
    c = spoke_cost(_inputs(), spoke="us-west-2", hub="us-east-2")
    # 100 TB = 100,000 GB crosses once to warm the cache: 100,000 * $0.02.
    assert c.warmup_gb == 100_000
    assert c.warmup_usd == pytest.approx(100_000 * 0.02)  # $2,000
    # Epochs 2 and 3 each miss 5 % of 100,000 GB: 2 * 5,000 GB.
    assert c.steady_gb == pytest.approx(2 * 0.05 * 100_000)
    assert c.steady_usd == pytest.approx(10_000 * 0.02)  # $200
    assert c.cached_usd == pytest.approx(2_000 + 200)
    # Replica: one copy's transfer, then 100,000 GB stored at $0.023 for 2 months.
    assert c.replica_transfer_usd == pytest.approx(2_000)
    assert c.replica_storage_usd_per_month == pytest.approx(100_000 * 0.023)  # $2,300
    assert c.replica_usd == pytest.approx(2_000 + 2 * 2_300)
    # Replica cheaper above 1 + 2 * 0.023 / (0.05 * 0.02) = 47 epochs; or if kept under 0.05*2*0.02/0.023 months.
    assert c.break_even_epochs == pytest.approx(1 + 2 * 0.023 / (0.05 * 0.02))
    assert c.break_even_months == pytest.approx(0.05 * 2 * 0.02 / 0.023)
    assert c.cheaper == "cache"


def test_break_even_epochs_really_is_where_the_options_cross() -> None:
    base = spoke_cost(_inputs(), spoke="s", hub="h")
    assert base.break_even_epochs is not None
    below = spoke_cost(_inputs(epochs=math.floor(base.break_even_epochs) - 1), spoke="s", hub="h")
    above = spoke_cost(_inputs(epochs=math.ceil(base.break_even_epochs) + 1), spoke="s", hub="h")
    assert below.cached_usd < below.replica_usd
    assert above.cached_usd > above.replica_usd
    at = spoke_cost(_inputs(epochs=47), spoke="s", hub="h")
    assert at.cached_usd == pytest.approx(at.replica_usd)


def test_single_pass_costs_one_traversal_and_a_perfect_cache_never_loses() -> None:
    one = spoke_cost(_inputs(epochs=1, dataset_tb=10), spoke="s", hub="h")
    assert one.steady_gb == 0
    assert one.cached_usd == pytest.approx(10 * 1000 * 0.02)  # exactly the replica's transfer
    assert one.break_even_months == 0
    perfect = spoke_cost(_inputs(hit_rate=1.0, epochs=50), spoke="s", hub="h")
    assert perfect.break_even_epochs is None
    assert perfect.cached_usd == pytest.approx(100_000 * 0.02)


def test_cli_json_per_spoke_with_dated_price_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
    ]
    path = write_config(tmp_path, minimal(spokes=spokes))
    assert main(["cost", "--config", str(path), "--dataset-tb", "50", "--epochs", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["spoke"] for s in data["spokes"]] == ["us-west-2", "eu-west-1"]
    # 50 TB, 2 epochs, 95 %: 50,000 GB + 0.05 * 50,000 GB at $0.02.
    assert data["spokes"][0]["cached_usd"] == pytest.approx((50_000 + 0.05 * 50_000) * 0.02)
    # Transfer out of US East (Ohio) to any other Region but US East (N. Virginia): $0.02/GB, each pair dated.
    for pair in ("us-east-2 -> us-west-2", "us-east-2 -> eu-west-1"):
        assert data["prices"]["transfer"][pair]["usd"] == 0.02
        assert data["prices"]["transfer"][pair]["as_of"] == "2026-11"
    assert data["prices"]["storage"]["source"] == DEFAULT_STORAGE.source


def _sao_paulo_hub(tmp_path: Path) -> Path:
    hub = {"region": "sa-east-1", "cidr": "10.10.0.0/16"}
    return write_config(tmp_path, minimal(hub=hub, spokes=[{"region": "us-east-2", "cidr": "10.20.0.0/16"}]))


def test_a_pair_without_a_listed_price_asks_for_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Sao Paulo hub was priced as 'US East (Ohio) to US West (Oregon)' at $0.02/GB: transfer out of sa-east-1
    costs several times that (EC2 On-Demand pricing, 'Data Transfer'), and hubspoke/prices.py lists no price for
    it, so the command refuses to guess and names the pair and the option."""
    path = _sao_paulo_hub(tmp_path)
    assert main(["cost", "--config", str(path), "--dataset-tb", "1"]) == 2
    err = capsys.readouterr().err
    assert "sa-east-1 -> us-east-2" in err and "--transfer-usd-per-gb" in err and "Traceback" not in err


def test_a_given_price_is_labelled_with_the_real_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _sao_paulo_hub(tmp_path)
    assert main(["cost", "--config", str(path), "--dataset-tb", "1", "--transfer-usd-per-gb", "0.138"]) == 0
    out = capsys.readouterr().out
    assert "transfer sa-east-1 -> us-east-2: 0.138 USD per GB (given on the command line)" in out
    assert "Ohio" not in out and "Oregon" not in out.split("storage:")[0]
    assert "$138.00" in out  # 1,000 GB * $0.138


def test_cli_overridden_price_is_marked_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["cost", "--config", str(ROOT / "config" / "dev.yaml"), "--dataset-tb", "1"]
    assert main([*args, "--transfer-usd-per-gb", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "0.01 USD per GB (given on the command line)" in out
    assert DEFAULT_STORAGE.as_of in out and "STAND-IN" in out
    assert "$10.00" in out  # 1,000 GB * $0.01


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--dataset-tb", "0"], "--dataset-tb"),
        (["--dataset-tb", "nan"], "--dataset-tb"),
        (["--dataset-tb", "1", "--hit-rate", "1.5"], "--hit-rate"),
        (["--dataset-tb", "1", "--epochs", "0"], "--epochs"),
        (["--dataset-tb", "1", "--transfer-usd-per-gb", "-1"], "--transfer-usd-per-gb"),
        (["--dataset-tb", "1", "--job-hours", "0"], "--job-hours"),
        (["--dataset-tb", "1", "--job-hours", "5", "--cold-gpu-utilization", "0"], "--cold-gpu-utilization"),
        (
            ["--dataset-tb", "1", "--job-hours", "5", "--prewarm-gb-per-second", "0"],
            "--prewarm-gb-per-second",
        ),
    ],
)
def test_cli_bad_numbers_exit_2(extra: list[str], flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost", "--config", str(ROOT / "config" / "dev.yaml"), *extra]) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err


def test_cold_start_against_prewarm_by_hand() -> None:
    """docs/design.md §1, the reference run: 999 batches in 18.5 minutes (1.111 s a batch), the first 150 batches
    warming the cache at 80-90 % GPU (0.85 taken for all of them). Lost GPU time: 150 x 1.111 s x (1/0.85 - 1)
    = 29.4 s. Prewarm first: 50 TB at 0.93 GB/s (benchmarks/results.md, prewarm) = 50,000 / 0.93 / 3600 = 14.93 h,
    which idle GPUs at $100/h would cost $1,493; the warm-up costs $0.82. Prewarm does not pay while GPUs wait."""
    start = cold_start(
        spoke="us-west-2",
        dataset_tb=50,
        job_hours=24,
        gpu_usd_per_hour=100.0,
        warmup_batches=150,
        batch_seconds=18.5 * 60 / 999,
        cold_gpu_utilization=0.85,
        prewarm_gb_per_second=0.93,
    )
    assert math.isclose(start.warmup_seconds, 29.41, abs_tol=0.01)
    assert math.isclose(start.warmup_share, 29.41 / 86400, rel_tol=1e-3)
    assert start.warmup_usd is not None and math.isclose(start.warmup_usd, 0.817, abs_tol=0.001)
    assert math.isclose(start.prewarm_hours, 14.934, abs_tol=0.001)
    assert start.prewarm_idle_gpu_usd is not None and math.isclose(
        start.prewarm_idle_gpu_usd, 1493.4, abs_tol=0.1
    )
    assert not start.prewarm_pays_while_gpus_idle
    # A small dataset behind a cache that learns slowly: prewarm (10 GB in 10.8 s) beats a 1,000-batch warm-up.
    small = cold_start(
        spoke="us-west-2",
        dataset_tb=0.01,
        job_hours=1,
        gpu_usd_per_hour=None,
        warmup_batches=1000,
        batch_seconds=1.0,
        cold_gpu_utilization=0.5,
        prewarm_gb_per_second=0.93,
    )
    assert small.warmup_seconds == 1000 and small.warmup_usd is None and small.prewarm_pays_while_gpus_idle


def test_cli_cold_start_prices_the_spokes_gpu_nodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--job-hours adds the cold-start table, priced at the spoke's own HyperPod nodes: the hub here runs two
    ml.p5.48xlarge and the spoke one, so a rate taken from the hub, or from both, gives another figure. The
    price is the table's row for that type and Region (hubspoke/prices.py, a dated list price)."""
    from hubspoke.prices import price

    data = minimal()
    one = {
        "count": 1,
        "on_start_deep_health_checks": ["InstanceStress"],
    }  # a single node cannot run NCCL checks
    data["spokes"][0]["compute"] = {"instance_groups": [one]}
    config_path = write_config(tmp_path, data)
    argv = ["cost", "--config", str(config_path), "--dataset-tb", "50", "--job-hours", "24", "--json"]
    assert main(argv) == 0
    [start] = json.loads(capsys.readouterr().out)["cold_start"]
    p5 = price("hyperpod", "ml.p5.48xlarge", "us-west-2")
    assert p5 is not None
    assert start["spoke"] == "us-west-2" and math.isclose(start["gpu_usd_per_hour"], 1 * p5.usd)
    assert math.isclose(start["prewarm_idle_gpu_usd"], start["prewarm_hours"] * p5.usd)
    assert main(["cost", "--config", str(config_path), "--dataset-tb", "50"]) == 0
    assert "Cold start" not in capsys.readouterr().out, "without --job-hours, no cold-start table"
