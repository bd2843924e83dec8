"""The environment's alarms, each defined once, and the encrypted topic that tells people about them.

Which alarms exist, their names and runbooks come from hubspoke.alarms; this module gives each its metric,
threshold and wording (the training job's: hubspoke/constructs/training_alarms.py); docs/operations.md says what
each catches, how fast, and what it cannot see.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import ArnFormat, Duration, Stack, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from hubspoke import alarms, canary_metrics, training_metrics
from hubspoke.alarms import HUB_UNREACHABLE_MINUTES, PlannedAlarm
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.canary.infrastructure import HubCanary
from hubspoke.constructs.keys import retained_key
from hubspoke.constructs.metrics import HIT_RATIO_PERIOD_MINUTES, hit_ratio, training_metric
from hubspoke.policy.acks import acknowledge

PORTAL_NOT_ACTIVE_MINUTES = 3
# Three 5-minute periods in a row, so one period skewed by flow-log timing does not count alone.
HIT_RATIO_PERIODS = 3
MINUTE = Duration.minutes(1)
# Why an input of a composite notifies nobody: an action of its own would ...
_CACHE_INPUT = "page on every cold first pass, when the hit ratio is near 0 and the dataset not yet whole in the cache by design"
_CANARY_INPUT = (
    "page beside the composite that pages for it (the composite keeps the page's name across deploys)"
)


class AlarmTopic(Construct):
    """An SNS topic encrypted with its own customer key, subscribed by config.ops.alarm_emails; the alarms it
    serves also notify the config's existing topics (ops.alarm_topic_arns) of the stack's Region.

    Example::

        topic = AlarmTopic(stack, "Alarms", config=config, purpose="us-west-2 operations",
                           alarms=[a for a in planned_alarms(config) if a.stack_id == plan.id])
        topic.notify(alarm, planned.name)

    Only the planned `alarms` may publish: `enforce_ssl`'s topic policy replaces the default that let
    CloudWatch publish (AWS Knowledge Center, "cloudwatch-receive-sns-for-alarm-trigger"; SNS Developer Guide,
    "Example cases for Amazon SNS access control").
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: HubSpokeConfig,
        purpose: str,
        alarms: Sequence[PlannedAlarm],
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        # An alarm that notifies nobody (the input of a composite alarm) gets no publish grant either.
        self.alarm_names = frozenset(a.name for a in alarms if a.notifies)
        if not self.alarm_names:
            raise ValueError(f"an alarm topic for {purpose} needs the alarms that notify it")
        # The environment's alarms of this stack, by ARN: nothing else may publish into the topic.
        alarm_arns = [
            stack.format_arn(
                service="cloudwatch",
                resource="alarm",
                resource_name=name,
                arn_format=ArnFormat.COLON_RESOURCE_NAME,
            )
            for name in sorted(self.alarm_names)
        ]
        from_our_alarms = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {"aws:SourceArn": alarm_arns},
        }
        self.key = retained_key(
            self, "Key", description=f"hubspoke {config.environment}: encrypts the {purpose} alarm topic"
        )
        # CloudWatch publishes into an encrypted topic only if its key allows kms:Decrypt and GenerateDataKey*
        # (AWS Knowledge Center "cloudwatch-configure-alarm-sns"; alias/aws/sns cannot be edited): the
        # article's statement without conditions, since a mismatched aws:SourceAccount silently fails every
        # alarm action.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsUseTheKey",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
            )
        )
        self.topic = sns.Topic(
            self,
            "Topic",
            display_name=f"hubspoke {config.environment} {purpose}",
            master_key=self.key,
            enforce_ssl=True,
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions=from_our_alarms,
            )
        )
        for email in config.ops.alarm_emails:
            self.topic.add_subscription(subscriptions.EmailSubscription(email))
        if Token.is_unresolved(stack.region):
            raise ValueError(f"{stack.node.path} needs a concrete Region to pick its alarm topics")
        # Existing topics are alarm actions, since SNS subscribes endpoints, not topics (SNS Developer Guide,
        # "Subscribing to an Amazon SNS topic"); this Region's only (config/ops_rules.py, ASSUMED there).
        external = [arn for arn in config.ops.alarm_topic_arns if arn.split(":")[3] == stack.region]
        self.external_topic_arns = external  # told of everything the own topic is (node health events too)
        self.actions = [actions.SnsAction(self.topic)] + [
            actions.SnsAction(sns.Topic.from_topic_arn(self, f"External{i}", arn))
            for i, arn in enumerate(external)
        ]

    def notify(self, alarm: cloudwatch.AlarmBase, name: str, *, ok: bool = True) -> cloudwatch.AlarmBase:
        """Send `alarm` (CloudWatch name `name`) to this topic and the config's topics of this Region when it goes to
        ALARM and, unless `ok` is False, back to OK; only alarms the topic policy names may."""
        if name not in self.alarm_names:
            raise ValueError(f"alarm {name} is not one this topic's policy lets publish")
        alarm.add_alarm_action(*self.actions)
        if ok:
            alarm.add_ok_action(*self.actions)
        return alarm


