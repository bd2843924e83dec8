"""The Ops stack of one spoke: hub-outage canary, cache and GPU alarms, and the encrypted topic that pages people."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Fn, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from hubspoke import compute_metrics, training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig, SpokeConfig
from hubspoke.constructs.canary.infrastructure import HubCanary, runtime_code
from hubspoke.constructs.canary.runtime import metrics as canary_metrics
from hubspoke.constructs.canary.traffic import (
    INTER_REGION_IN,
    NFS_READ_BYTES_LOGGED,
    TrafficMetrics,
    traffic_metric,
)
from hubspoke.constructs.keys import retained_key
from hubspoke.policy.acks import acknowledge
from hubspoke.ports import CROSS_REGION_PORTS
from hubspoke.stacks.base import PlannedStack
from hubspoke.stacks.network import NetworkStack, peer_role_name
from hubspoke.stacks.storage import ADMIN_SECRET_OUTPUT, FLOATING_IPS_OUTPUT, REST_ADDRESS_OUTPUT
from hubspoke.topology import StackPlan, cross_account, stack_name

# What the canary probes on the hub: NFS (what the spoke's misses and clients need) and the portal.
CANARY_PORTS: tuple[int, ...] = tuple(
    p.port for p in CROSS_REGION_PORTS if p.protocol == "tcp" and p.port in (2049, 3713)
)
# Alarm names are `<stack name>-<one of these>`: the dashboard and the runbooks name them without a reference.
HUB_UNREACHABLE = "hub-unreachable"
PORTAL_NOT_ACTIVE = "portal-not-active"
CACHE_HIT_RATIO_LOW = "cache-hit-ratio-low"
GPU_UTILIZATION_LOW = "gpu-utilization-low"
HUB_UNREACHABLE_MINUTES = 3
PORTAL_NOT_ACTIVE_MINUTES = 3
GPU_LOW_MINUTES = 10
# Flow logs arrive in up-to-10-minute aggregates: judge the hit ratio over 5-minute periods, three in a row,
# so the first minutes of a cold run (the reference warm-up lasts about 150 batches) do not page anyone.
HIT_RATIO_PERIOD_MINUTES = 5
HIT_RATIO_PERIODS = 3


def gpu_utilization(config: HubSpokeConfig, region: RegionConfig, *, period: Duration) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=compute_metrics.NAMESPACE,
        metric_name=compute_metrics.NODE_GPU_UTILIZATION,
        dimensions_map=dict(
            zip(
                compute_metrics.CLUSTER_DIMENSIONS,
                (compute_metrics.eks_cluster_name(config, region),),
                strict=True,
            )
        ),
        statistic="Average",
        period=period,
        region=region.region,
    )


def samples_per_second(
    config: HubSpokeConfig, region: RegionConfig, *, period: Duration
) -> cloudwatch.Metric:
    """The job's throughput: rank 0 reports a rate every few steps, so a period's value is their average."""
    return cloudwatch.Metric(
        namespace=training_metrics.NAMESPACE,
        metric_name=training_metrics.SAMPLES_PER_SECOND,
        dimensions_map=dict(
            zip(training_metrics.DIMENSIONS, (config.environment, region.region), strict=True)
        ),
        statistic="Average",
        period=period,
        region=region.region,
    )


def gpu_while_training(config: HubSpokeConfig, region: RegionConfig) -> cloudwatch.MathExpression:
    """GPU utilization only in minutes where the training job reports samples/s: idle clusters do not alarm."""
    period = Duration.minutes(1)
    return cloudwatch.MathExpression(
        expression="IF(sps > 0, gpu)",
        using_metrics={
            "gpu": gpu_utilization(config, region, period=period),
            "sps": samples_per_second(config, region, period=period),
        },
        label=f"GPU utilization while training, {region.region} (%)",
        period=period,
    )


def hit_ratio(*, environment: str, region: str) -> cloudwatch.MathExpression:
    """1 - bytes from the hub / NFS bytes served (flow logs count each NFS byte twice: see traffic.py)."""
    period = HIT_RATIO_PERIOD_MINUTES
    return cloudwatch.MathExpression(
        expression="IF(nfs > 0, 1 - hub / (nfs / 2))",
        using_metrics={
            "hub": traffic_metric(
                INTER_REGION_IN, environment=environment, region=region, period_minutes=period
            ),
            "nfs": traffic_metric(
                NFS_READ_BYTES_LOGGED, environment=environment, region=region, period_minutes=period
            ),
        },
        label=f"derived cache hit ratio, {region}",
        period=Duration.minutes(period),
    )


@dataclass(frozen=True)
class CanaryTargets:
    """Where the canary looks: the hub's floating IPs, and the spoke's REST API with its admin secret."""

    hub_addresses: str
    spoke_rest_address: str | None
    admin_secret_arn: str | None


def storage_targets(config: HubSpokeConfig, spoke: SpokeConfig) -> CanaryTargets:
    """Read from the Storage stacks' outputs (hub across Regions, spoke in-Region): weak references only."""
    hub = config.hub
    hub_storage = stack_name(config, "storage", hub.region)
    spoke_storage = stack_name(config, "storage", spoke.region)
    # Across accounts, the spoke reads hub outputs through the hub's peer-access role (stacks/link.py).
    role_arn = (
        f"arn:aws:iam::{config.account_of(hub)}:role/{peer_role_name(config, spoke)}"
        if cross_account(config, spoke)
        else None
    )
    return CanaryTargets(
        hub_addresses=Fn.get_stack_output(hub_storage, FLOATING_IPS_OUTPUT, hub.region, role_arn),
        spoke_rest_address=Fn.get_stack_output(spoke_storage, REST_ADDRESS_OUTPUT),
        admin_secret_arn=Fn.get_stack_output(spoke_storage, ADMIN_SECRET_OUTPUT),
    )


