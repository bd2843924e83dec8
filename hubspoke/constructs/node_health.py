"""Node and fabric health of a Region's HyperPod cluster: the alarms a person must act on, and HyperPod's own
node-health events delivered to the alarm topic as they happen.

Publishers: the CloudWatch Observability EKS add-on the Compute stack installs (Container Insights with enhanced
observability, hubspoke/compute_metrics.py), the training job (CheckpointAgeSeconds, hubspoke/training_metrics.py)
and EventBridge (SageMaker's node-health events; the rule's own AWS/Events metrics). What each alarm catches and
what to do: docs/operations.md, "Node and fabric health", and the runbook each alarm names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from constructs import Construct

from hubspoke import alarms, compute_metrics, training_metrics
from hubspoke.alarms import PlannedAlarm
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.alarms import AlarmTopic
from hubspoke.constructs.metrics import gpu_utilization, training_metric
from hubspoke.k8s.names import NAMESPACE as TRAINING_NAMESPACE
from hubspoke.names import eks_cluster_name, hyperpod_cluster_name

MINUTE = Duration.minutes(1)
# Choices, not sources (docs/operations.md says each): GPUs that running pods hold are "idle" under 5 % for 20
# minutes in a row; the reference job builds its model, loads a checkpoint and starts NCCL well inside that.
GPU_IDLE_PERCENT = 5
GPU_IDLE_MINUTES = 20
# The reference job checkpoints every 500 steps of about 1.1 s (hubspoke/k8s/job.py, docs/design.md §1): about
# 9 minutes. An hour leaves room for a job configured six times sparser; older than that, a failure loses more
# work than anyone planned.
CHECKPOINT_MAX_AGE_MINUTES = 60
CHECKPOINT_OLD_MINUTES = 3
# ASSUMED: no AWS or EFA source says what drop rate a healthy EFA device shows under NCCL; received packets the
# device drops mean no receive buffer was posted or the fabric misbehaves. One packet a second on the worst device,
# in 5 of 10 minutes, is hubspoke's choice (docs/operations.md: raise it if a healthy job trips it).
EFA_DROPS_PER_SECOND = 1.0
EFA_WINDOW_MINUTES = 10
EFA_BREACHING_MINUTES = 5
# Findings this often a day (each reboots or replaces a node: node recovery Automatic) mean a cause beyond one
# instance. ASSUMED: one finding is one event, though SageMaker "might send multiple events for each state
# change" (SageMaker Developer Guide, "Events that Amazon SageMaker AI sends to Amazon EventBridge").
UNHEALTHY_EVENTS_PER_DAY = 3
DAY = Duration.days(1)
# "Each rule can have up to five (5) targets associated with it at one time" (botocore events service-2.json,
# PutTargets; EventBridge User Guide, "Amazon EventBridge quotas").
RULE_TARGETS_MAX = 5

# SageMaker Developer Guide, "Events that Amazon SageMaker AI sends to Amazon EventBridge", "SageMaker
# HyperPod cluster node health": sent on unhealthy nodes and on recovery; only the first needs a person.
NODE_HEALTH_SOURCE = "aws.sagemaker"
NODE_HEALTH_DETAIL_TYPE = "SageMaker HyperPod Cluster Node Health Event"
UNHEALTHY = (
    "Unhealthy"  # the documented example's HealthStatus; its healthy counterpart is not shown (ASSUMED)
)


def cluster_metric(
    config: HubSpokeConfig, region: RegionConfig, name: str, *, statistic: str, period: Duration = MINUTE
) -> cloudwatch.Metric:
    """A Container Insights metric of the Region's EKS cluster, the [ClusterName] series (compute_metrics)."""
    return cloudwatch.Metric(
        namespace=compute_metrics.NAMESPACE,
        metric_name=name,
        dimensions_map=dict(
            zip(compute_metrics.CLUSTER_DIMENSIONS, (eks_cluster_name(config, region),), strict=True)
        ),
        statistic=statistic,
        period=period,
        region=region.region,
    )


def gpus_idle_while_held(config: HubSpokeConfig, region: RegionConfig) -> cloudwatch.MathExpression:
    """The held GPUs' utilization in the minutes where running pods hold GPUs and GPUs reported: a job is expected
    there."""
    # Both guards are false where a series has no point (hubspoke/constructs/metrics.py, presence guards). A
    # GPU no pod holds computes nothing, so the held GPUs' average is the cluster's x node_gpu_limit /
    # node_gpu_usage_total (ASSUMED: each node reports both equally often): one of 16 held at 70 % reads 70.
    return cloudwatch.MathExpression(
        expression="IF(held > 0 AND gpu_n > 0, gpu * gpus / held)",
        using_metrics={
            "gpu": gpu_utilization(config, region, period=MINUTE),
            "gpu_n": gpu_utilization(config, region, period=MINUTE, statistic="SampleCount"),
            "held": cluster_metric(config, region, compute_metrics.NODE_GPU_USAGE_TOTAL, statistic="Sum"),
            "gpus": cluster_metric(config, region, compute_metrics.NODE_GPU_LIMIT, statistic="Sum"),
        },
        label="utilization of the GPUs running pods hold (%)",
        period=MINUTE,
    )


