"""verify's Kubernetes reader, kubectl (the project's pinned 1.34.5) against the Kubernetes API stand-in.

What is kubectl's is checked as kubectl does it: the kubeconfig rules (merge order, relative paths) of the
Kubernetes docs ("Organize cluster access using kubeconfig files"); the exec plugin contract of client-go
("Client-go credential plugins"); credentials only over HTTPS (client-go tools/clientcmd/client_config.go,
DirectClientConfig.ClientConfig reads the user's auth only when the server is https); proxy-url (kubeconfig v1
Cluster.ProxyURL). What is verify's: which context, paging, and that every failure is a reason, not a traceback.
"""

from __future__ import annotations

import base64
import os
import pty
import re
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from hubspoke.cli.verify import kube
from hubspoke.cli.verify.kube import KubeUnavailable, connect, default_kubeconfig
from tests.cli.test_verify import quoted_command_problems
from tests.cli.verify_fixtures import exec_plugin
from tests.fakes.kube_api import ConnectProxy, FakeKubeApi, node, pinned_kubectl_dir
from tests.fakes.tls import loopback_certificate, named_certificate


@pytest.fixture(scope="module")
def _kubectl_dir() -> str:
    """Found once per module: finding it hashes the kubectl layer's zip."""
    return pinned_kubectl_dir()


@pytest.fixture(autouse=True)
def _pinned_kubectl(monkeypatch: pytest.MonkeyPatch, _kubectl_dir: str) -> None:
    monkeypatch.setenv("PATH", f"{_kubectl_dir}{os.pathsep}{os.environ.get('PATH', '')}")


ARN = "arn:aws:eks:us-west-2:123456789012:cluster/hubspoke-dev-us-west-2"
ENDPOINT = "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"


def _kubeconfig(
    path: Path, *, server: str, user: dict[str, Any], name: str = ARN, cluster: dict[str, Any] | None = None
) -> Path:
    entry = {"server": server, **(cluster or {})}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": name, "cluster": entry}],
                "users": [{"name": name, "user": user}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            }
        )
    )
    return path


def _ca() -> dict[str, str]:
    return {
        "certificate-authority-data": base64.b64encode(
            loopback_certificate("fake-kube-apiserver").cert_pem
        ).decode()
    }


def _connect(*paths: Path) -> Any:
    return connect(paths, arn=ARN, endpoint=ENDPOINT, name="hubspoke-dev-us-west-2", region="us-west-2")


def test_exec_plugin_token_over_verified_tls_and_paging(tmp_path: Path) -> None:
    with FakeKubeApi(nodes=[node(f"n{i}") for i in range(5)], page_size=2) as fake:
        path = _kubeconfig(
            tmp_path / "config", server=fake.url, user={"exec": exec_plugin(fake.token)}, cluster=_ca()
        )
        api = _connect(path)
        assert [n["metadata"]["name"] for n in api.items("/api/v1/nodes")] == [f"n{i}" for i in range(5)]
        # One GET with no parameters of its own: the list's first page, as the API reference's NodeList.
        assert api.get("/api/v1/nodes")["kind"] == "NodeList"
    # Three pages: the first asks with `limit` alone, each next one with the `continue` the last returned, until
    # the server gives none (API concepts, "Retrieving large results sets in chunks"); blank values are kept,
    # so an empty `continue` would show. kubectl sends its --request-timeout as the `timeout` parameter
    # (client-go rest/request.go, Request.Timeout).
    queries = [(urlsplit(r).path, parse_qs(urlsplit(r).query, keep_blank_values=True)) for r in fake.requests]
    assert queries == [
        ("/api/v1/nodes", {"limit": ["500"], "timeout": ["10s"]}),
        ("/api/v1/nodes", {"limit": ["500"], "continue": ["2"], "timeout": ["10s"]}),
        ("/api/v1/nodes", {"limit": ["500"], "continue": ["4"], "timeout": ["10s"]}),
        ("/api/v1/nodes", {"timeout": ["10s"]}),
    ]


