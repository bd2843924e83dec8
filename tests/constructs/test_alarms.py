"""The training and cache alarms, judged as CloudWatch judges them, over the synthesized templates.

Each alarm's expression and settings are read from the template and run through
tests/fakes/cloudwatch_alarm.py (metric math, alarm evaluation and composite rules as the CloudWatch User Guide
documents them; an expression whose result depends on an undocumented reading of missing values is refused)
on scenarios: it must fire on the failure it watches, as fast as docs/operations.md says, and stay quiet where
it would page falsely. How far back CloudWatch reaches past missing data (the evaluation range) is not
documented for these periods, so every scenario is judged with several ranges and must come out the same.

Where the numbers come from: the job's samples/s records are produced by the job's own reporter
(workload/throughput.py) on a simulated clock, so the baseline the throughput alarm divides by is the one the
job publishes. A healthy step takes 18.5 min / 999 batches = 1.11 s (docs/design.md §1), and 128 samples per step
make that 115.2 samples/s, inside the reference's 115-117 samples/s on a warm spoke. Each sample reads
(4096 + 1) tokens x 2 bytes = 8,194 bytes (workload/shards.py; docs/design.md §1: 4096-token windows). The hit rate
of a warm cache is 94-96 % (docs/design.md §1). GPUs read 99 % while a synchronous job waits in collectives: ranks
blocked in NCCL keep a kernel spinning (NVIDIA/nccl#257, #403, #1550; cupy#3557).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from statistics import mean
from typing import Any

import pytest

from hubspoke import compute_metrics, training_metrics
from hubspoke.config import HubSpokeConfig
from tests.conftest import Templates, minimal, options, properties, synth
from tests.fakes.clock import ManualClock
from tests.fakes.cloudwatch_alarm import (
    Series,
    alarm_from_template,
    alarm_state,
    composite_state,
    evaluate,
    evaluate_every_minute,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
from throughput import ThroughputReporter

# Any image pinned by digest: these tests read the job's arguments, not its image.
ANY_IMAGE = "registry.example/train@sha256:" + "ab" * 32

SPS = training_metrics.SAMPLES_PER_SECOND
BASE = training_metrics.SAMPLES_PER_SECOND_BASELINE
GPU = compute_metrics.NODE_GPU_UTILIZATION
NFS = "NfsReadBytesLogged"  # hubspoke/constructs/canary/traffic.py: NFS read bytes, logged at both ENIs
HUB = "InterRegionBytesIn"
# hubspoke/training_metrics.py, docs/operations.md: what prewarm warmed (and its residency sample kept), republished
# by the job from prewarm's status
CACHED = "DatasetPrewarmedFraction"

STEP_S = 18.5 * 60 / 999  # the reference: 999 batches in 18.5 minutes
SAMPLES_PER_STEP = 128  # 128 / 1.11 s = 115.2 samples/s, the reference's 115-117
BYTES_PER_SAMPLE = (4096 + 1) * 2  # workload/shards.py reads seq_len + 1 tokens of 2 bytes
GPUS = 16  # 2 x ml.p5.48xlarge, 8 GPUs each: one node_gpu_utilization datapoint per GPU
START = 20  # minutes of healthy training before each scenario's event

Timeline = dict[str, dict[int, list[float]]]  # metric name -> period index -> raw records in that period
_STATISTICS: dict[str, Callable[[list[float]], float]] = {
    "Average": mean,
    "Maximum": max,
    "Minimum": min,
    "Sum": sum,
    "SampleCount": lambda records: float(len(records)),
}


# --- the job, the GPUs and the flow logs, as their publishers report them ---


def job(
    pace: Callable[[float], float | None], *, minutes: int, start_minute: int = 0
) -> list[tuple[float, dict[str, float]]]:
    """(time in s, values) of every record rank 0 reports; `pace(t)` is the length of the step that starts at
    t, or None when that step never finishes (a stall)."""
    clock = ManualClock(start_minute * 60.0)
    records: list[tuple[float, dict[str, float]]] = []
    reporter = ThroughputReporter(
        samples_per_step=SAMPLES_PER_STEP,
        tokens_per_sample=4096,
        report=lambda step, values: records.append((clock.now, values)),
        interval=training_metrics.REPORT_SECONDS,
        baseline_seconds=training_metrics.BASELINE_SECONDS,
        clock=clock,
    )
    end, tick, steps = minutes * 60.0, clock.now + training_metrics.REPORT_SECONDS, 0
    length = pace(clock.now)
    finish = clock.now + length if length is not None else float("inf")
    while tick <= end:
        if finish <= tick:
            clock.now, steps = finish, steps + 1
            reporter.step_done(steps)
            length = pace(finish)
            finish = finish + length if length is not None else float("inf")
        else:
            clock.now = tick
            reporter.tick()
            tick += training_metrics.REPORT_SECONDS
    return records


def steady(step_s: float) -> Callable[[float], float]:
    return lambda t: step_s


def after_start(then: Callable[[float], float | None]) -> Callable[[float], float | None]:
    return lambda t: STEP_S if t < START * 60 else then(t)


def timeline(
    records: list[tuple[float, dict[str, float]]], *, gpu: Callable[[int], float | None], minutes: int
) -> Timeline:
    """Per minute: the job's records (each lands in the minute of its timestamp) and one datapoint per GPU."""
    out: Timeline = {SPS: {}, BASE: {}, GPU: {}}
    for at, values in records:
        minute = int(at // 60)
        out[SPS].setdefault(minute, []).append(values["samples_per_second"])
        if "baseline_samples_per_second" in values:
            out[BASE].setdefault(minute, []).append(values["baseline_samples_per_second"])
    for minute in range(minutes):
        value = gpu(minute)
        if value is not None:
            out[GPU][minute] = [value] * GPUS
    return out


# --- judging an alarm from its template ---


def alarms_named(templates: Templates, key: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for stack, template in templates.items():
        for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"):
            for _, props in properties(template, kind):
                if props["AlarmName"].endswith(f"-{key}"):
                    yield stack, props


def states(
    props: dict[str, Any],
    data: Timeline,
    periods: int,
    evaluation_range: int,
    initial: str = "INSUFFICIENT_DATA",
    start: int = 0,
) -> list[str]:
    """The alarm's state after each period from `start` on, from `initial` (the state before `start`)."""
    expression, inputs = alarm_from_template(props)
    series: dict[str, Series] = {}
    for metric_id, (_, name, statistic) in inputs.items():
        series[metric_id] = {t: _STATISTICS[statistic](r) for t, r in data.get(name, {}).items() if r}
    result = evaluate(expression, series)
    n = props["EvaluationPeriods"]
    history: list[str] = []
    state = initial  # a created alarm's INSUFFICIENT_DATA (PutMetricAlarm), or what a person set
    for now in range(start, periods):
        window = [result.get(t) for t in range(now - evaluation_range + 1, now + 1)]
        state = alarm_state(
            window,
            threshold=props["Threshold"],
            comparison=props["ComparisonOperator"],
            evaluation_periods=n,
            datapoints_to_alarm=props.get("DatapointsToAlarm", n),
            treat_missing_data=props.get("TreatMissingData", "missing"),
            current=state,
        )
        history.append(state)
    return history


def judged(props: dict[str, Any], data: Timeline, periods: int) -> list[str]:
    """States that do not depend on the undocumented evaluation range (N, N + 5 and 2N periods)."""
    n = props["EvaluationPeriods"]
    runs = {r: states(props, data, periods, r) for r in (n, n + 5, 2 * n)}
    assert len({tuple(h) for h in runs.values()}) == 1, f"the outcome depends on the evaluation range: {runs}"
    return runs[n]


def first_alarm(history: list[str]) -> int | None:
    return history.index("ALARM") if "ALARM" in history else None


TRAINING_KEYS = ("training-stalled", "training-throughput-low", "gpu-utilization-low")
NOTHING_FIRES = {key: {None} for key in TRAINING_KEYS}


@pytest.fixture(scope="module")
def training_alarms(dev_templates: Templates) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    found = {key: list(alarms_named(dev_templates, key)) for key in TRAINING_KEYS}
    for key, alarms in found.items():
        # The hub's alarms (dashboard stack) and each training spoke's (Ops stack) are the same definitions.
        assert {stack.split("-", 1)[0] for stack, _ in alarms} == {"dashboard", "ops"}, key
        for _, props in alarms:
            periods = {q["MetricStat"]["Period"] for q in props.get("Metrics", []) if "MetricStat" in q}
            assert periods | {props.get("Period", 60)} == {60}, key
    return found


def first_alarms(
    alarms: dict[str, list[tuple[str, dict[str, Any]]]], data: Timeline, minutes: int
) -> dict[str, set[int | None]]:
    """Per training alarm, the minute it first enters ALARM (one value when hub and spokes agree)."""
    return {key: {first_alarm(judged(p, data, minutes)) for _, p in found} for key, found in alarms.items()}


# --- training alarms: samples/s first, GPUs second ---

HEALTHY_GPU = 99.0  # > 99 % on a warm spoke (docs/design.md §1), and while ranks spin in collectives


def test_a_starving_loader_pages_on_throughput_while_the_gpus_look_busy(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]],
) -> None:
    """Steps four times slower from minute 20 (28.8 samples/s): the GPUs still read 99 % (ranks wait in NCCL),
    so only samples/s sees it. Minute 20 already holds a report of the first slow window, so the 8th
    breaching minute of 10 is minute 27 (docs/operations.md: about 8 minutes)."""
    minutes = START + 30
    data = timeline(
        job(after_start(steady(4 * STEP_S)), minutes=minutes), gpu=lambda m: HEALTHY_GPU, minutes=minutes
    )
    assert first_alarms(training_alarms, data, minutes) == {
        "training-throughput-low": {START + 8 - 1},
        "training-stalled": {None},
        "gpu-utilization-low": {None},
    }


