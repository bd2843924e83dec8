"""The training job's alarms, the same for the hub (in the Dashboard stack) and every spoke that trains (Ops).

A slow, stalled, dead or crash-looping job; docs/operations.md says what each catches, how fast, and what it
cannot see.
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from hubspoke import alarms, compute_metrics, training_metrics
from hubspoke.alarms import PlannedAlarm
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.alarms import MINUTE, AlarmTopic, _alarm
from hubspoke.constructs.metrics import gpu_while_training, throughput_vs_baseline, training_metric
from hubspoke.k8s.names import NAMESPACE as TRAINING_NAMESPACE
from hubspoke.names import eks_cluster_name
from hubspoke.training_metrics import BASELINE_SECONDS

# No step finished in any report of 10 minutes in a row. Healthy steps take about 1.1 s (the reference: 999
# batches in 18.5 minutes, docs/design.md §1); 10 minutes leaves room for a checkpoint save or a slow first step.
STALLED_MINUTES = 10
# 8 breaching minutes of the last 10, not 10 in a row: a starving loader's throughput bounces (batches that
# arrive are trained at full speed), and a minute or two above the floor must not restart the count.
LOW_WINDOW_MINUTES = 10
LOW_BREACHING_MINUTES = 8

# Silence keeps the state (`ignore`: CloudWatch User Guide, "How alarm state is evaluated when data is
# missing"; tests/fakes/cloudwatch_alarm.py): an idle cluster never pages, and a job that degraded then died
# stays paged until a healthy record or a person (SetAlarmState OK) clears it.
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
    # Created, a composite is INSUFFICIENT_DATA and then follows its rule (alarms.py, _canary_page): before any
    # job the unfinished input has no data, so a fresh deploy is OK; a re-deploy judges the records before it.
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


# Kubelet back-off is 10 s, 20 s, 40 s ... 5 min, reset after 10 minutes' run (Kubernetes docs, "Pod
# Lifecycle"): a fault's restart or two sample CrashLoopBackOff at most twice, so 3 in 10 minutes is a loop.
# ASSUMED: the add-on samples pod states once a minute.
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
    query = (
        f"SELECT MAX({compute_metrics.POD_CRASH_LOOP_BACK_OFF}) "
        f'FROM SCHEMA("{compute_metrics.NAMESPACE}", {schema}) '
        f"WHERE ClusterName = '{eks_cluster_name(config, region)}' AND Namespace = '{TRAINING_NAMESPACE}'"
    )
    return _alarm(
        scope,
        planned,
        topic=topic,
        # Container Insights publishes the metric per pod, not per namespace (compute_metrics): a Metrics Insights
        # query aggregates the training namespace's pods into the one series an alarm needs (User Guide, "Create a
        # CloudWatch alarm based on a Metrics Insights query": SELECT FUNCTION(metricName) FROM SCHEMA(...) WHERE).
        metric=cloudwatch.MathExpression(
            expression=query,
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
        description=f"A container of a training pod ({TRAINING_NAMESPACE}) in {where} waited in "
        f"CrashLoopBackOff in {CRASH_LOOP_BREACHING_MINUTES} of {CRASH_LOOP_WINDOW_MINUTES} minutes: it crashes "
        "and the kubelet restarts it forever (the job has no backoffLimit), holding the GPUs. Its previous log "
        "says why.",
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
