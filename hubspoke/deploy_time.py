"""How long a first deploy takes: each stack kind's duration, and the critical path of the stack dependency graph.

Two figures per stack: `expected` (what a deploy usually takes; a source where one exists, else ASSUMED) and
`bound` (the longest the stack can run before one of its own waiters or CloudFormation fails it: our waiter
budgets and service limits, so a deploy past it has failed). The critical path is the longest chain of
dependent stacks; `cdk deploy --concurrency N` reaches it when N is at least the most stacks the earliest-start
schedule ever runs at once (the CLI starts every stack whose dependencies are complete, up to N at a time:
aws-cdk 2.1148.1, `--concurrency`, "Maximum number of simultaneous deployments (dependency permitting)").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.topology import StackKind, StackPlan, plan_stacks

# Waiter budgets the stacks are built with (kept here, without CDK, so `hubspoke plan` reads the same values):
# the HyperPod dependencies chart installer's Lambda timeout (hubspoke/constructs/hyperpod/dependencies.py), and
# the HyperPod node waiter's phases, each waiting at most NODE_WAIT_MINUTES (hyperpod/nodes_ready.py says why).
CHART_INSTALL_BOUND_MINUTES = 14
NODE_WAIT_MINUTES = 55
# New instances run deep health checks "for about 2 hours" (SageMaker developer guide, "Recommended resiliency
# configuration", sagemaker-hyperpod-eks-resiliency-config-tips.html, stored in ja_jp: "約 2 時間"). ASSUMED: the
# margin covers "about"; ASSUMED too for InstanceConnectivity's NCCL tests, which no page times.
DEEP_HEALTH_CHECK_MINUTES = 120
DEEP_HEALTH_CHECK_MARGIN = 0.25
# Between "Launched" (every node past Pending, so its checks have begun) and the final "Running" wait, enough
# "Checking" waits of NODE_WAIT_MINUTES each that all the waits after Launched span the checks with the margin:
# ceil(120 x 1.25 / 55) = 3 waits after Launched, so 2 Checking waits.
CHECKING_WAITS = math.ceil(DEEP_HEALTH_CHECK_MINUTES * (1 + DEEP_HEALTH_CHECK_MARGIN) / NODE_WAIT_MINUTES) - 1


def node_wait_phases(deep_health_checks: bool) -> tuple[str, ...]:
    """The node waiter's chained waits in order: Launched, the Checking waits when any group runs on-start deep
    health checks (none without: a node goes from its launch to Running, ASSUMED), then Running."""
    checking = CHECKING_WAITS if deep_health_checks else 0
    return ("Launched", *(f"Checking{i}" for i in range(1, checking + 1)), "Running")


def deep_health_checks(config: HubSpokeConfig) -> bool:
    """Whether any instance group of any Region with compute runs on-start deep health checks."""
    return any(
        group.on_start_deep_health_checks
        for region in config.regions()
        if region.compute.enabled
        for group in region.compute.instance_groups
    )


# EKS: "EKS cluster control plane provisioning time currently averages 15 minutes" (the EKS team,
# aws/containers-roadmap#1227). No documented upper limit: the bound is ASSUMED at twice the average.
EKS_CREATE_MINUTES = 15
EKS_CREATE_BOUND_MINUTES = 30
# CNQ: Qumulo's own Terraform waits 30 minutes for a cluster to form (qumulo-terraform-aws,
# provider_timeout_minutes); ASSUMED that a formation usually fits in it. Our wait is storage.formation_timeout_
# minutes (provisioning.py), on top of the nodes' launch (ASSUMED 10 minutes at most).
CNQ_FORMATION_MINUTES = 30
CNQ_LAUNCH_BOUND_MINUTES = 10
# HyperPod: nodes launched and their lifecycle script run, ASSUMED 15 minutes for a p5 group with capacity
# available; then, where configured, the on-start deep health checks, about DEEP_HEALTH_CHECK_MINUTES (above).
# Each of node_wait_phases waits at most NODE_WAIT_MINUTES (nodes_ready.py).
HYPERPOD_LAUNCH_MINUTES = 15


def hyperpod_nodes_minutes(config: HubSpokeConfig) -> int:
    """Minutes a HyperPod cluster's nodes usually take to be Running: launch, then the deep health checks if any."""
    return HYPERPOD_LAUNCH_MINUTES + (DEEP_HEALTH_CHECK_MINUTES if deep_health_checks(config) else 0)


@dataclass(frozen=True)
class KindDuration:
    """Minutes one stack of a kind takes: usually, and at most before it fails; with the source of each."""

    expected: float
    bound: float
    source: str