def test_a_stalled_job_pages_as_stalled_and_as_slow(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]],
) -> None:
    """No step finishes after minute 20. Minute 20's highest report is still the healthy window before it, so
    minutes 21-30 are the 10 all-zero minutes: training-stalled on minute 30; throughput-low on minute 27."""
    minutes = START + 30
    data = timeline(
        job(after_start(lambda t: None), minutes=minutes), gpu=lambda m: HEALTHY_GPU, minutes=minutes
    )
    assert first_alarms(training_alarms, data, minutes) == {
        "training-throughput-low": {START + 8 - 1},
        "training-stalled": {START + 10},
        "gpu-utilization-low": {None},
    }


def test_a_job_that_never_takes_a_step_pages_as_stalled_only(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]],
) -> None:
    """A job stuck before its first step (the hub down at start): no baseline exists (it is 0, and a ratio to 0
    is dropped), so only training-stalled sees it, on its 10th minute of zero reports."""
    minutes = 30
    data = timeline(job(lambda t: None, minutes=minutes), gpu=lambda m: 0.0, minutes=minutes)
    assert first_alarms(training_alarms, data, minutes) == {
        "training-throughput-low": {None},
        "training-stalled": {10 - 1},
        "gpu-utilization-low": {8 - 1},
    }


def test_gpus_the_job_leaves_idle_page_on_the_secondary_alarm(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]],
) -> None:
    """A job slow from its first minute (its loader the bottleneck, GPUs at 40 %) never falls below its own
    baseline: the throughput alarm cannot see it, the GPU alarm does."""
    minutes = 30
    data = timeline(job(steady(2 * STEP_S), minutes=minutes), gpu=lambda m: 40.0, minutes=minutes)
    assert first_alarms(training_alarms, data, minutes) == {
        "training-throughput-low": {None},
        "training-stalled": {None},
        "gpu-utilization-low": {8 - 1},
    }


