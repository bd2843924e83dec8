"""HubSpoke-WaiterWithinServiceTimeout passes the dev templates and catches each way a waiter can outlast its resource.

The numbers are the sources', written here (not imported): CloudFormation's ServiceTimeout is at most 3600 s
and 3600 s when absent (AWS::CloudFormation::CustomResource); Step Functions' retrier defaults are
IntervalSeconds 1, MaxAttempts 3, BackoffRate 2.0 (Step Functions developer guide, "Handling errors").
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.rules import Template, check
from hubspoke.policy.waiters import waiter_attempts, waiter_seconds
from tests.conftest import Shape, Templates

RULE = "HubSpoke-WaiterWithinServiceTimeout"
STACK = "compute-us-west-2"
WAITS = "Custom::HyperPodNodesReady"
# dev's chain of node waits: Launched, then enough 55-minute waits for about 2 hours of deep health checks with a
# quarter's margin (SageMaker developer guide, "Recommended resiliency configuration"): ceil(150 / 55) = 3, the
# last the Running one. Every one of them must be caught.
WAIT_COUNT = 4


def _hits(templates: Templates, config: HubSpokeConfig) -> list[tuple[str, str]]:
    found = check([Template(sid, t) for sid, t in templates.items()], config)
    return [(v.template, v.logical_id) for v in found if v.rule == RULE]


def _retry(template: dict[str, Any], **change: float) -> None:
    """Rewrite the nodes-ready waiter's Retry in place (its definition is a Fn::Join of JSON and ARNs)."""
    [(_, machine)] = [
        (i, r) for i, r in template["Resources"].items() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    for key, value in change.items():
        parts[0] = parts[0].replace(f'"{key}":', f'"{key}":{json.dumps(value)},"_was_{key}":', 1)


def _without_budget(template: dict[str, Any]) -> None:
    """Drop the handlers' own wall-clock budget (WaitSeconds): the retry policy and run times alone then bound it."""
    for res in template["Resources"].values():
        if res["Type"] == WAITS:
            del res["Properties"]["WaitSeconds"]


def two_hours_of_polls(t: dict[str, Any]) -> None:
    _retry(t, MaxAttempts=120)  # the 2-hour waiter this project had: 120 x 60 s


def doubling_backoff(t: dict[str, Any]) -> None:
    _retry(t, BackoffRate=2)


def shorter_service_timeout(t: dict[str, Any]) -> None:
    for res in t["Resources"].values():
        if res["Type"] == WAITS:
            res["Properties"]["ServiceTimeout"] = "1800"


def over_the_maximum(t: dict[str, Any]) -> None:
    _retry(t, MaxAttempts=110)  # 6600 s: a ServiceTimeout above 3600 does not make room for it
    for res in t["Resources"].values():
        if res["Type"] == WAITS:
            res["Properties"]["ServiceTimeout"] = "7200"


def test_every_shapes_templates_wait_within_the_hour(shape: Shape) -> None:
    assert _hits(shape.templates, shape.config) == []


@pytest.mark.parametrize(
    "mutate", [two_hours_of_polls, doubling_backoff, shorter_service_timeout, over_the_maximum]
)
def test_a_waiter_that_outlasts_its_resource_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, mutate: Callable[[dict[str, Any]], None]
) -> None:
    broken = copy.deepcopy(dev_templates)
    _without_budget(broken[STACK])
    mutate(broken[STACK])
    waits = {i for i, r in broken[STACK]["Resources"].items() if r["Type"] == WAITS}
    assert len(waits) == WAIT_COUNT
    assert set(_hits(broken, dev_config)) == {(STACK, i) for i in waits}, mutate.__name__


