"""A stand-in for the CloudWatch agent's EMF TCP listener on 127.0.0.1: it keeps every newline-terminated line.

The real agent (`logs.metrics_collected.emf`, tcp 25888) splits the stream on newlines and treats each line
as one log event; this fake does the same and nothing else. Faults: `restart()` drops every open connection
(the agent pod restarting), `stop()` closes the listener (connection refused from then on).
"""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

Address = tuple[str, int]


class FakeEmfAgent:
    """Accepts TCP connections on a free loopback port and records the lines each one sends."""

    def __init__(self, port: int = 0) -> None:
        self._server = socket.create_server(("127.0.0.1", port))
        self.port: int = self._server.getsockname()[1]
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.connections = 0
        self._clients: list[socket.socket] = []
        self._reading: set[Address] = set()  # peers whose stream has not ended yet
        self._accepted: set[Address] = set()  # every peer accepted, the fake's own probes included
        # This fake's own connections (settle, stop): not the agent's clients.
        self._probes: set[Address] = set()
        self._changed = threading.Condition()
        self._running = True
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def __enter__(self) -> FakeEmfAgent:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[str]:
        """The first `count` lines, waiting at most `timeout` seconds for them (fewer if they never come)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.lines) < count and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            return list(self.lines)

    def settle(self, timeout: float = 10.0) -> list[str]:
        """Every line sent on a connection made before this call, once each such connection has ended (its sender
        closed it), waiting at most `timeout` seconds; a sender that never connected has sent nothing.

        accept(2) "extracts the first connection request on the queue of pending connections" (Linux man page
        accept(2)), so once this call's own probe connection is accepted, every earlier one has been too.
        """
        deadline = time.monotonic() + timeout
        probe = self._probe()
        with self._changed:
            while (probe not in self._accepted or self._reading - {probe}) and (
                left := deadline - time.monotonic()
            ) > 0:
                self._changed.wait(left)
            return list(self.lines)

    def restart(self) -> None:
        """Close every accepted connection, as a restarting agent pod would; keep listening."""
        with self._changed:
            clients, self._clients = self._clients, []
        for client in clients:
            client.shutdown(socket.SHUT_RDWR)
            client.close()

    def stop(self) -> None:
        if not self._running:
            return  # stopped already: nothing listens for the wake-up
        self._running = False
        # A blocked accept() does not return when another thread closes the listener; a connection wakes it.
        self._probe()
        self._threads[0].join(timeout=5)
        self._server.close()
        self.restart()
        for thread in self._threads:
            thread.join(timeout=5)

    def _probe(self) -> Address:
        """Open and close one connection of the fake's own, registered before it is made; its address."""
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.bind(("127.0.0.1", 0))
        address: Address = probe.getsockname()
        with self._changed:
            self._probes.add(address)
        probe.connect(("127.0.0.1", self.port))
        probe.close()
        return address

    def _accept(self) -> None:
        while True:
            try:
                client, peer = self._server.accept()
            except OSError:
                return
            if not self._running:
                client.close()
                return
            client.settimeout(0.1)
            with self._changed:
                self._accepted.add(peer)
                if peer not in self._probes:
                    self._clients.append(client)
                    self.connections += 1
                self._reading.add(peer)
                self._changed.notify_all()
            reader = threading.Thread(target=self._read, args=(client, peer), daemon=True)
            self._threads.append(reader)
            reader.start()

    def _read(self, client: socket.socket, peer: Address) -> None:
        try:
            self._read_lines(client)
        finally:
            with self._changed:
                self._reading.discard(peer)
                self._changed.notify_all()
                if peer in self._probes:  # restart() closes the agent's clients; the fake's own end here
                    client.close()

    def _read_lines(self, client: socket.socket) -> None:
        pending = b""
        while self._running:
            try:
                chunk = client.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            pending += chunk
            *complete, pending = pending.split(b"\n")
            with self._changed:
                self.lines.extend(line.decode() for line in complete)
                self._changed.notify_all()
