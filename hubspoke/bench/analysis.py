"""Read workload/bench_reader.py results and summarize each phase: percentiles, throughput, steady state.

Definitions (docs/operations.md, "Benchmark report"):
- percentiles are nearest-rank: the p-th percentile of n sorted values is the value at rank ceil(p/100 * n);
- windows are `window_s` long, from the phase start; a read belongs to the window its start falls in;
  a window's throughput is the bytes of its reads over the window's length (the last one may be shorter);
- the steady level is the median latency of the reads that start in the last third of the phase;
- time to steady state is the start of the earliest window from which every later window's median latency
  stays within (1 + tolerance) x the steady level; None when not even the last window is.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUPPORTED_VERSION = 1


class ResultsError(ValueError):
    """A results file that cannot be read; the message starts with `PATH: line N:`."""


@dataclass(frozen=True)
class Read:
    t: float
    latency_s: float
    bytes: int


@dataclass
class Phase:
    """Every read of one phase (e.g. cold or warm) across the files given, with what the runs said of it."""

    name: str
    reads: list[Read] = field(default_factory=list)
    errors: int = 0
    elapsed_s: float | None = None
    synthetic: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        ends = max((r.t + r.latency_s for r in self.reads), default=0.0)
        return max(self.elapsed_s or 0.0, ends)


@dataclass(frozen=True)
class Window:
    start_s: float
    length_s: float
    reads: int
    p50_s: float
    p99_s: float
    throughput_bps: float


@dataclass(frozen=True)
class PhaseSummary:
    name: str
    reads: int
    bytes: int
    errors: int
    duration_s: float
    p50_s: float
    p99_s: float
    throughput_bps: float
    steady_level_s: float
    time_to_steady_s: float | None
    steady_p50_s: float | None
    steady_p99_s: float | None
    steady_throughput_bps: float | None
    windows: tuple[Window, ...]
    synthetic: bool


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile; `values` need not be sorted. Raises on an empty sequence."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is outside (0, 100]")
    ordered = sorted(values)
    rank = math.ceil(p / 100 * len(ordered))
    return ordered[max(rank, 1) - 1]


def load(paths: Iterable[Path]) -> dict[str, Phase]:
    """Phases in the order they first appear; several files (or runs) of one phase are merged."""
    phases: dict[str, Phase] = {}
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ResultsError(f"{path}: cannot read: {exc.strerror or exc}") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                _take(phases, path, number, line)
    if not phases:
        raise ResultsError(f"{', '.join(map(str, paths))}: no results; run workload/bench_reader.py first")
    for phase in phases.values():
        if not phase.reads:
            raise ResultsError(f"phase '{phase.name}': no reads recorded; was the dataset empty?")
    return phases


def _take(phases: dict[str, Phase], path: Path, number: int, line: str) -> None:
    where = f"{path}: line {number}"
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{where}: not JSON ({exc.msg}); is this a bench_reader results file?") from None
    if not isinstance(record, dict) or not isinstance(record.get("phase"), str):
        raise ResultsError(f"{where}: every record needs a string 'phase'")
    phase = phases.setdefault(record["phase"], Phase(record["phase"]))
    kind = record.get("kind")
    try:
        if kind == "meta":
            if record.get("version") != SUPPORTED_VERSION:
                raise ResultsError(
                    f"{where}: format version {record.get('version')!r}; this report reads version "
                    f"{SUPPORTED_VERSION}: re-run the reader from this checkout"
                )
            phase.synthetic = phase.synthetic or bool(record.get("synthetic"))
            phase.meta = record
        elif kind == "read":
            read = Read(float(record["t"]), float(record["latency_s"]), int(record["bytes"]))
            if read.t < 0 or read.latency_s < 0 or read.bytes < 0:
                raise ValueError("negative t, latency_s or bytes")
            phase.reads.append(read)
        elif kind == "error":
            phase.errors += 1
        elif kind == "end":
            phase.elapsed_s = max(phase.elapsed_s or 0.0, float(record["elapsed_s"]))
        else:
            raise ResultsError(f"{where}: unknown kind {kind!r}; expected meta, read, error or end")
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ResultsError):
            raise
        raise ResultsError(f"{where}: bad {kind} record: {exc}") from None


def windows(phase: Phase, window_s: float) -> list[Window]:
    """Per-window latency percentiles and throughput; windows with no read start are left out."""
    if window_s <= 0:
        raise ValueError("window_s must be positive")
    buckets: dict[int, list[Read]] = {}
    for read in phase.reads:
        buckets.setdefault(int(read.t // window_s), []).append(read)
    duration = phase.duration_s
    result = []
    for index in sorted(buckets):
        start = index * window_s
        length = max(min(window_s, duration - start), 1e-9)
        members = buckets[index]
        latencies = [r.latency_s for r in members]
        result.append(
            Window(
                start_s=start,
                length_s=length,
                reads=len(members),
                p50_s=percentile(latencies, 50),
                p99_s=percentile(latencies, 99),
                throughput_bps=sum(r.bytes for r in members) / length,
            )
        )
    return result


def summarize(phase: Phase, *, window_s: float = 10.0, tolerance: float = 0.5) -> PhaseSummary:
    """The numbers the report prints for one phase (definitions in the module docstring)."""
    reads = phase.reads
    duration = phase.duration_s
    latencies = [r.latency_s for r in reads]
    total = sum(r.bytes for r in reads)
    tail = [r.latency_s for r in reads if r.t >= duration * 2 / 3] or latencies
    steady_level = percentile(tail, 50)
    wins = windows(phase, window_s)
    time_to_steady: float | None = None
    for w in reversed(wins):
        if w.p50_s > (1 + tolerance) * steady_level:
            break
        time_to_steady = w.start_s
    steady = [r for r in reads if time_to_steady is not None and r.t >= time_to_steady]
    steady_span = duration - time_to_steady if time_to_steady is not None else 0.0
    return PhaseSummary(
        name=phase.name,
        reads=len(reads),
        bytes=total,
        errors=phase.errors,
        duration_s=duration,
        p50_s=percentile(latencies, 50),
        p99_s=percentile(latencies, 99),
        throughput_bps=total / duration if duration > 0 else 0.0,
        steady_level_s=steady_level,
        time_to_steady_s=time_to_steady,
        steady_p50_s=percentile([r.latency_s for r in steady], 50) if steady else None,
        steady_p99_s=percentile([r.latency_s for r in steady], 99) if steady else None,
        steady_throughput_bps=(sum(r.bytes for r in steady) / steady_span)
        if steady and steady_span > 0
        else None,
        windows=tuple(wins),
        synthetic=phase.synthetic,
    )
