"""The spoke portal's status, read from the spoke cluster's own REST API through the qumulo-api SDK."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hubspoke.canary_metrics import PORTAL_STATUS_UNKNOWN, PORTAL_STATUS_VALUES


@dataclass(frozen=True)
class PortalReading:
    """The worst status among the spoke's portals, as the number the canary publishes, and why; and whether
    their hub hosts are all among the hub addresses the canary was given (None: not read)."""

    value: int
    detail: str
    hubs_current: bool | None = None
    unreadable: bool = False  # the read failed (secret, REST API, time): says nothing about the portal


ClientFactory = Callable[[str, int, float], Any]


def sdk_client(address: str, port: int, timeout_s: float) -> Any:
    """A qumulo-api RestClient; imported here so the TCP probes run even if the SDK failed to bundle."""
    from qumulo.rest_client import RestClient

    # The SDK takes whole seconds; never zero, which would mean non-blocking sockets.
    return RestClient(address, port, timeout=max(1, round(timeout_s)))


def read_portal_status(
    *,
    address: str,
    port: int,
    username: str,
    password: str,
    timeout_s: float,
    hub_hosts: Sequence[str] = (),
    client_factory: ClientFactory = sdk_client,
) -> PortalReading:
    """Log in and list the spoke portals (GET /v2/portal/spokes/); never raises, UNKNOWN on any failure.

    A cluster may host up to 32 spoke portals (Qumulo Core 7.5.0.3 and higher): with `hub_hosts`, only the
    portals towards those hosts (the hub's floating IPs) count.
    """
    try:
        client = client_factory(address, port, timeout_s)
        client.login(username, password)
        portals = client.portal.v2_list_spoke_portals()
    except Exception as exc:  # the canary must publish even when the spoke's API is down
        return PortalReading(
            PORTAL_STATUS_UNKNOWN, f"spoke REST API {address}:{port}: {_describe(exc)}", unreadable=True
        )
    current = set(hub_hosts)
    if hub_hosts:
        portals = [p for p in portals if {h.address for h in p.hub_hosts} & current]
    if not portals:
        return PortalReading(
            PORTAL_STATUS_UNKNOWN,
            "the spoke cluster has no spoke portal towards the hub",
            hubs_current=False if hub_hosts else None,
        )
    # A portal keeps the hub hosts it was created or last modified with (qumulo-api 7.10.2.1, rest/portal.py:
    # v2_modify_spoke_portal_host, PATCH /v2/portal/spokes/{id} with hub_hosts): after the hub's floating IPs
    # change, some may point at addresses the hub no longer has until the portal is modified.
    stale = sorted({h.address for p in portals for h in p.hub_hosts} - current) if hub_hosts else []
    worst: tuple[int, str] | None = None
    for portal in portals:
        value = PORTAL_STATUS_VALUES.get(str(portal.status), PORTAL_STATUS_UNKNOWN)
        entry = (value, f"portal {portal.id}: state {portal.state}, status {portal.status}")
        if worst is None or value < worst[0]:
            worst = entry
    assert worst is not None
    detail = worst[1] + (f"; hub hosts not among HUB_ADDRESSES: {', '.join(stale)}" if stale else "")
    return PortalReading(worst[0], detail, hubs_current=not stale if hub_hosts else None)


def _describe(exc: Exception) -> str:
    # RequestError carries Qumulo's own error class and text; keep it, it is what an operator searches for.
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
