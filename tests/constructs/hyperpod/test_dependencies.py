"""The HyperPod dependencies installer's pieces: pinned fetch from a loopback server, extraction, values.

The helm and AWS CLI steps run with the real tools in Lambda's environment: test_dependencies_lambda.py.
"""

from __future__ import annotations

import http.server
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubspoke.constructs.hyperpod.runtime import dependencies as deps
from tests.fakes.loopback import serve_in_background, shut

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
    try:
        yield serve_in_background(httpd, "http"), routes
    finally:
        shut(httpd)


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


@pytest.mark.parametrize(
    ("values", "problem"),
    [({"region": "us-west-2"}, "one JSON string"), ("{not json", "not valid JSON"), ("[1]", "a JSON object")],
)
def test_values_must_be_one_json_object_string(values: object, problem: str) -> None:
    with pytest.raises(deps.DependenciesError, match=problem):
        deps.chart_values({"Values": values})


def test_values_keep_their_types() -> None:
    assert deps.chart_values({"Values": '{"a": {"enabled": false, "n": 3}}'}) == {
        "a": {"enabled": False, "n": 3}
    }
