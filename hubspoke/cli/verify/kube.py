"""Read-only access to a cluster's Kubernetes API through kubectl and the user's kubeconfig: find the context, GET lists.

kubectl does everything between the kubeconfig and the API server: merging KUBECONFIG's files, exec credential
plugins (`aws eks get-token`), auth providers, TLS, tls-server-name and proxy-url (client-go
tools/clientcmd/client_config.go, DirectClientConfig.ClientConfig). This module only picks the context and pages
through lists. Anything that stops kubectl raises KubeUnavailable with kubectl's reason, and verify reports the
Kubernetes rows as not checked rather than guessing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One request's limit (kubectl --request-timeout) and the whole call's, which includes the credential plugin.
REQUEST_TIMEOUT = "10s"
KUBECTL_TIMEOUT_S = 60.0
PAGE_SIZE = 500


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


def _kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("kubectl", path=env.get("PATH"))
    if found is None:
        raise KubeUnavailable("kubectl is not on PATH", "install kubectl (Kubernetes docs, 'Install Tools')")
    try:
        return subprocess.run(
            [found, *args], env=env, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_S,
            stdin=subprocess.DEVNULL,  # a credential plugin gets no terminal: verify runs unattended
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KubeUnavailable(f"kubectl did not run ({exc})") from None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """kubectl's error, with the credential plugin's own last words (it passes the plugin's stderr through)."""
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    return "; ".join(lines[-3:]) or f"exit {done.returncode}"


@dataclass(frozen=True)
class KubeApi:
    """GETs against one kubeconfig context's API server, through kubectl."""

    context: str
    server: str
    env: dict[str, str]
    # For the fix when the server refuses: the EKS cluster's name and Region.
    cluster: str = "<cluster-name>"
    region: str = "<region>"

    def get(self, path: str, **query: str | int) -> dict[str, Any]:
        url = path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        done = _kubectl(
            self.env, "--context", self.context, f"--request-timeout={REQUEST_TIMEOUT}", "get", "--raw", url
        )
        if done.returncode != 0:
            said = _said(done)
            # kubectl's words for a refusal (k8s.io/kubectl/pkg/cmd/util/helpers.go, StandardErrorMessage): 401 is
            # "You must be logged in to the server (MESSAGE)", any other Status "Error from server (REASON): MESSAGE".
            refused = re.search(
                r"logged in to the server \((.*)\)|Error from server \(Forbidden\): (.*)", said
            )
            if refused:
                status = f"401: {refused[1]}" if refused[1] is not None else f"403: {refused[2]}"
                # AmazonEKSAdminViewPolicy lists every resource, cluster-scoped ones (nodes) included (EKS User
                # Guide, "Review access policy permissions"); the identity needs an access entry first.
                where = f"--region {self.region} --cluster-name {self.cluster} --principal-arn <role-arn>"
                raise KubeUnavailable(
                    f"the API server refused these credentials ({status})",
                    f"`aws eks create-access-entry {where}`, then `aws eks associate-access-policy {where} "
                    "--policy-arn arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminViewPolicy "
                    "--access-scope type=cluster`",
                )
            if "getting credentials" in said:
                raise KubeUnavailable(f"context {self.context}: its credential plugin failed ({said})")
            if "Unable to connect to the server" in said or "The connection to the server" in said:
                raise KubeUnavailable(f"cannot reach {self.server} ({said})")
            raise KubeUnavailable(f"GET {path} through context {self.context}: {said}")
        try:
            body = json.loads(done.stdout)
        except ValueError as exc:  # a 200 that is not JSON: a proxy's or captive portal's HTML page
            raise KubeUnavailable(
                f"GET {path}: {self.server} answered with something other than JSON ({exc}); "
                "is a proxy in the way, or is that not the API server?"
            ) from None
        if not isinstance(body, dict):
            raise KubeUnavailable(f"GET {path}: {self.server} answered JSON that is not an object")
        return body

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


def connect(
    paths: Sequence[Path], *, arn: str, endpoint: str, name: str, region: str, profile: str | None = None
) -> KubeApi:
    """The API of the EKS cluster `arn` through the first context of the merged kubeconfig that points at it:
    named by the ARN (`aws eks update-kubeconfig`'s default) or serving the cluster's endpoint.

    `profile` (verify's --profile) reaches an exec credential plugin as AWS_PROFILE: kubectl hands the plugin its
    own environment, then the entry's `env` on top (client-go "Client-go credential plugins"), so --profile beats
    an inherited AWS_PROFILE and loses to one the entry sets, as `aws eks update-kubeconfig --profile` writes it.
    """
    update = f"aws eks update-kubeconfig --region {region} --name {name}"
    shown = os.pathsep.join(str(p) for p in paths) or "(none)"
    if not any(p.is_file() for p in paths):
        raise KubeUnavailable(f"no kubeconfig file at {shown}", update)
    env = dict(os.environ) | {"KUBECONFIG": os.pathsep.join(str(p) for p in paths)}
    env |= {"AWS_PROFILE": profile} if profile else {}
    done = _kubectl(
        env, "config", "view", "--output=json"
    )  # the merged view: the first file to set a name wins
    if done.returncode != 0:
        raise KubeUnavailable(
            f"kubectl cannot read kubeconfig {shown}: {_said(done)}", "fix or remove that file"
        )
    view = json.loads(done.stdout or "{}")
    servers = {c.get("name"): (c.get("cluster") or {}).get("server", "") for c in view.get("clusters") or []}
    contexts = {
        c.get("name"): (c.get("context") or {}).get("cluster", "") for c in view.get("contexts") or []
    }
    by_name = [n for n, cluster in contexts.items() if arn in (n, cluster)]
    by_server = [
        n for n, c in contexts.items() if endpoint and servers.get(c, "").rstrip("/") == endpoint.rstrip("/")
    ]
    chosen = (by_name + by_server or [None])[0]
    if chosen is None:
        raise KubeUnavailable(f"no context in {shown} points at {arn}", update)
    server = servers.get(contexts[chosen], "")
    return KubeApi(context=chosen, server=server, env=env, cluster=name, region=region)
