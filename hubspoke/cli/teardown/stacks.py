"""The environment's CloudFormation stacks in teardown order, their live state, and their deletion one at a time.

boto3's DeleteStack per stack, in its own Region, rather than `cdk destroy`: it needs no synth (no jsii, no
Node.js, minutes saved on every rerun), works from the plan `hubspoke plan` prints (hubspoke.topology), reads
exactly which stacks still exist, so a rerun resumes where the last one stopped, and runs against moto in tests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, WaiterError

from hubspoke.cli.checks import Clients, error_code
from hubspoke.config import HubSpokeConfig
from hubspoke.topology import StackPlan, plan_stacks

# CloudFormation's StackDeleteComplete waiter polls DescribeStacks every 30 s (botocore cloudformation
# waiters-2.json); 240 polls give a stack 2 hours, past the HyperPod and CNQ deletes (ASSUMED: no source bounds
# them; a rerun keeps waiting where this one gave up).
POLL_SECONDS = 30
MAX_POLLS = 240


class TeardownStopped(Exception):
    """A step AWS refused or that did not finish: what happened, and what to do before running again."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.fix = fix


@dataclass(frozen=True)
class StackState:
    """One planned stack and what CloudFormation says of it now (None: it does not exist)."""

    plan: StackPlan
    stack_id: str | None
    status: str | None


def teardown_order(config: HubSpokeConfig, regions: set[str]) -> list[StackPlan]:
    """The stacks of the chosen Regions, last deployed first: the reverse of the order plan_stacks deploys in.

    Reversing a deploy order deletes every stack before the ones it depends on: spoke storage before the hub's,
    a spoke's Link before its network (docs/runbooks/teardown.md, "Why this order").
    """
    return [p for p in reversed(plan_stacks(config)) if p.region in regions]


def dataset_stacks(config: HubSpokeConfig, plans: list[StackPlan]) -> list[StackPlan]:
    """The hub's Storage stack and every stack it needs (its Network), in `plans`' order: the dataset's stacks.

    Once the hub's Storage stack is gone its retained buckets and volumes can never be attached again (Qumulo's
    CNQ guide, "Deleting an Existing Cluster"; docs/runbooks/teardown.md), so keeping the dataset means keeping
    these stacks standing.
    """
    by_id = {p.id: p for p in plan_stacks(config)}
    needed: set[str] = set()
    todo = [p.id for p in by_id.values() if p.kind == "storage" and p.region == config.hub.region]
    while todo:
        current = todo.pop()
        if current not in needed and current in by_id:
            needed.add(current)
            todo.extend(by_id[current].depends_on)
    return [p for p in plans if p.id in needed]


def describe(cfn: Any, name: str) -> dict[str, Any] | None:
    """DescribeStacks of a live stack by name; None when it does not exist.

    CloudFormation answers a name it has no live stack for with ValidationError "Stack with id <name> does not
    exist" (the StackDeleteComplete waiter counts that error as success: botocore waiters-2.json).
    """
    try:
        return dict(cfn.describe_stacks(StackName=name)["Stacks"][0])
    except ClientError as exc:
        if error_code(exc) == "ValidationError" and "does not exist" in str(exc):
            return None
        raise


def states(clients: Clients, plans: list[StackPlan]) -> list[StackState]:
    """Each planned stack with its live ID and status (None for one that does not exist)."""
    found = []
    for plan in plans:
        live = describe(clients("cloudformation", plan.region), plan.name)
        if live is None:
            found.append(StackState(plan, None, None))
        else:
            found.append(StackState(plan, str(live["StackId"]), str(live["StackStatus"])))
    return found


def retained_in(cfn: Any, stack_id: str) -> dict[str, tuple[str, bool]]:
    """Physical ID -> (stack name, whether its DeletionPolicy keeps it) for every resource of a live stack.

    ListStackResources gives each resource's PhysicalResourceId and LogicalResourceId; GetTemplate the template
    whose DeletionPolicy says whether CloudFormation keeps it when the stack goes (CloudFormation User Guide,
    "DeletionPolicy attribute": Retain keeps it; RetainExceptOnCreate keeps it too, except when the create that
    made it rolls back). A template that is not JSON is read as keeping everything: the safe side.
    """
    body = cfn.get_template(StackName=stack_id, TemplateStage="Original")["TemplateBody"]
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = {}
    resources = body.get("Resources", {}) if isinstance(body, dict) else {}
    name = stack_id.split("/")[1] if stack_id.count("/") >= 2 else stack_id
    found: dict[str, tuple[str, bool]] = {}
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack_id):
        for r in page["StackResourceSummaries"]:
            policy = resources.get(r["LogicalResourceId"], {}).get("DeletionPolicy")
            keeps = not resources or policy in ("Retain", "RetainExceptOnCreate")
            if r.get("PhysicalResourceId"):
                found[str(r["PhysicalResourceId"])] = (name, keeps)
    return found


def delete(
    clients: Clients,
    state: StackState,
    *,
    say: Callable[[str], None],
    poll_seconds: int = POLL_SECONDS,
    max_polls: int = MAX_POLLS,
) -> None:
    """Delete one stack and wait until CloudFormation reports it gone; TeardownStopped when it cannot."""
    plan = state.plan
    cfn = clients("cloudformation", plan.region)
    live = describe(cfn, plan.name)
    if live is None:
        say(f"  {plan.name} ({plan.region}): already gone")
        return
    stack_id = str(live["StackId"])
    say(f"  {plan.name} ({plan.region}): deleting (was {live['StackStatus']}) ...")
    try:
        # DeleteStack on a stack already being deleted, or left DELETE_FAILED, starts or retries the delete.
        cfn.delete_stack(StackName=stack_id)
        cfn.get_waiter("stack_delete_complete").wait(
            StackName=stack_id, WaiterConfig={"Delay": poll_seconds, "MaxAttempts": max_polls}
        )
    except WaiterError as exc:
        reason = _failure(cfn, stack_id) or str(exc)
        raise TeardownStopped(
            f"{plan.name} ({plan.region}) was not deleted: {reason}",
            "fix what it names (the stack's Events tab in the CloudFormation console shows each step), then run "
            "the same command again: it continues with this stack",
        ) from None
    except ClientError as exc:
        raise TeardownStopped(
            f"{plan.name} ({plan.region}): CloudFormation refused DeleteStack: {exc}",
            "fix what it names, then run the same command again",
        ) from None
    say(f"  {plan.name} ({plan.region}): deleted")


def _failure(cfn: Any, stack_id: str) -> str | None:
    """The newest DELETE_FAILED event's resource and reason (DescribeStackEvents lists newest first)."""
    try:
        latest = cfn.describe_stacks(StackName=stack_id)["Stacks"][0]
        status = f"status {latest['StackStatus']}"
        for page in cfn.get_paginator("describe_stack_events").paginate(StackName=stack_id):
            for event in page["StackEvents"]:
                if event.get("ResourceStatus") == "DELETE_FAILED" and event.get("LogicalResourceId"):
                    return f"{status}; {event['LogicalResourceId']}: {event.get('ResourceStatusReason', '')}"
            break  # only the newest page: older events belong to earlier attempts
        return status
    except ClientError:
        return None