def _warm_up(t: float) -> float:
    """The reference warm-up: batches 0-100 pay 60 ms reads (GPU 80-90 %), 100-150 improve (docs/design.md §1);
    here 1.3x and 1.15x the warm step time."""
    step = int(t / STEP_S)
    return STEP_S * (1.3 if step < 100 else 1.15 if step < 150 else 1.0)


def _checkpoints(t: float) -> float:
    """A one-minute checkpoint save every 10 minutes."""
    return 60.0 if int(t) % 600 < STEP_S else STEP_S


QUIET = [
    ("healthy training", steady(STEP_S), lambda m: HEALTHY_GPU),
    ("a cold start warming up", _warm_up, lambda m: 85.0 if m < 3 else HEALTHY_GPU),
    ("15 % slower than its best (floor 0.8)", after_start(steady(STEP_S / 0.85)), lambda m: HEALTHY_GPU),
    ("a one-minute checkpoint save every 10 minutes", _checkpoints, lambda m: HEALTHY_GPU),
    ("GPU metrics missing while the job trains", steady(STEP_S), lambda m: None),
]


@pytest.mark.parametrize(("case", "pace", "gpu"), QUIET, ids=[c for c, _, _ in QUIET])
def test_training_alarms_stay_quiet(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]],
    case: str,
    pace: Callable[[float], float],
    gpu: Callable[[int], float | None],
) -> None:
    minutes = START + 40
    data = timeline(job(pace, minutes=minutes), gpu=gpu, minutes=minutes)
    assert first_alarms(training_alarms, data, minutes) == NOTHING_FIRES, case


