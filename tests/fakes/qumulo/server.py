"""The wire side of the Qumulo contract fake: one TLS REST listener per node, Qumulo's error shape, faults.

Every node of a fake cluster listens on its own loopback address (127.0.0.2, .3, ...) on the cluster's one
port, as every node of a real cluster serves the REST API on port 8000 of its own address.
"""

from __future__ import annotations

import http.server
import json
import re
import selectors
import socket
import socketserver
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

Reply = tuple[int, Any]
_CERT: tuple[str, str] | None = None
_CERT_DIR: tempfile.TemporaryDirectory[str] | None = None


def self_signed() -> tuple[str, str]:
    """A throwaway certificate: the SDK speaks HTTPS and, like qq, does not verify the cluster's cert."""
    global _CERT
    if _CERT is None:
        from datetime import UTC, datetime, timedelta

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-qumulo")])
        now = datetime.now(UTC)
        cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=7)).sign(key, hashes.SHA256())
        )  # fmt: skip
        global _CERT_DIR
        _CERT_DIR = tempfile.TemporaryDirectory(prefix="fake-qumulo-")  # removed when the process ends
        folder = Path(_CERT_DIR.name)
        (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (folder / "key.pem").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        _CERT = (str(folder / "cert.pem"), str(folder / "key.pem"))
    return _CERT


_CONTEXT: ssl.SSLContext | None = None


def server_context() -> ssl.SSLContext:
    """The one server TLS context every listener of the process shares (loading the key pair costs each a few ms;
    an SSLContext may wrap sockets from several threads)."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _CONTEXT.load_cert_chain(*self_signed())
    return _CONTEXT


class QumuloFault(Exception):
    """An error reply in Qumulo's shape (qumulo.lib.request.RequestError reads these keys)."""

    def __init__(self, status: int, error_class: str, description: str) -> None:
        super().__init__(description)
        self.status, self.error_class, self.description = status, error_class, description

    def body(self) -> dict[str, Any]:
        return {"module": "fake", "error_class": self.error_class, "description": self.description,
                "stack": [], "user_visible": True}  # fmt: skip


class DropReply(Exception):
    """The request took effect; the connection closes without an answer."""


@dataclass
class Fault:
    """An injected failure or delay for requests matching `method` and the `path` regex, `times` times."""

    method: str | None
    path: re.Pattern[str]
    times: int
    status: int = 500
    error_class: str = "fake_injected_error"
    description: str = "injected failure"
    delay: float = 0.0
    drop: bool = False


def etag(data: Any) -> str:
    """The ETag the fake sends for a JSON body; If-Match is checked against it."""
    payload = (
        data
        if isinstance(data, bytes)
        else b""
        if data is None
        else json.dumps(data, sort_keys=True).encode()
    )
    return f'"{abs(hash(payload))}"'


def free_port(addresses: list[str]) -> int:
    """A TCP port free on every one of `addresses` (each node of a cluster serves the same port)."""
    for _ in range(50):
        probe = socket.socket()
        probe.bind((addresses[0], 0))
        port = int(probe.getsockname()[1])
        probe.close()
        try:
            for address in addresses:
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((address, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free on every fake node address")


Dispatch = Callable[[str, str, str, Any, Any], Reply]
# Ports below this one need root to bind (Linux ip(7), "privileged ports").
_FIRST_UNPRIVILEGED_PORT = 1024


class Listener:
    """One node's HTTPS listener; hands every request to the cluster with the node's address."""

    def __init__(self, address: str, port: int, dispatch: Dispatch) -> None:
        context = server_context()
        # Connections from a privileged source port this listener refused (the SDK's local-root path).
        self.backdoor_connections: list[tuple[str, int]] = []
        listener = self

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            # socketserver.TCPServer listens with a backlog of 5 (CPython Lib/socketserver.py request_queue_size);
            # prewarm's 16 workers connect at once, Linux drops the connection attempts past a full accept queue,
            # and each dropped client waits out TCP's 1 s initial retransmission timeout (RFC 6298, 2.1). A real
            # node's backlog is not documented; the fake's must not add a second to a test that reads no timing.
            request_queue_size = 64

            def server_bind(self) -> None:
                # http.server.HTTPServer.server_bind also resolves the address's FQDN (a reverse DNS lookup
                # per listener) for server_name, which no handler here reads.
                socketserver.TCPServer.server_bind(self)
                self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

            def verify_request(self, request: Any, client_address: Any) -> bool:
                # The SDK's local-root backdoor binds a source port below 1024 (qumulo-api,
                # qumulo/lib/request.py get_backdoor_connection); only a root process on a node takes it,
                # never a Lambda or a pod. Refused here, in the accepting thread (so shutdown() has seen every
                # one), and named when the cluster is torn down.
                if client_address[1] < _FIRST_UNPRIVILEGED_PORT:
                    listener.backdoor_connections.append(client_address)
                    return False
                return True

            def finish_request(self, request: Any, client_address: Any) -> None:
                request.settimeout(10)
                super().finish_request(context.wrap_socket(request, server_side=True), client_address)

        class Handler(_Handler):
            node = address
            owner = staticmethod(dispatch)

        self.server = Server((address, port), Handler)
        # serve_forever notices a shutdown only at its next poll; a wake-up socket ends this loop at once.
        self._wake, self._waker = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        """socketserver's serve loop (accept, verify, hand to a thread) until close() wakes it."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.server.socket, selectors.EVENT_READ)
            selector.register(self._wake, selectors.EVENT_READ)
            while not any(key.fileobj is self._wake for key, _ in selector.select()):
                self.server.handle_request()  # the socket is readable: accepts at once

    def close(self) -> None:
        self._waker.send(b"x")
        self._thread.join()
        self.server.server_close()
        self._wake.close()
        self._waker.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    node: ClassVar[str]
    owner: ClassVar[Any]  # a staticmethod wrapping the cluster's Dispatch
    protocol_version = "HTTP/1.1"
    # One small response is written in two parts (headers, body): without TCP_NODELAY every reply waits
    # for the client's delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # quiet: pytest shows failures, not access logs
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        # The SDK sends file data chunked (qumulo.lib.request: write_file passes chunked=True).
        raw = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return raw
            raw += self.rfile.read(size)
            self.rfile.readline()

    def _serve(self) -> None:
        raw = self._body()
        binary = self.headers.get("Content-Type") == "application/octet-stream"
        try:
            status, data = type(self).owner(
                self.node,
                self.command,
                self.path,
                self.headers,
                raw if binary else (json.loads(raw) if raw else {}),
            )
        except QumuloFault as fault:
            status, data = fault.status, fault.body()
        except DropReply:
            self.close_connection = True
            return
        # File data (GET .../data) goes back as bytes; everything else is JSON.
        payload = data if isinstance(data, bytes) else b"" if data is None else json.dumps(data).encode()
        kind = "application/octet-stream" if isinstance(data, bytes) else "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("ETag", etag(data))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (its timeout fired during a slow() fault)
            pass

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
