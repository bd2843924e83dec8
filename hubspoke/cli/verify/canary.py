"""Verify's storage and path checks, read from what each spoke's canary publishes to CloudWatch.

The CLI usually cannot reach the CNQ clusters (private IPs), but the Ops stack's canary probes the hub and
reads the portal every minute from inside the spoke VPC and publishes HubSpoke/Canary metrics
(hubspoke/canary_metrics.py). Verify reads the last hour of them with CloudWatch GetMetricData.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hubspoke import canary_metrics as metrics
from hubspoke.alarms import HUB_UNREACHABLE_MINUTES
from hubspoke.cli.checks import CheckResult
from hubspoke.cli.verify.live import Context, checked
from hubspoke.config import RegionConfig
from hubspoke.outputs import ADMIN_SECRET, FLOATING_IPS, REST_ADDRESS
from hubspoke.topology import stack_id

# The bar: a canary that has not reported for 5 minutes is reported as silent. It runs every
# minute, and an EMF line becomes a metric within a minute or two (CloudWatch embedded metric format).
SILENT_AFTER = timedelta(minutes=5)
LOOKBACK = timedelta(hours=1)
PERIOD_SECONDS = 60
_STATUS_NAMES = {v: k for k, v in metrics.PORTAL_STATUS_VALUES.items()} | {
    metrics.PORTAL_STATUS_UNKNOWN: "unreadable"
}
_HUB_OUTAGE = "docs/runbooks/hub-outage.md"
_HUB_HOSTS = "portal hub addresses"
_PORTAL = "docs/runbooks/portal.md"


def canary_rows(ctx: Context, spoke: RegionConfig) -> list[CheckResult]:
    code = spoke.region
    ops = stack_id("ops", code)
    if not ctx.stacks.planned(ops):
        why = "the hub has no CNQ" if not ctx.config.hub.storage.enabled else "this spoke has no CNQ"
        return [CheckResult(code, "canary", "not checked", f"no canary here: {why}, so no Ops stack")]
    rows = checked(code, "canary", "cloudwatch", lambda: _rows(ctx, spoke))
    inputs = checked(code, "canary inputs", "lambda", lambda: _inputs(ctx, spoke))
    if any(r.status != "pass" for r in inputs):
        # The portal's hub hosts are judged against the canary's HUB_ADDRESSES: only as good as those are.
        rows = [
            CheckResult(code, _HUB_HOSTS, "not checked", "the canary's inputs are not its producers' outputs")
            if r.check == _HUB_HOSTS
            else r
            for r in rows
        ]
    return [*rows, *inputs]


# What the canary function's environment carries, by the storage output each value was read from
# (constructs/canary/infrastructure.py sets them from the Ops stack's Fn::GetStackOutput reads, hubspoke.outputs).
_CANARY_INPUTS = (
    ("HUB_ADDRESSES", "hub", FLOATING_IPS.key()),
    ("SPOKE_REST_ADDRESS", "own", REST_ADDRESS.key()),
    ("ADMIN_SECRET_ARN", "own", ADMIN_SECRET.key()),
)


def _inputs(ctx: Context, spoke: RegionConfig) -> list[CheckResult]:
    """The values the canary runs with are its producers' current outputs, read from the live function.

    Fn::GetStackOutput is resolved when the Ops stack is created or updated (CloudFormation Template Reference,
    "Fn::GetStackOutput"), so after the hub's or this spoke's Storage stack changes an output, the canary keeps
    the old value until the Ops stack is deployed again: it would probe addresses the hub no longer has. The
    stale-reader row can only compare times; this compares the values (Lambda GetFunctionConfiguration,
    Environment.Variables, of the Ops stack's functions found by ListStackResources).
    """
    code = spoke.region
    ops = ctx.stacks.plan(stack_id("ops", code))
    if ctx.stacks.get(ops.id) is None:
        return []  # the stack rows fail it
    cloudformation = ctx.clients("cloudformation", code)
    functions = [
        r["PhysicalResourceId"]
        for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=ops.name)
        for r in page["StackResourceSummaries"]
        if r["ResourceType"] == "AWS::Lambda::Function" and r.get("PhysicalResourceId")
    ]
    lam = ctx.clients("lambda", code)
    environments = [
        lam.get_function_configuration(FunctionName=name).get("Environment", {}).get("Variables", {})
        for name in functions
    ]
    canary = next((env for env in environments if "HUB_ADDRESSES" in env), None)
    if canary is None:
        return [
            CheckResult(
                code,
                "canary inputs",
                "fail",
                f"{ops.name} has no function with the canary's environment (HUB_ADDRESSES)",
                ctx.deploy_command(ops.id),
            )
        ]
    producers = {"hub": stack_id("storage", ctx.config.hub.region), "own": stack_id("storage", code)}
    stale = []
    for variable, producer, output in _CANARY_INPUTS:
        current = ctx.stacks.output(producers[producer], output)
        held = canary.get(variable)
        if held is None:
            # The Ops stack always sets all three (constructs/canary/infrastructure.py): a function without one
            # was deployed by another version of hubspoke.
            stale.append(
                f"{variable} is not set, but {ctx.stacks.plan(producers[producer]).name} {output} is {current!r}"
            )
        elif held != current:
            stale.append(
                f"{variable} is {held!r}, but {ctx.stacks.plan(producers[producer]).name} {output} is {current!r}"
            )
    if stale:
        return [
            CheckResult(
                code,
                "canary inputs",
                "fail",
                "the canary runs with values its producers no longer output: " + "; ".join(stale),
                ctx.refresh_command(ops.id),
            )
        ]
    return [
        CheckResult(
            code,
            "canary inputs",
            "pass",
            "the canary's addresses and secret are its producers' current outputs",
        )
    ]


# GetMetricData MetricDataResult.StatusCode (botocore cloudwatch 2010-08-01, StatusCode: Complete | InternalError
# | PartialData | Forbidden). PartialData means more pages (the paginator follows NextToken); after the last page
# any other code than Complete means the series is not all there, and an empty one is not silence.
_INCOMPLETE = {"InternalError", "Forbidden", "PartialData"}


class Unreadable(Exception):
    """GetMetricData answered a result that is not the complete series."""


def _series(ctx: Context, spoke: str) -> dict[str, list[tuple[datetime, float]]]:
    """(timestamp, value) newest first for each canary metric this check reads."""
    dimensions = [
        {"Name": metrics.DIMENSION_ENVIRONMENT, "Value": ctx.config.environment},
        {"Name": metrics.DIMENSION_SPOKE, "Value": spoke},
    ]
    wanted = {
        # Id must start with a lower-case letter (GetMetricData MetricDataQuery.Id).
        "reachable": (metrics.HUB_REACHABLE, "Maximum"),
        "fraction": (metrics.NODES_REACHABLE_FRACTION, "Minimum"),
        "portal": (metrics.PORTAL_STATUS, "Minimum"),
        "hubhosts": (metrics.PORTAL_HUB_HOSTS_CURRENT, "Minimum"),
    }
    queries = [
        {
            "Id": query_id,
            "MetricStat": {
                "Metric": {"Namespace": metrics.NAMESPACE, "MetricName": name, "Dimensions": dimensions},
                "Period": PERIOD_SECONDS,
                "Stat": stat,
            },
            "ReturnData": True,
        }
        for query_id, (name, stat) in wanted.items()
    ]
    series: dict[str, list[tuple[datetime, float]]] = {query_id: [] for query_id in wanted}
    status: dict[str, str] = {}
    # CloudWatch GetMetricData (MetricDataQueries, StartTime, EndTime; paginator result key
    # MetricDataResults): each result has Id, Timestamps and Values.
    paginator = ctx.clients("cloudwatch", spoke).get_paginator("get_metric_data")
    for page in paginator.paginate(
        MetricDataQueries=queries, StartTime=ctx.now - LOOKBACK, EndTime=ctx.now, ScanBy="TimestampDescending"
    ):
        for result in page.get("MetricDataResults", []):
            series[result["Id"]] += zip(result.get("Timestamps", []), result.get("Values", []), strict=True)
            status[result["Id"]] = str(result.get("StatusCode", "Complete"))
    bad = {query_id: code for query_id, code in status.items() if code in _INCOMPLETE}
    if bad:
        raise Unreadable(", ".join(f"{query_id} {code}" for query_id, code in sorted(bad.items())))
    return {k: sorted(v, key=lambda p: p[0], reverse=True) for k, v in series.items()}


def _rows(ctx: Context, spoke: RegionConfig) -> list[CheckResult]:
    code = spoke.region
    try:
        series = _series(ctx, code)
    except Unreadable as exc:
        return [
            CheckResult(
                code,
                "canary",
                "fail",
                f"not checked: CloudWatch GetMetricData did not return the complete series ({exc})",
                "retry; Forbidden means these credentials may not read HubSpoke/Canary metrics "
                "(cloudwatch:GetMetricData)",
            ),
            *_unknown(code, "the canary's metrics could not be read"),
        ]
    reachable = series["reachable"]
    ops_name = ctx.stacks.plan(stack_id("ops", code)).name
    silent_fix = (
        f"the canary Lambda of {ops_name} is not running or not publishing: check its log group and its "
        f"every-minute EventBridge rule ({_HUB_OUTAGE}, 'Confirm: is it the hub, the path, or the spoke?': its log "
        "names what failed)"
    )
    if not reachable:
        return [
            CheckResult(
                code,
                "canary",
                "fail",
                f"no canary report in the last {_minutes(LOOKBACK)} minutes",
                silent_fix,
            ),
            *_unknown(code, "the canary has not reported"),
        ]
    last = reachable[0][0]
    age = ctx.now - last
    if age > SILENT_AFTER:
        return [
            CheckResult(
                code,
                "canary",
                "fail",
                f"the canary has not reported for {_minutes(age)} minutes (last at {last:%H:%M} UTC)",
                silent_fix,
            ),
            *_unknown(code, f"the canary has not reported for {_minutes(SILENT_AFTER)} minutes"),
        ]
    rows = [CheckResult(code, "canary", "pass", f"last report at {last:%H:%M} UTC ({_minutes(age)} min ago)")]
    rows.append(_reachable(code, ctx.config.hub.region, reachable, series["fraction"], now=ctx.now))
    rows.append(_portal(code, series["portal"], last))
    rows.append(_hub_hosts(ctx, spoke, series["hubhosts"], last))
    return rows


def _unknown(code: str, why: str) -> list[CheckResult]:
    return [
        CheckResult(code, "hub reachable", "not checked", why),
        CheckResult(code, "portal", "not checked", why),
        CheckResult(code, _HUB_HOSTS, "not checked", why),
    ]


def _reachable(
    code: str,
    hub: str,
    reachable: list[tuple[datetime, float]],
    fraction: list[tuple[datetime, float]],
    *,
    now: datetime,
) -> CheckResult:
    """The last minutes of HubReachable judged as the hub-unreachable-page alarm judges them.

    The alarm breaches when the one-minute Maximum is below 1 for HUB_UNREACHABLE_MINUTES minutes in a row,
    a minute without data counting as breaching (hubspoke/constructs/alarms.py, docs/operations.md): a
    single minute down is a blip the alarm lets pass, and is a warning here, not a failure. The minutes are
    the last ones before now, as the alarm evaluates them, not the last ones the canary happened to report:
    minutes since its newest datapoint are minutes without data.
    """
    window = [
        v for t, v in reachable if now - t < timedelta(seconds=PERIOD_SECONDS * HUB_UNREACHABLE_MINUTES)
    ]
    down = sum(v < 1 for v in window)
    missing = HUB_UNREACHABLE_MINUTES - len(window)
    minutes = f"the last {HUB_UNREACHABLE_MINUTES} minutes"
    if down and down + missing >= HUB_UNREACHABLE_MINUTES:
        return CheckResult(
            code,
            "hub reachable",
            "fail",
            f"no hub CNQ address in {hub} answered from {code} in {minutes}: cache hits serve, misses stall",
            f"follow {_HUB_OUTAGE}",
        )
    if down:
        return CheckResult(
            code,
            "hub reachable",
            "warn",
            f"no hub CNQ address in {hub} answered from {code} in {down} of {minutes} "
            f"(the alarm fires after {HUB_UNREACHABLE_MINUTES} in a row)",
            f"run hubspoke verify again in a few minutes; if it persists, follow {_HUB_OUTAGE}",
        )
    share = fraction[0][1] if fraction else None
    if share is not None and share < 1:
        return CheckResult(
            code,
            "hub reachable",
            "warn",
            f"the hub answers, but only {share:.0%} of its floating IPs do",
            f"check the hub CNQ nodes and the peering routes ({_HUB_OUTAGE})",
        )
    return CheckResult(code, "hub reachable", "pass", f"every hub CNQ address in {hub} answers from {code}")


def _portal(code: str, portal: list[tuple[datetime, float]], last_report: datetime) -> CheckResult:
    if not portal or portal[0][0] < last_report:
        return CheckResult(
            code,
            "portal",
            "fail",
            "the canary reports the hub but no PortalStatus: it has no spoke REST address or admin secret",
            f"redeploy the Ops stack of {code}; {_PORTAL}",
        )
    value = int(portal[0][1])
    name = _STATUS_NAMES.get(value, f"unknown value {value}")
    if value == metrics.PORTAL_STATUS_ACTIVE:
        return CheckResult(code, "portal", "pass", "the spoke portal is ACTIVE")
    if value == metrics.PORTAL_STATUS_UNKNOWN:
        detail = "the canary cannot read the portal (spoke REST API or admin secret; see its log line)"
    else:
        detail = f"the spoke portal is {name}, not ACTIVE"
    return CheckResult(code, "portal", "fail", detail, f"follow {_PORTAL}")


def _hub_hosts(
    ctx: Context, spoke: RegionConfig, reported: list[tuple[datetime, float]], last_report: datetime
) -> CheckResult:
    """The spoke portal's hub hosts are the hub's current floating IPs, as the canary reads the portal.

    The spoke's Storage stack gives the portal the hub's FloatingIps through Fn::GetStackOutput, resolved when
    that stack is created or updated (CloudFormation Template Reference, "Fn::GetStackOutput"): after the hub's
    addresses change, the portal keeps the old ones until the stack's portal resource runs again. Verify cannot
    reach the spoke's REST API; the canary can, and publishes PortalHubHostsCurrent: whether every hub host of
    the portal is one of its HUB_ADDRESSES, which the "canary inputs" row compares with the hub's output.
    """
    code = spoke.region
    if not reported or reported[0][0] < last_report:
        return CheckResult(
            code,
            _HUB_HOSTS,
            "not checked",
            "the canary's last report has no PortalHubHostsCurrent (the portal was unreadable, the canary has "
            "no spoke REST address, or it predates the metric)",
            f"the portal row; redeploy the Ops stack of {code} if the canary is older",
        )
    if reported[0][1] >= 1:
        return CheckResult(
            code,
            _HUB_HOSTS,
            "pass",
            f"the spoke portal's hub hosts are {ctx.config.hub.region}'s current floating IPs",
        )
    storage = stack_id("storage", code)
    return CheckResult(
        code,
        _HUB_HOSTS,
        "fail",
        f"the spoke portal points at hub addresses {ctx.stacks.plan(stack_id('storage', ctx.config.hub.region)).name} "
        "no longer outputs (or at none of its current ones): the canary's log line names them (portal_detail)",
        f"the refresh deploy of {ctx.stacks.plan(storage).name}, whose portal resource modifies the portal's hub "
        f"hosts: {ctx.refresh_command(storage)}; {_PORTAL}",
    )


def _minutes(span: timedelta) -> int:
    return int(span.total_seconds() // 60)