def unhealthy_node_pattern(config: HubSpokeConfig, region: RegionConfig) -> dict[str, object]:
    """The EventBridge pattern of HyperPod finding a node of this Region's cluster unhealthy."""
    return {
        "source": [NODE_HEALTH_SOURCE],
        "detail-type": [NODE_HEALTH_DETAIL_TYPE],
        "detail": {
            "ClusterName": [hyperpod_cluster_name(config, region)],
            "HealthSummary": {"HealthStatus": [UNHEALTHY]},
        },
    }


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    """The alarm topic as a rule target, authorized by the topic policy NodeHealth writes (not CDK's SnsTopic,
    whose grant to events.amazonaws.com names no rule)."""

    def __init__(self, topic_arn: str, message: events.RuleTargetInput) -> None:
        self.topic_arn, self.message = topic_arn, message

    def bind(self, rule: events.IRule, id: str | None = None) -> events.RuleTargetConfig:
        del rule, id
        return events.RuleTargetConfig(arn=self.topic_arn, input=self.message)


class NodeHealth(Construct):
    """HyperPod node-health events to the alarm topic, and the node, fabric and checkpoint alarms of one Region.

    Example::

        health = NodeHealth(stack, "NodeHealth", config=config, region=spoke, topic=topic,
                            planned=[a for a in mine if a.key in alarms.NODE_HEALTH_ALARMS])
        health.alarms["checkpoint-too-old"]
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HubSpokeConfig,
        region: RegionConfig,
        topic: AlarmTopic,
        planned: Sequence[PlannedAlarm],
    ) -> None:
        super().__init__(scope, construct_id)
        self.config, self.region, self.topic = config, region, topic
        by_key = {p.key: p for p in planned}
        if set(by_key) != set(alarms.NODE_HEALTH_ALARMS):
            raise ValueError(f"node health needs exactly the alarms {alarms.NODE_HEALTH_ALARMS}")
        runbook = by_key[alarms.NODES_UNHEALTHY_REPEATEDLY].runbook
        self.rule = events.Rule(
            self,
            "UnhealthyNodes",
            description=f"HyperPod found a node of {hyperpod_cluster_name(config, region)} unhealthy",
            event_pattern=events.EventPattern(
                source=[NODE_HEALTH_SOURCE],
                detail_type=[NODE_HEALTH_DETAIL_TYPE],
                detail=unhealthy_node_pattern(config, region)["detail"],  # type: ignore[arg-type]
            ),
        )
        field = events.EventField.from_path
        message = events.RuleTargetInput.from_text(
            f"HyperPod cluster {field('$.detail.ClusterName')}: node {field('$.detail.InstanceId')} is "
            f"{field('$.detail.HealthSummary.HealthStatus')}: "
            f"{field('$.detail.HealthSummary.HealthStatusReason')} Repair action: "
            f"{field('$.detail.HealthSummary.RepairAction')}. "
            f"{field('$.detail.HealthSummary.Recommendation')} Runbook: {runbook}"
        )
        # Whoever the alarms tell is told: the own topic and the config's topics of this Region (their owners'
        # policies must let events.amazonaws.com publish: docs/operations.md, "Who is told").
        targets = [topic.topic.topic_arn, *topic.external_topic_arns]
        if len(targets) > RULE_TARGETS_MAX:
            raise ValueError(
                f"ops.alarm_topic_arns: {len(targets) - 1} topics of {region.region} plus the own topic exceed "
                f"EventBridge's {RULE_TARGETS_MAX} targets per rule: list fewer topics of that Region"
            )
        for arn in targets:
            self.rule.add_target(_TopicTarget(arn, message))
        self._allow_events(topic)
        self.alarms: dict[str, cloudwatch.Alarm] = {
            alarms.GPUS_IDLE_WHILE_HELD: self._gpus_idle(by_key[alarms.GPUS_IDLE_WHILE_HELD]),
            alarms.CHECKPOINT_TOO_OLD: self._checkpoint_too_old(by_key[alarms.CHECKPOINT_TOO_OLD]),
            alarms.EFA_PACKETS_DROPPED: self._efa_drops(by_key[alarms.EFA_PACKETS_DROPPED]),
            alarms.NODES_UNHEALTHY_REPEATEDLY: self._unhealthy_repeatedly(
                by_key[alarms.NODES_UNHEALTHY_REPEATEDLY]
            ),
        }

    def _allow_events(self, topic: AlarmTopic) -> None:
        """Let this rule, and nothing else of EventBridge, publish into the encrypted topic."""
        # EventBridge may publish to the topic (EventBridge User Guide, "Using resource-based policies for
        # Amazon EventBridge", narrowed by aws:SourceArn) and use its key (AWS Knowledge Center,
        # "sns-not-getting-eventbridge-notification"), without conditions, as the CloudWatch statement beside
        # it.
        topic.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="NodeHealthEventsPublish",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic.topic_arn],
                conditions={"ArnEquals": {"aws:SourceArn": self.rule.rule_arn}},
            )
        )
        topic.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EventBridgeUsesTheKey",
                principals=[iam.ServicePrincipal("events.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
            )
        )

    def _alarm(
        self,
        planned: PlannedAlarm,
        *,
        metric: cloudwatch.IMetric,
        threshold: float,
        comparison: cloudwatch.ComparisonOperator,
        periods: int,
        description: str,
        breaching: int | None = None,
    ) -> cloudwatch.Alarm:
        # A minute without data is never evidence here: no pod holds GPUs, no job reports, no EFA traffic, no
        # event. Silence of the publishers themselves is the dashboard's and the training alarms' to see.
        alarm = cloudwatch.Alarm(
            self,
            "".join(p.capitalize() for p in planned.key.split("-")),
            alarm_name=planned.name,
            metric=metric,
            threshold=threshold,
            comparison_operator=comparison,
            evaluation_periods=periods,
            datapoints_to_alarm=breaching or periods,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"{description} Runbook: {planned.runbook}",
        )
        self.topic.notify(alarm, planned.name)
        return alarm

    def _gpus_idle(self, planned: PlannedAlarm) -> cloudwatch.Alarm:
        return self._alarm(
            planned,
            metric=gpus_idle_while_held(self.config, self.region),
            threshold=GPU_IDLE_PERCENT,
            comparison=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            periods=GPU_IDLE_MINUTES,
            description=f"Running pods in {self.region.region} hold GPUs, and those GPUs averaged under "
            f"{GPU_IDLE_PERCENT} % for {GPU_IDLE_MINUTES} minutes in a row: a job is expected and nothing "
            "computes (hung before its first step, a rank gone while its pod runs, or pods left holding GPUs).",
        )

    def _checkpoint_too_old(self, planned: PlannedAlarm) -> cloudwatch.Alarm:
        return self._alarm(
            planned,
            metric=training_metric(
                self.config,
                self.region,
                training_metrics.CHECKPOINT_AGE_SECONDS,
                period=MINUTE,
                statistic="Maximum",
            ),
            threshold=CHECKPOINT_MAX_AGE_MINUTES * 60,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            periods=CHECKPOINT_OLD_MINUTES,
            description=f"The training job in {self.region.region} reports that the checkpoint a restart would "
            f"resume from is over {CHECKPOINT_MAX_AGE_MINUTES} minutes old: a failure now loses that much work. "
            "A job that dies stops reporting and returns this to OK with nothing saved: the training alarms "
            "page for the dead job.",
        )

    def _efa_drops(self, planned: PlannedAlarm) -> cloudwatch.Alarm:
        return self._alarm(
            planned,
            # The [ClusterName] series holds a datapoint per EFA device of every node: Maximum is
            # the worst device's rate, not a node's total.
            metric=cluster_metric(
                self.config, self.region, compute_metrics.NODE_EFA_RX_DROPPED, statistic="Maximum"
            ),
            threshold=EFA_DROPS_PER_SECOND,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            periods=EFA_WINDOW_MINUTES,
            breaching=EFA_BREACHING_MINUTES,
            description=f"An EFA device of a HyperPod node in {self.region.region} dropped more than "
            f"{EFA_DROPS_PER_SECOND:g} received packets a second in {EFA_BREACHING_MINUTES} of "
            f"{EFA_WINDOW_MINUTES} minutes (node_efa_rx_dropped, the worst device's): collectives slow down or "
            "hang.",
        )

    def _unhealthy_repeatedly(self, planned: PlannedAlarm) -> cloudwatch.Alarm:
        # EventBridge publishes TriggeredRules per rule (dimension RuleName, the default bus; unit Count; Sum is
        # the useful statistic) every minute a rule matched (EventBridge User Guide, "Monitoring Amazon
        # EventBridge"); one day, the longest period an alarm may judge in one evaluation period.
        return self._alarm(
            planned,
            metric=cloudwatch.Metric(
                namespace="AWS/Events",
                metric_name="TriggeredRules",
                dimensions_map={"RuleName": self.rule.rule_name},
                statistic="Sum",
                period=DAY,
                region=self.region.region,
            ),
            threshold=UNHEALTHY_EVENTS_PER_DAY,
            comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            periods=1,
            description=f"HyperPod found nodes of {hyperpod_cluster_name(self.config, self.region)} unhealthy "
            f"{UNHEALTHY_EVENTS_PER_DAY} or more times within a day (each was rebooted or replaced, and each "
            "finding was also sent to this topic): look for a common cause before the next one.",
        )


# The dashboard's node and fabric health rows (hubspoke/constructs/dashboard.py), by title.
HEALTH_ROWS = ("HyperPod node health", "EFA drops and pod restarts", "Checkpoint age and GPUs held")


def health_graph(config: HubSpokeConfig, region: RegionConfig, row: str) -> dict[str, Any]:
    """A GraphWidget's title, series, axes and lines for one of HEALTH_ROWS in `region`'s column."""
    code = region.region
    if row == HEALTH_ROWS[0]:
        # Each node reports 1 for its state, 0 for the others (compute_metrics): the [ClusterName] series sums
        # them to nodes per state, ASSUMED one report per node a minute (the add-on's default 60 s interval).
        states = {
            compute_metrics.HYPERPOD_SCHEDULABLE: "Schedulable",
            compute_metrics.HYPERPOD_UNSCHEDULABLE: "Unschedulable (deep health checks)",
            compute_metrics.HYPERPOD_PENDING_REBOOT: "UnschedulablePendingReboot",
            compute_metrics.HYPERPOD_PENDING_REPLACEMENT: "UnschedulablePendingReplacement",
        }
        return {
            "title": f"HyperPod nodes by health label, {code}",
            "left": [
                cluster_metric(config, region, name, statistic="Sum").with_(label=f"nodes {label}")
                for name, label in states.items()
            ],
            "left_y_axis": cloudwatch.YAxisProps(min=0, show_units=False),
        }
    if row == HEALTH_ROWS[1]:
        # pod_number_of_container_restarts has no [ClusterName] series: one line per pod of the training namespace.
        search = (
            f"{{{compute_metrics.NAMESPACE},{','.join(compute_metrics.POD_DIMENSIONS)}}} "
            f'MetricName="{compute_metrics.POD_NUMBER_OF_CONTAINER_RESTARTS}" '
            f'ClusterName="{eks_cluster_name(config, region)}" Namespace="{TRAINING_NAMESPACE}"'
        )
        return {
            "title": f"EFA receive drops (worst device) and training pod restarts, {code}",
            "left": [
                cluster_metric(
                    config, region, compute_metrics.NODE_EFA_RX_DROPPED, statistic="Maximum"
                ).with_(label="EFA packets dropped /s, worst device")
            ],
            "right": [
                cloudwatch.MathExpression(
                    expression=f"SEARCH('{search}', 'Maximum', 300)",
                    label="",  # each pod's line carries its own PodName
                    period=Duration.minutes(5),
                    search_region=code,
                )
            ],
            "left_y_axis": cloudwatch.YAxisProps(min=0, show_units=False),
            "right_y_axis": cloudwatch.YAxisProps(min=0, label="restarts", show_units=False),
            "left_annotations": [
                cloudwatch.HorizontalAnnotation(value=EFA_DROPS_PER_SECOND, label=alarms.EFA_PACKETS_DROPPED)
            ],
        }
    if row == HEALTH_ROWS[2]:
        return {
            "title": f"Checkpoint age and GPUs held by running pods, {code}",
            "left": [
                training_metric(
                    config,
                    region,
                    training_metrics.CHECKPOINT_AGE_SECONDS,
                    period=MINUTE,
                    statistic="Maximum",
                ).with_(label="seconds since the checkpoint a restart resumes from")
            ],
            "right": [
                cluster_metric(config, region, compute_metrics.NODE_GPU_USAGE_TOTAL, statistic="Sum").with_(
                    label="GPUs held by running pods (sum over nodes)"
                )
            ],
            "left_y_axis": cloudwatch.YAxisProps(min=0, label="s", show_units=False),
            "right_y_axis": cloudwatch.YAxisProps(min=0, label="GPUs", show_units=False),
            "left_annotations": [
                cloudwatch.HorizontalAnnotation(
                    value=CHECKPOINT_MAX_AGE_MINUTES * 60, label=alarms.CHECKPOINT_TOO_OLD
                )
            ],
        }
    raise ValueError(f"no node health row {row!r}; one of {HEALTH_ROWS}")