def kind_durations(config: HubSpokeConfig) -> dict[StackKind, KindDuration]:
    """Each stack kind's duration for this config (the storage bound follows its formation timeout)."""
    formation = max(
        (r.storage.formation_timeout_minutes for r in config.regions() if r.storage.enabled), default=50
    )
    phases = node_wait_phases(deep_health_checks(config))
    node_waits = len(phases) * NODE_WAIT_MINUTES
    nodes = hyperpod_nodes_minutes(config)
    checks = (
        f" (launch ASSUMED {HYPERPOD_LAUNCH_MINUTES} + deep health checks about {DEEP_HEALTH_CHECK_MINUTES}, "
        "SageMaker developer guide, 'Recommended resiliency configuration')"
        if deep_health_checks(config)
        else " (launch, ASSUMED; no deep health checks configured)"
    )
    return {
        "network": KindDuration(5, 15, "ASSUMED: VPC, subnets, one NAT gateway per AZ used, flow logs"),
        "peer-access": KindDuration(2, 5, "ASSUMED: one IAM role"),
        "link": KindDuration(3, 10, "ASSUMED: routes, ingress rules, the peering acceptance"),
        "storage": KindDuration(
            CNQ_FORMATION_MINUTES,
            formation + CNQ_LAUNCH_BOUND_MINUTES,
            "expected: Qumulo's Terraform formation wait, 30 min (qumulo-terraform-aws provider_timeout_minutes); "
            f"bound: storage.formation_timeout_minutes ({formation}) + {CNQ_LAUNCH_BOUND_MINUTES} min node launch "
            "(ASSUMED)",
        ),
        "compute": KindDuration(
            EKS_CREATE_MINUTES + nodes,
            EKS_CREATE_BOUND_MINUTES + CHART_INSTALL_BOUND_MINUTES + node_waits,
            f"EKS create, average {EKS_CREATE_MINUTES} min (aws/containers-roadmap#1227; bound ASSUMED "
            f"{EKS_CREATE_BOUND_MINUTES}), chart install at most {CHART_INSTALL_BOUND_MINUTES} min (its Lambda "
            f"timeout), HyperPod nodes {nodes} min{checks}, at most {len(phases)} x {NODE_WAIT_MINUTES} min "
            f"(hyperpod/nodes_ready.py: {', '.join(phases)})",
        ),
        "ops": KindDuration(3, 10, "ASSUMED: canary function, alarms, SNS topic"),
        "dashboard": KindDuration(1, 5, "ASSUMED: one CloudWatch dashboard and its alarms"),
    }


@dataclass(frozen=True)
class Schedule:
    """The earliest-start schedule of a dependency graph: its length, its longest chain and its widest moment."""

    minutes: float
    path: tuple[str, ...]
    # The most stacks running at once: `--concurrency` of at least this reaches `minutes`.
    concurrency: int
    start: Mapping[str, float]


def schedule(durations: Mapping[str, float], depends_on: Mapping[str, Sequence[str]]) -> Schedule:
    """Start every node as soon as its dependencies finish; `durations` lists the nodes in a dependency order."""
    start: dict[str, float] = {}
    finish: dict[str, float] = {}
    came_from: dict[str, str | None] = {}
    for node, minutes in durations.items():
        deps = depends_on.get(node, ())
        missing = [d for d in deps if d not in finish]
        if missing:
            raise ValueError(f"{node} depends on {', '.join(missing)}, which is not listed before it")
        latest = max(deps, key=lambda d: finish[d], default=None)
        start[node] = finish[latest] if latest is not None else 0.0
        finish[node] = start[node] + minutes
        came_from[node] = latest
    if not finish:
        return Schedule(0.0, (), 0, {})
    last: str | None = max(finish, key=lambda n: finish[n])
    path: list[str] = []
    while last is not None:
        path.append(last)
        last = came_from[last]
    # Stacks running at each start instant (a stack ending exactly then has freed its slot).
    width = max(sum(1 for n in durations if start[n] <= t < finish[n]) for t in start.values())
    return Schedule(finish[path[0]], tuple(reversed(path)), width, start)


@dataclass(frozen=True)
class DeployTime:
    """The first deploy of an environment: expected and bounded critical paths, and the concurrency for them."""

    expected: Schedule
    bound: Schedule
    durations: dict[StackKind, KindDuration]


def deploy_time(config: HubSpokeConfig, plans: Sequence[StackPlan] | None = None) -> DeployTime:
    stacks = list(plans) if plans is not None else plan_stacks(config)
    durations = kind_durations(config)
    deps = {p.id: p.depends_on for p in stacks}
    return DeployTime(
        expected=schedule({p.id: durations[p.kind].expected for p in stacks}, deps),
        bound=schedule({p.id: durations[p.kind].bound for p in stacks}, deps),
        durations=durations,
    )
