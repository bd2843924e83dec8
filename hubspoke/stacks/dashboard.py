"""The environment's one dashboard stack, in the hub Region: every Region side by side, and the hub's own alarms."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from hubspoke import alarms
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.alarms import AlarmTopic
from hubspoke.constructs.dashboard import EnvironmentDashboard
from hubspoke.constructs.node_health import NodeHealth
from hubspoke.constructs.training_alarms import TRAINING_ALARMS
from hubspoke.stacks.base import PlannedStack
from hubspoke.topology import StackPlan, plan_stacks


class DashboardStack(PlannedStack):
    """One dashboard per environment and, when the hub trains, the hub's training alarms and the topic they notify.

    Example::

        stack = DashboardStack(stage, "dashboard-us-east-2", config=config, plan=plan)
        stack.dashboard.dashboard_name  # "hubspoke-dev"
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            plan=plan,
            purpose="the environment's dashboard and the hub's training alarms",
        )
        self.dashboard = EnvironmentDashboard(self, "Dashboard", config=config, plans=plan_stacks(config))
        # The hub has no Ops stack (a canary in the hub would only watch itself), so its training alarms live
        # here, the environment's one stack in the hub Region that is about operations.
        self.alarms: dict[str, cloudwatch.AlarmBase] = {}
        mine = [a for a in alarms.planned_alarms(config) if a.stack_id == plan.id]
        if mine:
            topic = AlarmTopic(
                self, "Alarms", config=config, purpose=f"hub {config.hub.region} operations", alarms=mine
            )
            health = [a for a in mine if a.key in alarms.NODE_HEALTH_ALARMS]
            if health:
                self.node_health = NodeHealth(
                    self, "NodeHealth", config=config, region=config.hub, topic=topic, planned=health
                )
                self.alarms.update(self.node_health.alarms)
            for planned in mine:
                if planned.key in alarms.NODE_HEALTH_ALARMS:
                    continue
                if planned.key not in TRAINING_ALARMS:
                    raise ValueError(f"the Dashboard stack has no definition of alarm {planned.key}")
                self.alarms[planned.key] = TRAINING_ALARMS[planned.key](
                    self, planned, topic=topic, config=config, region=config.hub
                )


def build_dashboard(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return DashboardStack(scope, plan.id, config=config, plan=plan)