class AlarmTopic(Construct):
    """An SNS topic encrypted with its own customer key, subscribed by config.ops.alarm_emails."""

    def __init__(self, scope: Construct, construct_id: str, *, config: HubSpokeConfig, purpose: str) -> None:
        super().__init__(scope, construct_id)
        self.key = retained_key(
            self, "Key", description=f"hubspoke {config.environment}: encrypts the {purpose} alarm topic"
        )
        # CloudWatch publishes alarm notifications into the encrypted topic.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"hubspoke {config.environment} {purpose}",
            master_key=self.key,
            enforce_ssl=True,
        )
        for email in config.ops.alarm_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        self.action = actions.SnsAction(self.topic)

    def notify(self, alarm: cloudwatch.Alarm) -> cloudwatch.Alarm:
        alarm.add_alarm_action(self.action)
        alarm.add_ok_action(self.action)
        return alarm


class OpsStack(PlannedStack):
    """Per spoke: the hub canary, alarms on hub, portal, cache and GPUs, and the topic they notify.

    Example::

        ops = OpsStack(stage, "ops-us-west-2", config=config, spoke=config.spokes[0], plan=plan,
                       network=built["network-us-west-2"], targets=storage_targets(config, config.spokes[0]))
        ops.alarms["hub-unreachable"]
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HubSpokeConfig,
        spoke: SpokeConfig,
        plan: StackPlan,
        network: NetworkStack,
        targets: CanaryTargets,
    ) -> None:
        super().__init__(
            scope, construct_id, plan=plan, purpose=f"hub canary and alarms of spoke {spoke.region}"
        )
        self.spoke = spoke
        self.topic = AlarmTopic(self, "Alarms", config=config, purpose=f"{spoke.region} operations")
        self.canary = HubCanary(
            self,
            "HubCanary",
            vpc=network.vpc,
            subnets=network.private_subnets,
            environment=config.environment,
            spoke=spoke.region,
            hub_addresses=targets.hub_addresses,
            hub_cidrs=config.hub.all_cidrs,
            ports=CANARY_PORTS,
            code=runtime_code(),
            spoke_rest_address=targets.spoke_rest_address,
            admin_secret_arn=targets.admin_secret_arn,
        )
        flow_logs: logs.ILogGroup = network.node.find_child("Network").flow_log_group  # type: ignore[attr-defined]
        self.traffic = TrafficMetrics(
            self,
            "Traffic",
            flow_log_group=flow_logs,
            environment=config.environment,
            region=spoke.region,
            own_cidrs=spoke.all_cidrs,
            hub_cidrs=config.hub.all_cidrs,
        )
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        minute = Duration.minutes(1)
        self._alarm(
            HUB_UNREACHABLE,
            self.canary.metric(canary_metrics.HUB_REACHABLE, statistic="Maximum", period=minute),
            threshold=1,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            periods=HUB_UNREACHABLE_MINUTES,
            # Silence from the canary is as bad as a failed probe: the hub's state is unknown.
            missing=cloudwatch.TreatMissingData.BREACHING,
            description=f"The hub CNQ ({config.hub.region}) has not answered on TCP "
            f"{'/'.join(map(str, CANARY_PORTS))} from {spoke.region} for {HUB_UNREACHABLE_MINUTES} minutes "
            "(or the canary stopped reporting). Cache hits keep serving; misses stall. "
            "Runbook: docs/runbooks/hub-outage.md",
        )
        self._alarm(
            PORTAL_NOT_ACTIVE,
            self.canary.metric(canary_metrics.PORTAL_STATUS, statistic="Minimum", period=minute),
            threshold=canary_metrics.PORTAL_STATUS_ACTIVE,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            periods=PORTAL_NOT_ACTIVE_MINUTES,
            missing=cloudwatch.TreatMissingData.BREACHING,
            description=f"The spoke portal of {spoke.region} is not ACTIVE (2 = ACTIVE, 1 = DEGRADED, "
            "0 = INACTIVE, -1 = unreadable). Runbook: docs/runbooks/hub-outage.md",
        )
        if spoke.storage.enabled:
            self._alarm(
                CACHE_HIT_RATIO_LOW,
                hit_ratio(environment=config.environment, region=spoke.region),
                threshold=config.ops.cache_hit_ratio_floor,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                periods=HIT_RATIO_PERIODS,
                missing=cloudwatch.TreatMissingData.NOT_BREACHING,
                description=f"Derived cache hit ratio of {spoke.region} below {config.ops.cache_hit_ratio_floor} "
                f"for {HIT_RATIO_PERIODS * HIT_RATIO_PERIOD_MINUTES} minutes while clients read. "
                "Runbook: docs/runbooks/cache-warm-up.md",
            )
        if spoke.compute.enabled:
            self._alarm(
                GPU_UTILIZATION_LOW,
                gpu_while_training(config, spoke),
                threshold=config.ops.gpu_utilization_floor_percent,
                comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                periods=GPU_LOW_MINUTES,
                missing=cloudwatch.TreatMissingData.NOT_BREACHING,
                description=f"GPU utilization in {spoke.region} below {config.ops.gpu_utilization_floor_percent} % "
                f"for {GPU_LOW_MINUTES} minutes while the training job reports samples/s: the loader is "
                "starving, usually a cold or evicted cache. Runbook: docs/runbooks/cache-warm-up.md",
            )
        acknowledge(
            self.canary.role,
            "AwsSolutions-IAM5",
            reason="Lambda VPC networking (ec2:CreateNetworkInterface and friends) has no resource-level "
            "permissions; the role's other grants name the log group and the one secret.",
            findings=["Resource::*"],
        )

    def _alarm(
        self,
        name: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        periods: int,
        missing: cloudwatch.TreatMissingData,
        description: str,
    ) -> None:
        alarm = cloudwatch.Alarm(
            self,
            "".join(p.capitalize() for p in name.split("-")),
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            treat_missing_data=missing,
            alarm_name=f"{self.stack_name}-{name}",
            alarm_description=description,
        )
        self.alarms[name] = self.topic.notify(alarm)


def build_ops(scope: Construct, plan: StackPlan, *, config: HubSpokeConfig, built: dict[str, Stack]) -> Stack:
    spoke = config.spoke(plan.region)
    network = built[f"network-{plan.region}"]
    assert isinstance(network, NetworkStack)
    return OpsStack(
        scope,
        plan.id,
        config=config,
        spoke=spoke,
        plan=plan,
        network=network,
        targets=storage_targets(config, spoke),
    )
