"""Hub-outage canary, run every minute inside a spoke VPC: probe the hub, read the portal, publish metrics.

Settings come from the environment the construct sets (an invocation event may override the targets, for
a manual test from the console):
  HUBSPOKE_ENVIRONMENT, SPOKE_REGION        metric dimensions
  HUB_ADDRESSES                             comma-separated hub floating IPs
  HUB_PORTS                                 comma-separated TCP ports (hubspoke/ports.py: NFS, portal)
  CONNECT_TIMEOUT_SECONDS                   per-connect bound; every probe runs in parallel
  SPOKE_REST_ADDRESS, SPOKE_REST_PORT       the spoke cluster's REST API (optional: no portal metric without)
  ADMIN_SECRET_ARN                          Secrets Manager secret holding the spoke's admin credentials
  REST_TIMEOUT_SECONDS                      bound on each REST request
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from hubspoke import canary_metrics as metrics

from .portal import PortalReading, read_portal_status
from .probe import probe_all

DEFAULT_CONNECT_TIMEOUT_S = 2.0
DEFAULT_REST_TIMEOUT_S = 5.0
# Leave the function this much time to print its line after the probes, whatever the settings say.
RESERVE_MS = 3000
# The secret is read at most this often; a rotated password is picked up within this time.
CREDENTIALS_TTL_S = 900.0
# Bounded inside the function's 30 s: botocore's defaults are 60 s + 60 s x 3 attempts (botocore 1.44.18
# config.py Config, endpoint.py DEFAULT_TIMEOUT); two attempts of 2 + 3 s plus the first backoff and a
# retry-after of up to 5 s (retries/standard.py ExponentialBackoff) take at most 16 s.
SECRET_CONNECT_TIMEOUT_S = 2.0
SECRET_READ_TIMEOUT_S = 3.0
SECRET_ATTEMPTS = 2
# The portal line waits at most this long for the secret and the two REST calls (login, list), then says why not.
PORTAL_WAIT_S = 22.0

Credentials = tuple[str, str]
_credentials_cache: dict[str, tuple[float, Credentials]] = {}


def handler(event: Mapping[str, Any] | None, context: Any) -> dict[str, Any]:
    """Lambda entry point: one probe round, EMF lines on stdout (the hub's first), the same numbers returned."""
    return run(event or {}, os.environ, remaining_ms=_remaining_ms(context))


def run(
    event: Mapping[str, Any],
    env: Mapping[str, str],
    *,
    remaining_ms: int | None = None,
    credentials: Callable[[str], Credentials] | None = None,
    portal_reader: Callable[..., PortalReading] = read_portal_status,
    emit: Callable[[str], None] = print,
    clock: Callable[[], float] = time.time,
) -> dict[str, Any]:
    """Probe the hub and the portal at the same time, then publish; never raises for what it measures."""
    addresses = _list(event.get("hub_addresses"), env.get("HUB_ADDRESSES", ""))
    ports = [int(p) for p in _list(event.get("ports"), env.get("HUB_PORTS", ""))]
    if not addresses or not ports:
        # A misconfigured canary must be loud, not publish "hub down" forever.
        raise ValueError("HUB_ADDRESSES and HUB_PORTS must each name at least one value")
    connect_timeout = _bounded(
        float(env.get("CONNECT_TIMEOUT_SECONDS", DEFAULT_CONNECT_TIMEOUT_S)), remaining_ms
    )
    rest_timeout = _bounded(float(env.get("REST_TIMEOUT_SECONDS", DEFAULT_REST_TIMEOUT_S)), remaining_ms)
    rest_address = env.get("SPOKE_REST_ADDRESS", "")

    started_ms = int(clock() * 1000)  # every record of the run carries its start, the minute Lambda counts it
    environment, spoke = env.get("HUBSPOKE_ENVIRONMENT", "unknown"), env.get("SPOKE_REGION", "unknown")
    # Not a `with` block: leaving one waits for the portal read however long it hangs.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="portal")
    portal_future = (
        pool.submit(
            _read_portal,
            env,
            rest_address,
            rest_timeout,
            credentials or _secret_credentials,
            portal_reader,
            addresses,
        )
        if rest_address
        else None
    )
    reach = probe_all(addresses, ports, timeout_s=connect_timeout)
    values: dict[str, float | list[float]] = {
        metrics.HUB_REACHABLE: int(reach.hub_reachable),
        metrics.NODES_REACHABLE_FRACTION: round(reach.reachable_fraction, 4),
        metrics.CONNECT_LATENCY: reach.latencies_ms,
    }
    failures = [f"{p.address}:{p.port} {p.error}" for p in reach.probes if not p.ok]
    properties: dict[str, Any] = {
        "hub_addresses": list(reach.addresses),
        "ports": ports,
        "failed_probes": failures,
    }
    # The probe result first, in a line of its own: a slow secret or REST read (a spoke-side NAT or endpoint
    # problem) must not delay or lose what the hub alarms read.
    emit(
        metrics.emf_line(
            environment=environment,
            spoke=spoke,
            values=values,
            timestamp_ms=started_ms,
            properties=properties,
        )
    )
    portal: PortalReading | None = None
    if portal_future is not None:
        try:
            portal = portal_future.result(
                timeout=_bounded(PORTAL_WAIT_S, remaining_ms, since=started_ms, clock=clock)
            )
        except FutureTimeout:
            portal = PortalReading(
                metrics.PORTAL_STATUS_UNKNOWN, "portal read did not finish in time", unreadable=True
            )
        portal_values: dict[str, float | list[float]] = {
            metrics.PORTAL_STATUS: portal.value,
            metrics.PORTAL_UNREADABLE: int(portal.unreadable),
        }
        if portal.hubs_current is not None:
            portal_values[metrics.PORTAL_HUB_HOSTS_CURRENT] = int(portal.hubs_current)
        emit(
            metrics.emf_line(
                environment=environment,
                spoke=spoke,
                values=portal_values,
                timestamp_ms=started_ms,
                properties={"portal_detail": portal.detail},
            )
        )
        values.update(portal_values)
    pool.shutdown(wait=False)
    properties["portal_detail"] = portal.detail if portal else "not configured"
    return {**values, **properties}


def _read_portal(
    env: Mapping[str, str],
    address: str,
    timeout_s: float,
    credentials: Callable[[str], Credentials],
    reader: Callable[..., PortalReading],
    hub_hosts: Sequence[str],
) -> PortalReading:
    # The construct always sets the port (hubspoke/ports.py); the runtime keeps no copy of it.
    port = env.get("SPOKE_REST_PORT", "")
    if not port.isdigit():
        return PortalReading(
            metrics.PORTAL_STATUS_UNKNOWN, f"SPOKE_REST_PORT is {port!r}, not a port", unreadable=True
        )
    try:
        username, password = credentials(env.get("ADMIN_SECRET_ARN", ""))
    except Exception as exc:  # a missing grant or endpoint shows as UNKNOWN with the reason, not a crash
        return PortalReading(metrics.PORTAL_STATUS_UNKNOWN, f"admin secret: {exc}", unreadable=True)
    return reader(
        address=address,
        port=int(port),
        username=username,
        password=password,
        timeout_s=timeout_s,
        hub_hosts=hub_hosts,
    )


def _secret_credentials(secret_arn: str) -> Credentials:
    """Admin user and password from Secrets Manager: JSON {"username", "password"} or the bare password."""
    if not secret_arn:
        raise ValueError("ADMIN_SECRET_ARN is not set")
    cached = _credentials_cache.get(secret_arn)
    if cached and time.monotonic() - cached[0] < CREDENTIALS_TTL_S:
        return cached[1]
    value = secrets_client().get_secret_value(SecretId=secret_arn)["SecretString"]
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    creds: Credentials
    if isinstance(parsed, dict):
        creds = (str(parsed.get("username", "admin")), str(parsed["password"]))
    else:
        creds = ("admin", value)
    _credentials_cache[secret_arn] = (time.monotonic(), creds)
    return creds


def secrets_client(region: str | None = None) -> Any:
    """A Secrets Manager client whose every call ends well inside the canary's own timeout."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=SECRET_CONNECT_TIMEOUT_S,
        read_timeout=SECRET_READ_TIMEOUT_S,
        retries={"total_max_attempts": SECRET_ATTEMPTS, "mode": "standard"},
    )
    return boto3.client("secretsmanager", region_name=region, config=config)


def _list(override: Any, fallback: str) -> list[str]:
    if isinstance(override, list):
        return [str(v).strip() for v in override if str(v).strip()]
    return [v.strip() for v in fallback.split(",") if v.strip()]


def _bounded(
    timeout_s: float,
    remaining_ms: int | None,
    *,
    since: int | None = None,
    clock: Callable[[], float] = time.time,
) -> float:
    """A timeout that still leaves RESERVE_MS of the invocation for publishing (`since`: counting the time spent
    from that instant, ms, on)."""
    if remaining_ms is None:
        return timeout_s
    spent_ms = int(clock() * 1000) - since if since is not None else 0
    return max(0.1, min(timeout_s, (remaining_ms - spent_ms - RESERVE_MS) / 1000.0))


def _remaining_ms(context: Any) -> int | None:
    getter = getattr(context, "get_remaining_time_in_millis", None)
    return int(getter()) if callable(getter) else None
