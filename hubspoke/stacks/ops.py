"""The Ops stack of one spoke: hub-outage canary, training and cache alarms, and the encrypted topic that pages people."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from hubspoke import alarms
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.alarms import (
    AlarmTopic,
    cache_hit_ratio_below_floor,
    cache_hit_ratio_low,
    canary_failing,
    dataset_not_fully_cached,
    hub_probes_failing,
    hub_unreachable,
    portal_not_active,
    portal_probes_not_active,
)
from hubspoke.constructs.canary.infrastructure import HubCanary, runtime_code
from hubspoke.constructs.canary.traffic import TrafficMetrics
from hubspoke.constructs.node_health import NodeHealth
from hubspoke.constructs.training_alarms import TRAINING_ALARMS
from hubspoke.policy.acks import acknowledge
from hubspoke.ports import NFS, QUMULO_PORTAL
from hubspoke.stacks.base import PlannedStack, sibling
from hubspoke.stacks.compute import local_floating_ips
from hubspoke.stacks.storage import StorageStack
from hubspoke.stacks.wiring import NetworkView
from hubspoke.topology import StackPlan

# What the canary probes on the hub: NFS (what the spoke's misses and clients need) and the portal.
CANARY_PORTS: tuple[int, ...] = (NFS, QUMULO_PORTAL)


class OpsStack(PlannedStack):
    """Per spoke: the hub canary, alarms on hub, portal, training and cache, and the topic they notify.

    Example::

        ops = OpsStack(stage, "ops-us-west-2", config=config, plan=plan)
        ops.alarms["hub-unreachable-page"]
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, plan: StackPlan
    ) -> None:
        spoke = config.spoke(plan.region)
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"hub canary and alarms of spoke {spoke.region}"
        )
        self.spoke = spoke
        network = NetworkView(self, "Network", stage=scope, config=config, region=spoke.region)
        hub_storage = sibling(scope, StorageStack, "storage", config.hub.region)
        own_storage = sibling(scope, StorageStack, "storage", spoke.region)
        mine = [a for a in alarms.planned_alarms(config) if a.stack_id == plan.id]
        self.topic = AlarmTopic(
            self, "Alarms", config=config, purpose=f"{spoke.region} operations", alarms=mine
        )
        self.canary = HubCanary(
            self,
            "HubCanary",
            vpc=network.vpc,
            subnets=network.private_subnets,
            environment=config.environment,
            spoke=spoke.region,
            hub_addresses=hub_storage.cluster.floating_ips_joined,
            hub_cidrs=config.hub.all_cidrs,
            ports=CANARY_PORTS,
            code=runtime_code(),
            # The first floating IP, as the RestAddress output (cfn-lint refuses Fn::Split over Fn::GetStackOutput).
            spoke_rest_address=local_floating_ips(own_storage.cluster.floating_ips_joined)[0],
            admin_secret_arn=own_storage.cluster.admin_secret.secret_arn,
            reserved_concurrency=1 if config.ops.reserve_canary_concurrency else None,
        )
        self.traffic = TrafficMetrics(
            self,
            "Traffic",
            flow_log_group=network.flow_log_group,
            environment=config.environment,
            region=spoke.region,
            own_cidrs=spoke.all_cidrs,
            hub_cidrs=config.hub.all_cidrs,
        )
        self.alarms: dict[str, cloudwatch.AlarmBase] = {}
        for planned in mine:
            alarm: cloudwatch.AlarmBase
            if planned.key == alarms.CANARY_FAILING:
                alarm = canary_failing(self, planned, topic=self.topic, canary=self.canary)
            elif planned.key == alarms.HUB_PROBES_FAILING:
                alarm = hub_probes_failing(
                    self, planned, topic=self.topic, canary=self.canary, hub_region=config.hub.region
                )
            elif planned.key == alarms.HUB_UNREACHABLE:
                alarm = hub_unreachable(
                    self,
                    planned,
                    topic=self.topic,
                    probes=self.alarms[alarms.HUB_PROBES_FAILING],
                    hub_region=config.hub.region,
                )
            elif planned.key == alarms.PORTAL_PROBES_NOT_ACTIVE:
                alarm = portal_probes_not_active(self, planned, topic=self.topic, canary=self.canary)
            elif planned.key == alarms.PORTAL_NOT_ACTIVE:
                alarm = portal_not_active(
                    self,
                    planned,
                    topic=self.topic,
                    probes=self.alarms[alarms.PORTAL_PROBES_NOT_ACTIVE],
                )
            elif planned.key in alarms.NODE_HEALTH_ALARMS:
                continue  # defined together by NodeHealth, below
            elif planned.key in TRAINING_ALARMS:
                alarm = TRAINING_ALARMS[planned.key](
                    self, planned, topic=self.topic, config=config, region=spoke
                )
            elif planned.key == alarms.CACHE_HIT_RATIO_BELOW_FLOOR:
                alarm = cache_hit_ratio_below_floor(self, planned, topic=self.topic, config=config)
            elif planned.key == alarms.DATASET_NOT_FULLY_CACHED:
                alarm = dataset_not_fully_cached(self, planned, topic=self.topic, config=config, region=spoke)
            elif planned.key == alarms.CACHE_HIT_RATIO_LOW:
                alarm = cache_hit_ratio_low(
                    self,
                    planned,
                    topic=self.topic,
                    ratio=self.alarms[alarms.CACHE_HIT_RATIO_BELOW_FLOOR],
                    throughput=self.alarms[alarms.TRAINING_THROUGHPUT_LOW],
                    cold=self.alarms[alarms.DATASET_NOT_FULLY_CACHED],
                )
            else:
                raise ValueError(f"the Ops stack has no definition of alarm {planned.key}")
            self.alarms[planned.key] = alarm
        health = [a for a in mine if a.key in alarms.NODE_HEALTH_ALARMS]
        if health:
            self.node_health = NodeHealth(
                self, "NodeHealth", config=config, region=spoke, topic=self.topic, planned=health
            )
            self.alarms.update(self.node_health.alarms)
        acknowledge(
            self.canary.role,
            "AwsSolutions-IAM5",
            reason="Lambda VPC networking (ec2:CreateNetworkInterface and friends) has no resource-level "
            "permissions; the role's other grants name the log group and the one secret.",
            findings=["Resource::*"],
        )
        acknowledge(
            self.canary.role,
            "CKV_AWS_111",
            reason="Lambda VPC networking (ec2:CreateNetworkInterface and friends) has no resource-level "
            "permissions (Lambda Developer Guide, 'Giving Lambda functions access to a VPC'); nothing else is "
            "granted on '*'.",
            resource_types=["AWS::IAM::Policy"],
        )


def build_ops(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig) -> Stack:
    return OpsStack(scope, plan.id, config=config, plan=plan)
