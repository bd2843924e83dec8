"""Every alarm an environment raises: its name, the stack that holds it and its runbook. No CDK.

The Ops and Dashboard stacks create exactly these (hubspoke/constructs/alarms.py, training_alarms.py), the
dashboard lists them per Region, and the CLI can name them without synthesizing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.names import alarm_name
from hubspoke.topology import plan_stacks

HUB_UNREACHABLE = "hub-unreachable-page"
# The hub-unreachable-page alarm fires when this many one-minute canary datapoints in a row are breaching
# (hubspoke/constructs/alarms.py); verify judges the same window.
HUB_UNREACHABLE_MINUTES = 3
PORTAL_NOT_ACTIVE = "portal-not-active-page"
# The canary's two pages are composites, `ALARM(<probes>)`, of probe alarms that judge only the canary's real
# records (a silent canary changes neither); CANARY_FAILING pages when the canary runs without publishing.
CANARY_FAILING = "canary-failing"
HUB_PROBES_FAILING = "hub-probes-failing"
PORTAL_PROBES_NOT_ACTIVE = "portal-probes-not-active"
# The training job's own throughput is the primary signal (docs/operations.md, "Alarms"): ranks waiting in
# synchronous collectives keep GPU utilization high while the loader starves.
TRAINING_STALLED = "training-stalled"
TRAINING_THROUGHPUT_LOW = "training-throughput-low"
GPU_UTILIZATION_LOW = "gpu-utilization-low"
# A job that falls silent without its completion record (a crash, a kill, a lost node) pages as dead: the composite
# TRAINING_JOB_DEAD is ALARM(unfinished: the job's last record said it was running) AND ALARM(reports missing).
TRAINING_JOB_UNFINISHED = "training-job-unfinished"
TRAINING_REPORTS_MISSING = "training-reports-missing"
TRAINING_JOB_DEAD = "training-job-dead"
# A training pod's container waiting in CrashLoopBackOff: the job has no backoffLimit (hubspoke/k8s/job.py), so a
# crash that is not a node fault restarts under the kubelet's back-off forever, holding the GPUs.
TRAINING_CRASH_LOOP = "training-crash-loop"
# The hit ratio alone is ~0 on any cold first pass: its metric alarm notifies nobody, and the composite
# CACHE_HIT_RATIO_LOW pages only while the throughput alarm is in ALARM too.
CACHE_HIT_RATIO_BELOW_FLOOR = "cache-hit-ratio-below-floor"
CACHE_HIT_RATIO_LOW = "cache-hit-ratio-low"
# In ALARM while the pinned dataset version is not known to be whole in the spoke cache (its cached fraction
# below FULLY_CACHED_FRACTION, or not reported): notifies nobody; the composite pages only while it is OK.
DATASET_NOT_FULLY_CACHED = "dataset-not-fully-cached"
# The whole version, not most of it: prewarm warms in the loader's order (workload/prewarm.py), so what is left
# cold is one contiguous stretch of the pass, and the loader reads it at a 0 % hit ratio for as long as it takes
# (at 0.9 warmed, a tenth of every epoch). Any threshold under 1 lets a cold stretch page as "cache broken";
# 1 only loses the page while a version is being prewarmed, when misses are expected anyway.
FULLY_CACHED_FRACTION = 1.0
# Node and fabric health where the Region trains (hubspoke/constructs/node_health.py): GPUs that running pods hold
# but leave idle, a checkpoint older than a restart should lose, EFA devices dropping packets, and HyperPod finding
# nodes unhealthy again and again (each such event also reaches the topic as it happens).
GPUS_IDLE_WHILE_HELD = "gpus-idle-while-held"
CHECKPOINT_TOO_OLD = "checkpoint-too-old"
EFA_PACKETS_DROPPED = "efa-packets-dropped"
NODES_UNHEALTHY_REPEATEDLY = "nodes-unhealthy-repeatedly"
_NODE_HEALTH_RUNBOOKS = {
    GPUS_IDLE_WHILE_HELD: "docs/runbooks/compute.md",
    CHECKPOINT_TOO_OLD: "docs/runbooks/checkpoints.md",
    EFA_PACKETS_DROPPED: "docs/runbooks/compute.md",
    NODES_UNHEALTHY_REPEATEDLY: "docs/runbooks/compute.md",
}
NODE_HEALTH_ALARMS: tuple[str, ...] = tuple(_NODE_HEALTH_RUNBOOKS)
_SILENT_INPUTS = (
    HUB_PROBES_FAILING,
    PORTAL_PROBES_NOT_ACTIVE,
    CACHE_HIT_RATIO_BELOW_FLOOR,
    DATASET_NOT_FULLY_CACHED,
    TRAINING_JOB_UNFINISHED,
    TRAINING_REPORTS_MISSING,
)
# The job's life, the same in hub and spokes; inputs before the composite that reads them.
_JOB_RUNBOOKS = {
    TRAINING_JOB_UNFINISHED: "docs/runbooks/compute.md",
    TRAINING_REPORTS_MISSING: "docs/runbooks/compute.md",
    TRAINING_JOB_DEAD: "docs/runbooks/compute.md",
    TRAINING_CRASH_LOOP: "docs/runbooks/compute.md",
}
# What each key means for the runbook an operator follows, where the cause is most often found.
_TRAINING_RUNBOOKS = {
    "spoke": {
        TRAINING_STALLED: "docs/runbooks/hub-outage.md",
        TRAINING_THROUGHPUT_LOW: "docs/runbooks/cache-warm-up.md",
        GPU_UTILIZATION_LOW: "docs/runbooks/cache-warm-up.md",
        **_JOB_RUNBOOKS,
    },
    "hub": {
        **{
            key: "docs/runbooks/compute.md"
            for key in (TRAINING_STALLED, TRAINING_THROUGHPUT_LOW, GPU_UTILIZATION_LOW)
        },
        **_JOB_RUNBOOKS,
    },
}


@dataclass(frozen=True)
class PlannedAlarm:
    """One CloudWatch alarm: what it watches (`key`), in which Region, in which stack, and what to do about it."""

    key: str
    region: str
    stack_id: str
    stack_name: str
    runbook: str
    notifies: bool = True  # False: an input of a composite alarm, which is the one that notifies

    @property
    def name(self) -> str:
        """The alarm's CloudWatch name: its stack's name and its key, so two environments never collide."""
        return alarm_name(self.stack_name, self.key)


def planned_alarms(config: HubSpokeConfig) -> tuple[PlannedAlarm, ...]:
    """Every alarm of the environment, in deploy order of the stacks that hold them."""
    alarms: list[PlannedAlarm] = []
    computes = {p.region for p in plan_stacks(config) if p.kind == "compute"}
    for plan in plan_stacks(config):
        keys: list[tuple[str, str]] = []
        if plan.kind == "ops":
            spoke = config.spoke(plan.region)
            # Inputs before the composites that read them.
            keys = [
                (key, "docs/runbooks/hub-outage.md")
                for key in (
                    CANARY_FAILING,
                    HUB_PROBES_FAILING,
                    HUB_UNREACHABLE,
                    PORTAL_PROBES_NOT_ACTIVE,
                    PORTAL_NOT_ACTIVE,
                )
            ]
            if plan.region in computes:
                keys += list(_TRAINING_RUNBOOKS["spoke"].items())
                if spoke.storage.enabled:
                    # Inputs before the composite that reads them.
                    keys += [
                        (CACHE_HIT_RATIO_BELOW_FLOOR, "docs/runbooks/cache-warm-up.md"),
                        (DATASET_NOT_FULLY_CACHED, "docs/runbooks/cache-warm-up.md"),
                        (CACHE_HIT_RATIO_LOW, "docs/runbooks/cache-warm-up.md"),
                    ]
                keys += list(_NODE_HEALTH_RUNBOOKS.items())
        elif plan.kind == "dashboard" and plan.region in computes:
            # The hub has no Ops stack (a canary there would watch itself): its training alarms live here.
            keys = list(_TRAINING_RUNBOOKS["hub"].items()) + list(_NODE_HEALTH_RUNBOOKS.items())
        alarms += [
            PlannedAlarm(key, plan.region, plan.id, plan.name, runbook, notifies=key not in _SILENT_INPUTS)
            for key, runbook in keys
        ]
    return tuple(alarms)