def _alarm(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    metric: cloudwatch.IMetric,
    threshold: float,
    periods: int,
    missing: cloudwatch.TreatMissingData,
    description: str,
    breaching: int | None = None,
    comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
    silent_because: str = "",
) -> cloudwatch.Alarm:
    # `breaching` < `periods` makes an "M out of N" alarm: M breaching datapoints, not necessarily
    # consecutive, among the latest N (CloudWatch User Guide, "Evaluating an alarm",
    # awsdocs/amazon-cloudwatch-user-guide@b355497, doc_source/AlarmThatSendsEmail.md).
    alarm = cloudwatch.Alarm(
        scope,
        "".join(p.capitalize() for p in planned.key.split("-")),
        metric=metric,
        threshold=threshold,
        comparison_operator=comparison,
        evaluation_periods=periods,
        datapoints_to_alarm=breaching or periods,
        treat_missing_data=missing,
        alarm_name=planned.name,
        alarm_description=f"{description} Runbook: {planned.runbook}",
    )
    if planned.notifies:
        topic.notify(alarm, planned.name)
    else:
        if not silent_because:
            raise ValueError(f"alarm {planned.key} notifies nobody: say why (silent_because)")
        acknowledge(
            alarm,
            "CT.CLOUDWATCH.PR.1",
            reason="an input of a composite alarm, which is the one that notifies: an action of its own would "
            f"{silent_because} (docs/operations.md)",
        )
    return alarm


# The canary's own failures: minutes in which it was queued (or was throttled or could not be invoked) and published
# no hub record, failed, or could not read the portal. 5 in a row, so records up to 4 minutes late never page (the
# minutes they are late for count as failed runs).
CANARY_FAILING_MINUTES = 5


def canary_failing(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary
) -> cloudwatch.Alarm:
    """The canary's schedule failed to invoke it, or it ran and published no hub record, failed, was throttled or
    could not read the portal, 5 minutes in a row: the canary's pages know nothing new while this is in ALARM."""
    function = canary.function
    return _alarm(
        scope,
        planned,
        topic=topic,
        # A queued run (AsyncEventsReceived: Lambda Developer Guide, "Invoking a Lambda function
        # asynchronously"; Invocations skips throttled runs) less its HubReachable record nets 0; errors,
        # throttles, FailedInvocations and PortalUnreadable add (docs/decisions.md, "canary-failing").
        # ASSUMED: Lambda files a queued event in the minute the schedule fires.
        metric=cloudwatch.MathExpression(
            expression="runs + errors + throttles + uninvoked + unreadable - records",
            using_metrics={
                "runs": function.metric("AsyncEventsReceived", period=MINUTE, statistic="Sum"),
                "errors": function.metric_errors(period=MINUTE, statistic="Sum"),
                "throttles": function.metric_throttles(period=MINUTE, statistic="Sum"),
                "uninvoked": cloudwatch.Metric(
                    namespace="AWS/Events",
                    metric_name="FailedInvocations",
                    dimensions_map={"RuleName": canary.schedule.rule_name},
                    period=MINUTE,
                    statistic="Sum",
                ),
                "unreadable": canary.metric(canary_metrics.PORTAL_UNREADABLE, statistic="Sum", period=MINUTE),
                "records": canary.metric(
                    canary_metrics.HUB_REACHABLE, statistic="SampleCount", period=MINUTE
                ),
            },
            label="canary runs without a record, failed, throttled, uninvoked or portal-blind runs",
            period=MINUTE,
        ),
        threshold=1,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        periods=CANARY_FAILING_MINUTES,
        # Before the first run of a new function nothing is missing that should be there: a fresh deploy and a
        # re-deploy evaluate OK.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"The hub canary of {planned.region} could not be invoked, ran without publishing its record, "
        f"failed, was throttled or could not read the spoke portal (its admin secret, the REST API) for "
        f"{CANARY_FAILING_MINUTES} minutes in a row: {alarms.HUB_UNREACHABLE} and {alarms.PORTAL_NOT_ACTIVE} keep "
        "their last state meanwhile. Its log group (portal_detail) and the schedule rule's metrics say why.",
    )


