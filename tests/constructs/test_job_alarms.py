"""A dead job and a crash-looping one page, judged as CloudWatch judges them over the synthesized templates.

Each alarm's expression and settings are read from the template and run through tests/fakes/cloudwatch_alarm.py
(metric math with FILL, TreatMissingData, M-of-N, composite rules and Metrics Insights aggregation as the CloudWatch
User Guide documents them), slid minute by minute, under evaluation ranges N, N + 5 and 2N (the range is not
documented for these periods): every outcome must be the same under all three.

Publishers, written here rather than imported from hubspoke:
- The training job: TrainingJobCompleted, dimensions Environment and Region, 0 in every throughput record (twice a
  minute, --metrics-seconds 30) and 1 in the one record a normal end sends last (tests/workload/test_train.py reads
  both from a real run of train.py).
- Container Insights with enhanced observability: pod_container_status_waiting_reason_crash_loop_back_off, a count
  per pod, published at [PodName, Namespace, ClusterName] and [ClusterName] but at no [Namespace, ClusterName] set
  (aws/amazon-cloudwatch-agent@0316fb69, translator/translate/otel/exporter/awsemf/kubernetes.go,
  getPodMetricDeclarations). ASSUMED: sampled once a minute (the add-on's default 60 s interval); each scenario is
  judged at four sampling offsets within the minute.
- The kubelet's restart back-off (Kubernetes docs, "Pod Lifecycle", container restarts): 10 s, doubled per crash,
  capped at 300 s, reset once a container has run 10 minutes.
"""

from __future__ import annotations

from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.k8s.job import training_job
from tests.conftest import Templates, properties
from tests.fakes.cloudwatch_alarm import composite_state, evaluate_every_minute, insights_query
from tests.stacks.test_compute import with_dataset_pin

ANY_IMAGE = "registry.example/train@sha256:" + "ab" * 32  # the job's namespace, not its image, is read
COMPLETED = "TrainingJobCompleted"
CRASH_LOOP = "pod_container_status_waiting_reason_crash_loop_back_off"
DEAD, UNFINISHED, SILENT = "training-job-dead", "training-job-unfinished", "training-reports-missing"
LOOP = "training-crash-loop"
Timeline = dict[str, dict[int, list[float]]]


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """This stack's job alarms by key, metric and composite, with the composite's rule resolved to input keys."""
    by_id = {
        lid: props
        for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
        for lid, props in properties(template, kind)
    }
    found = {}
    for props in by_id.values():
        for key in (DEAD, UNFINISHED, SILENT, LOOP):
            if props["AlarmName"].endswith(f"-{key}"):
                found[key] = dict(props)
    if DEAD in found:
        # The rule names its inputs by ARN (Fn::GetAtt); resolve each to the input's key.
        parts = found[DEAD]["AlarmRule"]["Fn::Join"][1]
        names = {
            lid: next(k for k in (UNFINISHED, SILENT) if by_id[lid]["AlarmName"].endswith(f"-{k}"))
            for lid in (p["Fn::GetAtt"][0] for p in parts if not isinstance(p, str))
        }
        found[DEAD]["rule"] = "".join(p if isinstance(p, str) else names[p["Fn::GetAtt"][0]] for p in parts)
    return found


@pytest.fixture(scope="module")
def job_alarms(dev_templates: Templates) -> dict[str, dict[str, dict[str, Any]]]:
    found = {sid: _alarms(t) for sid, t in dev_templates.items() if sid.startswith(("ops-", "dashboard-"))}
    found = {sid: a for sid, a in found.items() if a}
    # config/dev.yaml trains in the hub (Dashboard stack) and its spoke (Ops stack): the same alarms in both.
    assert {sid.split("-", 1)[0] for sid in found} == {"dashboard", "ops"}
    for sid, alarms in found.items():
        assert set(alarms) == {DEAD, UNFINISHED, SILENT, LOOP}, sid
    return found


def every_minute(props: dict[str, Any], records: Timeline, minutes: int, initial: str) -> list[str]:
    n = props["EvaluationPeriods"]
    runs = {
        r: evaluate_every_minute(props, records, minutes=range(minutes), evaluation_range=r, initial=initial)
        for r in (n, n + 5, 2 * n)
    }
    assert len({tuple(h) for h in runs.values()}) == 1, f"the outcome depends on the evaluation range: {runs}"
    return runs[n]


