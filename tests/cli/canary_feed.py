"""What a spoke's canary publishes, produced the way production produces it, for tests that read the metrics.

`publish_canary` runs the canary's own handler (constructs/canary/runtime/handler.py) against loopback
addresses and turns each EMF line it prints into PutMetricData, as CloudWatch Logs does with embedded metric
format documents (CloudWatch User Guide, "Specification: Embedded metric format").
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from hubspoke.constructs.canary.runtime.handler import run as canary_run
from hubspoke.constructs.canary.runtime.portal import PortalReading
from tests.fakes.loopback import closed_port

# The Qumulo REST API's portal `status` strings and the canary's numeric encoding of them.
PORTAL_VALUES = {"ACTIVE": 2, "DEGRADED": 1, "INACTIVE": 0, "unreadable": -1}


def publish_canary(
    cloudwatch: Any,
    *,
    environment: str,
    spoke: str,
    minutes_ago: Iterable[int],
    hub_up: bool = True,
    portal: str | None = "ACTIVE",
    now: datetime | None = None,
    hub_addresses: str = "127.0.0.1",
    portal_hubs_current: bool | None = True,
) -> None:
    """Run the real canary handler once per minute given and publish its EMF lines as CloudWatch would.

    The hub's addresses are loopback ports: one listening on 127.0.0.1 (reachable) or none (refused),
    so the handler measures what it would in the spoke VPC; any other loopback address refuses. The
    portal reader answers `portal`; None runs the canary without a spoke REST address (no portal metric), and
    `portal_hubs_current` whether the portal's hub hosts are all among the hub addresses (None: not read).
    """
    moment = now or datetime.now(UTC)
    with _Listener() as open_port:
        env = {
            "HUBSPOKE_ENVIRONMENT": environment,
            "SPOKE_REGION": spoke,
            "HUB_ADDRESSES": hub_addresses,
            "HUB_PORTS": str(open_port if hub_up else closed_port()),
            "CONNECT_TIMEOUT_SECONDS": "1",
            "SPOKE_REST_PORT": "8000",
            "ADMIN_SECRET_ARN": f"arn:aws:secretsmanager:{spoke}:123456789012:secret:admin",
        } | ({"SPOKE_REST_ADDRESS": "127.0.0.1"} if portal else {})
        for minutes in minutes_ago:
            lines: list[str] = []
            canary_run(
                {},
                env,
                credentials=lambda _arn: ("admin", "password"),
                portal_reader=lambda **_: PortalReading(
                    PORTAL_VALUES[portal or "unreadable"],
                    str(portal),
                    # An unreadable portal publishes no hub-hosts metric (canary runtime, portal.py).
                    hubs_current=None if portal == "unreadable" else portal_hubs_current,
                ),
                emit=lines.append,
                clock=lambda m=minutes: (moment - timedelta(minutes=m)).timestamp(),
            )
            for line in lines:
                put_emf(cloudwatch, json.loads(line))


def put_emf(cloudwatch: Any, document: dict[str, Any]) -> None:
    """What CloudWatch Logs does with an EMF document: PutMetricData per metric directive (EMF specification)."""
    meta = document["_aws"]
    stamp = datetime.fromtimestamp(meta["Timestamp"] / 1000, UTC)
    for directive in meta["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            dimensions = [{"Name": d, "Value": str(document[d])} for d in dimension_set]
            data = []
            for metric in directive["Metrics"]:
                value = document.get(metric["Name"])
                if value is None or value == []:
                    continue
                datum: dict[str, Any] = {
                    "MetricName": metric["Name"],
                    "Dimensions": dimensions,
                    "Timestamp": stamp,
                    "Unit": metric.get("Unit", "None"),
                }
                datum |= (
                    {"Values": [float(v) for v in value]}
                    if isinstance(value, list)
                    else {"Value": float(value)}
                )
                data.append(datum)
            cloudwatch.put_metric_data(Namespace=directive["Namespace"], MetricData=data)


class _Listener:
    """A loopback TCP port that accepts connections while the block runs: a reachable hub address."""

    def __enter__(self) -> int:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        return int(self.sock.getsockname()[1])

    def __exit__(self, *_: object) -> None:
        self.sock.close()
