"""Inter-Region and NFS-read bytes of one spoke VPC, counted by metric filters on its VPC flow logs.

Qumulo documents no cache hit-rate metric, so the Ops stack derives one (docs/operations.md):
  hit ratio = 1 - bytes received from the hub / bytes the spoke CNQ served to NFS readers.
Which flow-log records count as which bytes, and the patterns that select them, are in hubspoke/flow_logs.py
(no CDK: config validation counts the filters a topology needs from the same code).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke.flow_logs import MAX_FILTERS_PER_LOG_GROUP, traffic_patterns

INTER_REGION_IN = "InterRegionBytesIn"
INTER_REGION_OUT = "InterRegionBytesOut"
NFS_READ_BYTES_LOGGED = "NfsReadBytesLogged"
_METRIC_OF = {"from_hub": INTER_REGION_IN, "to_hub": INTER_REGION_OUT, "nfs_replies": NFS_READ_BYTES_LOGGED}


def namespace(environment: str) -> str:
    # Metric filters cannot add a constant dimension, so the environment goes in the namespace.
    return f"HubSpoke/{environment}/Traffic"


class TrafficMetrics(Construct):
    """Metric filters on a spoke's flow-log group: bytes in from and out to the hub, and NFS bytes read."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        flow_log_group: logs.ILogGroup,
        environment: str,
        region: str,
        own_cidrs: Sequence[str],
        hub_cidrs: Sequence[str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.environment = environment
        self.region = region
        filters = [
            (_METRIC_OF[kind], pattern)
            for kind, patterns in traffic_patterns(own_cidrs=own_cidrs, hub_cidrs=hub_cidrs).items()
            for pattern in patterns
        ]
        if len(filters) > MAX_FILTERS_PER_LOG_GROUP:
            # Config validation refuses such a topology first (config/traffic_rules.py, flow_log_filters_fit).
            raise ValueError(f"{region}: {len(filters)} flow-log metric filters needed")
        for index, (metric_name, pattern) in enumerate(filters):
            # Several filters may feed one metric: CloudWatch adds their values.
            logs.MetricFilter(
                self,
                f"Filter{index}",
                log_group=flow_log_group,
                filter_pattern=logs.FilterPattern.literal(pattern),
                metric_namespace=namespace(environment),
                metric_name=metric_name,
                metric_value="$bytes",
                default_value=0,
                unit=cloudwatch.Unit.BYTES,
            )
        self.metric_names = tuple(dict.fromkeys(name for name, _ in filters))

    def metric(self, name: str, *, period_minutes: int = 5) -> cloudwatch.Metric:
        if name not in self.metric_names:
            raise ValueError(f"{name} is not published by these filters")
        return traffic_metric(
            name, environment=self.environment, region=self.region, period_minutes=period_minutes
        )


def traffic_metric(name: str, *, environment: str, region: str, period_minutes: int = 5) -> cloudwatch.Metric:
    """The sum of one flow-log byte count of `region`, per period, read from anywhere (it lives in that Region)."""
    return cloudwatch.Metric(
        namespace=namespace(environment),
        metric_name=name,
        statistic="Sum",
        period=Duration.minutes(period_minutes),
        region=region,
    )