@pytest.mark.parametrize(
    ("case", "data"),
    [
        # No job reports: "missing values are treated as 0" must not make an idle cluster's 0 % a breach.
        ("an idle cluster: no job, GPUs at 0", {GPU: {m: [0.0] * GPUS for m in range(60)}}),
        (
            "samples/s missing (agent path down) while GPUs idle",
            {GPU: {m: [0.0] * GPUS for m in range(60)}, SPS: {}},
        ),
        (
            "the job finishes and the GPUs go idle",
            timeline(
                job(steady(STEP_S), minutes=START),
                gpu=lambda m: HEALTHY_GPU if m < START else 0.0,
                minutes=60,
            ),
        ),
    ],
)
def test_no_job_no_page(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]], case: str, data: Timeline
) -> None:
    assert first_alarms(training_alarms, data, 60) == NOTHING_FIRES, case


@pytest.mark.parametrize(("bad", "good", "fires"), [(8, 2, True), (7, 3, False)])
def test_gpu_alarm_tolerates_two_good_minutes_in_ten(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]], bad: int, good: int, fires: bool
) -> None:
    """Utilization bouncing above the floor for 2 minutes of every 10 still pages; 3 of 10 does not."""
    minutes = START + 60
    data = timeline(
        job(steady(STEP_S), minutes=minutes),
        gpu=lambda m: HEALTHY_GPU if m < START else (30.0 if (m - START) % (bad + good) < bad else 95.0),
        minutes=minutes,
    )
    for stack, props in training_alarms["gpu-utilization-low"]:
        assert ("ALARM" in judged(props, data, minutes)) is fires, stack


def test_a_stalled_job_that_dies_stays_paged_until_a_healthy_job_or_a_person_clears_it(
    training_alarms: dict[str, list[tuple[str, dict[str, Any]]]],
) -> None:
    """issue 42: the process group's timeout ends a stalled job's reports, and the alarms, treating silence as not
    breaching, returned to OK and sent OK while the job was dead. Silence now keeps the state (`ignore`, the
    guide's IGNORE column): ALARM through an hour of silence, OK at the next job's first healthy minutes.

    A person's SetAlarmState OK is temporary: "Metric alarms returns to their actual state quickly, often within
    seconds" (botocore cloudwatch service-2.json, SetAlarmState), i.e. at the next comparison, which judges the real data points in the evaluation range (User Guide, "How alarm state is
    evaluated when data is missing": with at least Evaluation Periods real points the treatment is ignored). So a
    clear the minute after the dead job's last record re-pages while the evaluation range still holds Evaluation
    Periods of its breaching records (ranges longer than N), and holds through the silence once the last record
    has left the range (docs/operations.md says to wait that long, or to disable the alarm's actions)."""
    records = job(after_start(lambda t: None), minutes=START + 15)
    minutes = START + 75
    data = timeline(records, gpu=lambda m: 0.0, minutes=minutes)
    healthy = timeline(job(steady(STEP_S), minutes=START + 20), gpu=lambda m: HEALTHY_GPU, minutes=START + 20)
    resumed = {
        name: {**series, **{START + 75 + t: v for t, v in healthy[name].items()}}
        for name, series in data.items()
    }
    for key in ("training-stalled", "training-throughput-low"):
        for stack, props in training_alarms[key]:
            n = props["EvaluationPeriods"]
            for evaluation_range in (n, n + 5, 2 * n):
                history = states(props, data, minutes, evaluation_range)
                paged = history.index("ALARM")
                assert set(history[paged:]) == {"ALARM"}, f"{key} {stack}: silence resolved the incident"
                after = states(props, resumed, minutes + START + 20, evaluation_range)
                assert after[-1] == "OK", f"{key} {stack}: a healthy job does not clear it"
                last = max(m for m, r in data[SPS].items() if r)  # the dead job's last record
                too_early = states(props, data, minutes, evaluation_range, initial="OK", start=last + 1)
                if evaluation_range > n:
                    assert "ALARM" in too_early, f"{key} {stack} {evaluation_range}: the clear held"
                held = states(
                    props, data, minutes, evaluation_range, initial="OK", start=last + evaluation_range
                )
                assert set(held) == {"OK"}, f"{key} {stack}: a clear after the range does not hold"


