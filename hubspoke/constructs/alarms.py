"""The environment's alarms, each defined once, and the encrypted topic that tells people about them.

Which alarms exist, their names and runbooks come from hubspoke.alarms; this module gives each its metric,
threshold and wording. The training alarms are the same for the hub (in the Dashboard stack) and every spoke
(Ops); docs/operations.md says what each catches, how fast, and what it cannot see.
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

from hubspoke import alarms, training_metrics
from hubspoke.alarms import HUB_UNREACHABLE_MINUTES, PlannedAlarm
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.canary.infrastructure import HubCanary
from hubspoke.constructs.canary.runtime import metrics as canary_metrics
from hubspoke.constructs.keys import retained_key
from hubspoke.constructs.metrics import (
    HIT_RATIO_PERIOD_MINUTES,
    gpu_while_training,
    hit_ratio,
    throughput_vs_baseline,
    training_metric,
)
from hubspoke.policy.acks import acknowledge
from hubspoke.training_metrics import BASELINE_SECONDS

PORTAL_NOT_ACTIVE_MINUTES = 3
# No step finished in any report of 10 minutes in a row. Healthy steps take about 1.1 s (the reference: 999
# batches in 18.5 minutes, docs/design.md §1); 10 minutes leaves room for a checkpoint save or a slow first step.
STALLED_MINUTES = 10
# 8 breaching minutes of the last 10, not 10 in a row: a starving loader's throughput bounces (batches that
# arrive are trained at full speed), and a minute or two above the floor must not restart the count.
LOW_WINDOW_MINUTES = 10
LOW_BREACHING_MINUTES = 8
# Three 5-minute periods in a row, so one period skewed by flow-log timing does not count alone.
HIT_RATIO_PERIODS = 3
MINUTE = Duration.minutes(1)
# Why an input of a composite notifies nobody: an action of its own would ...
_CACHE_INPUT = "page on every cold first pass, when the hit ratio is near 0 and the dataset not yet whole in the cache by design"
_CANARY_INPUT = "page on a fresh deploy, before the canary's first record"


class AlarmTopic(Construct):
    """An SNS topic encrypted with its own customer key, subscribed by config.ops.alarm_emails; the alarms it
    serves also notify the config's existing topics (ops.alarm_topic_arns) of the stack's Region.

    Example::

        topic = AlarmTopic(stack, "Alarms", config=config, purpose="us-west-2 operations",
                           alarms=[a for a in planned_alarms(config) if a.stack_id == plan.id])
        topic.notify(alarm, planned.name)

    Only the planned `alarms` may publish: `enforce_ssl` writes an AWS::SNS::TopicPolicy, and a topic policy
    replaces SNS's default one, which was what let CloudWatch publish. Without an explicit grant every alarm
    action fails, visible only in the alarm's history (AWS Knowledge Center,
    "cloudwatch-receive-sns-for-alarm-trigger"; SNS Developer Guide, "Example cases for Amazon SNS access
    control": allow `cloudwatch.amazonaws.com` to `sns:Publish`, conditioned on aws:SourceArn/SourceAccount).
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
        # CloudWatch publishes into an encrypted topic only if the topic's customer key lets it call
        # kms:Decrypt and kms:GenerateDataKey* (AWS Knowledge Center "cloudwatch-configure-alarm-sns"; the
        # AWS-managed alias/aws/sns key cannot be edited to allow it, hence a key of our own). The statement is
        # the article's base one, without conditions: the article's only optional condition limits use to an
        # organization, and an aws:SourceAccount condition is in no AWS example for this call; one that does
        # not match fails every alarm action silently. The topic policy below limits publishers to our alarms.
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
        # Existing topics (on-call, chat) are alarm actions of their own, not subscriptions: SNS subscribes
        # endpoints (email, SQS, Lambda, HTTPS, ...), not topics (SNS Developer Guide, "Subscribing to an Amazon
        # SNS topic", protocols). Only topics of this Region (config/ops_rules.py, ASSUMED there); their owner's
        # topic policy must let cloudwatch.amazonaws.com publish (docs/operations.md, "Who is told").
        external = [arn for arn in config.ops.alarm_topic_arns if arn.split(":")[3] == stack.region]
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


