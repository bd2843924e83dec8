"""The first deploy's critical path and the concurrency that reaches it (hubspoke.deploy_time), by hand."""

from __future__ import annotations

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.deploy_time import deploy_time, schedule
from hubspoke.topology import plan_stacks
from tests.conftest import ROOT, synth_dependencies


def test_the_longest_chain_of_a_hand_built_graph() -> None:
    """A(10) -> B(20) and C(5), both -> D(1). Earliest starts: A 0, B 10, C 10, D 30; the path is A, B, D = 31
    minutes, and B and C run together, so two at a time reach it."""
    durations = {"A": 10, "B": 20, "C": 5, "D": 1}
    depends = {"B": ("A",), "C": ("A",), "D": ("B", "C")}
    result = schedule(durations, depends)
    assert result.minutes == 31
    assert result.path == ("A", "B", "D")
    assert result.concurrency == 2
    assert dict(result.start) == {"A": 0, "B": 10, "C": 10, "D": 30}


def test_a_stack_finishing_as_another_starts_frees_its_slot() -> None:
    """A(5) -> B(5); C(5) starts with A, D(1) after C: at minute 5 A and C end as B and D start, so two slots
    suffice, not four; the path is A, B (10 minutes)."""
    result = schedule({"A": 5, "C": 5, "B": 5, "D": 1}, {"B": ("A",), "D": ("C",)})
    assert (result.minutes, result.path, result.concurrency) == (10, ("A", "B"), 2)


def test_three_wide_fan_out() -> None:
    result = schedule(
        {"A": 1, "B": 5, "C": 5, "D": 5, "E": 1}, {x: ("A",) for x in "BCD"} | {"E": ("B", "C", "D")}
    )
    assert (result.minutes, result.concurrency) == (7, 3)


def test_a_dependency_listed_after_its_dependent_is_refused() -> None:
    with pytest.raises(ValueError, match="B depends on A, which is not listed before it"):
        schedule({"B": 1, "A": 1}, {"B": ("A",)})


def test_dev_first_deploy(dev_config: HubSpokeConfig) -> None:
    """config/dev.yaml: 9 stacks (hubspoke plan). Durations, written out with their sources:
    network 5 min, link 3, ops 3, dashboard 1 (ASSUMED); storage 30 (qumulo-terraform-aws waits 30 minutes for
    formation, provider_timeout_minutes); compute 15 (EKS control plane, "averages 15 minutes",
    aws/containers-roadmap#1227) + 15 (HyperPod p5 launch and lifecycle script, ASSUMED) + 120 (on-start deep
    health checks: a new instance runs them "for about 2 hours", SageMaker developer guide, "Recommended
    resiliency configuration", sagemaker-hyperpod-eks-resiliency-config-tips) = 150.

    Earliest starts: network-us-east-2 0-5; network-us-west-2 5-10; storage-us-east-2 5-35; link 10-13;
    storage-us-west-2 35-65 (after the hub's storage); compute-us-east-2 35-185; compute-us-west-2 65-215;
    ops-us-west-2 65-68; dashboard 215-216. So 216 minutes along network, hub storage, spoke storage, spoke
    compute, dashboard; three stacks run at once at minute 65 (both computes and ops).

    Bounds: network 15, link 10, ops 10, dashboard 5 (ASSUMED); storage 50 (storage.formation_timeout_minutes
    default, docs/configuration.md) + 10 launch (ASSUMED) = 60; compute 30 (EKS, ASSUMED twice the average) + 14
    (the chart installer's Lambda timeout) + 4 x 55 (the node waiter: Launched, then 120 min x 1.25 margin =
    150 min needs 3 more waits of 55, the last the Running one) = 264. Path: 15 + 60 + 60 + 264 + 5 = 404 minutes.
    """
    timing = deploy_time(dev_config)
    path = (
        "network-us-east-2",
        "storage-us-east-2",
        "storage-us-west-2",
        "compute-us-west-2",
        "dashboard-us-east-2",
    )
    assert timing.expected.minutes == 216
    assert timing.expected.path == path
    assert timing.expected.concurrency == 3
    assert timing.bound.minutes == 404
    assert timing.bound.path == path


def test_smoke_first_deploy_without_deep_health_checks() -> None:
    """config/smoke.yaml turns the on-start deep health checks off: its nodes are Running after their launch
    (15 min, ASSUMED), and the waiter is Launched then Running, 2 x 55 min. Compute: 15 + 15 = 30 expected,
    30 + 14 + 110 = 154 at most; storage bound 50 + 10 = 60 as for dev. Paths: 5 + 30 + 30 + 30 + 1 = 96 and
    15 + 60 + 60 + 154 + 5 = 294."""
    from hubspoke.config.loader import load

    timing = deploy_time(load(ROOT / "config" / "smoke.yaml").config)
    assert (timing.expected.minutes, timing.bound.minutes) == (96, 294)
    assert timing.expected.path[-2] == "compute-us-west-2"


def test_the_plan_schedules_the_graph_the_cloud_assembly_records(dev_config: HubSpokeConfig) -> None:
    """`cdk deploy` follows the dependencies recorded in the synthesized assembly, not our plan: the schedule
    built from the assembly's graph (tests/conftest.py synth_dependencies) must be the plan's."""
    plans = plan_stacks(dev_config)
    graph = synth_dependencies(dev_config)
    assert {p.id: set(p.depends_on) for p in plans} == graph
    durations = {p.id: float(p.kind == "compute") * 60 + 1 for p in plans}
    from_assembly = schedule(durations, {sid: sorted(deps) for sid, deps in graph.items()})
    assert from_assembly == schedule(durations, {p.id: p.depends_on for p in plans})