def test_a_running_job_reports_in_every_minute_the_alarms_count(
    dev_config: HubSpokeConfig, training_alarms: dict[str, list[tuple[str, dict[str, Any]]]]
) -> None:
    """The alarms count 1-minute periods with a samples/s record: the rendered job must report at least
    twice per period, so every period keeps a record even when one report is late."""
    from hubspoke.k8s.job import training_job
    from tests.stacks.test_dashboard import job_argument

    for region in dev_config.regions():
        if region.compute.enabled:
            seconds = float(
                job_argument(training_job(dev_config, region, image=ANY_IMAGE), "metrics-seconds")
            )
            assert 0 < seconds <= 60 / 2, region.region


# --- cache hit ratio: judged alone, paged on only with the throughput alarm ---

PERIOD_S = 300
REFERENCE_READ = BYTES_PER_SAMPLE * SAMPLES_PER_STEP / STEP_S  # bytes/s the reference job reads: ~0.94 MB/s


def reading(bytes_per_s: float, *, miss: float, background_per_s: float = 1e3) -> dict[str, list[float]]:
    """One 5-minute period of a spoke serving NFS reads, `miss` of them fetched from the hub, beside a
    background of 1 kB/s from the hub (ASSUMED: no source gives the portal's; docs/operations.md)."""
    served = bytes_per_s * PERIOD_S
    return {NFS: [2 * served], HUB: [miss * served + background_per_s * PERIOD_S]}


def periods(each: Callable[[int], Mapping[str, list[float]]], count: int) -> Timeline:
    data: Timeline = {NFS: {}, HUB: {}}
    for period in range(count):
        for name, records in each(period).items():
            data[name][period] = records
    return data


def ratio_alarms(templates: Templates) -> list[dict[str, Any]]:
    found = [props for _, props in alarms_named(templates, "cache-hit-ratio-below-floor")]
    assert found
    for props in found:
        assert {q["MetricStat"]["Period"] for q in props["Metrics"] if "MetricStat" in q} == {PERIOD_S}
    return found


def test_the_minimum_read_volume_is_a_tenth_of_what_the_reference_job_reads() -> None:
    """115 samples/s x 8,194 bytes over 5 minutes, a tenth of it (docs/design.md §1; workload/shards.py)."""
    assert HubSpokeConfig.model_validate(minimal()).ops.cache_hit_ratio_min_read_gb == round(
        115 * 8194 * 300 / 10 / 1e9, 3
    )