# The gate's period: CloudWatch's longest ("A period can be as short as one second or as long as one day (86,400
# seconds)", CloudWatch User Guide, "CloudWatch concepts", Periods; awsdocs/amazon-cloudwatch-user-guide@b355497,
# doc_source/cloudwatch_concepts.md), one evaluation period: the total evaluation period may not exceed one day
# (doc_source/AlarmThatSendsEmail.md, "Common features of CloudWatch alarms"; botocore 1.44.8 cloudwatch
# service-2.json, PutMetricAlarm Period, allows 7 days for periods of an hour or more).
CANARY_GATE_PERIOD = Duration.days(1)
# The gate turns OK at the canary's third record of the day, not its first. Before the first record the probe
# alarms may be in ALARM (FILL of an empty query); they leave it at the first healthy record (two breaching points
# of three). Had the gate turned OK at that same record, whichever of the two alarms CloudWatch evaluated first
# would decide the composite, and gate-first pages a healthy fresh deploy (tests/constructs/test_canary_alarms.py,
# inputs evaluated in either order). Two records later the probe alarms have been judged at least once after the
# first record, even when each record arrives a minute late. One record per run, one run a minute (HubCanary).
CANARY_GATE_RECORDS = 3


def canary_silent_for_a_day(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary
) -> cloudwatch.Alarm:
    """OK once the canary has reported a few times within the last day; INSUFFICIENT_DATA before its first record
    ever and after a day of silence (notifies nobody: the gate of the canary's composites)."""
    return _alarm(
        scope,
        planned,
        topic=topic,
        # Every canary run publishes one HubReachable value; a day with no record has no SampleCount datapoint at
        # all, so with missing data treated as missing the alarm is INSUFFICIENT_DATA (User Guide, "How alarm
        # state is evaluated when data is missing", all points missing), in ALARM after one or two records, OK
        # from the third.
        metric=canary.metric(
            canary_metrics.HUB_REACHABLE, statistic="SampleCount", period=CANARY_GATE_PERIOD
        ),
        threshold=CANARY_GATE_RECORDS,
        periods=1,
        missing=cloudwatch.TreatMissingData.MISSING,
        description=f"OK: the hub canary has published at least {CANARY_GATE_RECORDS} records within the last day. "
        "INSUFFICIENT_DATA (none) or ALARM (fewer): the stack is new or the canary stopped; while it is not OK the "
        f"composites {alarms.HUB_UNREACHABLE} and {alarms.PORTAL_NOT_ACTIVE} cannot page. Notifies nobody.",
        silent_because=_CANARY_INPUT,
    )


def _silence_breaches(metric: cloudwatch.Metric, *, value: float, label: str) -> cloudwatch.MathExpression:
    """`metric` with each minute the canary did not report counted as `value` (a breaching one).

    TreatMissingData alone does not make silence fast: while the evaluation range still holds at least
    Evaluation Periods real points, CloudWatch judges those and ignores the missing ones, so after healthy minutes
    a silent canary alarms only once its last healthy point has left the range ("How alarm state is evaluated
    when data is missing": with Evaluation Periods 3 the documented range is 5 points, `0 - - - -` is still OK
    and the next evaluation is ALARM; the range for 1-minute periods is not documented). FILL gives every
    minute of the query a value ("FILL replaces that missing data point with the requested value. That causes
    the latest data point for the metric to always be the FILL value", CloudWatch User Guide, "Using metric
    math", FILL; awsdocs/amazon-cloudwatch-user-guide@b355497, doc_source/using-metric-math.md), so silence
    breaches from its first minute and the alarm fires after Evaluation Periods minutes whatever the range.
    The same page warns that a latest minute whose data arrives late is filled too: one such minute is one
    breaching point of the three, not an alarm (tests/constructs/test_canary_alarms.py). Before the canary's
    first record the alarm is in ALARM whether FILL fills a query with no data at all (not documented) or leaves
    it empty (missing data breaching), hence it notifies nobody and pages only through a composite gated on the
    canary's records.
    """
    return cloudwatch.MathExpression(
        expression=f"FILL(m, {value:g})", using_metrics={"m": metric}, label=label, period=MINUTE
    )