def _probes_alarm(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    metric: cloudwatch.IMetric,
    threshold: float,
    periods: int,
    description: str,
) -> cloudwatch.Alarm:
    """A probe alarm judged only on the canary's real records: late, missed or absent ones change nothing.

    Missing data `ignore` keeps the state without real points ("How alarm state is evaluated when data is
    missing"; tests/fakes/cloudwatch_alarm.py), and no FILL, which can leave an alarm "stuck" ("Using metric
    math"): docs/decisions.md, "Probe alarms".
    """
    return _alarm(
        scope,
        planned,
        topic=topic,
        metric=metric,
        threshold=threshold,
        periods=periods,
        missing=cloudwatch.TreatMissingData.IGNORE,
        description=description,
        silent_because=_CANARY_INPUT,
    )


def hub_probes_failing(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary, hub_region: str
) -> cloudwatch.Alarm:
    """Every probe of the hub failed in the canary's last 3 records (notifies nobody: the page reads it)."""
    return _probes_alarm(
        scope,
        planned,
        topic=topic,
        metric=canary.metric(canary_metrics.HUB_REACHABLE, statistic="Maximum", period=MINUTE),
        threshold=1,
        periods=HUB_UNREACHABLE_MINUTES,
        description=f"The hub CNQ ({hub_region}) has not answered on TCP "
        f"{'/'.join(map(str, canary.ports))} from {planned.region} in the canary's last "
        f"{HUB_UNREACHABLE_MINUTES} records. Notifies nobody: the composite {alarms.HUB_UNREACHABLE} pages.",
    )


def portal_probes_not_active(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary
) -> cloudwatch.Alarm:
    """The spoke's portal was not ACTIVE in the canary's last 3 readable records (notifies nobody)."""
    return _probes_alarm(
        scope,
        planned,
        topic=topic,
        # A failed read (-1 with PortalUnreadable 1: the secret, the spoke's REST API) says nothing about the
        # portal: IF drops those minutes (User Guide, "Using metric math", IF without a false value), which
        # `ignore` then skips, and canary-failing counts them (PortalUnreadable).
        metric=cloudwatch.MathExpression(
            # A record is readable when it is not counted unreadable: records > blind (a canary older than
            # PortalUnreadable has none, read as 0); no record at all is no point under either reading of a
            # missing value (hubspoke/constructs/metrics.py, presence guards). -1 for "no spoke portal" stays.
            expression="IF(records > blind, status)",
            using_metrics={
                "status": canary.metric(canary_metrics.PORTAL_STATUS, statistic="Minimum", period=MINUTE),
                "records": canary.metric(
                    canary_metrics.PORTAL_STATUS, statistic="SampleCount", period=MINUTE
                ),
                "blind": canary.metric(canary_metrics.PORTAL_UNREADABLE, statistic="Sum", period=MINUTE),
            },
            label="portal status, readable records (2 = ACTIVE)",
            period=MINUTE,
        ),
        threshold=canary_metrics.PORTAL_STATUS_ACTIVE,
        periods=PORTAL_NOT_ACTIVE_MINUTES,
        description=f"The spoke portal of {planned.region} was not ACTIVE (2 = ACTIVE, 1 = DEGRADED, "
        f"0 = INACTIVE, -1 = no spoke portal) in the canary's last {PORTAL_NOT_ACTIVE_MINUTES} readable records "
        f"(a failed read is canary-failing's). Notifies nobody: the composite {alarms.PORTAL_NOT_ACTIVE} pages.",
    )


def _canary_page(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    probes: cloudwatch.IAlarm,
    description: str,
) -> cloudwatch.CompositeAlarm:
    """`ALARM(probes)`: the probes' page, with OK on recovery.

    A composite keeps the page's name and logical ID across deploys (CloudFormation refuses a type change,
    aws/aws-sam-cli#6786). Created INSUFFICIENT_DATA, it runs its new state's actions (botocore cloudwatch
    service-2.json, PutCompositeAlarm): OK on a fresh deploy, and on a re-deploy ALARM only if the records
    before it said the hub was down, since a new alarm reads recent earlier data points (CloudWatch User
    Guide).
    """
    alarm = cloudwatch.CompositeAlarm(
        scope,
        "".join(p.capitalize() for p in planned.key.split("-")) + "Page",
        composite_alarm_name=planned.name,
        alarm_rule=cloudwatch.AlarmRule.from_alarm(probes, cloudwatch.AlarmState.ALARM),
        alarm_description=f"{description} Runbook: {planned.runbook}",
    )
    topic.notify(alarm, planned.name)
    return alarm