def test_context_found_by_server_when_named_otherwise_and_first_file_wins(tmp_path: Path) -> None:
    first = _kubeconfig(tmp_path / "a", server=ENDPOINT, user={"token": "t"}, name="prod")
    # The same names in a later file are ignored (the first file to set a name wins).
    second = _kubeconfig(tmp_path / "b", server="https://127.0.0.1:1", user={"token": "other"}, name="prod")
    api = _connect(first, second)
    assert (api.context, api.server) == ("prod", ENDPOINT)


@pytest.mark.parametrize(("server", "endpoint"), [(f"{ENDPOINT}/", ENDPOINT), (ENDPOINT, f"{ENDPOINT}/")])
def test_a_trailing_slash_names_the_same_server(tmp_path: Path, server: str, endpoint: str) -> None:
    """An https URL with an empty path and one with "/" name the same resource (RFC 3986 section 6.2.3,
    scheme-based normalization), so a context serving the endpoint is found either way."""
    path = _kubeconfig(tmp_path / "config", server=server, user={"token": "t"}, name="prod")
    api = connect((path,), arn=ARN, endpoint=endpoint, name="hubspoke-dev-us-west-2", region="us-west-2")
    assert (api.context, api.server) == ("prod", server)


def test_a_context_whose_cluster_entry_is_missing_has_no_server(tmp_path: Path) -> None:
    """A context may name a cluster no file defines (kubeconfig files are merged, not validated, by
    `kubectl config view`); such a context serves no endpoint, and one named by the ARN has no server."""
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": ARN, "context": {"cluster": "deleted", "user": "u"}}],
            }
        )
    )
    api = _connect(path)
    assert (api.context, api.server) == (ARN, "")


def test_token_file_and_certificate_authority_paths_are_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    folder = tmp_path / "kube"
    folder.mkdir()
    (folder / "token").write_text("file-token\n")
    (folder / "ca.pem").write_bytes(loopback_certificate("fake-kube-apiserver").cert_pem)
    with FakeKubeApi(token="file-token", nodes=[node("n0")]) as fake:
        path = _kubeconfig(
            folder / "config",
            server=fake.url,
            user={"tokenFile": "token"},
            cluster={"certificate-authority": "ca.pem"},
        )
        assert len(_connect(path).items("/api/v1/nodes")) == 1


def test_untrusted_server_certificate_is_refused_unless_told_to_skip(tmp_path: Path) -> None:
    with FakeKubeApi(nodes=[node("n0")]) as fake:
        strict = _kubeconfig(tmp_path / "strict", server=fake.url, user={"token": fake.token})
        with pytest.raises(
            KubeUnavailable, match=r"cannot reach .*x509: certificate signed by unknown authority"
        ):
            _connect(strict).items("/api/v1/nodes")
        loose = _kubeconfig(
            tmp_path / "loose",
            server=fake.url,
            user={"token": fake.token},
            cluster={"insecure-skip-tls-verify": True},
        )
        assert len(_connect(loose).items("/api/v1/nodes")) == 1


# A credential plugin that says a few things on stderr, the cause last, and fails (a script for exec_plugin's shell).
CHATTY_PLUGIN = "printf 'starting\\nrefreshing\\nretrying\\ntoken expired\\n' >&2; exit 1"


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        # kubectl's oidc provider needs its issuer (client-go plugin/pkg/client/auth/oidc).
        ({"auth-provider": {"name": "oidc"}}, "Must provide idp-issuer-url"),
        ({"exec": {**exec_plugin("t"), "interactiveMode": "Always"}}, "standard input is not a terminal"),
        (
            {"exec": {**exec_plugin("t"), "apiVersion": "client.authentication.k8s.io/v1alpha1"}},
            "invalid apiVersion",
        ),
        (
            {
                "exec": {
                    **exec_plugin("t"),
                    "args": ["-c", CHATTY_PLUGIN],
                }
            },
            # kubectl passes the plugin's stderr through, then its own line; the reason keeps the last three.
            r"credential plugin failed \(retrying; token expired; Unable to connect to the server: getting credentials",
        ),
        ({"exec": {**exec_plugin("t"), "command": "/nonexistent/aws"}}, "no such file or directory"),
        # kubectl has sent no basic auth since 1.19 (kubernetes CHANGELOG-1.19): the server sees nobody.
        ({"username": "admin", "password": "secret"}, "refused these credentials"),
    ],
)
def test_credentials_verify_cannot_use_are_reasons_not_errors(
    tmp_path: Path, user: dict[str, Any], reason: str
) -> None:
    with FakeKubeApi(nodes=[node("n0")]) as fake:
        path = _kubeconfig(tmp_path / "config", server=fake.url, user=user, cluster=_ca())
        with pytest.raises(KubeUnavailable, match=reason):
            _connect(path).items("/api/v1/nodes")


