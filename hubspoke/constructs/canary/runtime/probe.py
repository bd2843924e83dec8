"""TCP reachability of the hub's floating IPs, probed in parallel with a bounded connect timeout."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

# More threads than this buys nothing: every probe waits on the network, and a hub has at most 24 nodes.
MAX_PARALLEL_PROBES = 64


@dataclass(frozen=True)
class Probe:
    """The outcome of one TCP connect to one address and port."""

    address: str
    port: int
    ok: bool
    latency_ms: float | None
    error: str | None = None


@dataclass(frozen=True)
class Reachability:
    """What the probes say about the hub as a whole."""

    probes: tuple[Probe, ...]

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p.address for p in self.probes))

    def address_reachable(self, address: str) -> bool:
        """An address counts only when every probed port answers: the portal needs 3713 and NFS 2049."""
        mine = [p for p in self.probes if p.address == address]
        return bool(mine) and all(p.ok for p in mine)

    @property
    def reachable_fraction(self) -> float:
        addresses = self.addresses
        if not addresses:
            return 0.0
        return sum(self.address_reachable(a) for a in addresses) / len(addresses)

    @property
    def hub_reachable(self) -> bool:
        """The hub serves while at least one floating IP answers on every port (floating IPs move on failure)."""
        return any(self.address_reachable(a) for a in self.addresses)

    @property
    def latencies_ms(self) -> list[float]:
        return [p.latency_ms for p in self.probes if p.ok and p.latency_ms is not None]


def connect(address: str, port: int, *, timeout_s: float) -> Probe:
    """Open and close one TCP connection; never raises, never waits longer than `timeout_s` to connect."""
    started = time.perf_counter()
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            elapsed_ms = (time.perf_counter() - started) * 1000.0
    except TimeoutError:
        return Probe(address, port, False, None, f"no answer within {timeout_s:g} s")
    except OSError as exc:
        return Probe(address, port, False, None, exc.strerror or type(exc).__name__)
    return Probe(address, port, True, round(elapsed_ms, 3))


def probe_all(addresses: Sequence[str], ports: Iterable[int], *, timeout_s: float) -> Reachability:
    """Probe every (address, port) pair at once, so a run takes about one timeout, not one per pair."""
    targets = [(a, p) for a in addresses for p in ports]
    if not targets:
        return Reachability(())
    workers = min(MAX_PARALLEL_PROBES, len(targets))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="probe") as pool:
        probes = pool.map(lambda t: connect(t[0], t[1], timeout_s=timeout_s), targets)
        return Reachability(tuple(probes))
