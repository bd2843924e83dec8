"""The IAM statements the shipped Shift-From user holds, read from a synth, for the fake Qumulo to grant a key.

The fake must not be told by hand what a key may do: what it evaluates is the policy the hub's Storage stack
would deploy (hubspoke/constructs/shift.py synthesized alone in a stack, partition `aws`), so a permission the
stack drops is a permission the fake's relationship check finds missing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any


def resolve(value: Any) -> Any:
    """A template value with Fn::Join of strings and {"Ref": "AWS::Partition"} turned into text (`aws`)."""
    if isinstance(value, list):
        return [resolve(v) for v in value]
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(p)) for p in parts)
    if value == {"Ref": "AWS::Partition"}:
        return "aws"
    if isinstance(value, dict):
        return {k: resolve(v) for k, v in value.items()}
    return value


def group_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    """The statements of every IAM policy attached to the template's one IAM group (the Shift user's)."""
    resources = template["Resources"]
    (group_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::IAM::Group"]
    policies = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": group_id} in r["Properties"].get("Groups", [])
    ]
    return [resolve(s) for p in policies for s in p["PolicyDocument"]["Statement"]]


@functools.cache
def _shipped(buckets: tuple[str, ...]) -> str:
    from aws_cdk import App, Environment, Stack
    from aws_cdk.assertions import Template

    from hubspoke.constructs.shift import ShiftFromUser

    stack = Stack(App(), "Hub", env=Environment(account="123456789012", region="us-east-2"))
    ShiftFromUser(stack, "Shift", environment="test", buckets=list(buckets))
    return json.dumps(group_statements(Template.from_stack(stack).to_json()))


def shipped_shift_statements(buckets: Sequence[str]) -> list[dict[str, Any]]:
    """The Shift user's statements for `buckets`, as the stack synthesizes them (a fresh copy per call)."""
    return list(json.loads(_shipped(tuple(buckets))))
