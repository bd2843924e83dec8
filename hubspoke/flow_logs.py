"""Metric-filter patterns over VPC flow logs in the default format: which records count as which bytes.

No CDK: the Ops stack's metric filters (constructs/canary/traffic.py) and config validation
(config/traffic_rules.py: the number of filters a topology needs) share it.

Facts, with sources:
- Default format: every version-2 field, in this order (Amazon VPC User Guide, "Flow log records",
  awsdocs/amazon-vpc-user-guide@a16ab76 doc_source/flow-logs.md): version account-id interface-id srcaddr
  dstaddr srcport dstport protocol packets bytes start end action log-status. Fields that do not apply
  are '-' (NODATA and SKIPDATA records).
- Space-delimited patterns name every field in brackets; `name = value` conditions, `||` between
  alternatives, `*` as a wildcard (CloudWatch Logs User Guide, "Using metric filters to extract values from
  space-delimited log events", awsdocs/amazon-cloudwatch-logs-user-guide@26c12c3
  doc_source/FilterAndPatternSyntax.md: `status_code = 4*`, `status_code = 404 || status_code = 410`).
  Exact values are quoted as in the VPC guide's flow-log example (`destport="22"`, `action="REJECT"`,
  doc_source/flow-logs-cwl.md); wildcards are written bare, as in the CloudWatch example (`4*`).
- A filter pattern is at most 1024 characters (CloudWatch Logs API PutMetricFilter, `filterPattern`
  length 0-1024: botocore's logs model, shape FilterPattern). Patterns that need more alternatives are split
  over several filters feeding one metric; CloudWatch adds their values.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

from hubspoke.ports import NFS

DEFAULT_FORMAT_FIELDS: tuple[str, ...] = (
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
FILTER_PATTERN_MAX_CHARS = 1024
# "Metrics filters: 100 per log group. This quota can't be changed." (CloudWatch Logs User Guide, quotas,
# awsdocs/amazon-cloudwatch-logs-user-guide@26c12c3 doc_source/cloudwatch_limits_cwl.md).
LOG_GROUP_FILTER_QUOTA = 100
# A choice, not a limit: hubspoke uses at most 60 of them, leaving 40 for an operator's own filters on the
# same flow-log group (config validation refuses a topology that needs more).
MAX_FILTERS_PER_LOG_GROUP = 60


def address_wildcards(cidrs: Iterable[str]) -> list[str]:
    """Wildcards ('10.10.*', '10.20.3.*') covering the CIDRs at octet boundaries, without duplicates.

    Patterns match text, not address ranges: a block that does not end on an octet is split into the blocks
    of its next octet boundary (a /17 into 128 /24s), and a block smaller than /24 is widened to its /24
    (config validation refuses a hub and a spoke block in one /24: config/traffic_rules.py).
    """
    wildcards: list[str] = []
    for cidr in cidrs:
        net = ipaddress.IPv4Network(cidr)
        octets = min(3, -(-net.prefixlen // 8))
        blocks = (
            net.subnets(new_prefix=octets * 8)
            if net.prefixlen <= octets * 8
            else [net.supernet(new_prefix=24)]
        )
        for block in blocks:
            text = ".".join(str(block.network_address).split(".")[:octets]) + ".*"
            if text not in wildcards:
                wildcards.append(text)
    return wildcards


def _pattern(conditions: dict[str, str]) -> str:
    unknown = set(conditions) - set(DEFAULT_FORMAT_FIELDS)
    if unknown:
        raise ValueError(f"not flow-log fields: {sorted(unknown)}")
    return "[" + ", ".join(conditions.get(f, f) for f in DEFAULT_FORMAT_FIELDS) + "]"


def accepted_flow_patterns(
    *, field: str, wildcards: Sequence[str], exact: dict[str, str] | None = None
) -> list[str]:
    """Patterns for accepted flows whose `field` matches one of `wildcards` and whose other fields equal `exact`.

    The alternatives are packed into as few patterns as the 1024-character limit allows; every record matches
    at most one of them (the wildcards name disjoint blocks), so the sum over the patterns counts it once.
    """
    fixed = {name: f'{name}="{value}"' for name, value in {"action": "ACCEPT", **(exact or {})}.items()}
    patterns: list[str] = []
    chosen: list[str] = []
    for wildcard in wildcards:
        candidate = [*chosen, f"{field}={wildcard}"]
        if chosen and len(_pattern({**fixed, field: " || ".join(candidate)})) > FILTER_PATTERN_MAX_CHARS:
            patterns.append(_pattern({**fixed, field: " || ".join(chosen)}))
            candidate = [f"{field}={wildcard}"]
        chosen = candidate
    if chosen:
        patterns.append(_pattern({**fixed, field: " || ".join(chosen)}))
    return patterns


def traffic_patterns(*, own_cidrs: Sequence[str], hub_cidrs: Sequence[str]) -> dict[str, list[str]]:
    """The spoke's byte counts, by kind, as metric-filter patterns over its own VPC's flow logs.

    - from the hub: accepted flows whose source is in a hub CIDR (only the peering carries them);
    - to the hub: accepted flows whose destination is in a hub CIDR;
    - NFS read replies: accepted flows from port 2049 of an address of the spoke's own VPC. Replies of the hub
      (to the canary's probes, or to a client that mounted the hub directly) are not the spoke serving reads,
      so the source must be the spoke's own. Both ends of such a flow are ENIs of the VPC, each of which logs
      it: every byte appears twice (the Ops stack halves the sum).
    """
    hub = address_wildcards(hub_cidrs)
    return {
        "from_hub": accepted_flow_patterns(field="srcaddr", wildcards=hub),
        "to_hub": accepted_flow_patterns(field="dstaddr", wildcards=hub),
        "nfs_replies": accepted_flow_patterns(
            field="srcaddr", wildcards=address_wildcards(own_cidrs), exact={"srcport": str(NFS)}
        ),
    }
