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


class FakeEmfAgent:
    """Accepts TCP connections on a free loopback port and records the lines each one sends."""

    def __init__(self, port: int = 0) -> None:
        self._server = socket.create_server(("127.0.0.1", port))
        self._server.settimeout(0.1)
        self.port: int = self._server.getsockname()[1]
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.connections = 0
        self._clients: list[socket.socket] = []
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

    def restart(self) -> None:
        """Close every accepted connection, as a restarting agent pod would; keep listening."""
        with self._changed:
            clients, self._clients = self._clients, []
        for client in clients:
            client.shutdown(socket.SHUT_RDWR)
            client.close()

    def stop(self) -> None:
        self._running = False
        self.restart()
        self._server.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while self._running:
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(0.1)
            with self._changed:
                self._clients.append(client)
                self.connections += 1
            reader = threading.Thread(target=self._read, args=(client,), daemon=True)
            self._threads.append(reader)
            reader.start()

    def _read(self, client: socket.socket) -> None:
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
