"""A contract fake of an EKS cluster's Kubernetes API server: enough of it for the real helm to install a chart.

HTTPS on 127.0.0.1 with a self-signed CA (DescribeCluster hands it out, as EKS does). Authentication is
EKS's: a bearer token `k8s-aws-v1.<base64url of a presigned STS GetCallerIdentity URL>` that signs the
`x-k8s-aws-id` header (awscli customizations/eks/get_token.py: TOKEN_PREFIX, K8S_AWS_ID_HEADER); anything else
is 401 Unauthorized. The real server asks STS who signed the URL; this fake checks the URL's shape only.

Served: /version, discovery for the core group (/api, /api/v1; no other groups), OpenAPI v3 for the core
group and an empty OpenAPI v2 document (client-side validation then skips kinds it has no schema for, as
kubectl's validation does), and create/read/replace/patch/delete/list of namespaced core objects. Objects in
a namespace that does not exist are refused with 404, as the API server does. helm 4 writes its release
Secrets in protobuf (`application/vnd.kubernetes.protobuf`): the envelope is the 4-byte magic `k8s\\0` and
a runtime.Unknown (Kubernetes API concepts, "Protobuf encoding"); the Secret and ObjectMeta field numbers
are those of k8s.io/api core/v1 generated.proto. Responses are JSON, which every client accepts.
"""

from __future__ import annotations

import base64
import http.server
import json
import re
import ssl
import threading
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from tests.fakes.loopback import serve_in_background, shut
from tests.fakes.tls import self_signed

TOKEN_PREFIX = "k8s-aws-v1."
# Kind and whether it is namespaced, for every core resource this fake serves.
RESOURCES = {
    "configmaps": ("ConfigMap", True),
    "secrets": ("Secret", True),
    "serviceaccounts": ("ServiceAccount", True),
    "services": ("Service", True),
    "namespaces": ("Namespace", False),
}
_PATH = re.compile(r"/api/v1(?:/namespaces/(?P<ns>[^/]+))?/(?P<res>[a-z]+)(?:/(?P<name>[^/]+))?")