def test_no_file_or_no_matching_context_says_how_to_write_one(tmp_path: Path) -> None:
    """`aws eks update-kubeconfig --region R --name N` writes the context (AWS CLI eks update-kubeconfig)."""
    update = "aws eks update-kubeconfig --region us-west-2 --name hubspoke-dev-us-west-2"
    with pytest.raises(KubeUnavailable, match="no kubeconfig file") as missing:
        _connect(tmp_path / "absent")
    assert missing.value.fix == update
    # No file to look at at all (no KUBECONFIG and no home folder): the reason says so rather than naming "".
    with pytest.raises(KubeUnavailable, match=r"^no kubeconfig file at \(none\)$"):
        _connect()
    other = _kubeconfig(tmp_path / "config", server="https://elsewhere", user={"token": "t"}, name="other")
    with pytest.raises(KubeUnavailable, match=f"no context in {other} points at {ARN}") as unmatched:
        _connect(other)
    assert unmatched.value.fix == update


def test_default_kubeconfig_follows_kubectl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    assert default_kubeconfig() == (tmp_path / "a", tmp_path / "b")
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_kubeconfig() == (tmp_path / ".kube" / "config",)


@pytest.mark.parametrize("mode", ["Never", "IfAvailable"])
def test_plugin_gets_exec_info_and_no_terminal_even_when_verify_has_one(tmp_path: Path, mode: str) -> None:
    """client-go sets KUBERNETES_EXEC_INFO, whose spec.interactive says whether the plugin may prompt on stdin
    ("Client-go credential plugins": interactiveMode IfAvailable uses stdin when it is a terminal). verify runs
    unattended, so even from a terminal its kubectl gets none and the plugin never waits on a prompt."""
    script = (
        "import json, os, sys\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['kind'] == 'ExecCredential' and info['spec']['interactive'] is False, info\n"
        "assert sys.stdin.read() == ''\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential', 'status': {'token': 'ok'}}))\n"
    )
    plugin = {
        **exec_plugin("unused"),
        "command": sys.executable,
        "args": ["-c", script],
        "interactiveMode": mode,
    }
    leader, terminal = pty.openpty()
    saved = os.dup(0)
    os.dup2(terminal, 0)  # verify's own stdin is a terminal
    try:
        with FakeKubeApi(token="ok", nodes=[node("n0")]) as fake:
            path = _kubeconfig(tmp_path / "config", server=fake.url, user={"exec": plugin}, cluster=_ca())
            assert len(_connect(path).items("/api/v1/nodes")) == 1
    finally:
        os.dup2(saved, 0)
        for fd in (saved, terminal, leader):
            os.close(fd)


