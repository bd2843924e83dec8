"""Where the training job's EMF records go: the CloudWatch agent's TCP endpoint when one is set, else stdout.

Example::

    sink = EmfSink(os.environ.get(AGENT_ENDPOINT_ENV), warn=log)
    sink.send(emf_line({SAMPLES_PER_SECOND: 116.0}, environment="dev", region="us-west-2"))
    sink.close()

The agent reads newline-delimited JSON documents and turns each EMF one into metrics. Delivery is best
effort on purpose: training never waits long for, and never fails because of, the metrics path. Every
network step is bounded (name lookup, connect and send each by `timeout`), a failed connection is retried
at most every `retry_seconds`, and while the agent cannot be reached each record goes to stdout instead
(kept in the container log, though not extracted as a metric) with one warning per outage.
"""

from __future__ import annotations

import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO
from urllib.parse import urlsplit

TIMEOUT_SECONDS = 1.0
RETRY_SECONDS = 30.0

Address = tuple[str, int]


class EndpointError(ValueError):
    """The agent endpoint is not of the form tcp://host:port."""


def parse_endpoint(endpoint: str) -> Address:
    """Host and port of a `tcp://host:port` endpoint (the AWS_EMF_AGENT_ENDPOINT convention)."""
    parts = urlsplit(endpoint.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "tcp" or not parts.hostname or port is None:
        raise EndpointError(f"EMF agent endpoint {endpoint!r} is not tcp://host:port")
    return parts.hostname, port


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _resolve(address: Address, timeout: float) -> list[Address]:
    """Addresses of the host, or [] when the lookup fails or outlasts `timeout`.

    getaddrinfo has no timeout of its own (a missing DNS server costs the resolver's full retry budget),
    so it runs on a daemon thread that is simply abandoned when it is late.
    """
    found: list[Address] = []

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(*address, type=socket.SOCK_STREAM)
        except OSError:
            return
        found.extend((str(info[4][0]), int(info[4][1])) for info in infos)

    worker = threading.Thread(target=lookup, name="emf-resolve", daemon=True)
    worker.start()
    worker.join(timeout)
    return list(found) if not worker.is_alive() else []


def write_line(stream: TextIO, line: str) -> None:
    """`line` and its newline in one write, then flushed: the training loop's progress lines share stdout with
    the throughput thread's records, and print() writes the text and the newline in two calls, between which the
    other thread's line can land (a record glued to a progress line is no longer a line of its own)."""
    stream.write(line + "\n")
    stream.flush()


class EmfSink:
    """Sends EMF lines to the CloudWatch agent over TCP, falling back to stdout whenever it is unreachable."""

    def __init__(
        self,
        endpoint: str | None,
        *,
        warn: Callable[[str], None] = _stderr,
        stdout: TextIO | None = None,
        timeout: float = TIMEOUT_SECONDS,
        retry_seconds: float = RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._warn = warn
        self._stdout = stdout
        self._timeout = timeout
        self._retry_seconds = retry_seconds
        self._clock = clock
        self._sock: socket.socket | None = None
        self._next_attempt = 0.0
        self._failing = False
        self.endpoint = endpoint or None
        self._address: Address | None = None
        if self.endpoint:
            try:
                self._address = parse_endpoint(self.endpoint)
            except EndpointError as error:
                self._warn(f"{error}; EMF records go to stdout, where CloudWatch does not extract them")

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def send(self, line: str) -> bool:
        """Deliver one record; True when the agent's socket took it, False when it went to stdout."""
        if self._address is not None and self._ready():
            assert self._sock is not None
            try:
                self._sock.sendall(line.encode() + b"\n")
                return True
            except OSError as error:
                self._close()
                self._report(f"sending to the CloudWatch agent at {self.endpoint} failed ({error})")
        write_line(self._stdout or sys.stdout, line)
        return False

    def close(self) -> None:
        self._close()

    def _ready(self) -> bool:
        if self._sock is not None and self._peer_closed(self._sock):
            # The agent restarted: reconnect now rather than after the back-off.
            self._close()
            self._next_attempt = 0.0
        if self._sock is None and self._clock() >= self._next_attempt:
            self._connect()
        return self._sock is not None

    def _connect(self) -> None:
        assert self._address is not None
        error: OSError | str = "name lookup failed or timed out"
        for address in _resolve(self._address, self._timeout):
            try:
                sock = socket.create_connection(address, timeout=self._timeout)
            except OSError as failure:
                error = failure
                continue
            # The same bound applies to every send: a stalled agent costs one timeout, then stdout.
            sock.settimeout(self._timeout)
            self._sock = sock
            if self._failing:
                self._warn(
                    f"reconnected to the CloudWatch agent at {self.endpoint}; EMF records go there again"
                )
                self._failing = False
            return
        self._next_attempt = self._clock() + self._retry_seconds
        self._report(f"cannot reach the CloudWatch agent at {self.endpoint} ({error})")

    def _report(self, reason: str) -> None:
        if not self._failing:
            self._failing = True
            self._warn(
                f"{reason}; EMF records go to stdout (not extracted as metrics) until it answers again,"
                f" retried every {self._retry_seconds:g}s"
            )

    def _close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    @staticmethod
    def _peer_closed(sock: socket.socket) -> bool:
        """The agent never writes, so a readable socket means it closed or reset the connection."""
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