def valid_eks_token(authorization: str) -> bool:
    """A presigned STS GetCallerIdentity URL that signs x-k8s-aws-id, as `aws eks get-token` makes it."""
    if not authorization.startswith("Bearer " + TOKEN_PREFIX):
        return False
    encoded = authorization.removeprefix("Bearer " + TOKEN_PREFIX)
    try:
        url = urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    except (ValueError, UnicodeDecodeError):
        return False
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    return (
        url.scheme == "https"
        and url.hostname is not None
        and url.hostname.startswith("sts.")
        and query.get("Action") == "GetCallerIdentity"
        and "X-Amz-Signature" in query
        and "x-k8s-aws-id" in query.get("X-Amz-SignedHeaders", "").split(";")
    )


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _fields(data: bytes) -> list[tuple[int, Any]]:
    """Protobuf wire format, one level deep: (field number, int or bytes)."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, i = data[i : i + width], i + width
        else:
            raise ValueError(f"protobuf wire type {wire} is not supported")
        out.append((number, value))
    return out


def _map(entries: list[bytes]) -> dict[str, bytes]:
    pairs = [dict(_fields(entry)) for entry in entries]
    return {p.get(1, b"").decode(): p.get(2, b"") for p in pairs}


def secret_from_protobuf(body: bytes) -> dict[str, Any]:
    """A core/v1 Secret sent in Kubernetes protobuf, as the JSON object the API server would store."""
    if body[:4] != b"k8s\x00":
        raise ValueError("not a Kubernetes protobuf message")
    unknown = dict(_fields(body[4:]))
    secret = _fields(unknown[2])
    meta = _fields(next(v for n, v in secret if n == 1))
    metadata: dict[str, Any] = {"name": next((v.decode() for n, v in meta if n == 1), "")}
    labels = _map([v for n, v in meta if n == 11])
    if labels:
        metadata["labels"] = {k: v.decode() for k, v in labels.items()}
    data = _map([v for n, v in secret if n == 2])
    result: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata}
    result["data"] = {k: base64.b64encode(v).decode() for k, v in data.items()}
    kind = next((v.decode() for n, v in secret if n == 3), "")
    if kind:
        result["type"] = kind
    return result


class FakeKubernetes:
    """One cluster's API server; `objects` maps (resource, namespace, name) to the stored object."""

    def __init__(self, *, version: str = "1.33") -> None:
        self.version = version
        self.tls = self_signed("fake-kubernetes")
        self.objects: dict[tuple[str, str | None, str], dict[str, Any]] = {}
        for namespace in ("default", "kube-system"):
            self.objects[("namespaces", None, namespace)] = {
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace},
            }  # fmt: skip
        self.requests: list[tuple[str, str]] = []
        self.refused: list[str] = []
        self._revision = 1
        self._lock = threading.Lock()
        fake = self
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.tls.cert_file, self.tls.key_file)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request: Any, client_address: Any) -> None:
                request.settimeout(10)
                super().finish_request(context.wrap_socket(request, server_side=True), client_address)

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with fake._lock:
                    status, reply = fake.handle(self.command, self.path, self.headers, body)
                raw = isinstance(reply, bytes)
                data = reply if raw else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if raw else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

            def log_message(self, *args: object) -> None:
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = serve_in_background(self._server, "https")

    def stop(self) -> None:
        shut(self._server)

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((resource, namespace, name))

    # ----- the API -----
    def handle(self, method: str, raw_path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        url = urlsplit(raw_path)
        self.requests.append((method, url.path))
        if not valid_eks_token(headers.get("Authorization", "")):
            self.refused.append(url.path)
            return _status(401, "Unauthorized", "Unauthorized")
        if url.path == "/version":
            minor = self.version.split(".")[1]
            return 200, {
                "major": "1",
                "minor": minor,
                "gitVersion": f"v{self.version}.0",
                "platform": "linux/amd64",
            }
        if url.path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if url.path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
        if url.path == "/api/v1":
            return 200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": r, "singularName": k.lower(), "namespaced": ns, "kind": k,
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
                for r, (k, ns) in RESOURCES.items()
            ]}  # fmt: skip
        if url.path == "/openapi/v3":
            return 200, {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=fake"}}}
        if url.path == "/openapi/v3/api/v1":
            return 200, _openapi_v3()
        if url.path == "/openapi/v2":
            return 200, b""  # an empty protobuf document: no schemas, so nothing to validate against
        match = _PATH.fullmatch(url.path)
        if match is None or match["res"] not in RESOURCES:
            return _status(404, "NotFound", f"the server could not find the requested resource ({url.path})")
        return self._object(
            method, match["res"], match["ns"], match["name"], parse_qs(url.query), headers, body
        )

    def _object(self, method: str, resource: str, namespace: str | None, name: str | None,
                query: dict[str, list[str]], headers: Any, body: bytes) -> tuple[int, Any]:  # fmt: skip
        kind = RESOURCES[resource][0]
        if namespace is not None and ("namespaces", None, namespace) not in self.objects:
            return _status(404, "NotFound", f'namespaces "{namespace}" not found')
        if method == "GET" and name is None:
            wanted = dict(p.split("=", 1) for p in query.get("labelSelector", [""])[0].split(",") if "=" in p)
            items = [
                o for (r, ns, _), o in self.objects.items()
                if r == resource and ns == namespace
                and all(o["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())
            ]  # fmt: skip
            return 200, {
                "kind": f"{kind}List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(self._revision)},
                "items": items,
            }
        key = (resource, namespace, name or "")
        if method == "GET":
            found = self.objects.get(key)
            return (200, found) if found else _status(404, "NotFound", f'{resource} "{name}" not found')
        if method == "DELETE":
            gone = self.objects.pop(key, None)
            return (200, gone) if gone else _status(404, "NotFound", f'{resource} "{name}" not found')
        obj = _decode(body)
        if method == "POST":
            key = (resource, namespace, obj["metadata"]["name"])
            if key in self.objects:
                return _status(409, "AlreadyExists", f'{resource} "{key[2]}" already exists')
        elif (
            method == "PATCH" and key in self.objects and "apply-patch" not in headers.get("Content-Type", "")
        ):
            obj = {**self.objects[key], **{k: v for k, v in obj.items() if k != "metadata"}}
        created = key not in self.objects
        self._revision += 1
        obj.setdefault("metadata", {})
        obj["metadata"].update({"name": key[2], "resourceVersion": str(self._revision)})
        if namespace is not None:
            obj["metadata"]["namespace"] = namespace
        obj.setdefault("apiVersion", "v1")
        obj.setdefault("kind", kind)
        self.objects[key] = obj
        return (201 if created else 200), obj


def _decode(body: bytes) -> dict[str, Any]:
    if body[:4] == b"k8s\x00":
        return secret_from_protobuf(body)
    parsed = json.loads(body) if body[:1] == b"{" else yaml.safe_load(body)
    if not isinstance(parsed, dict):
        raise ValueError("request body is not an object")
    return parsed


def _status(code: int, reason: str, message: str) -> tuple[int, Any]:
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}  # fmt: skip


def _openapi_v3() -> dict[str, Any]:
    """Schemas for the served kinds; loose on purpose (the real ones are large), with their GVK extension."""
    schemas = {
        f"io.k8s.api.core.v1.{kind}": {
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "", "kind": kind, "version": "v1"}],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
            },
        }
        for kind, _ in RESOURCES.values()
    }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "fake"}, "paths": {},
            "components": {"schemas": schemas}}  # fmt: skip