@pytest.mark.thorough
def test_a_credential_plugin_that_hangs_is_a_reason_after_the_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aws eks get-token` can hang (an SSO login waiting, a network that drops packets); client-go gives an
    exec plugin no time limit of its own, so verify's limit on kubectl stops it (subprocess.run's timeout
    raises TimeoutExpired, "timed out after N seconds")."""
    monkeypatch.setattr(kube, "KUBECTL_TIMEOUT_S", 1.0)
    plugin = {
        **exec_plugin("unused"),
        "command": sys.executable,
        "args": ["-c", "import sys, time; time.sleep(4); sys.exit(1)"],
    }
    with FakeKubeApi(nodes=[node("n0")]) as fake:
        path = _kubeconfig(tmp_path / "config", server=fake.url, user={"exec": plugin}, cluster=_ca())
        api = _connect(path)
        with pytest.raises(
            KubeUnavailable, match=r"^kubectl did not run \(.*timed out after 1\.0 seconds\)$"
        ):
            api.items("/api/v1/nodes")


def test_every_get_runs_the_kubectl_of_the_environment_it_connected_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API keeps the environment `connect` built (KUBECONFIG, AWS_PROFILE, PATH): a GET runs the kubectl
    that environment's PATH finds, the one that read the kubeconfig, whatever the process's PATH is later."""
    with FakeKubeApi(nodes=[node("n0")]) as fake:
        path = _kubeconfig(tmp_path / "config", server=fake.url, user={"token": fake.token}, cluster=_ca())
        api = _connect(path)
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        assert len(api.items("/api/v1/nodes")) == 1


@pytest.mark.parametrize(
    ("intercepted", "reason"),
    [
        # The reason says what to suspect, in the words a reader searches for.
        ("html", r"answered with something other than JSON \(.*\); is a proxy in the way\b.*\bAPI server\?"),
        ("array", "answered JSON that is not an object"),
        ("cut", "unexpected EOF"),
    ],
)
def test_an_answer_that_is_not_the_api_servers_is_a_reason_not_a_traceback(
    tmp_path: Path, intercepted: str, reason: str
) -> None:
    """A proxy's HTML page (200, text/html) is not JSON (json raises ValueError), a JSON array is no Kubernetes
    object (every API answer is one: API concepts, "Standard API terminology"); an answer cut short of its
    Content-Length makes kubectl fail with Go's "unexpected EOF". All are reasons, as a refusal is."""
    with FakeKubeApi(intercepted=intercepted) as fake:
        path = _kubeconfig(tmp_path / "config", server=fake.url, user={"token": fake.token}, cluster=_ca())
        with pytest.raises(KubeUnavailable, match=reason):
            _connect(path).items("/api/v1/nodes")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        # kubectl 1.34.5 words each failure (k8s.io/kubectl/pkg/cmd/util/helpers.go, StandardErrorMessage): a 401
        # "error: You must be logged in to the server (MESSAGE)", another Status "Error from server (REASON):
        # MESSAGE". RBAC's 403 message: apimachinery errors.NewForbidden around apiserver responsewriters
        # forbiddenMessage; the API server's 401 message is "Unauthorized".
        ("wrong-token", r"^the API server refused these credentials \(401: Unauthorized\)$"),
        (
            "forbidden",
            r'^the API server refused these credentials \(403: nodes is forbidden: User "arn:aws:sts::123456789012:'
            r'assumed-role/ml-dev/verify" cannot list resource "nodes" in API group "" at the cluster scope\)$',
        ),
        (
            "not-found",
            f"^GET /api/v1/widgets through context {re.escape(ARN)}: "
            r"Error from server \(NotFound\): the server could not find the requested resource$",
        ),
        # A dial refused: "The connection to the server HOST:PORT was refused - did you specify the right host
        # or port?" (helpers.go, StandardErrorMessage for a refused connection).
        (
            "closed-port",
            r"^cannot reach https://127\.0\.0\.1:(\d+) \(The connection to the server 127\.0\.0\.1:\1 was refused",
        ),
    ],
)
def test_what_the_api_server_answers_is_the_reason_in_kubectls_words(
    tmp_path: Path, case: str, reason: str
) -> None:
    """Refusals name the status and say how to get access; a missing path names the GET and the context; an
    unreachable server names itself, with no fix of its own (verify's row adds the tunnel for a private
    endpoint: compute.py takes `exc.fix or` its own)."""
    with FakeKubeApi(nodes=[node("n0")], forbidden=("nodes",) if case == "forbidden" else ()) as fake:
        server = f"https://127.0.0.1:{_closed_port()}" if case == "closed-port" else fake.url
        token = "not-the-token" if case == "wrong-token" else fake.token
        path = _kubeconfig(tmp_path / "config", server=server, user={"token": token}, cluster=_ca())
        api = _connect(path)
        with pytest.raises(KubeUnavailable, match=reason) as failed:
            api.items("/api/v1/widgets" if case == "not-found" else "/api/v1/nodes")
    assert failed.value.reason == str(failed.value)
    refused = case in ("wrong-token", "forbidden")
    assert ("aws eks create-access-entry" in failed.value.fix) is refused
    assert failed.value.fix == "" or refused


def test_the_runs_profile_reaches_the_credential_plugin_unless_the_entry_sets_one(tmp_path: Path) -> None:
    """`aws eks get-token` signs as AWS_PROFILE's identity; --profile must reach it, or the API server sees
    another identity and a 401 blames the access entry. An entry's own env wins (client-go sets it last)."""

    def connect_with(profile: str | None, entry_env: list[dict[str, str]] | None = None) -> Any:
        plugin = exec_plugin("mapped", profile="ml-dev") | ({"env": entry_env} if entry_env else {})
        path = _kubeconfig(tmp_path / "config", server=fake.url, user={"exec": plugin}, cluster=_ca())
        return connect(
            (path,),
            arn=ARN,
            endpoint=ENDPOINT,
            name="hubspoke-dev-us-west-2",
            region="us-west-2",
            profile=profile,
        )

    with FakeKubeApi(token="mapped", nodes=[node("n0")]) as fake:
        assert len(connect_with("ml-dev").items("/api/v1/nodes")) == 1
        with pytest.raises(KubeUnavailable, match="refused these credentials") as refused:
            connect_with(None).items("/api/v1/nodes")
        with pytest.raises(KubeUnavailable, match="refused these credentials"):
            connect_with("ml-dev", [{"name": "AWS_PROFILE", "value": "other"}]).items("/api/v1/nodes")
    where = "--region us-west-2 --cluster-name hubspoke-dev-us-west-2 --principal-arn <role-arn>"
    # EKS CreateAccessEntry and AssociateAccessPolicy (botocore eks service-2.json): clusterName, principalArn,
    # policyArn, accessScope; each is regional, so each command names the Region.
    assert quoted_command_problems(refused.value.fix) == {
        f"aws eks create-access-entry {where}": [],
        f"aws eks associate-access-policy {where} --policy-arn "
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminViewPolicy --access-scope type=cluster": [],
    }


def test_a_server_reached_only_through_proxy_url(tmp_path: Path) -> None:
    """kubeconfig's proxy-url (kubeconfig v1 Cluster.ProxyURL): the server's name does not resolve here and only
    the proxy reaches it; the certificate names that host, so TLS runs end to end through the tunnel."""
    host = "api.cluster.invalid"  # RFC 6761: .invalid never resolves
    with FakeKubeApi(server_name=host, nodes=[node("n0")]) as fake:
        port = int(fake.url.rsplit(":", 1)[1])
        with ConnectProxy(target=("127.0.0.1", port)) as proxy:
            ca = base64.b64encode(named_certificate(host).cert_pem).decode()
            cluster = {"certificate-authority-data": ca, "proxy-url": proxy.url}
            path = _kubeconfig(tmp_path / "config", server=f"https://{host}:{port}", user={"token": fake.token},
                               cluster=cluster)  # fmt: skip
            assert len(_connect(path).items("/api/v1/nodes")) == 1
    assert proxy.asked == [f"{host}:{port}"]


def test_credentials_go_only_to_an_https_server(tmp_path: Path) -> None:
    """client-go reads the user's credentials only for an https server (tools/clientcmd/client_config.go,
    DirectClientConfig.ClientConfig), so a plain-http server sees no token and refuses."""
    with FakeKubeApi(tls=False, nodes=[node("n0")]) as fake:
        path = _kubeconfig(tmp_path / "config", server=fake.url, user={"token": fake.token})
        with pytest.raises(KubeUnavailable, match="refused these credentials"):
            _connect(path).items("/api/v1/nodes")


def test_no_kubectl_or_a_kubeconfig_kubectl_cannot_read_is_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file kubectl cannot parse stops `kubectl config view` (exit 1); no kubectl at all is the same kind of
    reason, with where to get it."""
    broken = tmp_path / "config"
    broken.write_text("clusters: [unclosed\n")
    with pytest.raises(KubeUnavailable, match=f"kubectl cannot read kubeconfig {broken}") as unreadable:
        _connect(broken)
    assert re.search(r"\bfix or remove that file\b", unreadable.value.fix)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(KubeUnavailable, match=r"^kubectl is not on PATH$") as missing:
        _connect(broken)
    # The Kubernetes docs' page for installing kubectl is "Install Tools".
    assert re.search(r"\binstall kubectl\b.*'Install Tools'", missing.value.fix)
