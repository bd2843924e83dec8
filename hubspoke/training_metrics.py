"""The training job's CloudWatch metric names, their embedded metric format (EMF) records, and where they go.

The workload (workload/train.py, inside the training image) sends these records to the CloudWatch agent's
EMF endpoint; the Ops dashboard reads the same names. Stdlib only: the image copies this file without the
rest of hubspoke.
"""

from __future__ import annotations

import json
import time
from typing import Any

NAMESPACE = "HubSpoke/Training"
SAMPLES_PER_SECOND = "SamplesPerSecond"
TOKENS_PER_SECOND = "TokensPerSecond"
STEP_SECONDS = "StepSeconds"
# The run's own baseline: the best mean samples/s it kept over any BASELINE_SECONDS (workload/throughput.py).
SAMPLES_PER_SECOND_BASELINE = "SamplesPerSecondBaseline"
BASELINE_SECONDS = 300.0
# The fraction 0..1 of the pinned dataset version's bytes (its manifest's total_bytes) that prewarm has warmed in
# this Region's spoke cache, lowered at the end of each prewarm run to what a re-fetched sample shows the cache
# still holds (workload/prewarm.py publishes it while it runs and writes it to its status file; train.py
# republishes that file's value with every throughput record, so the cache alarms can judge it while a job runs).
# Named for that, not "cached": no Qumulo API reports what a spoke holds of one directory (the SDK's portal
# file-system info, qumulo.rest.portal Portal.get_filesystem, has one usage_bytes per portal file system), so an
# eviction after prewarm's last run stays unseen until it runs again.
DATASET_PREWARMED_FRACTION = "DatasetPrewarmedFraction"
# Seconds since the newest complete checkpoint of the job's checkpoint directory was written (the one a restart
# would resume from; since the job's start while there is none), republished with every throughput record, so a
# job that runs but never manages to save, or a restart loop that never reaches its next save, reads as old.
CHECKPOINT_AGE_SECONDS = "CheckpointAgeSeconds"
# 0 in every throughput record, and 1 in one last record train.py sends when it ends normally (its steps trained
# and saved): the last value a job published tells a finished job (1) from one that died or was killed (0), which
# both fall silent (the training-job-dead alarm, hubspoke/constructs/training_alarms.py).
TRAINING_JOB_COMPLETED = "TrainingJobCompleted"
# Rank 0 reports throughput every this many seconds (the rendered job's --metrics-seconds, train.py's
# default). At most half a minute, so every 1-minute period of a running job holds a record the training
# alarms can count.
REPORT_SECONDS = 30.0
# One dimension set, so a dashboard can name every series without knowing job names.
DIMENSIONS: tuple[str, ...] = ("Environment", "Region")
UNITS = {
    SAMPLES_PER_SECOND: "Count/Second",
    TOKENS_PER_SECOND: "Count/Second",
    STEP_SECONDS: "Seconds",
    SAMPLES_PER_SECOND_BASELINE: "Count/Second",
    DATASET_PREWARMED_FRACTION: "None",
    CHECKPOINT_AGE_SECONDS: "Seconds",
    TRAINING_JOB_COMPLETED: "None",
}

# Where the records go. CloudWatch extracts metrics only from log events that are EMF documents themselves;
# the observability add-on's Fluent Bit wraps each stdout line in its own JSON record, so stdout EMF never
# becomes a metric. The add-on's CloudWatch agent accepts EMF on a socket instead (CloudWatch User Guide,
# "Using the CloudWatch agent to send embedded metric format logs": `logs.metrics_collected.emf`, default
# tcp/udp 25888). The add-on's operator publishes that listener on the `cloudwatch-agent` Service in the
# `amazon-cloudwatch` namespace, always on port 25888 (amazon-cloudwatch-agent-operator, EMF service ports),
# so the port is a fact of the add-on, not a setting. The EMF client libraries read the endpoint from
# AWS_EMF_AGENT_ENDPOINT (`tcp://host:port`); the training job follows that convention.
AGENT_ENDPOINT_ENV = "AWS_EMF_AGENT_ENDPOINT"
AGENT_SERVICE = "cloudwatch-agent"
AGENT_NAMESPACE = "amazon-cloudwatch"
AGENT_PORT = 25888
AGENT_ENDPOINT = f"tcp://{AGENT_SERVICE}.{AGENT_NAMESPACE}:{AGENT_PORT}"
# The agent files each record in the log group its `_aws.LogGroupName` names. Its EMF pipeline is "EMF only"
# (aws/amazon-cloudwatch-agent@ab55b8da, translator/translate/otel/exporter/awscloudwatchlogs/translator.go,
# setEmfFields: EmfOnly, RawLog), and that exporter refuses a record without a log group name as "invalid emf
# log" (amazon-contributing/opentelemetry-collector-contrib aws-cwa-dev@8e059f14,
# exporter/awscloudwatchlogsexporter/exporter.go, logToCWLog): such a record is dropped, not filed in a
# default group. Each Region's Compute stack creates this group, with a retention.


def log_group_name(environment: str) -> str:
    """The log group the agent writes this environment's training metric records to."""
    return f"/hubspoke/{environment}/training-metrics"


def emf_record(
    values: dict[str, float],
    *,
    environment: str,
    region: str,
    properties: dict[str, Any] | None = None,
    timestamp_ms: int | None = None,
) -> dict[str, Any]:
    """One EMF log event: metric values and dimensions as top-level members, described under `_aws`."""
    unknown = set(values) - set(UNITS)
    if unknown:
        raise ValueError(
            f"unknown training metric(s) {sorted(unknown)}; add them to hubspoke/training_metrics.py"
        )
    return {
        "_aws": {
            "Timestamp": int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
            "LogGroupName": log_group_name(environment),
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [list(DIMENSIONS)],
                    "Metrics": [{"Name": name, "Unit": UNITS[name]} for name in values],
                }
            ],
        },
        "Environment": environment,
        "Region": region,
        **(properties or {}),
        **values,
    }


def emf_line(values: dict[str, float], *, environment: str, region: str, **properties: Any) -> str:
    """The record as one JSON line (no newline), for stdout or the agent's socket."""
    return json.dumps(emf_record(values, environment=environment, region=region, properties=properties))
