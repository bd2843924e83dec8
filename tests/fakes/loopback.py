"""Serve an HTTP(S) fake from a daemon thread on the loopback port it was bound to."""

from __future__ import annotations

import http.server
import socket
import threading


def serve_in_background(server: http.server.HTTPServer, scheme: str) -> str:
    """Start `server` (bound to 127.0.0.1) in a daemon thread; return its endpoint URL."""
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return f"{scheme}://127.0.0.1:{server.server_address[1]}"


def shut(server: http.server.HTTPServer) -> None:
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    """A loopback TCP port nobody listens on once this returns: connections to it are refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
