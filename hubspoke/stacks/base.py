"""The base of every hubspoke stack: name, account and Region come from its StackPlan, never typed twice."""

from __future__ import annotations

from aws_cdk import Environment, Stack
from constructs import Construct

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