@pytest.mark.parametrize(
    ("case", "period", "fires"),
    [
        ("a warm cache under the reference load (95 % hits)", reading(REFERENCE_READ, miss=0.05), False),
        ("a cold first pass under the reference load", reading(REFERENCE_READ, miss=1.0), True),
        ("the cache evicted: half the reads cross to the hub", reading(REFERENCE_READ, miss=0.5), True),
        # A job slowed down by misses reads less: a fifth of the reference rate must still be judged.
        ("a fifth of the reference rate, all misses", reading(REFERENCE_READ / 5, miss=1.0), True),
        # An `ls` or a monitoring script next to the portal's background traffic would read as a ratio < 0.
        ("a trickle of reads, every one a hit", reading(1e4, miss=0.0), False),
        ("a twentieth of the reference rate: no ratio", reading(REFERENCE_READ / 20, miss=1.0), False),
        ("nobody reads", {HUB: [30e6]}, False),
    ],
)
def test_hit_ratio_metric_alarm(
    dev_templates: Templates, case: str, period: Mapping[str, list[float]], fires: bool
) -> None:
    """Three 5-minute periods below the floor (docs/operations.md); periods of few reads do not count. A cold
    first pass trips it: that is why it notifies nobody (next tests)."""
    for props in ratio_alarms(dev_templates):
        assert "AlarmActions" not in props
        history = judged(props, periods(lambda t: period, 10), 10)
        assert first_alarm(history) == (2 if fires else None), case


def test_hit_ratio_minimum_read_volume_comes_from_config(
    config_from: Callable[[dict[str, Any]], HubSpokeConfig],
) -> None:
    data = options()  # the shared synth of several options (tests/conftest.py)
    assert data["ops"]["cache_hit_ratio_min_read_gb"] == 5
    templates = synth(config_from(data))
    for props in ratio_alarms(templates):
        # 10 MB/s is 3 GB per period: under the configured 5 GB, so no ratio, even at 0 % hits.
        assert "ALARM" not in judged(props, periods(lambda t: reading(10e6, miss=1.0), 10), 10)
        assert first_alarm(judged(props, periods(lambda t: reading(20e6, miss=1.0), 10), 10)) == 2


def every_minute(props: dict[str, Any], records: Timeline, minutes: int) -> list[str]:
    """States at the end of each minute as CloudWatch slides the alarm (tests/fakes/cloudwatch_alarm.py), which
    must not depend on the undocumented evaluation range (N, N + 5 and 2N periods)."""
    n = props["EvaluationPeriods"]
    runs = {
        r: evaluate_every_minute(props, records, minutes=range(minutes), evaluation_range=r)
        for r in (n, n + 5, 2 * n)
    }
    assert len({tuple(h) for h in runs.values()}) == 1, f"the outcome depends on the evaluation range: {runs}"
    return runs[n]


