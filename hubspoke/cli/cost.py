"""`hubspoke cost`: inter-Region cost of caching the hub's dataset in each spoke, against replicating it.

Every formula here is written out in docs/cost.md; the two must change together.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hubspoke.cli.output import Table, fail, print_json, print_tables
from hubspoke.config import load
from hubspoke.prices import transfer_price

GB_PER_TB = 1000  # AWS prices transfer and storage per GB; a TB here is 1000 of those GB.


@dataclass(frozen=True)
class Price:
    """A unit price with where it came from and when, so every figure can be traced and re-checked."""

    usd: float
    unit: str
    source: str
    as_of: str


# Public list prices. Re-check them before relying on a figure; override with the command's options.
# Inter-Region transfer is priced per Region pair from hubspoke/prices.py (transfer_price); a pair it lacks has
# no default, and the command asks for --transfer-usd-per-gb instead of borrowing another pair's price.
DEFAULT_STORAGE = Price(
    0.023,
    "USD per GB-month",
    "DEFAULT STAND-IN: Amazon S3 Standard, first 50 TB/month, US West (Oregon) "
    "(https://aws.amazon.com/s3/pricing/); CNQ's own per-TB licence is not included",
    "2026-11",
)
# The reference run measured a 94-96 % hit rate once NeuralCache had learned the pattern (docs/design.md §1).
DEFAULT_HIT_RATE = 0.95


@dataclass(frozen=True)
class CostInputs:
    """What the model needs; prices in USD."""

    dataset_tb: float
    epochs: int
    hit_rate: float
    months: float
    transfer_usd_per_gb: float
    storage_usd_per_gb_month: float


@dataclass(frozen=True)
class SpokeCost:
    """One spoke's figures for both options and where they cross."""

    spoke: str
    hub: str
    warmup_gb: float
    warmup_usd: float
    steady_gb: float
    steady_usd: float
    cached_usd: float
    replica_transfer_usd: float
    replica_storage_usd_per_month: float
    replica_usd: float
    # Replication is cheaper above this many epochs (for the given months); None: never (hit rate 1).
    break_even_epochs: float | None
    # Replication is cheaper when the copy is kept fewer months than this (for the given epochs).
    break_even_months: float | None
    cheaper: str


# The warm-up of the reference run (docs/design.md §1): batches 0-100 paid the round trip with GPUs at 80-90 %,
# 100-150 improved, and from there the GPUs stayed above 98 %; 999 batches took 18.5 minutes. Warm-up is paid once
# per access pattern. Defaults of `--warmup-batches`, `--batch-seconds` and `--cold-gpu-utilization`; a user's own
# cold/warm benchmark (`hubspoke bench report <results-file>`) gives better ones for another job.
REFERENCE_WARMUP_BATCHES = 150
REFERENCE_BATCH_SECONDS = 18.5 * 60 / 999
REFERENCE_COLD_GPU_UTILIZATION = 0.85  # the middle of 80-90 %, taken for all 150 batches: an upper bound
# What prewarm moves over the long path: benchmarks/results.md "Prewarm over the long path" (2026-12-01): 0.93 of the 1.0 GB/s
# path with the default parallelism and 8 MiB calls, the lower of the two call sizes measured at parallel 16.
PREWARM_GB_PER_SECOND = 0.93


@dataclass(frozen=True)
class ColdStart:
    """For one job on one spoke: what a cold cache costs the job, against prewarming first, in time and money."""

    spoke: str
    job_hours: float
    gpu_usd_per_hour: float | None  # the spoke's HyperPod nodes (hubspoke/prices.py); None: no price
    warmup_seconds: float  # GPU time the job loses to the warm-up
    warmup_share: float  # of the job's length
    warmup_usd: float | None
    prewarm_hours: float  # the whole dataset over the path, before the job starts
    prewarm_idle_gpu_usd: float | None  # if the GPU nodes are already running while prewarm runs
    # Prewarm while the GPUs run idle pays only when it costs less than the warm-up it saves.
    prewarm_pays_while_gpus_idle: bool


