"""Rank 0's training throughput, reported on a clock rather than every N steps.

Example::

    reporter = ThroughputReporter(samples_per_step=24 * 16, tokens_per_sample=4096, report=send, interval=30)
    reporter.start()
    for batch in loader:
        ...
        reporter.step_done(step)
    reporter.close()  # reports the last partial window

Every `interval` seconds (--metrics-seconds) a background thread reports the samples and tokens per second of
the steps that finished in that window, and the mean step time when any did. A window in which no step
finished reports 0 samples/s: a job whose data loader starves keeps reporting, and says so, instead of
going silent (with reports every N steps, steps slower than a minute leave whole minutes without a
datapoint, and an alarm that counts only minutes with data never sees the starvation it watches for).
A step counts when the Python loop finishes it; on a GPU the kernels it queued may still be running, so a
window's figure can be a step ahead or behind the device, which evens out over consecutive windows.

With `baseline_seconds`, each report also carries the run's own baseline: the best mean rate this process has
kept over any `baseline_seconds` of consecutive windows (absent until that much has run with a step finished).
The throughput alarm
compares each minute with it (docs/operations.md): CloudWatch cannot, since every metric of an alarm must use
one period and its functions over a whole series are not recommended in alarms.
Stdlib only: the training image copies this file alone.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

Report = Callable[[int, dict[str, float]], None]  # (last step, {"samples_per_second": ..., ...})


class ThroughputReporter:
    """Counts finished steps; reports their rate every `interval` seconds from its own thread."""

    def __init__(
        self,
        *,
        samples_per_step: int,
        tokens_per_sample: int,
        report: Report,
        interval: float,
        baseline_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be positive, got {interval}")
        if baseline_seconds is not None and baseline_seconds < interval:
            raise ValueError(f"baseline_seconds must cover at least one interval, got {baseline_seconds}")
        self._samples_per_step = samples_per_step
        self._tokens_per_sample = tokens_per_sample
        self._report = report
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._steps = 0
        self._last_step = 0
        self._window_start = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # (samples, seconds) of the latest windows spanning baseline_seconds, and the best rate over them.
        spans = math.ceil(baseline_seconds / interval) if baseline_seconds else 0
        self._recent: deque[tuple[float, float]] = deque(maxlen=spans)
        self._baseline: float | None = None

    def step_done(self, step: int) -> None:
        """Called by the training loop after each optimizer step."""
        with self._lock:
            self._steps += 1
            self._last_step = step

    def tick(self) -> None:
        """Report the window that ends now and start the next one."""
        with self._lock:
            now = self._clock()
            steps, elapsed, last = self._steps, max(now - self._window_start, 1e-9), self._last_step
            self._steps, self._window_start = 0, now
        samples = steps * self._samples_per_step / elapsed
        values = {"samples_per_second": samples, "tokens_per_second": samples * self._tokens_per_sample}
        if steps:
            values["step_seconds"] = elapsed / steps
        if self._recent.maxlen:
            self._recent.append((steps * self._samples_per_step, elapsed))
            if len(self._recent) == self._recent.maxlen:
                rate = sum(n for n, _ in self._recent) / sum(t for _, t in self._recent)
                self._baseline = max(rate, self._baseline or 0.0)
            if self._baseline:  # a run that has not finished a step has no rate to compare with
                values["baseline_samples_per_second"] = self._baseline
        self._report(last, values)

    def start(self) -> None:
        self._window_start = self._clock()
        self._thread = threading.Thread(target=self._run, name="throughput", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the clock and report the last window if a step finished in it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            pending = self._steps
        if pending:
            self.tick()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.tick()
