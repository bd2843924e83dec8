"""The hub canary run as Lambda runs it (tests/lambda_runtime.py): its synth-time bundle, its handler and its
environment as synthesized, Lambda's runtime environment; Secrets Manager is moto's server, the spoke's REST
API the Qumulo contract fake, the hub's nodes loopback listeners.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from hubspoke import canary_metrics as metrics
from hubspoke.constructs.canary import infrastructure
from hubspoke.constructs.cnq.bundling import InstalledEnvironmentBundling
from tests.conftest import Templates, properties
from tests.fakes.aws_endpoint import moto_endpoint
from tests.fakes.qumulo import FakeQumulo
from tests.lambda_runtime import LambdaFunction, bundle

SPOKE = "us-west-2"
HUB_NODES = ("127.0.0.21", "127.0.0.22")
pytestmark = [
    pytest.mark.usefixtures("lambda_sandbox"),
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The asset exactly as synth bundles it (HubCanary's runtime_code)."""
    local = InstalledEnvironmentBundling(
        source=infrastructure.RUNTIME_DIR / "runtime",
        package="runtime",
        root_distribution="qumulo-api",
        python_version=infrastructure.RUNTIME.name.removeprefix("python"),
        facts=infrastructure.RUNTIME_FACTS,
    )
    return bundle(local, tmp_path_factory.mktemp("canary"))


@pytest.fixture
def hub_nodes() -> Iterator[list[int]]:
    """Both hub nodes listening on two free ports (the template's 2049 and 3713 stand in for these)."""
    ports, sockets = [], []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            ports.append(int(probe.getsockname()[1]))
    for address in HUB_NODES:
        for port in ports:
            listener = socket.create_server((address, port))
            sockets.append(listener)
    yield ports
    for listener in sockets:
        listener.close()


def _function(templates: Templates) -> dict[str, Any]:
    return next(
        p for _, p in properties(templates[f"ops-{SPOKE}"], "AWS::Lambda::Function")
        if p.get("Handler") == "runtime.handler.handler"
    )  # fmt: skip


def test_one_round_publishes_emf_from_the_bundle_in_lambdas_environment(
    dev_templates: Templates, code: Path, hub_nodes: list[int]
) -> None:
    function = _function(dev_templates)
    synthesized = function["Environment"]["Variables"]
    with moto_endpoint() as endpoint, FakeQumulo(name="spoke") as spoke:
        secret = boto3.client(
            "secretsmanager", region_name=SPOKE, endpoint_url=endpoint,
            aws_access_key_id="x", aws_secret_access_key="x",
        ).create_secret(Name="spoke-admin", SecretString=json.dumps({"username": "admin", "password": "pw"}))  # fmt: skip
        spoke.password = "pw"  # a formed cluster whose admin password is the secret's
        deploy_time = {
            "HUB_ADDRESSES": ",".join(HUB_NODES),
            "HUB_PORTS": ",".join(str(p) for p in hub_nodes),
            "SPOKE_REST_ADDRESS": spoke.node_ips[0],
            "SPOKE_REST_PORT": str(spoke.port),
            "ADMIN_SECRET_ARN": secret["ARN"],
        }
        environment = {**synthesized, **deploy_time, "AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint}
        unresolved = [k for k, v in environment.items() if not isinstance(v, str)]
        assert not unresolved, f"give these deploy-time variables a test value: {unresolved}"
        invocation = LambdaFunction(
            code=code,
            handler=function["Handler"],
            environment=environment,
            timeout_s=function["Timeout"],
            memory_mb=function["MemorySize"],
            region=SPOKE,
        ).invoke({})
        result = invocation.result
    assert result[metrics.HUB_REACHABLE] == 1 and result[metrics.NODES_REACHABLE_FRACTION] == 1.0
    # The SDK logged in with the secret's credentials and listed portals: this spoke has none yet.
    assert result["portal_detail"] == "the spoke cluster has no spoke portal towards the hub"
    # Two records: the probe result first, then the portal's (handler.py publishes the hub's before slower reads).
    hub, portal = [json.loads(text) for text in invocation.stdout.splitlines() if text.startswith("{")]
    assert hub["_aws"]["CloudWatchMetrics"][0]["Namespace"] == metrics.NAMESPACE
    assert hub[metrics.HUB_REACHABLE] == 1 and metrics.PORTAL_STATUS not in hub
    assert portal[metrics.PORTAL_STATUS] == metrics.PORTAL_STATUS_UNKNOWN