def dead_page(alarms: dict[str, dict[str, Any]], records: Timeline, minutes: int) -> list[str]:
    """The composite's state at the end of each minute, from a fresh deploy (inputs INSUFFICIENT_DATA)."""
    inputs = {
        key: every_minute(alarms[key], records, minutes, "INSUFFICIENT_DATA") for key in (UNFINISHED, SILENT)
    }
    return [
        composite_state(alarms[DEAD]["rule"], {k: v[m] for k, v in inputs.items()}) for m in range(minutes)
    ]


def job(start: int, end: int, *, completes: bool, records: Timeline | None = None) -> Timeline:
    """A job reporting twice a minute (TrainingJobCompleted 0) in minutes start..end-1, its completion record (1)
    in its last minute when it ends normally."""
    out: Timeline = records if records is not None else {COMPLETED: {}}
    for minute in range(start, end):
        out[COMPLETED].setdefault(minute, []).extend([0.0, 0.0])
    if completes:
        out[COMPLETED][end - 1].append(1.0)
    return out


def first(history: list[str], state: str = "ALARM", after: int = 0) -> int | None:
    return next((m for m, s in enumerate(history) if s == state and m >= after), None)


def test_a_job_that_dies_without_stalling_pages_within_six_minutes_and_stays_paged(
    job_alarms: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """issue 42: a crash (no stall first, no records after) paged nobody, like a finished job. Its last record said
    it was running: the page comes 5 to 6 minutes after it and stays through an hour of silence."""
    for sid, alarms in job_alarms.items():
        history = dead_page(alarms, job(10, 30, completes=False), 120)
        paged = first(history)
        assert paged is not None and 30 + 4 <= paged <= 30 + 5, (sid, paged)
        assert set(history[paged:]) == {"ALARM"}, f"{sid}: silence resolved the page"
        assert set(history[:paged]) == {"OK"}, sid


@pytest.mark.parametrize(
    ("case", "records"),
    [
        ("a job that completes", job(10, 30, completes=True)),
        ("no job at all (a fresh deploy)", {COMPLETED: {}}),
        ("records up to 4 minutes late", job(31, 60, completes=True, records=job(10, 27, completes=False))),
        ("two jobs, each completing", job(50, 70, completes=True, records=job(10, 30, completes=True))),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_finished_idle_or_late_reporting_job_never_pages(
    job_alarms: dict[str, dict[str, dict[str, Any]]], case: str, records: Timeline
) -> None:
    for sid, alarms in job_alarms.items():
        assert "ALARM" not in dead_page(alarms, records, 120), f"{sid}: {case}"


def test_the_dead_page_clears_at_a_healthy_job_s_first_record_or_a_person_s_completion_record(
    job_alarms: dict[str, dict[str, dict[str, Any]]],
) -> None:
    """The page's OK is a recovery: a new job's first minute, or a person publishing TrainingJobCompleted 1 for
    the Region (docs/runbooks/compute.md) when the job is abandoned; either holds through the silence after it."""
    for sid, alarms in job_alarms.items():
        assert alarms[DEAD].get("AlarmActions") and alarms[DEAD].get("OKActions"), sid
        resumed = dead_page(alarms, job(90, 110, completes=True, records=job(10, 30, completes=False)), 150)
        assert first(resumed) == 34 and first(resumed, "OK", after=34) == 90, sid
        assert "ALARM" not in resumed[90:], sid
        cleared = job(10, 30, completes=False)
        cleared[COMPLETED][60] = [1.0]  # aws cloudwatch put-metric-data ... --value 1
        history = dead_page(alarms, cleared, 150)
        assert set(history[34:60]) == {"ALARM"} and set(history[60:]) == {"OK"}, sid


def test_the_inputs_notify_nobody_and_read_what_train_py_publishes(
    dev_config: HubSpokeConfig, job_alarms: dict[str, dict[str, dict[str, Any]]]
) -> None:
    for sid, alarms in job_alarms.items():
        region = sid.split("-", 1)[1]
        for key in (UNFINISHED, SILENT):
            props = alarms[key]
            assert not props.get("AlarmActions") and not props.get("OKActions"), (sid, key)
            metrics = (
                [q["MetricStat"]["Metric"] for q in props["Metrics"] if "MetricStat" in q]
                if "Metrics" in props
                else [props]
            )
            for metric in metrics:
                assert (metric["Namespace"], metric["MetricName"]) == ("HubSpoke/Training", COMPLETED), key
                dims = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
                assert dims == {"Environment": dev_config.environment, "Region": region}, key
        assert "Runbook: docs/runbooks/compute.md" in alarms[DEAD]["AlarmDescription"], sid


# --- crash loops ---


def kubelet(run_s: float, crashes: int | None, minutes: int, offset: float) -> list[float]:
    """Per minute, the sampled count of the container waiting in CrashLoopBackOff: it runs `run_s` seconds and
    crashes, `crashes` times (None: forever), then runs on; the agent samples at `offset` s into each minute."""
    waits: list[tuple[float, float]] = []
    t, backoff, n = 0.0, 10.0, 0
    while t < minutes * 60 and (crashes is None or n < crashes):
        t += run_s
        if run_s >= 600:
            backoff = 10.0  # "after ... 10 minutes" of running the kubelet resets the back-off
        waits.append((t, t + backoff))
        t, backoff, n = t + backoff, min(backoff * 2, 300.0), n + 1
    return [float(any(a <= m * 60 + offset < b for a, b in waits)) for m in range(minutes)]


def loop_history(props: dict[str, Any], pods: list[list[float]], minutes: int) -> list[str]:
    # Each pod's sample lands in the minute; MAX over the namespace's pods is the statistic over all of them.
    records: Timeline = {CRASH_LOOP: {m: [pod[m] for pod in pods] for m in range(minutes)}}
    return every_minute(props, records, minutes, "INSUFFICIENT_DATA")


OFFSETS = (0.0, 15.0, 30.0, 45.0)


@pytest.mark.parametrize(
    ("run_s", "within"),
    [(5.0, 4), (60.0, 8), (300.0, 30), (900.0, None)],
    ids=["refused-at-start", "crash-after-a-minute", "crash-after-five-minutes", "crash-after-15-minutes"],
)
def test_a_crash_looping_training_pod_pages_within_minutes(
    job_alarms: dict[str, dict[str, dict[str, Any]]], run_s: float, within: int | None
) -> None:
    """No backoffLimit: a train.py refusal (exit 2 at start) or a crash after the model build restarts forever.
    A container that runs 10 minutes before each crash resets the kubelet's back-off and is never seen waiting
    long: this alarm misses it (docs/operations.md says so; its records keep the dead-job page quiet too)."""
    for sid, alarms in job_alarms.items():
        for offset in OFFSETS:
            healthy = [0.0] * 60
            history = loop_history(alarms[LOOP], [kubelet(run_s, None, 60, offset), healthy], 60)
            paged = first(history)
            if within is None:
                assert paged is None, (sid, offset)
            else:
                assert paged is not None and paged <= within, (sid, offset, paged)


@pytest.mark.parametrize("crashes", [0, 1, 2])
def test_a_restart_or_two_does_not_page(
    job_alarms: dict[str, dict[str, dict[str, Any]]], crashes: int
) -> None:
    """A node fault restarts a container once (10 s back-off), a flaky start twice: not a loop."""
    for sid, alarms in job_alarms.items():
        for offset in OFFSETS:
            for run_s in (5.0, 60.0):
                history = loop_history(alarms[LOOP], [kubelet(run_s, crashes, 30, offset)], 30)
                assert "ALARM" not in history, (sid, offset, run_s)
        assert "ALARM" not in loop_history(alarms[LOOP], [], 30), f"{sid}: no training pod"


def test_the_crash_loop_alarm_aggregates_the_training_namespace_of_this_cluster(
    dev_config: HubSpokeConfig, dev_templates: Templates, job_alarms: dict[str, dict[str, dict[str, Any]]]
) -> None:
    pinned = with_dataset_pin(dev_config)
    for sid, alarms in job_alarms.items():
        region = sid.split("-", 1)[1]
        props = alarms[LOOP]
        [query] = [q for q in props["Metrics"] if q.get("ReturnData", True)]
        parsed = insights_query(query["Expression"])
        assert parsed is not None, query
        namespace, metric, statistic, where = parsed
        assert (namespace, metric, statistic) == ("ContainerInsights", CRASH_LOOP, "Maximum"), parsed
        # The schema is the documented per-pod set; the filter is this Region's EKS cluster and the namespace the
        # rendered training job's pods run in.
        assert 'SCHEMA("ContainerInsights", ClusterName, Namespace, PodName)' in query["Expression"]
        [(_, eks)] = properties(dev_templates[f"compute-{region}"], "AWS::EKS::Cluster")
        job_namespace = training_job(pinned, pinned.region_config(region), image=ANY_IMAGE)["metadata"][
            "namespace"
        ]
        assert where == {"ClusterName": eks["Name"], "Namespace": job_namespace}, where
        assert props["AlarmActions"] and props["OKActions"], sid
        assert "Runbook: docs/runbooks/compute.md" in props["AlarmDescription"], sid
