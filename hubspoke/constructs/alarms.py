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

from hubspoke import alarms, compute_metrics, training_metrics
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
from hubspoke.k8s.names import NAMESPACE as TRAINING_NAMESPACE
from hubspoke.names import eks_cluster_name
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


# The canary's own failures: minutes in which it ran (or was throttled) and published no record, or failed.
# 5 in a row, so records up to 4 minutes late never page (the minutes they are late for count as failed runs).
CANARY_FAILING_MINUTES = 5


def canary_failing(
    scope: Construct, planned: PlannedAlarm, *, topic: AlarmTopic, canary: HubCanary
) -> cloudwatch.Alarm:
    """The canary ran and published no hub record, failed or was throttled, 5 minutes in a row: the canary's
    pages know nothing new while this is in ALARM."""
    function = canary.function
    return _alarm(
        scope,
        planned,
        topic=topic,
        # Lambda counts each invocation, error and throttle of the function per minute (Lambda Developer Guide,
        # "Types of metrics for Lambda functions": Invocations excludes throttled requests, Errors includes
        # timeouts and runtime errors). Every run publishes one HubReachable record stamped with its start
        # (runtime/handler.py), so a healthy minute nets 0. Arithmetic counts a missing value as 0 (CloudWatch
        # User Guide, "Using metric math"): a run without a record is 1, a failed or throttled run 1 or more, and
        # a record of an earlier function (a re-deploy: a new FunctionName) -1. No run, no record: no point.
        # ASSUMED: Lambda files an invocation in the minute it starts; were a record filed a minute later, that
        # minute nets +1 and the next -1, never 5 in a row.
        metric=cloudwatch.MathExpression(
            expression="runs + errors + throttles - records",
            using_metrics={
                "runs": function.metric_invocations(period=MINUTE, statistic="Sum"),
                "errors": function.metric_errors(period=MINUTE, statistic="Sum"),
                "throttles": function.metric_throttles(period=MINUTE, statistic="Sum"),
                "records": canary.metric(
                    canary_metrics.HUB_REACHABLE, statistic="SampleCount", period=MINUTE
                ),
            },
            label="canary runs without a record, failed or throttled runs",
            period=MINUTE,
        ),
        threshold=1,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        periods=CANARY_FAILING_MINUTES,
        # Before the first run of a new function nothing is missing that should be there: a fresh deploy and a
        # re-deploy evaluate OK.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"The hub canary of {planned.region} ran without publishing its record, failed or was throttled "
        f"for {CANARY_FAILING_MINUTES} minutes in a row: {alarms.HUB_UNREACHABLE} and {alarms.PORTAL_NOT_ACTIVE} keep "
        "their last state meanwhile. Its log group says why.",
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

    Missing data is `ignore`: with enough real points in the evaluation range CloudWatch judges those (any
    treatment); with fewer it keeps the current state unless a real point is healthy ("How alarm state is
    evaluated when data is missing", the IGNORE column; tests/fakes/cloudwatch_alarm.py). So a record that arrives
    late or a run that is missed is no breaching minute, a silent canary neither pages nor resolves (canary-failing
    says it is silent), and the first healthy record after an outage turns it OK. No FILL: a filled latest minute
    can leave an alarm "stuck in either OK state or ALARM state" (User Guide, "Using metric math", FILL).
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
    """The spoke's portal was not ACTIVE (or unreadable) in the canary's last 3 records (notifies nobody)."""
    return _probes_alarm(
        scope,
        planned,
        topic=topic,
        metric=canary.metric(canary_metrics.PORTAL_STATUS, statistic="Minimum", period=MINUTE),
        threshold=canary_metrics.PORTAL_STATUS_ACTIVE,
        periods=PORTAL_NOT_ACTIVE_MINUTES,
        description=f"The spoke portal of {planned.region} was not ACTIVE (2 = ACTIVE, 1 = DEGRADED, "
        f"0 = INACTIVE, -1 = unreadable) in the canary's last {PORTAL_NOT_ACTIVE_MINUTES} records. Notifies "
        f"nobody: the composite {alarms.PORTAL_NOT_ACTIVE} pages.",
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

    A composite so the page keeps its name and logical ID across deploys (CloudFormation refuses to change a
    resource's type, "Update of resource type is not permitted", aws/aws-sam-cli#6786). Created, it is
    INSUFFICIENT_DATA, is evaluated and runs the actions of its new state (botocore cloudwatch service-2.json,
    PutCompositeAlarm): a fresh deploy's probes alarm is INSUFFICIENT_DATA (no records, `ignore`), so the rule is
    FALSE and the page OK; a re-deploy's probes alarm judges the records before it ("If data points are missing
    soon after you create an alarm, and the metric was being reported to CloudWatch before you created the alarm,
    CloudWatch retrieves the most recent data points from before the alarm was created", User Guide), so it pages
    only if those said the hub was down. Its OK is a recovery: the probes alarm leaves ALARM only on a healthy record.
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


# A training alarm judges only the minutes a job reported. Silence keeps its state (`ignore`: with fewer real
# points than Evaluation Periods CloudWatch keeps the state unless a real point is healthy, "How alarm state is
# evaluated when data is missing", tests/fakes/cloudwatch_alarm.py): an idle cluster never pages, and a job that
# stalled or slowed and then died (the process group's timeout ends its reports) stays paged, with no OK, until
# a healthy job's record or a person (SetAlarmState OK, kept through the silence) clears it.
_JOB_SILENCE = cloudwatch.TreatMissingData.IGNORE


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
        missing=_JOB_SILENCE,
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
        missing=_JOB_SILENCE,
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
        missing=_JOB_SILENCE,
        description=f"GPU utilization in {where}, average over the cluster's GPUs, below {floor} % in "
        f"{LOW_BREACHING_MINUTES} of {LOW_WINDOW_MINUTES} minutes while a training job reports samples/s. "
        "A secondary signal: ranks waiting in collectives read as busy, so a starving loader often does not "
        "show here (training-throughput-low does); this catches GPUs the job leaves idle.",
    )


# A job silent this many minutes in a row without its completion record is dead. It reports twice a minute
# (REPORT_SECONDS), so records up to 4 minutes late never page; a lost node's replacement (the job resumes from a
# checkpoint) takes longer and pages too: the job is down meanwhile.
SILENT_MINUTES = 5
_JOB_INPUT = "page without the composite, which pages only when the silence follows a record of a running job"


def _construct_id(key: str) -> str:
    return "".join(p.capitalize() for p in key.split("-"))


def training_job_unfinished(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """The job's last record said it was running (TrainingJobCompleted 0), held through silence (notifies nobody)."""
    where, _ = _where(config, region)
    return _alarm(
        scope,
        planned,
        topic=topic,
        # Every throughput record carries 0, the completion record train.py sends last 1 (training_metrics.py).
        metric=training_metric(
            config, region, training_metrics.TRAINING_JOB_COMPLETED, period=MINUTE, statistic="Maximum"
        ),
        threshold=1,
        periods=1,
        # Judged on the latest real record whatever the evaluation range; none keeps the state (the guide's
        # IGNORE column): a dead job's 0 holds, and so does a finished job's 1 or a person's put 1.
        missing=_JOB_SILENCE,
        description=f"The training job in {where} last reported that it was running (not its completion "
        f"record). Notifies nobody: the composite {alarms.TRAINING_JOB_DEAD} pages when it has also fallen silent.",
        silent_because=_JOB_INPUT,
    )


def training_reports_missing(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """No record from the job for 5 minutes in a row, any job or none (notifies nobody: idle is normal)."""
    where, _ = _where(config, region)
    return _alarm(
        scope,
        planned,
        topic=topic,
        # FILL gives every minute of the evaluation range a point, 0 where no record came (User Guide, "Using metric
        # math", FILL): the alarm judges the latest 5 minutes, never older real records reached back to.
        metric=cloudwatch.MathExpression(
            expression="FILL(records, 0)",
            using_metrics={
                "records": training_metric(
                    config,
                    region,
                    training_metrics.TRAINING_JOB_COMPLETED,
                    period=MINUTE,
                    statistic="SampleCount",
                )
            },
            label="training records per minute",
            period=MINUTE,
        ),
        threshold=1,
        periods=SILENT_MINUTES,
        missing=cloudwatch.TreatMissingData.BREACHING,
        description=f"No training job in {where} reported for {SILENT_MINUTES} minutes in a row. Notifies "
        f"nobody: an idle cluster is normal; {alarms.TRAINING_JOB_DEAD} pages if the last job did not complete.",
        silent_because=_JOB_INPUT,
    )


def training_job_dead(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.CompositeAlarm:
    """The job was running and has been silent 5 minutes: it died (crash, kill, lost node); in ALARM until a
    record comes (a healthy job's, or a person's completion record)."""
    where, _ = _where(config, region)
    inputs = {}
    for key in (alarms.TRAINING_JOB_UNFINISHED, alarms.TRAINING_REPORTS_MISSING):
        found = scope.node.try_find_child(_construct_id(key))
        if not isinstance(found, cloudwatch.Alarm):
            raise ValueError(f"{alarms.TRAINING_JOB_DEAD} reads {key}: plan it before the composite")
        inputs[key] = found
    # Created, a composite is INSUFFICIENT_DATA and then follows its rule (_canary_page): before any job the
    # unfinished input has no data, so a fresh deploy is OK; a re-deploy judges the records before it.
    alarm = cloudwatch.CompositeAlarm(
        scope,
        _construct_id(planned.key),
        composite_alarm_name=planned.name,
        alarm_rule=cloudwatch.AlarmRule.all_of(
            *(cloudwatch.AlarmRule.from_alarm(a, cloudwatch.AlarmState.ALARM) for a in inputs.values())
        ),
        alarm_description=f"The training job in {where} stopped reporting {SILENT_MINUTES} minutes ago without "
        "its completion record: it crashed, was killed or lost a node. It stays in ALARM through the silence "
        f"until a job reports again. Runbook: {planned.runbook}",
    )
    topic.notify(alarm, planned.name)
    return alarm


# The kubelet restarts a crashed container after 10 s, 20 s, 40 s, ... up to 5 minutes, and resets the back-off
# once a container has run 10 minutes (Kubernetes docs, "Pod Lifecycle", container restarts). One restart (a node
# fault's) waits 10 s, two 30 s: at most 2 one-minute samples in CrashLoopBackOff. 3 in 10 minutes is a loop.
# ASSUMED: the add-on samples pod states once a minute (its default 60 s collection interval).
CRASH_LOOP_WINDOW_MINUTES = 10
CRASH_LOOP_BREACHING_MINUTES = 3


def training_crash_loop(
    scope: Construct,
    planned: PlannedAlarm,
    *,
    topic: AlarmTopic,
    config: HubSpokeConfig,
    region: RegionConfig,
) -> cloudwatch.Alarm:
    """A training pod's container waits in CrashLoopBackOff in 3 of 10 minutes: the job crashes and restarts
    forever (no backoffLimit), holding the GPUs."""
    where, _ = _where(config, region)
    schema = ", ".join(compute_metrics.POD_DIMENSIONS)
    return _alarm(
        scope,
        planned,
        topic=topic,
        # Container Insights publishes the metric per pod, not per namespace (compute_metrics): a Metrics Insights
        # query aggregates the training namespace's pods into the one series an alarm needs (User Guide, "Create a
        # CloudWatch alarm based on a Metrics Insights query": SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE).
        metric=cloudwatch.MathExpression(
            expression=f'SELECT MAX({compute_metrics.POD_CRASH_LOOP_BACK_OFF}) FROM SCHEMA("{compute_metrics.NAMESPACE}", '
            f"{schema}) WHERE ClusterName = '{eks_cluster_name(config, region)}' AND Namespace = '{TRAINING_NAMESPACE}'",
            using_metrics={},
            label="training containers in CrashLoopBackOff (worst pod)",
            period=MINUTE,
        ),
        threshold=1,
        comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        periods=CRASH_LOOP_WINDOW_MINUTES,
        breaching=CRASH_LOOP_BREACHING_MINUTES,
        # No training pod, no series: nothing is looping.
        missing=cloudwatch.TreatMissingData.NOT_BREACHING,
        description=f"A container of a training pod ({TRAINING_NAMESPACE}) in {where} waited in CrashLoopBackOff in "
        f"{CRASH_LOOP_BREACHING_MINUTES} of {CRASH_LOOP_WINDOW_MINUTES} minutes: it crashes and the kubelet restarts "
        "it forever (the job has no backoffLimit), holding the GPUs. Its previous log says why.",
    )


# The training alarms, by key: the same definitions in the Ops stacks (spokes) and the Dashboard stack (hub).
TRAINING_ALARMS = {
    alarms.TRAINING_STALLED: training_stalled,
    alarms.TRAINING_THROUGHPUT_LOW: training_throughput_low,
    alarms.GPU_UTILIZATION_LOW: gpu_utilization_low,
    alarms.TRAINING_JOB_UNFINISHED: training_job_unfinished,
    alarms.TRAINING_REPORTS_MISSING: training_reports_missing,
    alarms.TRAINING_JOB_DEAD: training_job_dead,
    alarms.TRAINING_CRASH_LOOP: training_crash_loop,
}
