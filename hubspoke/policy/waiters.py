"""A custom resource's provider waiter must give up before CloudFormation does: the rule, self-contained.

CloudFormation waits up to ServiceTimeout, 1 to 3600 s, 3600 when absent
(AWS::CloudFormation::CustomResource), then fails saying nothing of what was awaited. The Provider
(aws-cdk-lib 2.275 custom_resources, totalTimeout at most 1 hour; provider.js WAITER_STATE_MACHINE_ARN,
util.js calculateRetryPolicy) waits by a Step Functions Retry with maxAttempts = totalTimeout / queryInterval
and BackoffRate 1; sleeps are IntervalSeconds x BackoffRate^n capped at MaxDelaySeconds, defaults 1 s, 3 and
2.0 (Step Functions developer guide, "Handling errors in Step Functions workflows"). Each attempt also runs
the user's isComplete (USER_IS_COMPLETE_FUNCTION_ARN, after onEvent's USER_ON_EVENT_FUNCTION_ARN) for up to
its Timeout (3 s when absent, AWS::Lambda::Function Timeout). A resource carrying WaitSeconds is ours: its
handler ends the request within that many seconds of onEvent (the CNQ provisioner's is_complete, nodes-ready's
budget_left), so its wait is the smaller.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.model import Template, Violation, referenced

SERVICE_TIMEOUT_MAX = 3600  # AWS::CloudFormation::CustomResource ServiceTimeout: 1 to 3600 seconds (default)
WAITER_ENV = "WAITER_STATE_MACHINE_ARN"  # aws-cdk-lib provider-framework consts.js
USER_ON_EVENT_ENV = "USER_ON_EVENT_FUNCTION_ARN"  # the same file
USER_IS_COMPLETE_ENV = "USER_IS_COMPLETE_FUNCTION_ARN"
LAMBDA_DEFAULT_TIMEOUT = 3  # AWS::Lambda::Function Timeout: 3 seconds when absent
BUDGET_PROPERTY = "WaitSeconds"


def _seconds(value: Any) -> int:
    """A literal ServiceTimeout; one resolved at deploy time can be no more than the maximum."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return SERVICE_TIMEOUT_MAX


def _definition(machine: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The state machine's definition; references inside its strings (task ARNs) read as empty."""
    text = machine.get("Properties", {}).get("DefinitionString")
    if isinstance(text, Mapping) and "Fn::Join" in text:
        text = "".join(p for p in text["Fn::Join"][1] if isinstance(p, str))
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def waiter_seconds(definition: Mapping[str, Any]) -> float:
    """The longest a machine's retriers can sleep in all: every Retry of every state, each to its last attempt."""
    total = 0.0
    for state in definition.get("States", {}).values():
        for retry in state.get("Retry", []):
            interval, rate = float(retry.get("IntervalSeconds", 1)), float(retry.get("BackoffRate", 2.0))
            cap = float(retry.get("MaxDelaySeconds", float("inf")))
            total += sum(min(interval * rate**n, cap) for n in range(int(retry.get("MaxAttempts", 3))))
    return total


def waiter_attempts(definition: Mapping[str, Any]) -> int:
    """How many times a machine's retried tasks can run: a first attempt, then one per retry."""
    return sum(
        1 + sum(int(r.get("MaxAttempts", 3)) for r in state.get("Retry", []))
        for state in definition.get("States", {}).values()
        if state.get("Retry")
    )


def _timeout(resources: Mapping[str, Any], arn: Any) -> float:
    """The Timeout of the function an ARN reference points to (Lambda's default when absent)."""
    function = resources.get(referenced(arn) or "", {})
    return _number(function.get("Properties", {}).get("Timeout"), LAMBDA_DEFAULT_TIMEOUT)


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float(default)


def worst_case_seconds(
    definition: Mapping[str, Any], *, on_event: float, is_complete: float, budget: float | None
) -> float:
    """The longest a provider can take to answer: onEvent, then every attempt's run and every retry's sleep;
    or the handler's own budget when it holds one (WaitSeconds) and that is shorter."""
    polled = on_event + waiter_seconds(definition) + waiter_attempts(definition) * is_complete
    return polled if budget is None else min(polled, budget)


def custom_resource_waits_within_service_timeout(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-WaiterWithinServiceTimeout: a custom resource's provider waiter gives up before CloudFormation."""
    for t in templates:
        resources = t.body.get("Resources", {})
        for logical_id, res in resources.items():
            kind = str(res.get("Type", ""))
            if not (kind.startswith("Custom::") or kind == "AWS::CloudFormation::CustomResource"):
                continue
            props = res.get("Properties", {})
            handler = resources.get(referenced(props.get("ServiceToken")) or "", {})
            env = handler.get("Properties", {}).get("Environment", {}).get("Variables", {})
            machine_id = referenced(env.get(WAITER_ENV))
            definition = _definition(resources.get(machine_id or "", {}))
            if definition is None:
                continue  # no waiter: the handler answers within its own Lambda timeout
            limit = min(_seconds(props.get("ServiceTimeout", SERVICE_TIMEOUT_MAX)), SERVICE_TIMEOUT_MAX)
            budget = props.get(BUDGET_PROPERTY)
            wait = worst_case_seconds(
                definition,
                on_event=_timeout(resources, env.get(USER_ON_EVENT_ENV)),
                is_complete=_timeout(resources, env.get(USER_IS_COMPLETE_ENV)),
                budget=None if budget is None else _number(budget, SERVICE_TIMEOUT_MAX),
            )
            if wait >= limit:
                yield Violation(
                    "HubSpoke-WaiterWithinServiceTimeout", t.path, logical_id,
                    f"its provider {machine_id} may take {wait:.0f} s to answer (sleeps plus each poll's run "
                    f"time, or its {BUDGET_PROPERTY} budget), but CloudFormation fails the "
                    f"resource after {limit} s (ServiceTimeout, at most {SERVICE_TIMEOUT_MAX})",
                    "give the handler a wall-clock budget (WaitSeconds) under the resource's service_timeout, or "
                    "keep the Provider's totalTimeout plus every poll's run time under it (both at most an hour: "
                    "AWS::CloudFormation::CustomResource ServiceTimeout; aws-cdk-lib Provider totalTimeout; for CNQ, storage.formation_timeout_minutes at most 55); split a longer wait into "
                    "chained resources, as hubspoke/constructs/hyperpod/nodes_ready.py does",
                )  # fmt: skip