def hub_probes_failing(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary, hub_region: str
) -> cloudwatch.Alarm:
    """Every probe of the hub failed, or the canary was silent, for a few minutes (notifies nobody)."""
    return _alarm(
        scope,
        planned,
        topic=topic,
        # Silence from the canary is as bad as a failed probe: the hub's state is unknown.
        metric=_silence_breaches(
            canary.metric(canary_metrics.HUB_REACHABLE, statistic="Maximum", period=MINUTE),
            value=0,
            label="hub reachable (1), a silent minute counted as 0",
        ),
        threshold=1,
        periods=HUB_UNREACHABLE_MINUTES,
        # FILL leaves nothing missing; should the whole query come back empty, that breaches too.
        missing=cloudwatch.TreatMissingData.BREACHING,
        description=f"The hub CNQ ({hub_region}) has not answered on TCP "
        f"{'/'.join(map(str, canary.ports))} from {planned.region}, or the canary has not reported, for "
        f"{HUB_UNREACHABLE_MINUTES} minutes. Notifies nobody: the composite {alarms.HUB_UNREACHABLE} pages when "
        "the canary has reported within the last day as well.",
        silent_because=_CANARY_INPUT,
    )


def portal_probes_not_active(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary
) -> cloudwatch.Alarm:
    """The spoke's portal was not ACTIVE (or unreadable), or the canary was silent, for a few minutes (notifies
    nobody)."""
    return _alarm(
        scope,
        planned,
        topic=topic,
        metric=_silence_breaches(
            canary.metric(canary_metrics.PORTAL_STATUS, statistic="Minimum", period=MINUTE),
            value=canary_metrics.PORTAL_STATUS_VALUES["INACTIVE"],
            label="portal status (2 = ACTIVE), a silent minute counted as INACTIVE",
        ),
        threshold=canary_metrics.PORTAL_STATUS_ACTIVE,
        periods=PORTAL_NOT_ACTIVE_MINUTES,
        missing=cloudwatch.TreatMissingData.BREACHING,
        description=f"The spoke portal of {planned.region} is not ACTIVE (2 = ACTIVE, 1 = DEGRADED, "
        f"0 = INACTIVE, -1 = unreadable), or the canary has not reported, for {PORTAL_NOT_ACTIVE_MINUTES} minutes. "
        f"Notifies nobody: the composite {alarms.PORTAL_NOT_ACTIVE} pages when the canary has reported within "
        "the last day as well.",
        silent_because=_CANARY_INPUT,
    )


def _canary_page(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    probes: cloudwatch.IAlarm,
    gate: cloudwatch.IAlarm,
    description: str,
) -> cloudwatch.CompositeAlarm:
    """`ALARM(probes) AND OK(gate)`: the probes' page, never before the canary's first records.

    A created composite alarm is INSUFFICIENT_DATA, is evaluated, and runs the actions of its new state; that is
    the only time it is ever INSUFFICIENT_DATA (botocore 1.44.8 cloudwatch service-2.json, PutCompositeAlarm).
    OK(gate) is FALSE while the gate is INSUFFICIENT_DATA or ALARM (User Guide, "Create a composite alarm", rule
    functions), so a fresh deploy evaluates to OK whatever the probes alarm does, and with no OK action sends
    nothing. No OK action because after a day of silence the gate leaves OK and this composite returns to OK
    although nothing is known to have recovered; an OK notification then would resolve the incident in an
    on-call tool while the hub's state is unknown (docs/operations.md, "What each alarm catches").
    """
    alarm = cloudwatch.CompositeAlarm(
        scope,
        # Not the metric alarm's former logical ID: CloudFormation refuses to change the type of a resource
        # ("Update of resource type is not permitted", aws/aws-sam-cli#6786), so the page gets its own.
        "".join(p.capitalize() for p in planned.key.split("-")) + "Page",
        composite_alarm_name=planned.name,
        alarm_rule=cloudwatch.AlarmRule.all_of(
            cloudwatch.AlarmRule.from_alarm(probes, cloudwatch.AlarmState.ALARM),
            cloudwatch.AlarmRule.from_alarm(gate, cloudwatch.AlarmState.OK),
        ),
        alarm_description=f"{description} Sends no OK: check recovery with hubspoke verify. "
        f"Runbook: {planned.runbook}",
    )
    topic.notify(alarm, planned.name, ok=False)
    return alarm


def hub_unreachable(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    probes: cloudwatch.IAlarm,
    gate: cloudwatch.IAlarm,
    hub_region: str,
) -> cloudwatch.CompositeAlarm:
    """The hub has not answered, or the canary that has reported within the last day went silent, for 3 minutes."""
    return _canary_page(
        scope,
        planned,
        topic=topic,
        probes=probes,
        gate=gate,
        description=f"The hub CNQ ({hub_region}) has not answered the canary of {planned.region} for "
        f"{HUB_UNREACHABLE_MINUTES} minutes, or the canary stopped reporting (the hub's state is unknown). "
        "Cache hits keep serving; misses stall.",
    )