def hub_unreachable(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    probes: cloudwatch.IAlarm,
    hub_region: str,
) -> cloudwatch.CompositeAlarm:
    """The hub has not answered the canary's last 3 probe rounds; OK again at its first answer."""
    return _canary_page(
        scope,
        planned,
        topic=topic,
        probes=probes,
        description=f"The hub CNQ ({hub_region}) has not answered the canary of {planned.region} in its last "
        f"{HUB_UNREACHABLE_MINUTES} records. Cache hits keep serving; misses stall.",
    )


def portal_not_active(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    probes: cloudwatch.IAlarm,
) -> cloudwatch.CompositeAlarm:
    """The spoke's portal was not ACTIVE in the canary's last 3 records; OK again at its first ACTIVE one."""
    return _canary_page(
        scope,
        planned,
        topic=topic,
        probes=probes,
        description=f"The spoke portal of {planned.region} was not ACTIVE in the canary's last "
        f"{PORTAL_NOT_ACTIVE_MINUTES} records.",
    )


def cache_hit_ratio_below_floor(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, config: HubSpokeConfig
) -> cloudwatch.Alarm:
    """The derived cache hit ratio under the floor while clients read enough to judge it (notifies nobody)."""
    floor, min_read = config.ops.cache_hit_ratio_floor, config.ops.cache_hit_ratio_min_read_gb
    return _alarm(
        scope,
        planned,
        topic=topic,
        metric=hit_ratio(environment=config.environment, region=planned.region, min_read_gb=min_read),
        threshold=floor,
        periods=HIT_RATIO_PERIODS,
        # Periods with fewer reads than the minimum have no ratio: nobody reading is not a cold cache.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"Derived cache hit ratio of {planned.region} below {floor} "
        f"for {HIT_RATIO_PERIODS * HIT_RATIO_PERIOD_MINUTES} minutes while clients read at least "
        f"{min_read:g} GB per {HIT_RATIO_PERIOD_MINUTES} minutes. Every cold first pass does this: it notifies "
        "nobody; the composite cache-hit-ratio-low pages when the job slows down as well.",
        silent_because=_CACHE_INPUT,
    )


def dataset_not_fully_cached(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """The pinned dataset version is not known to be whole in the spoke cache (notifies nobody)."""
    return _alarm(
        scope,
        planned,
        topic=topic,
        # The lowest report of the minute: a job reading a version being prewarmed counts as not cached.
        metric=training_metric(
            config, region, training_metrics.DATASET_PREWARMED_FRACTION, period=MINUTE, statistic="Minimum"
        ),
        threshold=alarms.FULLY_CACHED_FRACTION,
        periods=1,
        # No report (no prewarm status beside the job) is not knowing the cache is whole.
        missing=cloudwatch.TreatMissingData.BREACHING,
        description=f"The training job in {region.region} reports that prewarm has warmed less than "
        f"{alarms.FULLY_CACHED_FRACTION:g} of its pinned dataset version's bytes, or reports none. Misses are "
        "expected then: it notifies nobody; while it is in ALARM the composite cache-hit-ratio-low cannot page.",
        silent_because=_CACHE_INPUT,
    )


def cache_hit_ratio_low(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    ratio: cloudwatch.IAlarm,
    throughput: cloudwatch.IAlarm,
    cold: cloudwatch.IAlarm,
) -> cloudwatch.CompositeAlarm:
    """The cache misses a version it holds whole while the job has slowed: ratio and throughput alarms in ALARM,
    and the not-fully-cached alarm OK (evaluated, and the version whole: INSUFFICIENT_DATA does not count)."""
    # A composite's inputs must be in its account and Region (CloudWatch User Guide, "Create a composite
    # alarm", awsdocs/amazon-cloudwatch-user-guide@b355497; AWS::CloudWatch::CompositeAlarm AlarmRule).
    alarm = cloudwatch.CompositeAlarm(
        scope,
        "".join(p.capitalize() for p in planned.key.split("-")),
        composite_alarm_name=planned.name,
        alarm_rule=cloudwatch.AlarmRule.all_of(
            cloudwatch.AlarmRule.from_alarm(ratio, cloudwatch.AlarmState.ALARM),
            cloudwatch.AlarmRule.from_alarm(throughput, cloudwatch.AlarmState.ALARM),
            cloudwatch.AlarmRule.from_alarm(cold, cloudwatch.AlarmState.OK),
        ),
        alarm_description=f"The spoke cache of {planned.region} misses (derived hit ratio under "
        "ops.cache_hit_ratio_floor) although prewarm warmed the whole pinned dataset version, while the "
        "training job runs below its own baseline: eviction, a new access pattern, or a cache that cannot "
        f"hold the working set. Runbook: {planned.runbook}",
    )
    topic.notify(alarm, planned.name)
    return alarm