def cold_start(
    *,
    spoke: str,
    dataset_tb: float,
    job_hours: float,
    gpu_usd_per_hour: float | None,
    warmup_batches: float,
    batch_seconds: float,
    cold_gpu_utilization: float,
    prewarm_gb_per_second: float,
) -> ColdStart:
    """docs/cost.md, "Cold start or prewarm": the warm-up's lost GPU time against a prewarm's wait."""
    # A batch at GPU utilization u takes 1/u of its warm time: the loss is the difference over the warm-up.
    warmup_seconds = warmup_batches * batch_seconds * (1 / cold_gpu_utilization - 1)
    prewarm_hours = dataset_tb * GB_PER_TB / prewarm_gb_per_second / 3600
    warmup_usd = None if gpu_usd_per_hour is None else warmup_seconds / 3600 * gpu_usd_per_hour
    idle_usd = None if gpu_usd_per_hour is None else prewarm_hours * gpu_usd_per_hour
    return ColdStart(
        spoke=spoke,
        job_hours=job_hours,
        gpu_usd_per_hour=gpu_usd_per_hour,
        warmup_seconds=warmup_seconds,
        warmup_share=warmup_seconds / (job_hours * 3600),
        warmup_usd=warmup_usd,
        prewarm_hours=prewarm_hours,
        prewarm_idle_gpu_usd=idle_usd,
        prewarm_pays_while_gpus_idle=prewarm_hours * 3600 < warmup_seconds,
    )


