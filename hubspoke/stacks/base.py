"""The base of every hubspoke stack: name, account and Region come from its StackPlan, never typed twice."""

from __future__ import annotations

from aws_cdk import CfnOutput, Environment, Stack
from constructs import Construct

from hubspoke.outputs import Output
from hubspoke.topology import StackPlan


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
        """Emit `output` (hubspoke.outputs) under its contract name: the only way a value leaves a stack."""
        return CfnOutput(self, output.key(az_id), value=value, description=output.carries)
