"""The environment's one CloudWatch dashboard: every Region side by side, one column each.

Plain aws_cloudwatch rather than cdk-monitoring-constructs: every series here is a custom metric read from
another Region (canary, flow-log filters, training job, Container Insights), which the library's per-resource
monitors do not cover, while a graph widget takes a `region` per metric directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from hubspoke import canary_metrics, training_metrics
from hubspoke.alarms import planned_alarms
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.canary.infrastructure import canary_metric
from hubspoke.constructs.canary.traffic import INTER_REGION_IN, INTER_REGION_OUT, traffic_metric
from hubspoke.constructs.metrics import (
    GPU_UTILIZATION_LABEL,
    HIT_RATIO_PERIOD_MINUTES,
    gpu_utilization,
    hit_ratio,
    training_metric,
)
from hubspoke.constructs.node_health import HEALTH_ROWS, health_graph
from hubspoke.names import dashboard_name
from hubspoke.topology import StackPlan

GRID_WIDTH = 24  # CloudWatch dashboards are 24 units wide
MIN_COLUMN_WIDTH = 6  # narrower graphs are unreadable; more Regions than 4 wrap to a second line per row
GRAPH_HEIGHT = 6
HEADER_HEIGHT = 4
MINUTE = Duration.minutes(1)
# Flow-log records cover up to 1 minute and are timestamped at their start, so a minute's sum holds some of
# the neighbouring minutes' bytes: 5-minute sums (like the hit ratio's periods) even that out.
TRAFFIC_PERIOD_MINUTES = 5
# Room for a Region's dozen alarms in the status grid.
ALARM_STATUS_HEIGHT = 4


@dataclass(frozen=True)
class RegionColumn:
    """One Region's column: what it is and which of its stacks publish metrics."""

    region: RegionConfig
    is_hub: bool
    watched: bool  # has an Ops stack: canary and flow-log byte counts
    computes: bool  # has a Compute stack: GPU metrics and training jobs


def columns(config: HubSpokeConfig, plans: Sequence[StackPlan]) -> list[RegionColumn]:
    """The hub first, then the spokes in config order; what each shows follows from the stacks that exist.

    A column graphs only what a stack of its Region publishes: a metric nothing publishes would read as an outage.
    """
    ops = {p.region for p in plans if p.kind == "ops"}
    compute = {p.region for p in plans if p.kind == "compute"}
    return [
        RegionColumn(r, r.region == config.hub.region, r.region in ops, r.region in compute)
        for r in config.regions()
    ]


