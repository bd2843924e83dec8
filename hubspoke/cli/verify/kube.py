"""Read-only access to a cluster's Kubernetes API through the user's kubeconfig: find the context, GET lists.

Follows the kubeconfig format and merge rule of the Kubernetes docs ("Organize cluster access using
kubeconfig files": KUBECONFIG lists files, the first file to define a name wins, relative paths are relative
to the file) and client-go's exec credential plugins ("Client-go credential plugins": the command prints an
ExecCredential whose status carries a token or a client certificate). `aws eks update-kubeconfig` names the
cluster and context by the cluster's ARN and adds an exec entry running `aws eks get-token`.

Anything this reader cannot use (no matching context, an auth-provider, an interactive plugin, an endpoint
it cannot reach) raises KubeUnavailable with the reason and what to do: verify then reports the
Kubernetes rows as not checked rather than guessing.

Why not the official `kubernetes` client: verify only lists nodes and claims, and the client (37.0.2, measured
2026-12-01 on this project's machine) installs 126 MB for itself plus its dependencies and takes 0.25 to 0.34 s
to import `kubernetes.client`, against this stdlib module's 11 to 19 ms (python -X importtime, three runs each);
docs/development.md, "Why verify has its own Kubernetes reader".
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REQUEST_TIMEOUT_S = 10.0
EXEC_TIMEOUT_S = 30.0
PAGE_SIZE = 500
_EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


class KubeUnavailable(Exception):
    """The cluster's API cannot be used from here: `reason` says why, `fix` what would make it usable."""

    def __init__(self, reason: str, fix: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


def default_kubeconfig() -> tuple[Path, ...]:
    """KUBECONFIG's files (os.pathsep-separated), else ~/.kube/config: where kubectl looks."""
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        return tuple(Path(p) for p in listed.split(os.pathsep) if p)
    try:
        return (Path.home() / ".kube" / "config",)
    except RuntimeError:  # no HOME and no passwd entry: there is no default file
        return ()


@dataclass
class Kubeconfig:
    """The merged clusters, users and contexts of one or more kubeconfig files."""

    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, paths: Sequence[Path]) -> Kubeconfig:
        merged = cls()
        for path in paths:
            if not path.is_file():
                continue
            try:
                data = yaml.safe_load(path.read_text()) or {}
            except (OSError, yaml.YAMLError) as exc:
                raise KubeUnavailable(
                    f"cannot read kubeconfig {path}: {exc}", "fix or remove that file"
                ) from None
            if not isinstance(data, dict):
                raise KubeUnavailable(f"kubeconfig {path} is not a mapping", "fix or remove that file")
            for entry in _entries(data, "clusters"):
                merged.clusters.setdefault(str(entry.get("name")), (entry.get("cluster") or {}, path))
            for entry in _entries(data, "users"):
                merged.users.setdefault(str(entry.get("name")), (entry.get("user") or {}, path))
            for entry in _entries(data, "contexts"):
                merged.contexts.setdefault(str(entry.get("name")), entry.get("context") or {})
        return merged

    def context_for(self, *, arn: str, endpoint: str) -> str | None:
        """The context for an EKS cluster: named by its ARN (update-kubeconfig's default), or serving its endpoint."""
        for name, context in self.contexts.items():
            if arn in (name, context.get("cluster")):
                return name
        for name, context in self.contexts.items():
            cluster, _ = self.clusters.get(context.get("cluster", ""), ({}, None))
            if endpoint and str(cluster.get("server", "")).rstrip("/") == endpoint.rstrip("/"):
                return name
        return None


