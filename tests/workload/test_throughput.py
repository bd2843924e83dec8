"""Throughput is reported on a clock: windows without a finished step still report (0 samples/s), so a job
whose loader starves keeps datapoints flowing for the GPU alarm instead of going silent."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
from throughput import ThroughputReporter

from tests.fakes.clock import ManualClock as Clock


def _reporter(clock: Clock, reports: list[tuple[int, dict[str, float]]]) -> ThroughputReporter:
    return ThroughputReporter(
        samples_per_step=384,  # 24 per GPU x 16 GPUs, the reference run
        tokens_per_sample=4096,
        report=lambda step, values: reports.append((step, values)),
        interval=30,
        clock=clock,
    )


def test_a_window_reports_the_rate_of_the_steps_that_finished_in_it() -> None:
    clock, reports = Clock(), []
    reporter = _reporter(clock, reports)
    for step in (1, 2, 3):
        clock.now += 10
        reporter.step_done(step)
    reporter.tick()
    assert reports == [
        (
            3,
            {
                "samples_per_second": 3 * 384 / 30,
                "tokens_per_second": 3 * 384 * 4096 / 30,
                "step_seconds": 10.0,
            },
        )
    ]


def test_a_window_without_a_finished_step_reports_zero_not_nothing() -> None:
    clock, reports = Clock(), []
    reporter = _reporter(clock, reports)
    reporter.step_done(7)
    clock.now += 30
    reporter.tick()
    clock.now += 30  # the loader starves: no step for a whole window
    reporter.tick()
    assert reports[1] == (7, {"samples_per_second": 0.0, "tokens_per_second": 0.0})


def test_windows_add_up_to_the_samples_trained() -> None:
    clock, reports = Clock(), []
    reporter = _reporter(clock, reports)
    begin = clock.now
    finished = [3.3, 6.6, 13.6, 58.6, 119.6, 122.9]  # seconds since start; the slow steps span windows
    ticks = [30.0, 60.0, 90.0, 120.0, 125.0]  # the thread's clock, then close() at 125 s
    steps, lengths, last = 0, [], 0.0
    for at, kind in sorted([(t, "step") for t in finished] + [(t, "tick") for t in ticks]):
        clock.now = begin + at
        if kind == "step":
            steps += 1
            reporter.step_done(steps)
        else:
            reporter.tick()
            lengths.append(at - last)
            last = at
    trained = sum(values["samples_per_second"] * n for (_, values), n in zip(reports, lengths, strict=True))
    assert trained == pytest.approx(len(finished) * 384)
    assert [values["samples_per_second"] == 0 for _, values in reports] == [False, False, True, False, False]


def test_the_thread_keeps_reporting_while_a_step_hangs_and_close_flushes() -> None:
    reports: list[tuple[int, dict[str, float]]] = []
    reporter = ThroughputReporter(
        samples_per_step=2, tokens_per_sample=16, report=lambda s, v: reports.append((s, v)), interval=0.01
    )

    def stalled() -> list[dict[str, float]]:
        return [v for s, v in reports if s == 1 and v["samples_per_second"] == 0]

    reporter.start()
    reporter.step_done(1)
    # A step that does not finish (a hard-mounted NFS read blocked on the hub): the thread's reports go on.
    deadline = time.monotonic() + 10
    while len(stalled()) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    stalled_reports = stalled()
    reporter.step_done(2)
    reporter.close()
    assert len(stalled_reports) >= 3, reports
    assert reports[-1][0] == 2 and reports[-1][1]["samples_per_second"] > 0


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ThroughputReporter(samples_per_step=1, tokens_per_sample=1, report=lambda s, v: None, interval=0)


def _baseline_reporter(clock: Clock, reports: list[tuple[int, dict[str, float]]]) -> ThroughputReporter:
    return ThroughputReporter(
        samples_per_step=384,
        tokens_per_sample=4096,
        report=lambda step, values: reports.append((step, values)),
        interval=30,
        baseline_seconds=300,
        clock=clock,
    )


def _window(clock: Clock, reporter: ThroughputReporter, steps: int) -> None:
    for _ in range(steps):
        reporter.step_done(1)
    clock.now += 30
    reporter.tick()


def test_the_baseline_is_the_best_mean_rate_over_the_baseline_span_and_appears_once_it_has_run() -> None:
    clock, reports = Clock(), []
    reporter = _baseline_reporter(clock, reports)
    # 9 steps per 30 s window is 115.2 samples/s with 384 samples per step (the reference's 115-117).
    for _ in range(9):
        _window(clock, reporter, 9)
    assert all("baseline_samples_per_second" not in values for _, values in reports), "5 minutes not yet run"
    _window(clock, reporter, 9)
    assert reports[-1][1]["baseline_samples_per_second"] == pytest.approx(9 * 384 / 30)


def test_the_baseline_keeps_the_best_span_when_the_rate_falls() -> None:
    """A loader that starves after a good start: the baseline stays at the good rate, so the alarm can
    compare the starving minutes with it."""
    clock, reports = Clock(), []
    reporter = _baseline_reporter(clock, reports)
    for steps in [5] * 10 + [9] * 10 + [2] * 10:  # warming up, warm, starving
        _window(clock, reporter, steps)
    baselines = [values["baseline_samples_per_second"] for _, values in reports[9:]]
    assert baselines[0] == pytest.approx(5 * 384 / 30)
    assert max(baselines) == baselines[-1] == pytest.approx(9 * 384 / 30)
    assert reports[-1][1]["samples_per_second"] == pytest.approx(2 * 384 / 30)


def test_the_baseline_span_must_cover_a_window() -> None:
    with pytest.raises(ValueError, match="baseline_seconds"):
        ThroughputReporter(
            samples_per_step=1,
            tokens_per_sample=1,
            report=lambda s, v: None,
            interval=30,
            baseline_seconds=10,
        )
