"""`hubspoke bench report RESULTS...`: turn cold/warm benchmark results into a summary and a PNG plot."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from hubspoke.bench.analysis import PhaseSummary, ResultsError, load, summarize
from hubspoke.cli.commands import COMMANDS
from hubspoke.cli.output import missing_extra

EXIT_BAD_INPUT = 2


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "bench",
        help=COMMANDS["bench"].summary,
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
    report.add_argument("--json", action="store_true", help="print the summary as JSON instead of text")
    report.set_defaults(run=run_report)


def run_report(args: argparse.Namespace) -> int:
    if args.window <= 0 or args.tolerance < 0:
        print("bench report: --window must be > 0 and --tolerance >= 0", file=sys.stderr)
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
    if args.json:
        doc = {"plot": str(plot), "phases": [_as_json(s) for s in summaries]}
        print(json.dumps(doc, indent=2))
    else:
        print(render_text(summaries))
        print(f"plot: {plot}")
    return 0


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
