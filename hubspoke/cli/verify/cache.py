"""Verify's cache check: how much of its dataset a training spoke holds, as prewarm last reported it.

prewarm (workload/prewarm.py) publishes DatasetPrewarmedFraction while it runs and the training job republishes
it with every throughput record (hubspoke/training_metrics.py); the cache-hit alarm judges the hit ratio only
once it reaches alarms.FULLY_CACHED_FRACTION. Verify reads the newest value with CloudWatch GetMetricData.

Which version: the metric's dimensions are Environment and Region only (hubspoke/training_metrics.py), so the
value cannot say which version it measured. The row judges the config's pin (dataset.name/version): the
rendered prewarm Job warms that pin, and a training job republishes only a status naming its own version
(workload/cache_status.describes). A prewarm or job rendered with --dataset-version reports under the same
metric; the row says so rather than claim more than the metric holds.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hubspoke import training_metrics
from hubspoke.alarms import FULLY_CACHED_FRACTION
from hubspoke.cli.checks import CheckResult, guarded
from hubspoke.cli.verify.live import Context
from hubspoke.config import RegionConfig

CHECK = "dataset cached"
# A prewarm reports every 30 s while it runs and a job every REPORT_SECONDS; a day covers a prewarm that
# finished before the night's job. Older values may describe a version since replaced: not shown.
LOOKBACK = timedelta(days=1)
PERIOD_SECONDS = 300
_RUNBOOK = "docs/runbooks/cache-warm-up.md"


def cache_rows(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    """One row for a spoke with a CNQ cache and a cluster (where prewarm and jobs run); none elsewhere."""
    if region.region == ctx.config.hub.region or not (region.storage.enabled and region.compute.enabled):
        return []
    return guarded(region.region, CHECK, "cloudwatch", lambda: [_row(ctx, region)])


def _newest(ctx: Context, region: str) -> tuple[datetime, float] | None:
    dimensions = [
        {"Name": name, "Value": value}
        for name, value in zip(training_metrics.DIMENSIONS, (ctx.config.environment, region), strict=True)
    ]
    query = {
        "Id": "cached",  # GetMetricData MetricDataQuery.Id: starts with a lower-case letter
        "MetricStat": {
            "Metric": {
                "Namespace": training_metrics.NAMESPACE,
                "MetricName": training_metrics.DATASET_PREWARMED_FRACTION,
                "Dimensions": dimensions,
            },
            "Period": PERIOD_SECONDS,
            # The lowest report of the period, as the alarm reads it: a version being re-warmed counts.
            "Stat": "Minimum",
        },
        "ReturnData": True,
    }
    points: list[tuple[datetime, float]] = []
    paginator = ctx.clients("cloudwatch", region).get_paginator("get_metric_data")
    for page in paginator.paginate(
        MetricDataQueries=[query],
        StartTime=ctx.now - LOOKBACK,
        EndTime=ctx.now,
        ScanBy="TimestampDescending",
    ):
        for result in page.get("MetricDataResults", []):
            points += zip(result.get("Timestamps", []), result.get("Values", []), strict=True)
    return max(points, key=lambda p: p[0]) if points else None


def _pin(ctx: Context) -> str:
    """The version the row judges, as the user reads it."""
    d = ctx.config.dataset
    if d.name is None or d.version is None:
        return "the dataset (the config pins no version)"
    return f"{d.name}/{d.version}"


# Said with every reported value: the metric cannot tell versions apart.
_LIMIT = "taken as the config's pin: the metric has no version dimension, a --dataset-version Job reports under it too"


def _row(ctx: Context, region: RegionConfig) -> CheckResult:
    code = region.region
    pin = _pin(ctx)
    render = f"hubspoke render prewarm --config {ctx.config_path} --region {code} --rest-address <spoke IP>"
    newest = _newest(ctx, code)
    if newest is None:
        return CheckResult(
            code,
            CHECK,
            "warn",
            f"no cached fraction reported in the last {LOOKBACK.days * 24} hours: prewarm has not run (or its "
            "records do not reach CloudWatch); a job's first pass reads cold and the cache-hit alarm cannot page",
            f"run the prewarm Job: {render} | kubectl apply -f - ({_RUNBOOK})",
        )
    when, fraction = newest
    at = f"{when:%Y-%m-%d %H:%M} UTC"
    if fraction >= FULLY_CACHED_FRACTION:
        return CheckResult(
            code, CHECK, "pass", f"prewarm reports {pin} whole ({fraction:.3f}, {at}; {_LIMIT})"
        )
    return CheckResult(
        code,
        CHECK,
        "warn",
        f"prewarm reports {fraction:.1%} of {pin} warm ({at}; {_LIMIT}): reads of the rest go to the hub, "
        f"and the cache-hit alarm waits for {FULLY_CACHED_FRACTION:g}",
        f"run or resume the prewarm Job (it skips what is warm): {render} | kubectl apply -f - ({_RUNBOOK})",
    )
