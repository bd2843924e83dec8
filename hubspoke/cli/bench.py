"""`hubspoke bench report RESULTS...`: turn cold/warm benchmark results into a summary and a PNG plot."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from hubspoke.bench.analysis import PhaseSummary, ResultsError, load, summarize
from hubspoke.cli.output import missing_extra

EXIT_BAD_INPUT = 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "bench",
        help=summary,
        description="Analyse the results of the cold/warm benchmark Job (workload/bench_reader.py).",
    )
    actions = parser.add_subparsers(dest="bench_command", required=True, metavar="ACTION")
    report = actions.add_parser(
        "report",
        help="summary and PNG plot of one or more results files",
        description=(
            "Print, per phase: time to steady state, p50/p99 read latency and throughput, overall and in "
            "steady state; then cold against warm. Write a PNG of latency and throughput over time."
        ),
        epilog="Example: hubspoke bench report results.jsonl --plot results.png",
    )
    report.add_argument("results", nargs="+", type=Path, metavar="RESULTS", help="JSON-lines results file(s)")
    report.add_argument("--plot", type=Path, help="PNG to write (default: the first RESULTS with .png)")
    report.add_argument("--window", type=float, default=10.0, help="seconds per window (default 10)")
    report.add_argument(
        "--tolerance",
        type=float,
        default=0.5,
        help="steady state: window median within (1 + tolerance) x the final level (default 0.5)",
    )
    report.add_argument(
        "--job-hours",
        type=float,
        metavar="H",
        help="a training job's length: adds what the first phase's warm-up is of it (an upper bound on GPU time "
        'lost to a cold cache), for `hubspoke cost --job-hours` (docs/cost.md, "Cold start or prewarm")',
    )
    report.add_argument(
        "--gpu-usd-per-hour",
        type=float,
        metavar="USD",
        help="with --job-hours: the GPU nodes' price per hour (`hubspoke plan --config <config-file>` lists it)",
    )
    report.add_argument("--json", action="store_true", help="print the summary as JSON instead of text")
    report.set_defaults(run=run_report)


def run_report(args: argparse.Namespace) -> int:
    if args.window <= 0 or args.tolerance < 0:
        print("bench report: --window must be > 0 and --tolerance >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.job_hours is not None and not args.job_hours > 0:
        print(f"bench report: --job-hours {args.job_hours} must be above 0, e.g. 24", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.gpu_usd_per_hour is not None and (args.job_hours is None or not args.gpu_usd_per_hour >= 0):
        print("bench report: --gpu-usd-per-hour needs --job-hours and a price of at least 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    refused = missing_extra(["matplotlib"], extra="plots", command="hubspoke bench report")
    if refused is not None:
        return refused
    try:
        phases = load(args.results)
    except ResultsError as exc:
        print(exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    summaries = [summarize(p, window_s=args.window, tolerance=args.tolerance) for p in phases.values()]
    plot = args.plot or args.results[0].with_suffix(".png")
    synthetic = any(s.synthetic for s in summaries)
    title = (
        "Read benchmark: "
        + " vs ".join(s.name for s in summaries)
        + (" (SYNTHETIC DATA)" if synthetic else "")
    )
    from hubspoke.bench.plot import write_png

    write_png(summaries, plot, title=title)
    warmup = (
        None if args.job_hours is None else warmup_share(summaries[0], args.job_hours, args.gpu_usd_per_hour)
    )
    if args.json:
        doc: dict[str, object] = {"plot": str(plot), "phases": [_as_json(s) for s in summaries]}
        if warmup is not None:
            doc["warmup"] = warmup
        print(json.dumps(doc, indent=2))
    else:
        print(render_text(summaries))
        if warmup is not None:
            print(_warmup_text(warmup))
        print(f"plot: {plot}")
    return 0


def warmup_share(cold: PhaseSummary, job_hours: float, gpu_usd_per_hour: float | None) -> dict[str, object]:
    """The first phase's warm-up against a job of `job_hours`: the time its reads took to reach steady state is
    an upper bound on the GPU time a cold cache costs that job (the GPUs wait at most as long as the reads are
    slow; the reference run's loader kept them at 80-90 %, docs/design.md §1). None: never steady."""
    seconds = cold.time_to_steady_s
    share = None if seconds is None else seconds / (job_hours * 3600)
    usd = None if seconds is None or gpu_usd_per_hour is None else seconds / 3600 * gpu_usd_per_hour
    return {
        "phase": cold.name,
        "job_hours": job_hours,
        "warmup_seconds": seconds,
        "share": share,
        "usd_at_most": usd,
    }


def _warmup_text(w: dict[str, object]) -> str:
    if w["warmup_seconds"] is None:
        return (
            f"warm-up of {w['phase']}: never reached steady state in this run; run it longer before judging a job "
            f"of {w['job_hours']:g} h"
        )
    usd = "" if w["usd_at_most"] is None else f", at most ${w['usd_at_most']:,.2f} of GPU time"
    return (
        f"warm-up of {w['phase']}: {w['warmup_seconds']:.0f} s, at most {w['share']:.2%} of a {w['job_hours']:g} h "
        f"job{usd} (hubspoke cost --job-hours compares it with prewarming)"
    )


def render_text(summaries: list[PhaseSummary]) -> str:
    """The human summary: one block per phase, then the comparison of the first phase with the last."""
    lines: list[str] = []
    if any(s.synthetic for s in summaries):
        lines.append("NOTE: these results are marked synthetic; they are not a measurement.")
    for s in summaries:
        steady = "not reached" if s.time_to_steady_s is None else f"{s.time_to_steady_s:.0f} s"
        lines.append(f"phase {s.name}: {s.reads} reads, {s.bytes / 1e9:.2f} GB in {s.duration_s:.1f} s")
        lines.append(f"  time to steady state  {steady}  (steady level p50 {_ms(s.steady_level_s)})")
        lines.append(
            f"  whole phase           p50 {_ms(s.p50_s)}  p99 {_ms(s.p99_s)}  {_mbps(s.throughput_bps)}"
        )
        if s.steady_p50_s is not None and s.steady_p99_s is not None:
            tput = _mbps(s.steady_throughput_bps) if s.steady_throughput_bps is not None else "n/a"
            lines.append(
                f"  steady state          p50 {_ms(s.steady_p50_s)}  p99 {_ms(s.steady_p99_s)}  {tput}"
            )
        if s.errors:
            lines.append(f"  ERRORS                {s.errors} failed reads (see the results file)")
    if len(summaries) >= 2:
        first, last = summaries[0], summaries[-1]
        lines.append(f"{first.name} vs {last.name}:")
        lines.append(f"  p50 {_ms(first.p50_s)} -> {_ms(last.p50_s)} ({_ratio(first.p50_s, last.p50_s)})")
        lines.append(f"  p99 {_ms(first.p99_s)} -> {_ms(last.p99_s)} ({_ratio(first.p99_s, last.p99_s)})")
        lines.append(
            f"  throughput {_mbps(first.throughput_bps)} -> {_mbps(last.throughput_bps)} "
            f"({_ratio(last.throughput_bps, first.throughput_bps)} higher)"
        )
    return "\n".join(lines)


def _as_json(s: PhaseSummary) -> dict[str, object]:
    doc = asdict(s)
    doc["windows"] = [asdict(w) for w in s.windows]
    return doc


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def _mbps(bps: float) -> str:
    return f"{bps / 1e6:.1f} MB/s"


def _ratio(before: float, after: float) -> str:
    return f"{before / after:.1f}x" if after > 0 else "n/a"
