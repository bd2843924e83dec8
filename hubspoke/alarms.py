"""Every alarm an environment raises: its name, the stack that holds it and its runbook. No CDK.

The Ops and Dashboard stacks create exactly these (hubspoke/constructs/alarms.py), the dashboard lists them
per Region, and the CLI can name them without synthesizing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.topology import plan_stacks

HUB_UNREACHABLE = "hub-unreachable"
# The hub-unreachable alarm fires when this many one-minute canary datapoints in a row are breaching
# (hubspoke/constructs/alarms.py); verify judges the same window.
HUB_UNREACHABLE_MINUTES = 3
PORTAL_NOT_ACTIVE = "portal-not-active"
CACHE_HIT_RATIO_LOW = "cache-hit-ratio-low"
GPU_UTILIZATION_LOW = "gpu-utilization-low"


@dataclass(frozen=True)
class PlannedAlarm:
    """One CloudWatch alarm: what it watches (`key`), in which Region, in which stack, and what to do about it."""

    key: str
    region: str
    stack_id: str
    stack_name: str
    runbook: str

    @property
    def name(self) -> str:
        """The alarm's CloudWatch name: its stack's name and its key, so two environments never collide."""
        return alarm_name(self.stack_name, self.key)


def alarm_name(stack_name: str, key: str) -> str:
    return f"{stack_name}-{key}"


def planned_alarms(config: HubSpokeConfig) -> tuple[PlannedAlarm, ...]:
    """Every alarm of the environment, in deploy order of the stacks that hold them."""
    alarms: list[PlannedAlarm] = []
    computes = {p.region for p in plan_stacks(config) if p.kind == "compute"}
    for plan in plan_stacks(config):
        keys: list[tuple[str, str]] = []
        if plan.kind == "ops":
            spoke = config.spoke(plan.region)
            keys = [
                (HUB_UNREACHABLE, "docs/runbooks/hub-outage.md"),
                (PORTAL_NOT_ACTIVE, "docs/runbooks/hub-outage.md"),
            ]
            if spoke.storage.enabled:
                keys.append((CACHE_HIT_RATIO_LOW, "docs/runbooks/cache-warm-up.md"))
            if plan.region in computes:
                keys.append((GPU_UTILIZATION_LOW, "docs/runbooks/cache-warm-up.md"))
        elif plan.kind == "dashboard" and plan.region in computes:
            # The hub has no Ops stack (a canary there would watch itself): its GPU alarm lives here.
            keys = [(GPU_UTILIZATION_LOW, "docs/runbooks/compute.md")]
        alarms += [PlannedAlarm(key, plan.region, plan.id, plan.name, runbook) for key, runbook in keys]
    return tuple(alarms)