class EnvironmentDashboard(cloudwatch.Dashboard):
    """One dashboard per environment: hub reachability, portals, cache, inter-Region bytes, GPUs, samples/s.

    Example::

        dashboard = EnvironmentDashboard(stack, "Dashboard", config=config, plans=plan_stacks(config))
        dashboard.dashboard_name  # "hubspoke-dev"
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plans: Sequence[StackPlan]
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            dashboard_name=dashboard_name(config.environment),
            default_interval=Duration.hours(3),
        )
        self.config = config
        self.columns = columns(config, plans)
        self.column_width = max(MIN_COLUMN_WIDTH, GRID_WIDTH // len(self.columns))
        self.watched = [c for c in self.columns if c.watched]
        self.alarm_names: dict[str, list[str]] = {}
        accounts = {p.id: p.account for p in plans}
        # Literal ARNs: the body names nothing of other stacks (tests/stacks/test_dashboard.py), and every Region
        # hubspoke deploys to is of the aws partition (hubspoke/regions.py, partition_regions).
        self.alarm_arns: dict[str, list[str]] = {}
        for alarm in planned_alarms(config):
            self.alarm_arns.setdefault(alarm.region, []).append(
                f"arn:aws:cloudwatch:{alarm.region}:{accounts[alarm.stack_id]}:alarm:{alarm.name}"
            )
            shown = f"`{alarm.name}`" + ("" if alarm.notifies else " (notifies nobody)")
            self.alarm_names.setdefault(alarm.region, []).append(shown)
        rows: Sequence[Callable[[RegionColumn], cloudwatch.IWidget]] = (
            self._header,
            self._alarm_states,
            self._reachability,
            self._portal,
            self._hit_ratio,
            self._inter_region_bytes,
            self._gpu,
            self._samples,
            *(partial(self._health, row=row) for row in HEALTH_ROWS),
        )
        for row in rows:
            self.add_widgets(*(row(column) for column in self.columns))

    # One widget per (row, Region). A cell that does not apply says why, so the columns stay aligned.

    def _text(self, markdown: str, *, height: int = GRAPH_HEIGHT) -> cloudwatch.TextWidget:
        return cloudwatch.TextWidget(markdown=markdown, width=self.column_width, height=height)

    def _not_here(self, column: RegionColumn, title: str, why: str) -> cloudwatch.TextWidget:
        return self._text(f"### {title}, {column.region.region}\n{why}")

    def _graph(self, column: RegionColumn, title: str, **props: object) -> cloudwatch.GraphWidget:
        # The widget's Region is the column's: metric math is evaluated where its inputs live.
        return cloudwatch.GraphWidget(
            title=title,
            region=column.region.region,
            width=self.column_width,
            height=GRAPH_HEIGHT,
            **props,  # type: ignore[arg-type]
        )

    def _header(self, column: RegionColumn) -> cloudwatch.IWidget:
        code = column.region.region
        alarms = self.alarm_names.get(code, [])
        if column.is_hub:
            lines = [f"## {code}: hub", "Holds the dataset; every spoke's cache misses are read here."]
        else:
            lines = [f"## {code}: spoke", "Caches the hub's dataset; runbook docs/runbooks/hub-outage.md."]
        if column.computes:
            lines.append(
                "Training health is samples/s against the run's own baseline; GPU utilization is secondary "
                "(ranks waiting in collectives look busy). What each alarm sees: docs/operations.md."
            )
        lines.append("Alarms: " + (", ".join(alarms) if alarms else "none in this Region."))
        return self._text("\n\n".join(lines), height=HEADER_HEIGHT)

    def _alarm_states(self, column: RegionColumn) -> cloudwatch.IWidget:
        """Every planned alarm of the Region and its state (red ALARM, grey INSUFFICIENT_DATA, CloudWatch User
        Guide, "Adding an alarm to a dashboard"). ASSUMED: an alarm status widget shows alarms of another Region
        of the same account by ARN, as metric widgets read other Regions; no page says so for alarms."""
        arns = self.alarm_arns.get(column.region.region, [])
        if not arns:
            return self._not_here(column, "Alarms", "No alarms in this Region.")
        return cloudwatch.AlarmStatusWidget(
            title=f"Alarms, {column.region.region}",
            alarms=[
                cloudwatch.Alarm.from_alarm_arn(self, f"Alarm{column.region.region}{i}", arn)
                for i, arn in enumerate(arns)
            ],
            width=self.column_width,
            height=ALARM_STATUS_HEIGHT,
        )

    def _reachability(self, column: RegionColumn) -> cloudwatch.IWidget:
        env = self.config.environment
        if column.is_hub:
            if not self.watched:
                return self._not_here(
                    column, "Hub reachability", "No spoke has an Ops stack: no canary probes the hub."
                )
            return self._graph(
                column,
                "Hub nodes answering, as each spoke's canary sees them",
                left=[
                    canary_metric(
                        canary_metrics.NODES_REACHABLE_FRACTION,
                        environment=env,
                        spoke=c.region.region,
                        statistic="Minimum",
                    ).with_(label=f"from {c.region.region}")
                    for c in self.watched
                ],
                left_y_axis=cloudwatch.YAxisProps(min=0, max=1, show_units=False),
            )
        if not column.watched:
            return self._not_here(
                column, "Hub reachability", "No Ops stack here (no CNQ spoke), so no canary."
            )
        spoke = column.region.region
        return self._graph(
            column,
            f"Hub reachable from {spoke} (canary, every minute)",
            left=[
                canary_metric(canary_metrics.HUB_REACHABLE, environment=env, spoke=spoke).with_(
                    label="hub reachable (1 = yes)"
                ),
                canary_metric(canary_metrics.NODES_REACHABLE_FRACTION, environment=env, spoke=spoke).with_(
                    label="fraction of hub nodes answering"
                ),
            ],
            right=[
                canary_metric(
                    canary_metrics.CONNECT_LATENCY, environment=env, spoke=spoke, statistic="p99"
                ).with_(label="TCP connect p99 (ms)")
            ],
            left_y_axis=cloudwatch.YAxisProps(min=0, max=1, show_units=False),
            right_y_axis=cloudwatch.YAxisProps(min=0, label="ms", show_units=False),
        )

    def _portal(self, column: RegionColumn) -> cloudwatch.IWidget:
        env = self.config.environment
        shown = self.watched if column.is_hub else [column] if column.watched else []
        if not shown:
            return self._not_here(column, "Portal state", "No spoke portal reports here (no Ops stack).")
        return self._graph(
            column,
            "Portal state of every spoke" if column.is_hub else f"Portal state of {column.region.region}",
            left=[
                canary_metric(
                    canary_metrics.PORTAL_STATUS, environment=env, spoke=c.region.region, statistic="Minimum"
                ).with_(label=f"{c.region.region} portal")
                for c in shown
            ],
            left_y_axis=cloudwatch.YAxisProps(
                min=canary_metrics.PORTAL_STATUS_UNKNOWN,
                max=canary_metrics.PORTAL_STATUS_ACTIVE,
                show_units=False,
            ),
            left_annotations=[
                cloudwatch.HorizontalAnnotation(value=value, label=state)
                for state, value in canary_metrics.PORTAL_STATUS_VALUES.items()
            ],
        )

    def _hit_ratio(self, column: RegionColumn) -> cloudwatch.IWidget:
        if column.is_hub:
            why = "The hub reads its own data: nothing to hit or miss. Spokes derive theirs (docs/operations.md)."
            return self._not_here(column, "Cache hit ratio", why)
        if not column.watched:
            return self._not_here(
                column, "Cache hit ratio", "No CNQ spoke with an Ops stack here: no cache to measure."
            )
        floor = self.config.ops.cache_hit_ratio_floor
        series: list[cloudwatch.IMetric] = [
            hit_ratio(
                environment=self.config.environment,
                region=column.region.region,
                min_read_gb=self.config.ops.cache_hit_ratio_min_read_gb,
            )
        ]
        if column.computes:
            # Published by prewarm and the training job, both on the Region's cluster. Same 0..1 axis: the
            # cache alarm judges the ratio only once this reaches 1 (hubspoke/alarms.py).
            series.append(
                training_metric(
                    self.config,
                    column.region,
                    training_metrics.DATASET_PREWARMED_FRACTION,
                    period=Duration.minutes(HIT_RATIO_PERIOD_MINUTES),
                    statistic="Minimum",
                ).with_(label="fraction of the dataset prewarm has warmed")
            )
        return self._graph(
            column,
            f"Derived cache hit ratio, {column.region.region} ({HIT_RATIO_PERIOD_MINUTES} min)",
            left=series,
            left_y_axis=cloudwatch.YAxisProps(min=0, max=1, show_units=False),
            left_annotations=[cloudwatch.HorizontalAnnotation(value=floor, label=f"floor {floor}")],
        )

    def _inter_region_bytes(self, column: RegionColumn) -> cloudwatch.IWidget:
        env = self.config.environment
        # Only the spokes' flow logs are filtered: the hub's traffic is the sum of what its spokes see.
        shown = self.watched if column.is_hub else [column] if column.watched else []
        if not shown:
            return self._not_here(
                column, "Inter-Region bytes", "No flow-log byte counts here (no Ops stack)."
            )
        series: list[cloudwatch.IMetric] = []
        for c in shown:
            code = c.region.region
            for name, direction in ((INTER_REGION_IN, "hub to"), (INTER_REGION_OUT, "to hub from")):
                series.append(
                    traffic_metric(
                        name, environment=env, region=code, period_minutes=TRAFFIC_PERIOD_MINUTES
                    ).with_(label=f"{direction} {code}")
                )
        return self._graph(
            column,
            "Inter-Region bytes, per spoke (billed both ways)"
            if column.is_hub
            else f"Inter-Region bytes, {column.region.region}",
            left=series,
            left_y_axis=cloudwatch.YAxisProps(min=0, label="bytes / 5 min", show_units=False),
        )

    def _gpu(self, column: RegionColumn) -> cloudwatch.IWidget:
        if not column.computes:
            return self._not_here(column, "GPU utilization", "No Compute stack (EKS, HyperPod) here.")
        floor = self.config.ops.gpu_utilization_floor_percent
        return self._graph(
            column,
            f"GPU utilization, HyperPod nodes in {column.region.region}",
            left=[
                gpu_utilization(self.config, column.region, period=MINUTE).with_(label=GPU_UTILIZATION_LABEL)
            ],
            left_y_axis=cloudwatch.YAxisProps(min=0, max=100, show_units=False),
            left_annotations=[cloudwatch.HorizontalAnnotation(value=floor, label=f"floor {floor} %")],
        )

    def _samples(self, column: RegionColumn) -> cloudwatch.IWidget:
        if not column.computes:
            return self._not_here(column, "Training samples/s", "No Compute stack here: no training job.")
        return self._graph(
            column,
            f"Training samples/s, {column.region.region}",
            left=[
                training_metric(self.config, column.region, period=MINUTE).with_(
                    label=f"samples/s, average of {training_metrics.REPORT_SECONDS:g} s records"
                ),
                training_metric(
                    self.config, column.region, training_metrics.SAMPLES_PER_SECOND_BASELINE, period=MINUTE
                ).with_(
                    label=f"the run's best {training_metrics.BASELINE_SECONDS / 60:g} minutes (baseline)"
                ),
            ],
            left_y_axis=cloudwatch.YAxisProps(min=0, show_units=False),
        )

    def _health(self, column: RegionColumn, row: str) -> cloudwatch.IWidget:
        """One of node_health.DASHBOARD_ROWS: node health labels, EFA and pod restarts, checkpoint age."""
        if not column.computes:
            return self._not_here(column, row, "No Compute stack (HyperPod) here.")
        return self._graph(column, **health_graph(self.config, column.region, row))
