"""The HyperPod nodes-ready waiter run as Lambda runs it, against moto's SageMaker (ListClusterNodes).

The function and properties come from the synthesized dev template; the cluster exists in moto with the
instance groups' nodes Running (moto's ClusterNode starts Running).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.constructs.hyperpod import nodes_ready
from tests.conftest import Templates, properties
from tests.fakes.aws_endpoint import moto_endpoint
from tests.lambda_runtime import LambdaFunction

REGION = "us-west-2"

pytestmark = pytest.mark.usefixtures("lambda_sandbox")


@pytest.fixture
def sagemaker() -> Iterator[tuple[str, Any]]:
    with moto_endpoint() as endpoint:
        yield (
            endpoint,
            boto3.client(
                "sagemaker",
                region_name=REGION,
                endpoint_url=endpoint,
                aws_access_key_id="x",
                aws_secret_access_key="x",
            ),
        )


def _functions(templates: Templates) -> dict[str, dict[str, Any]]:
    template = templates[f"compute-{REGION}"]
    return {
        p["Handler"]: p
        for _, p in properties(template, "AWS::Lambda::Function")
        if p.get("Handler", "").startswith("nodes_ready.")
    }


def _invoke(templates: Templates, endpoint: str, step: str, event: dict[str, Any]) -> Any:
    function = _functions(templates)[f"nodes_ready.{step}"]
    return (
        LambdaFunction(
            code=nodes_ready.RUNTIME_DIR,
            handler=function["Handler"],
            environment={"AWS_ENDPOINT_URL_SAGEMAKER": endpoint},  # test wiring: moto's endpoint
            timeout_s=function["Timeout"],
            region=REGION,
        )
        .invoke(event)
        .result
    )


def _create(client: Any, running: int) -> str:
    return str(
        client.create_cluster(
            ClusterName="hubspoke-dev-us-west-2",
            InstanceGroups=[
                {
                    "InstanceGroupName": "accelerated-worker-group-1",
                    "InstanceType": "ml.p5.48xlarge",
                    "InstanceCount": running,
                    "LifeCycleConfig": {
                        "SourceS3Uri": "s3://sagemaker-b/lifecycle/",
                        "OnCreate": "on_create.sh",
                    },
                    "ExecutionRole": "arn:aws:iam::123456789012:role/x",
                    "ThreadsPerCore": 1,
                }
            ],
        )["ClusterArn"]
    )


def _event(templates: Templates, cluster_arn: str, request: str = "Create") -> dict[str, Any]:
    props = next(p for _, p in properties(templates[f"compute-{REGION}"], "Custom::HyperPodNodesReady"))
    synthesized = {k: v for k, v in props.items() if k != "ServiceToken"}
    return {"RequestType": request, "ResourceProperties": {**synthesized, "Cluster": cluster_arn}}


def test_complete_only_when_every_group_has_its_nodes_running(
    dev_config: HubSpokeConfig, dev_templates: Templates, sagemaker: tuple[str, Any]
) -> None:
    endpoint, client = sagemaker
    wanted = dev_config.spoke(REGION).compute.instance_groups[0].count
    arn = _create(client, running=wanted - 1)
    event = _event(dev_templates, arn)
    assert _invoke(dev_templates, endpoint, "on_event", event)["PhysicalResourceId"] == f"{arn}/nodes-ready"
    assert _invoke(dev_templates, endpoint, "is_complete", event) == {"IsComplete": False}
    client.delete_cluster(ClusterName=arn)
    arn = _create(client, running=wanted)
    done = _invoke(dev_templates, endpoint, "is_complete", _event(dev_templates, arn))
    assert done == {"IsComplete": True, "Data": {"Nodes": str(wanted)}}
    assert _invoke(dev_templates, endpoint, "is_complete", _event(dev_templates, arn, "Delete")) == {
        "IsComplete": True
    }


def test_counts_come_from_config_as_one_json_string(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    props = next(p for _, p in properties(dev_templates[f"compute-{REGION}"], "Custom::HyperPodNodesReady"))
    groups = dev_config.spoke(REGION).compute.instance_groups
    assert json.loads(props["InstanceGroups"]) == {g.name: g.count for g in groups}