def composite(
    templates: Templates,
    *,
    pace: Callable[[float], float | None],
    miss: Callable[[int], float],
    minutes: int,
    cached: Callable[[int], float | None] = lambda m: None,
) -> Iterator[tuple[str, dict[str, list[str]], list[str]]]:
    """Per spoke: each input's and the paging composite's states at the end of each minute, with the job's reads
    (8,194 bytes per sample it trains) served by the spoke, `miss(minute)` of them fetched from the hub, and the
    job republishing prewarm's cached fraction `cached(minute)` (None: no prewarm status) with each report."""
    records = job(pace, minutes=minutes)
    data = timeline(records, gpu=lambda m: HEALTHY_GPU, minutes=minutes)
    data[NFS], data[HUB], data[CACHED] = {}, {}, {}
    for at, values in records:
        served = values["samples_per_second"] * training_metrics.REPORT_SECONDS * BYTES_PER_SAMPLE
        minute = int(at // 60)
        data[NFS].setdefault(minute, []).append(2 * served)
        data[HUB].setdefault(minute, []).append(miss(minute) * served)
        fraction = cached(minute)
        if fraction is not None:
            data[CACHED].setdefault(minute, []).append(fraction)
    for stack, template in templates.items():
        by_id = {
            logical: props
            for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
            for logical, props in properties(template, kind)
        }
        for props in by_id.values():
            if not props["AlarmName"].endswith("-cache-hit-ratio-low"):
                continue
            # The rule names its inputs by ARN (Fn::GetAtt); resolve each to the input's logical ID.
            parts = props["AlarmRule"]["Fn::Join"][1]
            rule = "".join(p if isinstance(p, str) else p["Fn::GetAtt"][0] for p in parts)
            inputs = [p["Fn::GetAtt"][0] for p in parts if not isinstance(p, str)]
            per_minute = {logical: every_minute(by_id[logical], data, minutes) for logical in inputs}
            named = {
                key: next(v for k, v in per_minute.items() if by_id[k]["AlarmName"].endswith(f"-{key}"))
                for key in (
                    "cache-hit-ratio-below-floor",
                    "training-throughput-low",
                    "dataset-not-fully-cached",
                )
            }
            assert len(per_minute) == 3, sorted(by_id[k]["AlarmName"] for k in per_minute)
            paging = [composite_state(rule, {k: v[m] for k, v in per_minute.items()}) for m in range(minutes)]
            yield stack, named, paging


def test_a_cold_first_pass_at_full_speed_does_not_page(dev_templates: Templates) -> None:
    """Every byte of a first pass crosses the peering (prefetched bytes too), so the ratio is ~0 for a whole
    single-epoch run: the ratio alarm goes to ALARM, the paging composite does not."""
    found = list(composite(dev_templates, pace=steady(STEP_S), miss=lambda m: 1.0, minutes=60))
    assert found
    for stack, inputs, paging in found:
        assert "ALARM" in inputs["cache-hit-ratio-below-floor"] and "ALARM" not in paging, stack


@pytest.mark.parametrize(
    ("case", "cached"),
    [
        ("no prewarm status beside the job", lambda m: None),
        ("prewarm stopped at 40 %", lambda m: 0.4),
        ("prewarm still running beside the job", lambda m: min(0.99, 0.02 * m)),
    ],
)
def test_a_slow_cold_first_pass_never_pages_as_a_broken_cache(
    dev_templates: Templates, case: str, cached: Callable[[int], float | None]
) -> None:
    """A cold pass slows the job (60 ms per miss, docs/design.md §1), so the ratio alarm is in ALARM: the composite
    stays quiet while the pinned version is not known to be whole in the cache. issue 42: training-throughput-low
    knows the cold pass too: minutes whose records report a prewarmed fraction under 1 are not judged, so it pages
    only where no record says the version is cold (no prewarm status: the slowdown has no known cause)."""
    found = list(
        composite(
            dev_templates,
            pace=after_start(steady(5 * STEP_S)),
            miss=lambda m: 0.05 if m < START else 1.0,
            cached=cached,
            minutes=START + 40,
        )
    )
    assert found
    for stack, inputs, paging in found:
        assert "ALARM" in inputs["cache-hit-ratio-below-floor"], (case, stack)
        known_cold = case != "no prewarm status beside the job"
        assert ("ALARM" in inputs["training-throughput-low"]) is not known_cold, (case, stack)
        assert "ALARM" not in paging, (case, stack)


def test_a_cache_that_misses_a_whole_version_while_the_job_slows_pages(dev_templates: Templates) -> None:
    """Prewarm warmed the whole version (fraction 1), the cache is warm (95 % hits) until minute 20, then
    evicted: 60 % misses and steps five times slower, so the job also reads five times less. All three inputs
    agree. CloudWatch slides the ratio alarm's three 5-minute periods every minute, so they can end at minutes
    START, START + 5 and START + 10; the one ending at START (minutes 16-20) already holds the first evicted
    minute, and at 60 % misses that one minute pulls the period's ratio to about 0.88, under the 0.9 default
    floor. The composite pages at the end of minute START + 10 (fixed 5-minute periods would say START + 15)."""
    found = list(
        composite(
            dev_templates,
            pace=after_start(steady(5 * STEP_S)),
            miss=lambda m: 0.05 if m < START else 0.6,
            cached=lambda m: 1.0,
            minutes=START + 40,
        )
    )
    assert found
    for stack, inputs, paging in found:
        assert first_alarm(paging) == START + 2 * 5, (stack, {k: first_alarm(v) for k, v in inputs.items()})


def test_a_slow_job_with_a_warm_cache_pages_on_throughput_only(dev_templates: Templates) -> None:
    found = list(
        composite(
            dev_templates,
            pace=after_start(steady(3 * STEP_S)),
            miss=lambda m: 0.05,
            cached=lambda m: 1.0,
            minutes=START + 40,
        )
    )
    assert found
    for stack, inputs, paging in found:
        assert "ALARM" not in inputs["cache-hit-ratio-below-floor"] and "ALARM" not in paging, stack