def portal_not_active(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    probes: cloudwatch.IAlarm,
    gate: cloudwatch.IAlarm,
) -> cloudwatch.CompositeAlarm:
    """The spoke's portal has not been ACTIVE, or the canary went silent, for 3 minutes."""
    return _canary_page(
        scope,
        planned,
        topic=topic,
        probes=probes,
        gate=gate,
        description=f"The spoke portal of {planned.region} has not been ACTIVE for {PORTAL_NOT_ACTIVE_MINUTES} "
        "minutes, or the canary stopped reporting.",
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
    # A composite alarm's rule combines other alarms' states with ALARM(...), AND, OR, NOT; it notifies through
    # SNS like a metric alarm, and its inputs must be in its account and Region (CloudWatch User Guide,
    # "Create a composite alarm", awsdocs/amazon-cloudwatch-user-guide@b355497,
    # doc_source/Create_Composite_Alarm.md; AWS::CloudWatch::CompositeAlarm AlarmRule).
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


def _where(config: HubSpokeConfig, region: RegionConfig, *, stalled: bool = False) -> tuple[str, str]:
    """How a training alarm names its Region, and what usually causes the slowdown there."""
    if region.region == config.hub.region:
        return (
            f"the hub Region {region.region}",
            "The hub reads locally, so suspect the job, its nodes or the CNQ cluster, not a cache.",
        )
    if stalled:
        return (
            region.region,
            "Usually the hub unreachable (cache misses block), or a hung node or collective.",
        )
    return region.region, "Usually a cold or evicted cache, slow reads, or the hub unreachable."


def training_stalled(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """Every samples/s report of 10 minutes in a row is 0: a job runs and no step finishes."""
    where, why = _where(config, region, stalled=True)
    return _alarm(
        scope,
        planned,
        topic=topic,
        # The highest report of each minute: 0 only when no step finished in any of its windows.
        metric=training_metric(config, region, period=MINUTE, statistic="Maximum"),
        threshold=0,
        comparison=cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
        periods=STALLED_MINUTES,
        # No job, no report: an idle or finished cluster is not a stall.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"The training job in {where} reported 0 samples/s for {STALLED_MINUTES} minutes in a "
        f"row: it runs and no step finishes. {why}",
    )


def training_throughput_low(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """Samples/s under a fraction of the run's own best 5 minutes, in 8 of 10 minutes: the loader is starving."""
    floor = config.ops.throughput_floor_fraction
    where, why = _where(config, region)
    return _alarm(
        scope,
        planned,
        topic=topic,
        metric=throughput_vs_baseline(config, region),
        threshold=floor,
        periods=LOW_WINDOW_MINUTES,
        breaching=LOW_BREACHING_MINUTES,
        # Minutes without both reports (no job, or its first minutes before a baseline) are not judged.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"The training job in {where} ran below {floor:g} of its own best "
        f"{BASELINE_SECONDS / 60:g}-minute samples/s in {LOW_BREACHING_MINUTES} of {LOW_WINDOW_MINUTES} "
        f"minutes (a stall counts: 0 samples/s). {why}",
    )


def gpu_utilization_low(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """GPUs under the configured floor in 8 of 10 minutes while a job reports: a secondary signal."""
    floor = config.ops.gpu_utilization_floor_percent
    where, _ = _where(config, region)
    return _alarm(
        scope,
        planned,
        topic=topic,
        metric=gpu_while_training(config, region),
        threshold=floor,
        periods=LOW_WINDOW_MINUTES,
        breaching=LOW_BREACHING_MINUTES,
        # No training job, no datapoint: an idle or finished cluster is not an alarm.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"GPU utilization in {where}, average over the cluster's GPUs, below {floor} % in "
        f"{LOW_BREACHING_MINUTES} of {LOW_WINDOW_MINUTES} minutes while a training job reports samples/s. "
        "A secondary signal: ranks waiting in collectives read as busy, so a starving loader often does not "
        "show here (training-throughput-low does); this catches GPUs the job leaves idle.",
    )


# The training alarms, by key: the same definitions in the Ops stacks (spokes) and the Dashboard stack (hub).
TRAINING_ALARMS = {
    alarms.TRAINING_STALLED: training_stalled,
    alarms.TRAINING_THROUGHPUT_LOW: training_throughput_low,
    alarms.GPU_UTILIZATION_LOW: gpu_utilization_low,
}
