"""Benchmark statistics on hand-computable synthetic phases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hubspoke.bench.analysis import Phase, Read, ResultsError, load, percentile, summarize, windows


def test_nearest_rank_percentiles_of_one_to_a_hundred() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # unsorted on purpose
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([7.0], 99) == 7.0


@given(st.lists(st.floats(min_value=0, max_value=1e3), min_size=1, max_size=200), st.floats(1, 100))
def test_a_percentile_is_one_of_the_values_and_splits_them(values: list[float], p: float) -> None:
    q = percentile(values, p)
    assert q in values
    # At least p % of the values are <= q (the nearest-rank definition).
    assert sum(v <= q for v in values) >= p / 100 * len(values) - 1e-9


def _step_phase() -> Phase:
    """60 reads, one per second, 1000 bytes; 100 ms each for the first 20 s, then 10 ms."""
    reads = [Read(float(t), 0.1 if t < 20 else 0.01, 1000) for t in range(60)]
    return Phase("cold", reads)


def test_step_phase_by_hand() -> None:
    s = summarize(_step_phase(), window_s=10, tolerance=0.5)
    duration = 59 + 0.01  # last read starts at 59 s and takes 10 ms
    assert s.duration_s == pytest.approx(duration)
    # 40 reads at 10 ms sort first: rank ceil(0.5*60)=30 is 10 ms, rank ceil(0.99*60)=60 is 100 ms.
    assert s.p50_s == 0.01 and s.p99_s == 0.1
    assert s.throughput_bps == pytest.approx(60_000 / duration)
    assert s.steady_level_s == 0.01
    # Windows [0,10) and [10,20) have median 100 ms > 1.5 x 10 ms; from 20 s on every window is at 10 ms.
    assert s.time_to_steady_s == 20
    assert s.steady_p50_s == 0.01 and s.steady_p99_s == 0.01
    assert s.steady_throughput_bps == pytest.approx(40_000 / (duration - 20))


def test_a_late_relapse_moves_steady_state_past_it() -> None:
    reads = [Read(float(t), 0.1 if t < 20 or 40 <= t < 45 else 0.01, 1000) for t in range(90)]
    s = summarize(Phase("cold", reads), window_s=10, tolerance=0.5)
    # Window [40,50) has 5 slow and 5 fast reads: nearest-rank median is the 5th, 10 ms, so it does not count.
    assert s.time_to_steady_s == 20
    reads = [Read(float(t), 0.1 if t < 20 or 40 <= t < 46 else 0.01, 1000) for t in range(90)]
    # Now 6 of 10 are slow: that window's median is 100 ms, so steady state starts at 50 s.
    assert summarize(Phase("cold", reads), window_s=10, tolerance=0.5).time_to_steady_s == 50


def test_windows_divide_bytes_by_their_own_length() -> None:
    wins = windows(_step_phase(), 25)
    assert [w.start_s for w in wins] == [0, 25, 50]
    assert [w.reads for w in wins] == [25, 25, 10]
    # The last window runs from 50 s to the end of the last read (59.01 s).
    assert wins[-1].length_s == pytest.approx(9.01)
    assert wins[-1].throughput_bps == pytest.approx(10_000 / 9.01)
    assert wins[0].throughput_bps == pytest.approx(25_000 / 25)


def test_flat_phase_is_steady_from_the_start() -> None:
    s = summarize(Phase("warm", [Read(float(t), 0.004, 10) for t in range(30)]), window_s=10)
    assert s.time_to_steady_s == 0


def test_load_merges_runs_and_reports_line_numbers(tmp_path: Path) -> None:
    good = tmp_path / "a.jsonl"
    rec = {"kind": "read", "phase": "cold", "t": 0, "latency_s": 0.01, "bytes": 5}
    good.write_text(json.dumps(rec) + "\n\n" + json.dumps({**rec, "t": 1}) + "\n")
    phases = load([good, good])
    assert len(phases["cold"].reads) == 4

    bad = tmp_path / "b.jsonl"
    bad.write_text(json.dumps(rec) + "\n{oops\n")
    with pytest.raises(ResultsError, match=rf"^{bad}: line 2: not JSON"):
        load([bad])
    bad.write_text(json.dumps({**rec, "bytes": "many"}) + "\n")
    with pytest.raises(ResultsError, match="line 1: bad read record"):
        load([bad])
    bad.write_text(json.dumps({**rec, "kind": "mystery"}) + "\n")
    with pytest.raises(ResultsError, match="unknown kind 'mystery'"):
        load([bad])
    bad.write_text(json.dumps({"kind": "meta", "phase": "cold", "version": 99}) + "\n")
    with pytest.raises(ResultsError, match="format version 99"):
        load([bad])