def _entries(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [e for e in data.get(key) or [] if isinstance(e, dict)]


@dataclass
class KubeApi:
    """GETs against one API server, with the credentials and TLS settings of one kubeconfig context."""

    server: str
    headers: dict[str, str]
    tls: ssl.SSLContext | None
    # For the fix when the server refuses: the EKS cluster's name and Region.
    cluster: str = "<cluster-name>"
    region: str = "<region>"
    # The name to verify the server certificate against, when not the server URL's host (tls-server-name).
    server_name: str = ""

    def get(self, path: str, **query: str | int) -> dict[str, Any]:
        url = self.server.rstrip("/") + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        request = urllib.request.Request(url, headers={"Accept": "application/json", **self.headers})
        try:
            with self._open(request) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            message = _status_message(exc)
            if exc.code in (401, 403):
                # AmazonEKSAdminViewPolicy lists every resource, cluster-scoped ones (nodes) included (EKS User
                # Guide, "Review access policy permissions"); the identity needs an access entry first.
                where = f"--region {self.region} --cluster-name {self.cluster} --principal-arn <role-arn>"
                raise KubeUnavailable(
                    f"the API server refused these credentials ({exc.code}: {message})",
                    f"`aws eks create-access-entry {where}`, then `aws eks associate-access-policy {where} "
                    "--policy-arn arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminViewPolicy "
                    "--access-scope type=cluster`",
                ) from None
            raise KubeUnavailable(f"GET {path} answered {exc.code}: {message}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise KubeUnavailable(f"cannot reach {self.server} ({reason})") from None
        except http.client.HTTPException as exc:  # e.g. IncompleteRead: the answer stopped half-way
            raise KubeUnavailable(f"GET {path}: the answer from {self.server} broke off ({exc!r})") from None
        except ValueError as exc:  # a 200 that is not JSON: a proxy's or captive portal's HTML page
            raise KubeUnavailable(
                f"GET {path}: {self.server} answered with something other than JSON ({exc}); "
                "is a proxy in the way, or is that not the API server?"
            ) from None
        if not isinstance(body, dict):
            raise KubeUnavailable(f"GET {path}: {self.server} answered JSON that is not an object")
        return body

    def _open(self, request: urllib.request.Request) -> Any:
        if not (self.server_name and self.tls):
            return urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S, context=self.tls)
        opener = urllib.request.build_opener(_NamedHTTPSHandler(self.tls, self.server_name))
        return opener.open(request, timeout=REQUEST_TIMEOUT_S)

    def items(self, path: str) -> list[dict[str, Any]]:
        """Every item of a list, page by page (Kubernetes API concepts: `limit` and `continue`)."""
        found: list[dict[str, Any]] = []
        token = ""
        while True:
            query: dict[str, str | int] = {"limit": PAGE_SIZE} | ({"continue": token} if token else {})
            page = self.get(path, **query)
            found += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or ""
            if not token:
                return found


class _NamedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that checks the certificate against `server_name`, not the host it dials."""

    def __init__(self, host: str, *, server_name: str, context: ssl.SSLContext, **kwargs: Any) -> None:
        super().__init__(host, context=context, **kwargs)
        self._server_name = server_name
        self._tls_context = context

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)  # the TCP connection to host:port
        self.sock = self._tls_context.wrap_socket(self.sock, server_hostname=self._server_name)


class _NamedHTTPSHandler(urllib.request.HTTPSHandler):
    """urllib's HTTPS handler with _NamedHTTPSConnection (urllib.request.AbstractHTTPHandler.do_open)."""

    def __init__(self, context: ssl.SSLContext, server_name: str) -> None:
        super().__init__(context=context)
        self._tls_context = context
        self._server_name = server_name

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        def connection(host: str, **kwargs: Any) -> _NamedHTTPSConnection:
            kwargs.pop("context", None)
            return _NamedHTTPSConnection(
                host, server_name=self._server_name, context=self._tls_context, **kwargs
            )

        return self.do_open(connection, req)


def _status_message(exc: urllib.error.HTTPError) -> str:
    """The `message` of the metav1.Status body the API server sends with an error, else the HTTP reason."""
    try:
        return str(json.loads(exc.read()).get("message") or exc.reason)
    except (ValueError, AttributeError, OSError):
        return str(exc.reason)


def connect(
    paths: Sequence[Path], *, arn: str, endpoint: str, name: str, region: str, profile: str | None = None
) -> KubeApi:
    """The API of the EKS cluster `arn` through the first kubeconfig context that points at it.

    `profile` (verify's --profile) is handed to an exec credential plugin as AWS_PROFILE when the context
    sets none, so `aws eks get-token` signs as the identity the rest of the run uses.
    """
    update = f"aws eks update-kubeconfig --region {region} --name {name}"
    shown = os.pathsep.join(str(p) for p in paths) or "(none)"
    if not any(p.is_file() for p in paths):
        raise KubeUnavailable(f"no kubeconfig file at {shown}", update)
    config = Kubeconfig.load(paths)
    context_name = config.context_for(arn=arn, endpoint=endpoint)
    if context_name is None:
        raise KubeUnavailable(f"no context in {shown} points at {arn}", update)
    context = config.contexts[context_name]
    cluster, cluster_file = config.clusters.get(context.get("cluster", ""), ({}, Path(".")))
    user, user_file = config.users.get(context.get("user", ""), ({}, Path(".")))
    server = str(cluster.get("server", ""))
    if not server:
        raise KubeUnavailable(f"context {context_name} has no cluster server", update)
    if cluster.get("proxy-url"):
        raise KubeUnavailable(f"context {context_name} uses proxy-url, which verify does not support")
    try:
        headers, cert = _credentials(user, user_file, context_name, profile)
        tls = _tls(cluster, cluster_file, cert) if server.startswith("https://") else None
    except (OSError, ValueError) as exc:  # unreadable files, bad base64 or PEM (ssl.SSLError is an OSError)
        raise KubeUnavailable(
            f"context {context_name}: cannot load its credentials or certificates ({exc})"
        ) from None
    # tls-server-name: the name the server certificate is checked against (and sent in SNI) instead of the
    # server URL's host (kubeconfig v1 Cluster.TLSServerName, client-go tools/clientcmd/api/v1/types.go); what
    # `hubspoke connect` sets when kubectl reaches the endpoint through a tunnel on localhost.
    server_name = str(cluster.get("tls-server-name") or "")
    return KubeApi(
        server=server, headers=headers, tls=tls, cluster=name, region=region, server_name=server_name
    )


def _path(value: str, relative_to: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else relative_to.parent / path


def _credentials(
    user: dict[str, Any], file: Path, context: str, profile: str | None
) -> tuple[dict[str, str], tuple[bytes, bytes] | None]:
    """Bearer header and/or client certificate (PEM cert, PEM key) for the context's user."""
    if user.get("auth-provider"):
        raise KubeUnavailable(f"context {context} uses an auth-provider, which verify does not support")
    if user.get("exec"):
        return _exec(user["exec"], context, profile)
    if user.get("token"):
        return {"Authorization": f"Bearer {user['token']}"}, None
    if user.get("tokenFile"):
        token = _path(user["tokenFile"], file).read_text().strip()
        return {"Authorization": f"Bearer {token}"}, None
    cert = _pem(user, "client-certificate", file)
    key = _pem(user, "client-key", file)
    if cert and key:
        return {}, (cert, key)
    if user.get("username"):
        raise KubeUnavailable(f"context {context} uses basic auth, which verify does not support")
    return {}, None


def _pem(entry: dict[str, Any], key: str, file: Path) -> bytes | None:
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        return _path(entry[key], file).read_bytes()
    return None


def _exec(
    spec: dict[str, Any], context: str, profile: str | None
) -> tuple[dict[str, str], tuple[bytes, bytes] | None]:
    """Run the context's credential plugin and read its ExecCredential (client-go credential plugins).

    The plugin inherits the environment, then the entry's `env` wins (client-go). verify's --profile sits
    between the two: it beats an inherited AWS_PROFILE, as `--profile` beats it for the AWS CLI, and loses
    to one the entry sets (`aws eks update-kubeconfig --profile` writes it there).
    """
    api_version = spec.get("apiVersion", "")
    if api_version not in _EXEC_API_VERSIONS:
        raise KubeUnavailable(f"context {context}: exec apiVersion {api_version!r} is not one verify speaks")
    if spec.get("interactiveMode") == "Always":
        raise KubeUnavailable(f"context {context}: its credential plugin needs a terminal")
    command = [str(spec.get("command", "")), *(str(a) for a in spec.get("args") or [])]
    env = dict(os.environ) | ({"AWS_PROFILE": profile} if profile else {})
    env |= {str(e["name"]): str(e["value"]) for e in spec.get("env") or []}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    )
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=EXEC_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KubeUnavailable(
            f"context {context}: credential plugin {command[0]!r} did not run ({exc})"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise KubeUnavailable(f"context {context}: credential plugin {command[0]!r} failed: {last}")
    try:
        status = json.loads(done.stdout).get("status") or {}
    except ValueError:
        raise KubeUnavailable(
            f"context {context}: credential plugin printed no ExecCredential JSON"
        ) from None
    if status.get("token"):
        return {"Authorization": f"Bearer {status['token']}"}, None
    if status.get("clientCertificateData") and status.get("clientKeyData"):
        return {}, (status["clientCertificateData"].encode(), status["clientKeyData"].encode())
    raise KubeUnavailable(
        f"context {context}: the credential plugin's ExecCredential has no token or certificate"
    )


def _tls(cluster: dict[str, Any], file: Path, cert: tuple[bytes, bytes] | None) -> ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify"):
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    else:
        authority = _pem(cluster, "certificate-authority", file)
        tls = ssl.create_default_context(cadata=authority.decode() if authority else None)
    if cert:
        # load_cert_chain reads files only: write the pair where only this user can read it, then drop it.
        with tempfile.TemporaryDirectory(prefix="hubspoke-kube-") as folder:
            cert_file, key_file = Path(folder, "cert.pem"), Path(folder, "key.pem")
            for path, data in ((cert_file, cert[0]), (key_file, cert[1])):
                path.touch(mode=0o600)
                path.write_bytes(data)
            tls.load_cert_chain(cert_file, key_file)
    return tls
