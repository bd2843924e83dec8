"""The canary's CloudWatch metrics: names, units, the portal-status mapping, and the embedded-metric log line.

The canary Lambda publishes them, the Ops stack's alarms and dashboard and `hubspoke verify` read them, so a widget
can only show what the canary publishes. Standard library only: the canary's asset carries this module beside its
runtime package (constructs/canary/infrastructure.py), as the training image carries training_metrics.py.
Embedded metric format (EMF) rather than PutMetricData: the Lambda service ships the log line to CloudWatch Logs
itself, so the canary needs no CloudWatch VPC endpoint or NAT route to publish, and the probe detail sits beside
the numbers for Logs Insights.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

NAMESPACE = "HubSpoke/Canary"
DIMENSION_ENVIRONMENT = "Environment"
DIMENSION_SPOKE = "Spoke"

HUB_REACHABLE = "HubReachable"
"""1 when at least one hub floating IP answers on every probed port, else 0."""
NODES_REACHABLE_FRACTION = "HubNodesReachableFraction"
"""Fraction (0..1) of the hub's floating IPs that answer on every probed port."""
CONNECT_LATENCY = "HubConnectLatency"
"""TCP connect time of every successful probe, in milliseconds (one value per probe)."""
PORTAL_STATUS = "PortalStatus"
"""The spoke portal's status as a number: see PORTAL_STATUS_VALUES."""
PORTAL_HUB_HOSTS_CURRENT = "PortalHubHostsCurrent"
"""1 when every hub host of the spoke's portals towards the hub is one of the canary's HUB_ADDRESSES (the hub's
floating IPs as the Ops stack last read them), 0 when one is not or no portal points at any of them; not
published when the portal could not be read."""
PORTAL_UNREADABLE = "PortalUnreadable"
"""1 when the portal could not be read (PortalStatus -1 from a failed read: the admin secret, the spoke's REST API,
the time), else 0 (also for -1 meaning no spoke portal): counted by canary-failing, never by the portal page."""

# Qumulo REST API, GET /v2/portal/spokes/: `status` is INACTIVE, DEGRADED or ACTIVE ("fully connected portal
# ready for use"). Ordered so that "below ACTIVE" is one alarm threshold; the REST API not answering, or the
# spoke having no portal, is its own value so an outage of the spoke itself is not mistaken for the hub's.
PORTAL_STATUS_VALUES: Mapping[str, int] = {"ACTIVE": 2, "DEGRADED": 1, "INACTIVE": 0}
PORTAL_STATUS_UNKNOWN = -1
PORTAL_STATUS_ACTIVE = PORTAL_STATUS_VALUES["ACTIVE"]

UNITS: Mapping[str, str] = {
    HUB_REACHABLE: "Count",
    NODES_REACHABLE_FRACTION: "None",
    CONNECT_LATENCY: "Milliseconds",
    PORTAL_STATUS: "None",
    PORTAL_HUB_HOSTS_CURRENT: "None",
    PORTAL_UNREADABLE: "Count",
}

# EMF allows at most 100 values for one metric in one line.
MAX_VALUES_PER_METRIC = 100


def emf_line(
    *,
    environment: str,
    spoke: str,
    values: Mapping[str, float | Sequence[float]],
    timestamp_ms: int,
    properties: Mapping[str, Any] | None = None,
) -> str:
    """One EMF log line: the metrics in `values` (a metric with no values is left out) plus free properties."""
    present: dict[str, float | list[float]] = {}
    for name, value in values.items():
        if name not in UNITS:
            raise ValueError(f"{name} is not a canary metric; add it to UNITS first")
        if isinstance(value, int | float):
            present[name] = value
        elif value:
            present[name] = list(value)[:MAX_VALUES_PER_METRIC]
    document: dict[str, Any] = dict(properties or {})
    document.update(
        {
            "_aws": {
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [
                    {
                        "Namespace": NAMESPACE,
                        "Dimensions": [[DIMENSION_ENVIRONMENT, DIMENSION_SPOKE]],
                        "Metrics": [{"Name": n, "Unit": UNITS[n]} for n in present],
                    }
                ],
            },
            DIMENSION_ENVIRONMENT: environment,
            DIMENSION_SPOKE: spoke,
            **present,
        }
    )
    return json.dumps(document, separators=(",", ":"), sort_keys=True)
