"""The base of every hubspoke stack: name, account and Region come from its StackPlan, never typed twice."""

from __future__ import annotations

from typing import TypeVar

from aws_cdk import CfnOutput, Environment, Stack
from constructs import Construct

from hubspoke.outputs import Output
from hubspoke.topology import StackKind, StackPlan, stack_id

S = TypeVar("S", bound=Stack)


class PlannedStack(Stack):
    """A stack deployed where hubspoke.topology planned it, described for the people who read templates.

    Example::

        class LinkStack(PlannedStack):
            def __init__(self, scope, construct_id, *, config, plan):
                super().__init__(scope, construct_id, plan=plan, purpose="hub-side routes for one spoke")
    """

    def __init__(self, scope: Construct, construct_id: str, *, plan: StackPlan, purpose: str) -> None:
        super().__init__(
            scope,
            construct_id,
            stack_name=plan.name,
            env=Environment(account=plan.account, region=plan.region),
            description=f"hubspoke {plan.environment}: {purpose}",
        )
        self.plan = plan

    def publish(self, output: Output, value: str, az_id: str | None = None) -> CfnOutput:
        """Emit `output` (hubspoke.outputs) under its contract name, for the CLI and operators to read.

        Stacks never read these: a stack uses another stack's attribute and CDK makes the weak reference
        (Fn::GetStackOutput of an output of its own; aws-cdk-lib 2.275 README, "Reference strength").
        """
        return CfnOutput(self, output.key(az_id), value=value, description=output.carries)


def sibling(scope: Construct, cls: type[S], kind: StackKind, region_or_spoke: str) -> S:
    """The stack `stack_id(kind, region_or_spoke)` of the same Stage, built before `scope`'s stack (topology order)."""
    found = scope.node.try_find_child(stack_id(kind, region_or_spoke))
    if not isinstance(found, cls):
        raise ValueError(
            f"{scope.node.path} reads stack {stack_id(kind, region_or_spoke)}, not built before it"
        )
    return found
