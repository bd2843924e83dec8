"""The HyperPod dependencies installer: pinned fetch from a loopback server, extraction, helm steps, failures."""

from __future__ import annotations

import http.server
import io
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubspoke.constructs.hyperpod.runtime import dependencies as deps

CHART = "helm_chart/HyperPodHelmChart"


def archive(files: dict[str, str], top: str = "sagemaker-hyperpod-cli-abc123") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, bytes]]]:
    routes: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"not found")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", routes
    finally:
        httpd.shutdown()
        thread.join(timeout=5)


def test_fetch_returns_the_archive(server: tuple[str, dict[str, bytes]]) -> None:
    base, routes = server
    routes["/a.tar.gz"] = b"payload"
    assert deps.fetch_archive(f"{base}/a.tar.gz", sleep=lambda _: None) == b"payload"


def test_fetch_failure_is_bounded_and_says_what_to_do(server: tuple[str, dict[str, bytes]]) -> None:
    base, _ = server
    waits: list[float] = []
    with pytest.raises(deps.DependenciesError) as err:
        deps.fetch_archive(f"{base}/missing.tar.gz", attempts=3, timeout=5, sleep=waits.append)
    message = str(err.value)
    assert f"{base}/missing.tar.gz" in message and "after 3 attempts" in message
    assert "docs/runbooks/compute.md" in message
    assert len(waits) == 2


def test_extract_keeps_only_the_chart_folder(tmp_path: Path) -> None:
    data = archive({f"{CHART}/Chart.yaml": "name: x\n", f"{CHART}/values.yaml": "a: 1\n", "README.md": "x"})
    chart = deps.extract_chart(data, chart_path=CHART, destination=tmp_path)
    assert (chart / "Chart.yaml").read_text() == "name: x\n"
    assert not (tmp_path / "README.md").exists()


def test_extract_refuses_a_commit_without_the_chart(tmp_path: Path) -> None:
    with pytest.raises(deps.DependenciesError, match="has no folder"):
        deps.extract_chart(archive({"other/Chart.yaml": "x"}), chart_path=CHART, destination=tmp_path)


def _stub(path: Path, log: Path, exit_code: int = 0) -> str:
    path.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> "{log}"\nexit {exit_code}\n')
    path.chmod(0o755)
    return str(path)


def test_create_runs_kubeconfig_dependency_update_and_upgrade(
    server: tuple[str, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, routes = server
    routes["/c.tar.gz"] = archive({f"{CHART}/Chart.yaml": "name: x\n"})
    log = tmp_path / "calls.log"
    monkeypatch.setattr(deps, "HELM", _stub(tmp_path / "helm", log))
    monkeypatch.setattr(deps, "AWS_CLI", _stub(tmp_path / "aws", log))
    props = {"ClusterName": "c1", "Release": "hyperpod-dependencies", "ArchiveUrl": f"{base}/c.tar.gz",
             "ChartPath": CHART, "Commit": "abc123", "Values": {}}  # fmt: skip
    result = deps.on_event({"RequestType": "Create", "ResourceProperties": props})
    calls = log.read_text().splitlines()
    assert [c.split()[:2] for c in calls] == [["aws", "eks"], ["helm", "dependency"], ["helm", "upgrade"]]
    assert "--install hyperpod-dependencies" in calls[2] and "--namespace kube-system" in calls[2]
    # The physical ID never changes with the commit: an upgrade must not look like a replacement.
    assert result["PhysicalResourceId"] == "hyperpod-dependencies"


def test_a_failing_helm_step_fails_the_resource_with_its_output(
    server: tuple[str, dict[str, bytes]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, routes = server
    routes["/c.tar.gz"] = archive({f"{CHART}/Chart.yaml": "name: x\n"})
    log = tmp_path / "calls.log"
    monkeypatch.setattr(deps, "HELM", _stub(tmp_path / "helm", log, exit_code=3))
    monkeypatch.setattr(deps, "AWS_CLI", _stub(tmp_path / "aws", log))
    props = {"ClusterName": "c1", "Release": "r", "ArchiveUrl": f"{base}/c.tar.gz", "ChartPath": CHART}
    with pytest.raises(deps.DependenciesError, match=r"helm dependency update failed \(exit 3\)"):
        deps.on_event({"RequestType": "Update", "ResourceProperties": props})


def test_delete_tolerates_a_cluster_that_is_already_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setattr(deps, "HELM", _stub(tmp_path / "helm", log))
    monkeypatch.setattr(deps, "AWS_CLI", _stub(tmp_path / "aws", log, exit_code=1))
    result = deps.on_event(
        {"RequestType": "Delete", "ResourceProperties": {"ClusterName": "c", "Release": "r"}}
    )
    assert result["PhysicalResourceId"] == "r"
    assert [c.split()[0] for c in log.read_text().splitlines()] == ["aws"]
