"""The HyperPod nodes-ready waiters run as Lambda runs them, against moto's SageMaker (ListClusterNodes).

The function and properties come from the synthesized dev template: resources in turn, `Until: Launched`, two
`Until: Checking` (`Step` 1 and 2: dev runs on-start deep health checks), then `Until: Running`. The cluster exists in moto; its nodes start Running (moto's ClusterNode), and a test moves
them to the other states of ClusterInstanceStatus (SageMaker API reference) in moto's own backend, as a
cluster in the middle of its bring-up would show them.

Each handler runs in the Lambda sandbox in the fast tier once (test_complete_only_when_every_group_has_its_nodes_
running); the waiters' timing and state logic runs in this process in the fast tier and sandboxed in the
thorough tier (the `run` fixture), as one sandboxed run costs a second or more.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.constructs.hyperpod import nodes_ready
from tests.conftest import Templates, properties
from tests.fakes.aws_endpoint import moto_endpoint
from tests.lambda_runtime import Environment, Invocation, LambdaFunction

REGION = "us-west-2"

pytestmark = pytest.mark.usefixtures("lambda_sandbox")


@pytest.fixture
def sagemaker() -> Iterator[tuple[str, Any]]:
    with moto_endpoint() as endpoint:
        # moto's server mode keeps its state in this process: start from none (moto's /moto-api/reset).
        urllib.request.urlopen(
            urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10
        )
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


Run = Callable[[str, float, dict[str, Any]], Invocation]


@contextlib.contextmanager
def _sandboxed(endpoint: str) -> Iterator[Run]:
    """Each handler a function of its own in the Lambda sandbox: cold at its first invocation, warm after, as
    Lambda keeps an environment for the next invocation."""
    with contextlib.ExitStack() as stack:
        warm: dict[str, Environment] = {}

        def run(handler: str, timeout: float, event: dict[str, Any]) -> Invocation:
            if handler not in warm:
                function = LambdaFunction(
                    code=nodes_ready.RUNTIME_DIR,
                    handler=handler,
                    environment={"AWS_ENDPOINT_URL_SAGEMAKER": endpoint},  # test wiring: moto's endpoint
                    timeout_s=timeout,
                    region=REGION,
                )
                warm[handler] = stack.enter_context(function.warm())
            return warm[handler].invoke(event)

        yield run


class _Context:
    """What the handler reads of Lambda's context object: the time left (Python Lambda context object)."""

    def __init__(self, timeout: float) -> None:
        self._deadline = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _in_process(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Run:
    """The handler module called in this process, with the same event, time left and endpoint wiring: the fast
    tier's runner for the waiters' logic (the sandboxed run of every handler stays in the fast tier once, in
    test_complete_only_when_every_group_has_its_nodes_running)."""
    from hubspoke.constructs.hyperpod.runtime import nodes_ready as runtime

    for name, value in {
        "AWS_ENDPOINT_URL_SAGEMAKER": endpoint,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

    def run(handler: str, timeout: float, event: dict[str, Any]) -> Invocation:
        module, _, function = handler.rpartition(".")
        assert module == "nodes_ready", handler
        try:
            result = getattr(runtime, function)(json.loads(json.dumps(event)), _Context(timeout))
        except Exception as error:  # reported as the sandbox's bootstrap reports it
            return Invocation({"errorType": type(error).__name__, "errorMessage": str(error)}, "", "")
        return Invocation({"result": json.loads(json.dumps(result))}, "", "")

    return run


@pytest.fixture(params=["in-process", pytest.param("sandbox", marks=pytest.mark.thorough)])
def run(
    request: pytest.FixtureRequest, sagemaker: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Run]:
    """How a handler is run: in this process (fast tier) or in the Lambda sandbox (thorough tier)."""
    endpoint, _ = sagemaker
    if request.param == "in-process":
        yield _in_process(endpoint, monkeypatch)
    else:
        with _sandboxed(endpoint) as sandboxed:
            yield sandboxed


def _invoke(templates: Templates, run: Run, step: str, event: dict[str, Any]) -> Any:
    """The handler's result, run by `run`."""
    function = _functions(templates)[f"nodes_ready.{step}"]
    return run(function["Handler"], function["Timeout"], event).result


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


def _event(
    templates: Templates,
    cluster_arn: str,
    request: str = "Create",
    until: str = "Running",
    step: str | None = None,
) -> dict[str, Any]:
    [props] = [
        p
        for _, p in properties(templates[f"compute-{REGION}"], "Custom::HyperPodNodesReady")
        if p["Until"] == until and p.get("Step") == step
    ]
    synthesized = {k: v for k, v in props.items() if k not in ("ServiceToken", "ServiceTimeout")}
    return {"RequestType": request, "ResourceProperties": {**synthesized, "Cluster": cluster_arn}}


def _set_states(arn: str, *states: str) -> list[str]:
    """Give the cluster's nodes these ClusterInstanceStatus values, in moto's backend (server mode runs in-process);
    the nodes' instance IDs in the same order."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.sagemaker.models import sagemaker_backends

    [cluster] = [c for c in sagemaker_backends[DEFAULT_ACCOUNT_ID][REGION].clusters.values() if c.arn == arn]
    nodes = list(cluster.nodes.values())
    assert len(nodes) == len(states)
    for node, state in zip(nodes, states, strict=True):
        node.status = state
    return [str(node.instance_id) for node in nodes]


def test_complete_only_when_every_group_has_its_nodes_running(
    dev_config: HubSpokeConfig, dev_templates: Templates, sagemaker: tuple[str, Any]
) -> None:
    endpoint, client = sagemaker
    wanted = dev_config.spoke(REGION).compute.instance_groups[0].count
    arn = _create(client, running=wanted - 1)
    event = _event(dev_templates, arn)
    with _sandboxed(endpoint) as run:
        assert _invoke(dev_templates, run, "on_event", event)["PhysicalResourceId"] == f"{arn}/nodes-ready"
        assert _invoke(dev_templates, run, "is_complete", event) == {"IsComplete": False}
        client.delete_cluster(ClusterName=arn)
        arn = _create(client, running=wanted)
        done = _invoke(dev_templates, run, "is_complete", _event(dev_templates, arn))
        assert done == {"IsComplete": True, "Data": {"Nodes": str(wanted)}}
        assert _invoke(dev_templates, run, "is_complete", _event(dev_templates, arn, "Delete")) == {
            "IsComplete": True
        }


def test_counts_come_from_config_as_one_json_string(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    props = next(p for _, p in properties(dev_templates[f"compute-{REGION}"], "Custom::HyperPodNodesReady"))
    groups = dev_config.spoke(REGION).compute.instance_groups
    assert json.loads(props["InstanceGroups"]) == {g.name: g.count for g in groups}


def test_launched_counts_nodes_past_pending_running_only_running(
    dev_config: HubSpokeConfig, dev_templates: Templates, sagemaker: tuple[str, Any], run: Run
) -> None:
    _, client = sagemaker
    assert dev_config.spoke(REGION).compute.instance_groups[0].count == 2, "the states below are for 2 nodes"
    arn = _create(client, running=2)
    launched, running = (_event(dev_templates, arn, until=phase) for phase in ("Launched", "Running"))
    assert _invoke(dev_templates, run, "on_event", launched)["PhysicalResourceId"] == f"{arn}/nodes-launched"
    for states, want in [
        (("Pending", "Pending"), (False, False)),
        (("Pending", "DeepHealthCheckInProgress"), (False, False)),
        (("DeepHealthCheckInProgress", "DeepHealthCheckInProgress"), (True, False)),
        (("Running", "DeepHealthCheckInProgress"), (True, False)),
        (("Running", "Failure"), (False, False)),
        (("Running", "Running"), (True, True)),
    ]:
        _set_states(arn, *states)
        got = tuple(_invoke(dev_templates, run, "is_complete", e)["IsComplete"] for e in (launched, running))
        assert got == want, f"nodes {states}: (Launched, Running) complete = {got}"


def test_the_wait_ends_within_its_own_budget_naming_the_missing_nodes(
    dev_config: HubSpokeConfig, dev_templates: Templates, sagemaker: tuple[str, Any], run: Run
) -> None:
    """CloudFormation fails a custom resource after its ServiceTimeout, at most 3600 s (AWS::CloudFormation::
    CustomResource), with a message that says nothing of the nodes. The provider's 55 retries of 60 s bound only
    the sleeps: each poll's run time (up to the function's Timeout) comes on top. So the handler keeps a
    wall-clock budget from onEvent (WaitSeconds): the poll after which the next one could end past it, less a
    minute for the framework's report, fails with what is missing; a poll that finds the nodes still succeeds."""
    import time

    _, client = sagemaker
    wanted = dev_config.spoke(REGION).compute.instance_groups[0].count
    arn = _create(client, running=wanted - 1)
    event = _event(dev_templates, arn)
    budget = int(event["ResourceProperties"]["WaitSeconds"])
    assert 0 < budget < 3600
    started = _invoke(dev_templates, run, "on_event", event)["StartedAt"]
    assert abs(float(started) - time.time()) < 60
    timeout = _functions(dev_templates)["nodes_ready.is_complete"]["Timeout"]
    # Early on: not complete, and the next poll (60 s later, up to `timeout` s long) still fits.
    early = {**event, "StartedAt": str(time.time() - (budget - 60 - 60 - timeout - 30))}
    assert _invoke(dev_templates, run, "is_complete", early) == {"IsComplete": False}
    # Near the end: the next poll could outrun the budget, so this one fails, naming the missing node.
    late = {**event, "StartedAt": str(time.time() - (budget - 60 - 60 - timeout + 30))}
    failed = run("nodes_ready.is_complete", timeout, late)
    assert failed.error.startswith("TimeoutError:")
    assert '{"accelerated-worker-group-1": 1}' in failed.error and "Running" in failed.error
    # The same late poll, with every node Running, completes.
    client.delete_cluster(ClusterName=arn)
    arn = _create(client, running=wanted)
    done = _invoke(
        dev_templates, run, "is_complete", {**_event(dev_templates, arn), "StartedAt": late["StartedAt"]}
    )
    assert done["IsComplete"] is True


def test_the_handlers_poll_interval_is_the_waiters(dev_templates: Templates) -> None:
    """budget_left assumes the framework sleeps POLL_SECONDS between polls: the synthesized waiter's interval."""
    from hubspoke.constructs.hyperpod.runtime import nodes_ready as runtime

    machines = [
        json.dumps(p["DefinitionString"])
        for _, p in properties(dev_templates[f"compute-{REGION}"], "AWS::StepFunctions::StateMachine")
    ]
    assert any(f'\\"IntervalSeconds\\":{int(runtime.POLL_SECONDS)},' in m for m in machines)


# SageMaker API reference, ClusterInstanceStatus (botocore's sagemaker service model, written out here).
CLUSTER_INSTANCE_STATUS = (
    "Running",
    "Failure",
    "Pending",
    "ShuttingDown",
    "SystemUpdating",
    "DeepHealthCheckInProgress",
    "NotFound",
    "DetachInProgress",
    "AttachInProgress",
)


@pytest.mark.parametrize(
    "states",
    [
        # One progressing state and one that must fail, then every status (in the fast tier in-process only:
        # each state costs two sandboxed runs, so the sandbox runs every status in the thorough tier).
        ("DeepHealthCheckInProgress", "Failure"),
        pytest.param(CLUSTER_INSTANCE_STATUS, id="every-status"),
    ],
    ids=lambda states: "-".join(states) if isinstance(states, tuple) and len(states) < 3 else None,
)
def test_the_checking_waits_span_the_deep_health_checks(
    dev_config: HubSpokeConfig,
    dev_templates: Templates,
    sagemaker: tuple[str, Any],
    states: tuple[str, ...],
    run: Run,
) -> None:
    """A new instance runs its on-start deep health checks "for about 2 hours" (SageMaker developer guide,
    "Recommended resiliency configuration"), longer than one wait's 55 minutes. A Checking wait completes at once
    when every node is Running; with its budget left and a node in any other state it goes on polling; when its
    budget is spent it completes if every node is still DeepHealthCheckInProgress or Running (the next wait
    takes over), and fails on any other ClusterInstanceStatus, naming the node and its state."""
    import time

    _, client = sagemaker
    assert dev_config.spoke(REGION).compute.instance_groups[0].count == 2, "the states below are for 2 nodes"
    arn = _create(client, running=2)
    checking = [_event(dev_templates, arn, until="Checking", step=s) for s in ("1", "2")]
    ids = {_invoke(dev_templates, run, "on_event", e)["PhysicalResourceId"] for e in checking}
    assert ids == {f"{arn}/nodes-checking-1", f"{arn}/nodes-checking-2"}
    event = checking[0]
    budget = int(event["ResourceProperties"]["WaitSeconds"])
    timeout = _functions(dev_templates)["nodes_ready.is_complete"]["Timeout"]
    early = {**event, "StartedAt": str(time.time() - 60)}
    late = {**event, "StartedAt": str(time.time() - (budget - 60 - 60 - timeout + 30))}
    progressing = {"DeepHealthCheckInProgress", "Running"}
    for state in states:
        nodes = _set_states(arn, "DeepHealthCheckInProgress", state)
        assert _invoke(dev_templates, run, "is_complete", early) == {"IsComplete": False}, state
        result = run("nodes_ready.is_complete", timeout, late)
        if state in progressing:
            assert result.result == {"IsComplete": True, "Data": {"Nodes": "2"}}, state
        else:
            assert result.error.startswith("TimeoutError:"), (state, result.error)
            assert f"{nodes[1]} ({state})" in result.error, result.error
            assert nodes[0] not in result.error, "a node in its checks is not named"
    _set_states(arn, "Running", "Running")
    for e in (early, late):
        assert _invoke(dev_templates, run, "is_complete", e) == {
            "IsComplete": True,
            "Data": {"Nodes": "2"},
        }


def test_the_running_wait_still_fails_on_nodes_in_their_checks(
    dev_templates: Templates, sagemaker: tuple[str, Any], run: Run
) -> None:
    """The last wait is Running's: at its budget's end a node still DeepHealthCheckInProgress fails it, named."""
    import time

    _, client = sagemaker
    arn = _create(client, running=2)
    nodes = _set_states(arn, "Running", "DeepHealthCheckInProgress")
    event = _event(dev_templates, arn)
    budget = int(event["ResourceProperties"]["WaitSeconds"])
    timeout = _functions(dev_templates)["nodes_ready.is_complete"]["Timeout"]
    late = {**event, "StartedAt": str(time.time() - (budget - 60 - 60 - timeout + 30))}
    failed = run("nodes_ready.is_complete", timeout, late)
    assert failed.error.startswith("TimeoutError:")
    assert f"{nodes[1]} (DeepHealthCheckInProgress)" in failed.error
