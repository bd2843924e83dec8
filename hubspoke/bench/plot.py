"""The benchmark report's PNG: latency and throughput over time, one line per phase, steady state marked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hubspoke.bench.analysis import PhaseSummary


def write_png(summaries: Sequence[PhaseSummary], path: Path, *, title: str) -> None:
    """Two stacked panels sharing the time axis (seconds since each phase started)."""
    import matplotlib

    # Headless: the report runs in CI and over SSH, never with a display.
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, (lat_ax, tput_ax) = plt.subplots(2, 1, sharex=True, figsize=(10, 7), constrained_layout=True)
    for summary in summaries:
        starts = [w.start_s for w in summary.windows]
        (line,) = lat_ax.plot(
            starts,
            [w.p50_s * 1000 for w in summary.windows],
            label=f"{summary.name} p50",
            drawstyle="steps-post",
        )
        lat_ax.plot(
            starts,
            [w.p99_s * 1000 for w in summary.windows],
            linestyle=":",
            drawstyle="steps-post",
            color=line.get_color(),
            label=f"{summary.name} p99",
        )
        tput_ax.plot(
            starts,
            [w.throughput_bps / 1e6 for w in summary.windows],
            color=line.get_color(),
            drawstyle="steps-post",
        )
        if summary.time_to_steady_s is not None:
            for ax in (lat_ax, tput_ax):
                ax.axvline(summary.time_to_steady_s, color=line.get_color(), linestyle="--", linewidth=0.8)
    lat_ax.set_yscale("log")
    lat_ax.set_ylabel("read latency (ms, log)")
    lat_ax.legend(loc="upper right", fontsize="small")
    lat_ax.grid(True, which="both", alpha=0.3)
    tput_ax.set_ylabel("throughput (MB/s)")
    tput_ax.set_xlabel("seconds since phase start (dashed: steady state reached)")
    tput_ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
