"""Inter-Region and NFS-read bytes of one VPC, counted by metric filters on its VPC flow logs.

Qumulo documents no cache hit-rate metric, so the Ops stack derives one (docs/operations.md):
  hit ratio = 1 - bytes received from the hub / bytes the spoke CNQ served to NFS readers.
Both come from the spoke VPC's flow logs (default format, version 2):
  version account-id interface-id srcaddr dstaddr srcport dstport protocol packets bytes start end action log-status
- bytes received from the hub: accepted flows whose source is in a hub CIDR. The peering is the only path
  from those addresses, and only the spoke's ENIs log into this group, so each byte is counted once;
- NFS read bytes: accepted flows from source port 2049 to an address of this VPC. Both ends of such a flow
  are ENIs of this VPC, so every byte is logged twice (once per ENI): the Ops stack halves the sum.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from constructs import Construct

from hubspoke.ports import NFS

FLOW_FIELDS = (
    "version",
    "account_id",
    "interface_id",
    "srcaddr",
    "dstaddr",
    "srcport",
    "dstport",
    "protocol",
    "packets",
    "bytes",
    "start",
    "end",
    "action",
    "log_status",
)
INTER_REGION_IN = "InterRegionBytesIn"
INTER_REGION_OUT = "InterRegionBytesOut"
NFS_READ_BYTES_LOGGED = "NfsReadBytesLogged"
# CloudWatch Logs allows 100 metric filters per log group; stay well inside it.
MAX_FILTERS = 60


def namespace(environment: str) -> str:
    # Metric filters cannot add a constant dimension, so the environment goes in the namespace.
    return f"HubSpoke/{environment}/Traffic"


def address_prefixes(cidrs: Iterable[str]) -> list[str]:
    """Filter-pattern wildcards ('10.10.*') covering the CIDRs at octet boundaries.

    A block smaller than /24 is widened to its /24: flow-log patterns match text, not address ranges.
    """
    prefixes: list[str] = []
    for cidr in cidrs:
        net = ipaddress.IPv4Network(cidr)
        octets = min(3, max(1, net.prefixlen // 8 + (1 if net.prefixlen % 8 else 0)))
        for sub in (
            net.subnets(new_prefix=octets * 8)
            if net.prefixlen <= octets * 8
            else [net.supernet(new_prefix=24)]
        ):
            text = ".".join(str(sub.network_address).split(".")[:octets]) + ".*"
            if text not in prefixes:
                prefixes.append(text)
    return prefixes


def flow_pattern(**conditions: str) -> str:
    """A space-delimited pattern over the default flow-log fields, accepted flows only."""
    conditions = {"action": "ACCEPT", **conditions}
    unknown = set(conditions) - set(FLOW_FIELDS)
    if unknown:
        raise ValueError(f"not flow-log fields: {sorted(unknown)}")
    parts = [f"{f}={conditions[f]}" if f in conditions else f for f in FLOW_FIELDS]
    return "[" + ", ".join(parts) + "]"


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
        filters: list[tuple[str, str]] = []
        for prefix in address_prefixes(hub_cidrs):
            filters.append((INTER_REGION_IN, flow_pattern(srcaddr=prefix)))
            filters.append((INTER_REGION_OUT, flow_pattern(dstaddr=prefix)))
        for prefix in address_prefixes(own_cidrs):
            filters.append((NFS_READ_BYTES_LOGGED, flow_pattern(srcport=str(NFS), dstaddr=prefix)))
        if len(filters) > MAX_FILTERS:
            raise ValueError(
                f"{region}: {len(filters)} flow-log metric filters needed; use fewer or larger CIDR blocks"
            )
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
