"""A custom resource's provider waiter must give up before CloudFormation does: the rule, self-contained.

Facts it rests on:
- CloudFormation waits for a custom resource's answer for its ServiceTimeout, "an integer from 1 to 3600"
  seconds, 3600 when absent (AWS::CloudFormation::CustomResource, ServiceTimeout). Past it the resource fails
  with a timeout that says nothing of what the provider was waiting for.
- aws-cdk-lib's Provider (custom_resources, 2.275) polls isComplete from a Step Functions state machine whose
  ARN its onEvent function reads from the environment variable WAITER_STATE_MACHINE_ARN
  (custom-resources/lib/provider-framework/provider.js); the wait is that machine's Retry policy, with
  maxAttempts = totalTimeout / queryInterval and BackoffRate 1 (provider-framework/util.js,
  calculateRetryPolicy). Its totalTimeout doc: "The maximum timeout is 1 hour".
- A Retry's sleeps are IntervalSeconds x BackoffRate^n for n = 0 .. MaxAttempts-1, each capped at
  MaxDelaySeconds; the defaults are 1 s, 3 attempts and a rate of 2.0 (Step Functions developer guide,
  "Handling errors in Step Functions workflows", retrier fields).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.model import Template, Violation, referenced

SERVICE_TIMEOUT_MAX = 3600  # AWS::CloudFormation::CustomResource ServiceTimeout: 1 to 3600 seconds (default)
WAITER_ENV = "WAITER_STATE_MACHINE_ARN"  # aws-cdk-lib provider-framework consts.js


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
            wait = waiter_seconds(definition)
            if wait >= limit:
                yield Violation(
                    "HubSpoke-WaiterWithinServiceTimeout", t.path, logical_id,
                    f"its provider's waiter {machine_id} may poll for {wait:.0f} s, but CloudFormation fails the "
                    f"resource after {limit} s (ServiceTimeout, at most {SERVICE_TIMEOUT_MAX})",
                    "keep the Provider's totalTimeout a few minutes under the resource's service_timeout (both at "
                    "most an hour: AWS::CloudFormation::CustomResource ServiceTimeout; aws-cdk-lib Provider "
                    "totalTimeout; for CNQ, storage.formation_timeout_minutes at most 55); split a longer wait into "
                    "chained resources, as hubspoke/constructs/hyperpod/nodes_ready.py does",
                )  # fmt: skip
