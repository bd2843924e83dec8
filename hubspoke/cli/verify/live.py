"""What every verify check shares: the environment, the clients, and the live stacks read once from CloudFormation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import CheckResult, Clients, error_code, guarded
from hubspoke.cli.plan import cdk_command, refresh_command
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.topology import StackPlan, plan_stacks, stage_id

# Where an operator learns to bring back a resource deleted outside CloudFormation.
GONE_RUNBOOK = 'docs/runbooks/deploy-environment.md ("A resource deleted outside CloudFormation")'


@dataclass(frozen=True)
class LiveStack:
    """One deployed stack as CloudFormation DescribeStacks reports it."""

    plan: StackPlan
    status: str
    reason: str
    created: datetime
    updated: datetime | None
    outputs: Mapping[str, str]

    @property
    def last_change(self) -> datetime:
        """When the stack was last created or updated: when its weak references were last resolved."""
        return self.updated or self.created


class Unavailable(Exception):
    """A value a check needs cannot be read: its stack is missing, in another account, or lacks the output."""


class LiveStacks:
    """The environment's stacks, each described at most once, in whichever Region it lives."""

    def __init__(self, config: HubSpokeConfig, clients: Clients) -> None:
        self._clients = clients
        self._plans = {p.id: p for p in plan_stacks(config)}
        self._seen: dict[str, LiveStack | None] = {}
        # The account the credentials belong to (set by the first account check): stacks planned in
        # another account cannot be read with them, and saying "does not exist" would be a lie.
        self.caller_account: str | None = None

    def plan(self, stack_id: str) -> StackPlan:
        return self._plans[stack_id]

    def planned(self, stack_id: str) -> bool:
        return stack_id in self._plans

    def get(self, stack_id: str) -> LiveStack | None:
        """The stack, or None when CloudFormation has no stack of that name; Unavailable for another account."""
        plan = self._plans[stack_id]
        if self.caller_account is not None and plan.account != self.caller_account:
            raise Unavailable(
                f"{plan.name} lives in account {plan.account}; these credentials are for {self.caller_account}"
            )
        if stack_id not in self._seen:
            self._seen[stack_id] = self._describe(plan)
        return self._seen[stack_id]

    def output(self, stack_id: str, name: str) -> str:
        """One output's value; Unavailable (with the reason) when it cannot be read."""
        live = self.get(stack_id)
        plan = self._plans[stack_id]
        if live is None:
            raise Unavailable(f"stack {plan.name} does not exist in {plan.region}")
        if name not in live.outputs:
            raise Unavailable(f"stack {plan.name} has no output {name}")
        return live.outputs[name]

    def _describe(self, plan: StackPlan) -> LiveStack | None:
        cloudformation = self._clients("cloudformation", plan.region)
        try:
            # CloudFormation DescribeStacks (StackName): Stacks[].StackStatus, StackStatusReason, CreationTime,
            # LastUpdatedTime, Outputs[].OutputKey/OutputValue (botocore cloudformation service-2.json).
            found = cloudformation.describe_stacks(StackName=plan.name)["Stacks"]
        except ClientError as exc:
            # A missing stack is a ValidationError "Stack with id NAME does not exist" (DescribeStacks has no
            # modelled error; this is the documented API behaviour and what moto answers).
            if error_code(exc) == "ValidationError" and "does not exist" in str(exc):
                return None
            exc.hubspoke_service = "cloudformation"
            raise
        stack = found[0]
        return LiveStack(
            plan=plan,
            status=stack["StackStatus"],
            reason=stack.get("StackStatusReason", ""),
            created=stack["CreationTime"],
            updated=stack.get("LastUpdatedTime"),
            outputs={o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])},
        )


@dataclass
class Context:
    """One verify run: the config it checks, where the clients point, and what it has read so far."""

    config: HubSpokeConfig
    config_path: str
    clients: Clients
    now: datetime
    kubeconfig: tuple[Path, ...] = ()
    # --profile: the AWS profile of the run, handed to a kubeconfig's credential plugin too (kube.py).
    profile: str | None = None
    stacks: LiveStacks = field(init=False)

    def __post_init__(self) -> None:
        self.stacks = LiveStacks(self.config, self.clients)

    def deploy_command(self, stack_id: str, *extra: str) -> str:
        """The `cdk deploy` of one stack, exactly as `hubspoke plan` prints it."""
        return cdk_command(
            "deploy", self.config_path, "--exclusively", f"{stage_id(self.config)}/{stack_id}", *extra
        )

    def gone_fix(self, stack_id: str, resource: str) -> str:
        """The fix for a resource of `stack_id` deleted (or left unusable) outside CloudFormation.

        CloudFormation does not compare live resources with the template on a deploy: an unchanged template
        is not deployed at all (the CDK CLI reports no changes), and even an update assumes its resources
        still exist (ContinueUpdateRollback's own example: "CloudFormation doesn't know the instance was
        deleted", botocore cloudformation service-2.json). Drift detection reports such a resource DELETED
        (StackResourceDriftStatus); the runbook section says how to bring it back.
        """
        plan = self.stacks.plan(stack_id)
        return (
            f"{resource} is gone and a redeploy of an unchanged template does not re-create it: confirm with "
            f"`aws cloudformation detect-stack-drift --stack-name {plan.name} --region {plan.region}`, then "
            f"follow {GONE_RUNBOOK}"
        )

    def refresh_command(self, stack_id: str) -> str:
        """The deploy that makes one reader read its producers' outputs again, as `hubspoke plan` prints it."""
        return refresh_command(self.config_path, stage_id(self.config), stack_id)


@dataclass
class Scope:
    """What a verify check reads: the run, the Region, and the clusters earlier checks found there."""

    ctx: Context
    region: RegionConfig
    hyperpod: list[dict[str, Any]] = field(default_factory=list)
    eks: list[dict[str, Any]] = field(default_factory=list)

    @property
    def code(self) -> str:
        return self.region.region

    @property
    def spoke(self) -> bool:
        return self.region.region != self.ctx.config.hub.region


def checked(
    region: str, check: str, service: str, body: Callable[[], list[CheckResult]]
) -> list[CheckResult]:
    """A check whose inputs come from other stacks: a missing input makes it `not checked`, with the reason."""

    def run() -> list[CheckResult]:
        try:
            return body()
        except Unavailable as exc:
            return [CheckResult(region, check, "not checked", str(exc), "see the stack rows of that stack")]

    return guarded(region, check, service, run)
