"""The CNQ provisioner run as Lambda runs it (tests/lambda_runtime.py): its synth-time bundle, its handler,
its properties as synthesized, Lambda's environment; Secrets Manager is moto's server, Qumulo the contract fake.

What this adds to test_cnq_provisioner.py (the same handler in-process): the bundle imports and runs with
nothing but itself and the runtime's SDK, from a read-only /var/task, as an unprivileged user without HOME.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from hubspoke.constructs.cnq import bundling
from tests.conftest import Templates, resources
from tests.fakes.aws_endpoint import moto_endpoint
from tests.fakes.qumulo import FakeQumulo
from tests.lambda_runtime import LambdaFunction, bundle

HUB = "us-east-2"
PASSWORD = "Hub-Passw0rd!x"
# qumulo-api's dataclasses-json schemas use marshmallow 3 idioms that marshmallow deprecates; not ours to fix.
pytestmark = [
    pytest.mark.usefixtures("lambda_sandbox"),
    pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning"),
]


@pytest.fixture(scope="module")
def code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The asset exactly as synth bundles it (hubspoke/constructs/cnq/bundling.py)."""
    local = bundling.InstalledEnvironmentBundling(
        source=bundling.RUNTIME_DIR,
        package=bundling.PACKAGE,
        root_distribution="qumulo-api",
        python_version=bundling.RUNTIME.name.removeprefix("python"),
    )
    return bundle(local, tmp_path_factory.mktemp("cnq-provisioner"))


@pytest.fixture
def secrets() -> Iterator[tuple[str, str]]:
    with moto_endpoint() as endpoint:
        client = boto3.client(
            "secretsmanager", region_name=HUB, endpoint_url=endpoint,
            aws_access_key_id="x", aws_secret_access_key="x",
        )  # fmt: skip
        yield endpoint, client.create_secret(Name="cnq-hub", SecretString=PASSWORD)["ARN"]


def _resource(templates: Templates, kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    template = templates[f"storage-{HUB}"]
    _, resource = next(resources(template, kind))
    function = next(
        r["Properties"] for _, r in resources(template, "AWS::Lambda::Function")
        if r["Properties"].get("Handler") == bundling.HANDLER
    )  # fmt: skip
    return function, resource["Properties"]


def test_cluster_create_runs_from_the_bundle_in_lambdas_environment(
    dev_templates: Templates, code: Path, secrets: tuple[str, str]
) -> None:
    endpoint, secret_arn = secrets
    function, synthesized = _resource(dev_templates, "Custom::CnqCluster")
    with FakeQumulo(name="hub", formation_polls=2) as hub:
        # Deploy-time values the template leaves to CloudFormation (Refs, GetAtts), and where the fake listens.
        deploy_time = {
            "AdminSecretArn": secret_arn,
            "NodeIps": ["127.0.0.1"],
            "NodeInstanceIds": ["i-0123456789abcdef0"],
            "FloatingIps": ["10.10.64.11", "10.10.64.12"],
            "ObjectStorageUris": ["https://b1.s3.us-east-2.amazonaws.com/"],
            "RestPort": str(hub.port),
        }
        props = {k: v for k, v in synthesized.items() if k != "ServiceToken"} | deploy_time
        unresolved = [k for k, v in props.items() if isinstance(v, dict)]
        assert not unresolved, f"give these deploy-time properties a test value: {unresolved}"
        event = {"RequestType": "Create", "ResourceType": "Custom::CnqCluster", "LogicalResourceId": "Cluster",
                 "ResourceProperties": props}  # fmt: skip
        function_under_test = LambdaFunction(
            code=code,
            handler=function["Handler"],
            # Test wiring only: the fake Secrets Manager endpoint, and short polls against the fake cluster.
            environment={"AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint, "HUBSPOKE_POLL_SECONDS": "0.05"},
            timeout_s=function["Timeout"],
            memory_mb=function["MemorySize"],
            region=HUB,
        )
        result = function_under_test.invoke(event).result
    assert result["PhysicalResourceId"] == f"cnq-cluster-{hub.cluster_id}"
    assert hub.state == "ACTIVE" and hub.password == PASSWORD
    assert {e["export_path"] for e in hub.exports.values()} == set(synthesized["ExportPaths"])
