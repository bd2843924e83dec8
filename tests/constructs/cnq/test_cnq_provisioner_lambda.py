"""The CNQ provisioner run as Lambda runs it (tests/lambda_runtime.py): its synth-time bundle, its handler,
its properties as synthesized, Lambda's environment; AWS is moto's server, Qumulo the contract fake.

What this adds to test_cnq_provisioner.py (the same handler in-process): the bundle imports and runs with
nothing but itself and the runtime's SDK, from a read-only /var/task, as an unprivileged user without HOME.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.cloudformation.models import cloudformation_backends
from moto.core import DEFAULT_ACCOUNT_ID

from hubspoke.constructs.cnq import bundling
from hubspoke.names import CNQ_CLUSTER_TAG
from tests.conftest import Templates, resources
from tests.constructs.cnq.conftest import UNDER_MUTMUT, stack_id
from tests.fakes.aws_endpoint import moto_endpoint
from tests.fakes.qumulo import FakeQumulo
from tests.lambda_runtime import LambdaFunction, bundle

HUB = "us-east-2"
PASSWORD = "Hub-Passw0rd!x"
# qumulo-api's dataclasses-json schemas use marshmallow 3 idioms that marshmallow deprecates; not ours to fix.
pytestmark = [
    UNDER_MUTMUT,
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
def aws() -> Iterator[tuple[str, str, list[str], str]]:
    """moto's server for Secrets Manager, EC2 and CloudFormation: the hub secret, four instances tagged as its
    nodes, and a stack that CloudFormation is creating."""
    with moto_endpoint() as endpoint:
        keys = {
            "region_name": HUB,
            "endpoint_url": endpoint,
            "aws_access_key_id": "x",
            "aws_secret_access_key": "x",
        }
        secret = boto3.client("secretsmanager", **keys).create_secret(Name="cnq-hub", SecretString=PASSWORD)
        tags = [{"ResourceType": "instance", "Tags": [{"Key": CNQ_CLUSTER_TAG, "Value": "dev-use2"}]}]
        made = boto3.client("ec2", **keys).run_instances(
            ImageId="ami-12c6146b", MinCount=4, MaxCount=4, InstanceType="i4i.8xlarge", TagSpecifications=tags
        )
        stack = stack_id(HUB, endpoint)
        cloudformation_backends[DEFAULT_ACCOUNT_ID][HUB].stacks[stack].status = "CREATE_IN_PROGRESS"
        yield endpoint, secret["ARN"], [i["InstanceId"] for i in made["Instances"]], stack


def _functions(templates: Templates) -> dict[str, dict[str, Any]]:
    """The provider's two functions as synthesized, by handler (on_event and is_complete)."""
    template = templates[f"storage-{HUB}"]
    return {
        r["Properties"]["Handler"]: r["Properties"]
        for _, r in resources(template, "AWS::Lambda::Function")
        if r["Properties"].get("Handler") in (bundling.ON_EVENT_HANDLER, bundling.IS_COMPLETE_HANDLER)
    }


def test_cluster_create_runs_from_the_bundle_in_lambdas_environment(
    dev_templates: Templates, code: Path, aws: tuple[str, str, list[str], str]
) -> None:
    """Both entry points, each a function of its own in the sandbox, as the Provider framework calls them:
    on_event once (a cold start), then is_complete with the event merged with on_event's answer until
    IsComplete, its environment cold at the first poll and warm after, as Lambda reuses it; once more in a new
    environment after that."""
    endpoint, secret_arn, instance_ids, stack = aws
    functions = _functions(dev_templates)
    assert set(functions) == {bundling.ON_EVENT_HANDLER, bundling.IS_COMPLETE_HANDLER}
    _, resource = next(resources(dev_templates[f"storage-{HUB}"], "Custom::CnqCluster"))
    synthesized = resource["Properties"]
    with FakeQumulo(name="hub", formation_polls=2) as hub:
        # Deploy-time values the template leaves to CloudFormation (Refs, GetAtts), and where the fake listens.
        deploy_time = {
            "AdminSecretArn": secret_arn,
            "NodeIps": hub.node_ips,
            "NodeInstanceIds": instance_ids,
            "FloatingIps": ["10.10.64.11", "10.10.64.12"],
            "ObjectStorageUris": [f"https://cnq-b{i}.s3.us-east-2.amazonaws.com/" for i in range(1, 5)],
            "RestPort": str(hub.port),
        }
        props = {
            k: v for k, v in synthesized.items() if k not in ("ServiceToken", "ServiceTimeout")
        } | deploy_time
        unresolved = [k for k, v in props.items() if isinstance(v, dict)]
        assert not unresolved, f"give these deploy-time properties a test value: {unresolved}"
        event: dict[str, Any] = {
            "RequestType": "Create", "ResourceType": "Custom::CnqCluster", "LogicalResourceId": "Cluster",
            "ResourceProperties": props, "StackId": stack,
        }  # fmt: skip

        def function(handler: str) -> LambdaFunction:
            configured = functions[handler]
            return LambdaFunction(
                code=code,
                handler=handler,
                # The template's variables; test wiring only on top: moto's endpoint, short polls.
                environment={
                    **configured.get("Environment", {}).get("Variables", {}),
                    "AWS_ENDPOINT_URL": endpoint,
                    "HUBSPOKE_POLL_SECONDS": "0.05",
                },
                timeout_s=configured["Timeout"],
                memory_mb=configured["MemorySize"],
                region=HUB,
            )

        started = function(bundling.ON_EVENT_HANDLER).invoke(event).result
        merged = {**event, **started}
        with function(bundling.IS_COMPLETE_HANDLER).warm() as polls:
            for _ in range(20):
                answer = polls.invoke(merged).result
                if answer["IsComplete"]:
                    break
            else:
                raise AssertionError("the cluster did not form in 20 polls")
        # Every poll after the first found the environment warm: the handler survives Lambda's reuse.
        assert polls.invocations > 1, "formation completed at the first poll: nothing ran warm"
        # And a poll that lands in a new environment knows as much: progress lives in the event and the
        # cluster, not in the warm one's memory (Lambda promises no reuse).
        assert function(bundling.IS_COMPLETE_HANDLER).invoke(merged).result["IsComplete"] is True
    assert started["PhysicalResourceId"].startswith("cnq-cluster-")
    assert hub.state == "ACTIVE" and hub.password == PASSWORD
    read_only = {e["export_path"]: e["restrictions"][0]["read_only"] for e in hub.exports.values()}
    assert read_only == {
        **{p: False for p in synthesized["ExportPaths"]},
        **{p: True for p in synthesized["ReadOnlyExportPaths"]},
    }