def spoke_cost(inputs: CostInputs, *, spoke: str, hub: str) -> SpokeCost:
    """The model of docs/cost.md for one spoke."""
    d_gb = inputs.dataset_tb * GB_PER_TB
    p_t = inputs.transfer_usd_per_gb
    p_s = inputs.storage_usd_per_gb_month
    miss = 1 - inputs.hit_rate
    warmup_gb = d_gb
    steady_gb = d_gb * miss * (inputs.epochs - 1)
    cached_usd = (warmup_gb + steady_gb) * p_t
    replica_transfer_usd = d_gb * p_t
    replica_storage = d_gb * p_s
    replica_usd = replica_transfer_usd + replica_storage * inputs.months
    break_even_epochs = 1 + inputs.months * p_s / (miss * p_t) if miss > 0 and p_t > 0 else None
    break_even_months = miss * (inputs.epochs - 1) * p_t / p_s if p_s > 0 else None
    return SpokeCost(
        spoke=spoke,
        hub=hub,
        warmup_gb=warmup_gb,
        warmup_usd=warmup_gb * p_t,
        steady_gb=steady_gb,
        steady_usd=steady_gb * p_t,
        cached_usd=cached_usd,
        replica_transfer_usd=replica_transfer_usd,
        replica_storage_usd_per_month=replica_storage,
        replica_usd=replica_usd,
        break_even_epochs=break_even_epochs,
        break_even_months=break_even_months,
        cheaper="cache" if cached_usd < replica_usd else ("replica" if replica_usd < cached_usd else "equal"),
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "cost",
        help=summary,
        description="Inter-Region cost per spoke: warm-up transfer (one traversal of the dataset), "
        "steady-state miss transfer over the epochs, and the replication alternative (one full copy's "
        "transfer plus a second copy's storage per month), with the break-even. Formulas: docs/cost.md.",
        epilog="Example:\n  hubspoke cost --config config/dev.yaml --dataset-tb 100 --epochs 3 --months 2\n"
        "  hubspoke cost --config config/dev.yaml --dataset-tb 100 --transfer-usd-per-gb 0.02 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument("--dataset-tb", required=True, type=float, metavar="N", help="dataset size in TB")
    parser.add_argument(
        "--epochs", type=int, default=1, metavar="E", help="passes over the dataset (default 1)"
    )
    parser.add_argument(
        "--hit-rate",
        type=float,
        default=DEFAULT_HIT_RATE,
        metavar="H",
        help=f"spoke cache hit rate after the first pass, 0..1 (default {DEFAULT_HIT_RATE}: reference run)",
    )
    parser.add_argument(
        "--months", type=float, default=1.0, metavar="M", help="months a replica would be kept (default 1)"
    )
    parser.add_argument(
        "--transfer-usd-per-gb",
        type=float,
        default=None,
        metavar="USD",
        help="inter-Region transfer price for every spoke (default: each hub-to-spoke pair's list price in "
        "hubspoke/prices.py; required when a pair has none)",
    )
    parser.add_argument(
        "--storage-usd-per-gb-month",
        type=float,
        default=DEFAULT_STORAGE.usd,
        metavar="USD",
        help=f"second copy's storage price (default {DEFAULT_STORAGE.usd}, S3 Standard stand-in)",
    )
    job = parser.add_argument_group("cold start or prewarm (docs/cost.md)")
    job.add_argument(
        "--job-hours",
        type=float,
        metavar="H",
        help="length of one training job: adds what its cache warm-up costs against prewarming the dataset first",
    )
    job.add_argument(
        "--warmup-batches",
        type=float,
        default=REFERENCE_WARMUP_BATCHES,
        metavar="N",
        help=f"batches the cache takes to learn the job's pattern (default {REFERENCE_WARMUP_BATCHES}: reference run)",
    )
    job.add_argument(
        "--batch-seconds",
        type=float,
        default=REFERENCE_BATCH_SECONDS,
        metavar="S",
        help=f"one warm batch's time (default {REFERENCE_BATCH_SECONDS:.2f}: 999 batches in 18.5 min)",
    )
    job.add_argument(
        "--cold-gpu-utilization",
        type=float,
        default=REFERENCE_COLD_GPU_UTILIZATION,
        metavar="U",
        help=f"GPU utilization during the warm-up, 0..1 (default {REFERENCE_COLD_GPU_UTILIZATION}: 80-90 %%)",
    )
    job.add_argument(
        "--prewarm-gb-per-second",
        type=float,
        default=PREWARM_GB_PER_SECOND,
        metavar="R",
        help=f"what prewarm moves over the path (default {PREWARM_GB_PER_SECOND}: benchmarks/results.md, prewarm)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    problem = _check_inputs(args)
    if problem:
        return fail(problem)
    config = load(args.config).config
    if not config.spokes:
        return fail(f"{args.config}: spokes: the config has no spoke, so nothing crosses Regions; add one")
    hub = config.hub.region
    transfers = {s.region: _transfer(args, hub, s.region) for s in config.spokes}
    priced = {spoke: p for spoke, p in transfers.items() if p is not None}
    unpriced = [spoke for spoke in transfers if spoke not in priced]
    if unpriced:
        pairs = ", ".join(f"{hub} -> {spoke}" for spoke in unpriced)
        return fail(
            f"--transfer-usd-per-gb: hubspoke/prices.py has no inter-Region transfer price for {pairs}; give the "
            f"list price of transfer out of {hub} (https://aws.amazon.com/ec2/pricing/on-demand/, 'Data Transfer')"
        )
    inputs = CostInputs(
        dataset_tb=args.dataset_tb,
        epochs=args.epochs,
        hit_rate=args.hit_rate,
        months=args.months,
        transfer_usd_per_gb=0.0,
        storage_usd_per_gb_month=args.storage_usd_per_gb_month,
    )
    costs = [
        spoke_cost(
            dataclasses.replace(inputs, transfer_usd_per_gb=priced[s.region]["usd"]),
            spoke=s.region,
            hub=hub,
        )
        for s in config.spokes
    ]
    prices = {
        "transfer": {f"{hub} -> {spoke}": p for spoke, p in priced.items()},
        "storage": _storage(args),
    }
    starts = [] if args.job_hours is None else [_cold_start(args, config, s.region) for s in config.spokes]
    if args.json:
        data_inputs = {k: v for k, v in asdict(inputs).items() if k != "transfer_usd_per_gb"}
        doc: dict[str, Any] = {"inputs": data_inputs, "prices": prices, "spokes": [asdict(c) for c in costs]}
        if starts:
            doc["cold_start"] = [asdict(c) for c in starts]
        print_json(doc)
    else:
        tables = [_table(inputs, costs), *([_cold_table(starts)] if starts else [])]
        print_tables(tables, notes=_notes(prices))
    return 0


def _cold_start(args: argparse.Namespace, config: Any, spoke: str) -> ColdStart:
    from hubspoke.run_rate import run_rate

    gpu_lines = [
        line for line in run_rate(config) if line.region == spoke and line.what.startswith("HyperPod")
    ]
    rates = [line.usd_per_hour for line in gpu_lines]
    gpu = None if not rates or None in rates else sum(r for r in rates if r is not None)
    return cold_start(
        spoke=spoke,
        dataset_tb=args.dataset_tb,
        job_hours=args.job_hours,
        gpu_usd_per_hour=gpu,
        warmup_batches=args.warmup_batches,
        batch_seconds=args.batch_seconds,
        cold_gpu_utilization=args.cold_gpu_utilization,
        prewarm_gb_per_second=args.prewarm_gb_per_second,
    )


def _cold_table(starts: list[ColdStart]) -> Table:
    table = Table(
        f"Cold start or prewarm, for a job of {starts[0].job_hours:g} hour(s)",
        ("figure", *(c.spoke for c in starts)),
    )

    def usd(value: float | None) -> str:
        return "no GPU price" if value is None else _usd(value)

    rows: list[tuple[str, list[str]]] = [
        ("GPU nodes per hour", [usd(c.gpu_usd_per_hour) for c in starts]),
        (
            "cold start: GPU time lost to the warm-up",
            [
                f"{c.warmup_seconds / 60:,.1f} min ({c.warmup_share:.2%} of the job) = {usd(c.warmup_usd)}"
                for c in starts
            ],
        ),
        ("prewarm first: the whole dataset takes", [f"{c.prewarm_hours:,.1f} h" for c in starts]),
        ("  GPUs idle meanwhile, if already running", [usd(c.prewarm_idle_gpu_usd) for c in starts]),
        (
            "prewarm pays while GPUs wait",
            [
                "yes" if c.prewarm_pays_while_gpus_idle else "no: prewarm before the nodes run, or start cold"
                for c in starts
            ],
        ),
    ]
    for label, cells in rows:
        table.add(label, *cells)
    return table


def _transfer(args: argparse.Namespace, hub: str, spoke: str) -> dict[str, Any] | None:
    """The transfer price for hub -> spoke: the command line's, the table's for that pair, or None."""
    if args.transfer_usd_per_gb is not None:
        return {"usd": args.transfer_usd_per_gb, "unit": "USD per GB", "source": "given on the command line",
                "as_of": None}  # fmt: skip
    listed = transfer_price(hub, spoke)
    if listed is None:
        return None
    return {"usd": listed.usd, "unit": listed.unit, "source": listed.cited, "as_of": listed.as_of}


def _check_inputs(args: argparse.Namespace) -> str | None:
    transfer = args.transfer_usd_per_gb if args.transfer_usd_per_gb is not None else 0.0
    numbers = {
        "--dataset-tb": args.dataset_tb,
        "--months": args.months,
        "--transfer-usd-per-gb": transfer,
        "--storage-usd-per-gb-month": args.storage_usd_per_gb_month,
        "--hit-rate": args.hit_rate,
    }
    for flag, value in numbers.items():
        if not math.isfinite(value):
            return f"{flag}: {value} is not a number; give a finite value"
    if args.dataset_tb <= 0:
        return f"--dataset-tb: {args.dataset_tb} must be above 0; give the dataset size in TB, e.g. 100"
    if args.epochs < 1:
        return f"--epochs: {args.epochs} must be 1 or more"
    if args.job_hours is not None and not (math.isfinite(args.job_hours) and args.job_hours > 0):
        return f"--job-hours: {args.job_hours} must be above 0; give the job's length in hours, e.g. 24"
    if not 0 < args.cold_gpu_utilization <= 1:
        return f"--cold-gpu-utilization: {args.cold_gpu_utilization} must be above 0 and at most 1, e.g. 0.85"
    for flag, value in (("--warmup-batches", args.warmup_batches), ("--batch-seconds", args.batch_seconds)):
        if not (math.isfinite(value) and value >= 0):
            return f"{flag}: {value} must be a number of at least 0"
    if not (math.isfinite(args.prewarm_gb_per_second) and args.prewarm_gb_per_second > 0):
        return f"--prewarm-gb-per-second: {args.prewarm_gb_per_second} must be above 0, e.g. 0.93"
    if not 0 <= args.hit_rate <= 1:
        return f"--hit-rate: {args.hit_rate} must be between 0 and 1, e.g. 0.95 for 95 %"
    for flag in ("--months", "--transfer-usd-per-gb", "--storage-usd-per-gb-month"):
        if numbers[flag] < 0:
            return f"{flag}: {numbers[flag]} must not be negative"
    return None


def _storage(args: argparse.Namespace) -> dict[str, Any]:
    """The storage price used, with its source: the default's, or 'given on the command line'."""
    given = args.storage_usd_per_gb_month != DEFAULT_STORAGE.usd
    return {
        "usd": args.storage_usd_per_gb_month,
        "unit": DEFAULT_STORAGE.unit,
        "source": "given on the command line" if given else DEFAULT_STORAGE.source,
        "as_of": None if given else DEFAULT_STORAGE.as_of,
    }


def _usd(value: float) -> str:
    return f"${value:,.2f}"


def _number(value: float | None, unit: str, *, none: str) -> str:
    return none if value is None else f"{value:,.2f} {unit}"


def _table(inputs: CostInputs, costs: list[SpokeCost]) -> Table:
    table = Table(
        f"Cost per spoke: {inputs.dataset_tb:g} TB, {inputs.epochs} epoch(s), hit rate {inputs.hit_rate:g}, "
        f"replica kept {inputs.months:g} month(s)",
        ("figure", *(f"{c.hub} -> {c.spoke}" for c in costs)),
    )
    rows: list[tuple[str, list[str]]] = [
        (
            "warm-up transfer (one traversal)",
            [f"{c.warmup_gb:,.0f} GB = {_usd(c.warmup_usd)}" for c in costs],
        ),
        (
            "steady-state misses (epochs 2..E)",
            [f"{c.steady_gb:,.0f} GB = {_usd(c.steady_usd)}" for c in costs],
        ),
        ("cached path total", [_usd(c.cached_usd) for c in costs]),
        ("replica: one full copy's transfer", [_usd(c.replica_transfer_usd) for c in costs]),
        ("replica: second copy's storage", [f"{_usd(c.replica_storage_usd_per_month)}/month" for c in costs]),
        ("replication total", [_usd(c.replica_usd) for c in costs]),
        ("replica cheaper above", [_number(c.break_even_epochs, "epochs", none="never") for c in costs]),
        (
            "replica cheaper if kept under",
            [_number(c.break_even_months, "months", none="n/a (storage price 0)") for c in costs],
        ),
        ("cheaper option", [c.cheaper for c in costs]),
    ]
    for label, cells in rows:
        table.add(label, *cells)
    return table


def _notes(prices: dict[str, Any]) -> list[str]:
    notes = ["Prices:"]
    for pair, price in prices["transfer"].items():
        notes.append(f"  transfer {pair}: {_priced(price)}")
    notes.append(f"  storage: {_priced(prices['storage'])}")
    notes.append("Formulas and what is not modelled (writes, checkpoints, request traffic): docs/cost.md")
    return notes


def _priced(price: dict[str, Any]) -> str:
    dated = f", as of {price['as_of']}" if price["as_of"] and price["as_of"] not in price["source"] else ""
    return f"{price['usd']} {price['unit']} ({price['source']}{dated})"