def test_each_polls_run_time_counts_not_only_the_sleeps(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The nodes-ready waiter sleeps 55 x 60 s = 3300 s, under the 3600 s ServiceTimeout; but each of its 56
    attempts runs the isComplete function for up to its 60 s Timeout (AWS::Lambda::Function), after a 60 s
    onEvent: 60 + 3300 + 56 x 60 = 6720 s. Without the handler's own budget that outlasts CloudFormation."""
    broken = copy.deepcopy(dev_templates)
    _without_budget(broken[STACK])
    waits = {i for i, r in broken[STACK]["Resources"].items() if r["Type"] == WAITS}
    assert set(_hits(broken, dev_config)) == {(STACK, i) for i in waits}


@pytest.mark.parametrize(
    ("budget", "caught"), [("3300", False), ("3540", False), ("3600", True), ("4000", True)]
)
def test_a_handler_budget_bounds_the_wait_and_must_fit_the_service_timeout(
    dev_config: HubSpokeConfig, dev_templates: Templates, budget: str, caught: bool
) -> None:
    broken = copy.deepcopy(dev_templates)
    for res in broken[STACK]["Resources"].values():
        if res["Type"] == WAITS:
            assert res["Properties"]["WaitSeconds"] == "3300"  # 55 minutes, the synthesized budget
            res["Properties"]["WaitSeconds"] = budget
    assert bool(_hits(broken, dev_config)) == caught


def test_without_a_service_timeout_cloudformation_waits_3600_s(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    broken = copy.deepcopy(dev_templates)
    for res in broken[STACK]["Resources"].values():
        if res["Type"] == WAITS:
            del res["Properties"]["ServiceTimeout"]
    assert _hits(broken, dev_config) == []  # the 3300 s budget still fits the default hour
    for res in broken[STACK]["Resources"].values():
        if res["Type"] == WAITS:
            res["Properties"]["WaitSeconds"] = "3600"  # no time left for the last poll and the answer
    assert len(_hits(broken, dev_config)) == WAIT_COUNT


@pytest.mark.parametrize(
    ("retry", "seconds"),
    [
        ({"IntervalSeconds": 60, "MaxAttempts": 55, "BackoffRate": 1}, 3300),
        ({}, 1 + 2 + 4),  # the defaults: 1 s, 3 attempts, doubling
        (
            {"IntervalSeconds": 10, "MaxAttempts": 4, "BackoffRate": 3, "MaxDelaySeconds": 50},
            10 + 30 + 50 + 50,
        ),
    ],
)
def test_waiter_seconds_follow_step_functions_retry_rules(retry: dict[str, float], seconds: float) -> None:
    definition = {"States": {"poll": {"Type": "Task", "Retry": [retry]}, "done": {"Type": "Succeed"}}}
    assert waiter_seconds(definition) == seconds


def test_the_cnq_provisioners_waiter_is_judged_too(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The CNQ provisioner polls every 30 s up to storage.formation_timeout_minutes (50 in dev.yaml: 100 polls);
    120 polls are the 3600 s CloudFormation allows in all, so every CNQ custom resource of that provider is caught.
    """
    stack = "storage-us-west-2"
    broken = copy.deepcopy(dev_templates)
    [machine] = [
        r for r in broken[stack]["Resources"].values() if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    assert '"IntervalSeconds":30,"MaxAttempts":100' in parts[0]
    parts[0] = parts[0].replace('"MaxAttempts":100', '"MaxAttempts":120')
    cnq = {i for i, r in broken[stack]["Resources"].items() if r["Type"].startswith("Custom::Cnq")}
    assert cnq
    # The provisioner's handler ends each request within its WaitSeconds budget (50 minutes here), whatever the
    # retry count: only a budget past the hour is caught.
    assert _hits(broken, dev_config) == []
    for i in cnq:
        broken[stack]["Resources"][i]["Properties"]["WaitSeconds"] = "3600"
    assert set(_hits(broken, dev_config)) == {(stack, i) for i in cnq}


def _provider(kind: str, max_attempts: int, **props: Any) -> Template:
    """A hand-written Provider: a custom resource of `kind`, the framework's onEvent function naming its waiter
    and the user's functions by the environment variables aws-cdk-lib 2.275's provider-framework sets
    (consts.js), and a waiter retrying every 60 s without backoff `max_attempts` times."""
    definition = {
        "StartAt": "poll",
        "States": {
            "poll": {
                "Type": "Task",
                "Retry": [{"IntervalSeconds": 60, "MaxAttempts": max_attempts, "BackoffRate": 1}],
                "End": True,
            }
        },
    }
    variables = {
        "WAITER_STATE_MACHINE_ARN": {"Ref": "Waiter"},
        "USER_ON_EVENT_FUNCTION_ARN": {"Fn::GetAtt": ["OnEvent", "Arn"]},
        "USER_IS_COMPLETE_FUNCTION_ARN": {"Fn::GetAtt": ["IsComplete", "Arn"]},
    }
    body = {
        "Resources": {
            "Thing": {
                "Type": kind,
                "Properties": {"ServiceToken": {"Fn::GetAtt": ["Framework", "Arn"]}, **props},
            },
            "Framework": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"Environment": {"Variables": variables}},
            },
            "OnEvent": {"Type": "AWS::Lambda::Function", "Properties": {"Timeout": 60}},
            "IsComplete": {"Type": "AWS::Lambda::Function", "Properties": {}},
            "Waiter": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {"DefinitionString": json.dumps(definition)},
            },
        }
    }
    return Template("t", body)


@pytest.mark.parametrize("kind", ["AWS::CloudFormation::CustomResource", "Custom::Anything"])
@pytest.mark.parametrize(
    ("attempts", "props", "caught"),
    [
        # 60 s onEvent + 55 sleeps of 60 s + 56 runs of isComplete at Lambda's default 3 s = 3528 s < 3600 s.
        (55, {}, False),
        # 60 + 57 x 60 + 58 x 3 = 3654 s: past the 3600 s CloudFormation waits when ServiceTimeout is absent.
        (57, {}, True),
        # ServiceTimeout above 3600 does not extend the wait (1 to 3600 s), nor one only known at deploy time.
        (57, {"ServiceTimeout": "7200"}, True),
        (57, {"ServiceTimeout": {"Ref": "Timeout"}}, True),
        (55, {"ServiceTimeout": "3500"}, True),
        (55, {"ServiceTimeout": 3528}, True),  # giving up exactly when CloudFormation does is too late
        (55, {"ServiceTimeout": 3529}, False),
        # A handler that ends the request within its own budget waits no longer than that budget.
        (57, {"WaitSeconds": "3599"}, False),
        (57, {"WaitSeconds": "3600"}, True),
        (
            57,
            {"WaitSeconds": {"Ref": "Budget"}},
            True,
        ),  # unknown at synth: counted as the most CloudFormation allows
    ],
)
def test_a_hand_written_provider_is_judged_by_the_documented_numbers(
    dev_config: HubSpokeConfig, kind: str, attempts: int, props: dict[str, Any], caught: bool
) -> None:
    """The rule's arithmetic from the sources alone (module docstring): ServiceTimeout 1 to 3600 s, 3600 when
    absent (AWS::CloudFormation::CustomResource; both resource type spellings are custom resources); a Lambda
    function's Timeout 3 s when absent (AWS::Lambda::Function); a Step Functions retrier sleeps IntervalSeconds x
    BackoffRate^n per retry and runs the task once more than it retries."""
    found = [v.logical_id for v in check([_provider(kind, attempts, **props)], dev_config) if v.rule == RULE]
    assert found == (["Thing"] if caught else [])


@pytest.mark.parametrize(
    ("retries", "attempts"),
    [
        ([{}], 1 + 3),  # Step Functions' default MaxAttempts is 3
        ([{"MaxAttempts": 55}], 1 + 55),
        ([{"MaxAttempts": 2}, {"ErrorEquals": ["States.Timeout"]}], 1 + 2 + 3),  # every retrier of the state
        ([{"MaxAttempts": 0}], 1),  # 0: never retried
    ],
)
def test_waiter_attempts_follow_step_functions_retry_rules(
    retries: list[dict[str, Any]], attempts: int
) -> None:
    """A retried task runs once, then once per retry; MaxAttempts defaults to 3 and 0 means never retry (Step
    Functions developer guide, "Handling errors in Step Functions workflows"). A state without Retry is no poll."""
    definition = {"States": {"poll": {"Type": "Task", "Retry": retries}, "done": {"Type": "Succeed"}}}
    assert waiter_attempts(definition) == attempts


def test_the_fix_names_a_config_key_and_a_file_that_exist(dev_config: HubSpokeConfig) -> None:
    """The fix sends the user to `storage.formation_timeout_minutes` (a config key, in minutes) and
    to hubspoke/constructs/hyperpod/nodes_ready.py (the chained waits to copy); both must exist as spelled."""
    from pathlib import Path

    [fix] = {v.fix for v in check([_provider("Custom::Anything", 57)], dev_config) if v.rule == RULE}
    key = re.search(r"\bstorage\.(\w+) at most (\d+)\b", fix)
    assert key and key[1] in type(dev_config.hub.storage).model_fields, fix
    assert int(key[2]) < 60, "within the hour ServiceTimeout allows at most (3600 s)"
    [path] = re.findall(r"\bhubspoke/[\w/]+\.py\b", fix)
    assert (Path(__file__).resolve().parents[2] / path).is_file(), fix
    # The two ways out and the sources that bound them (docs/policy.md's), as written, case and all.
    said = f"\n{fix}\n"
    for words in (
        "\ngive the handler a wall-clock budget (WaitSeconds) under the resource's service_timeout",
        "or keep the Provider's totalTimeout plus every poll's run time",
        "(both at most an hour: AWS::CloudFormation::CustomResource ServiceTimeout; aws-cdk-lib Provider totalTimeout",
        "split a longer wait into chained resources",
        "nodes_ready.py does\n",
    ):
        assert words in said, (words, fix)
