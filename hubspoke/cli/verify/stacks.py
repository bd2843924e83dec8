"""Verify's stack checks: each planned stack deployed and complete, the outputs others read, no stale reader.

Stack states are CloudFormation's StackStatus enum (botocore cloudformation service-2.json); what each
means and allows is the CloudFormation User Guide's "Stack status codes" page: a stack whose creation rolled
back (ROLLBACK_COMPLETE) can only be deleted; UPDATE_ROLLBACK_FAILED needs ContinueUpdateRollback, whose
ResourcesToSkip takes "only resources that are in the UPDATE_FAILED state because a rollback failed"
(botocore, ContinueUpdateRollbackInput); DeleteStack's RetainResources is "for stacks in the DELETE_FAILED
state" (DeleteStackInput). Who reads what is read from the deployed stacks' own templates (GetTemplate), so a
deployed environment is judged by what is deployed, with no local cdk.out.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from weakref import WeakKeyDictionary

from hubspoke.cli.checks import CheckResult, guarded, pages
from hubspoke.cli.verify.live import Context, LiveStack, LiveStacks, Unavailable
from hubspoke.outputs import Reference, produced, references
from hubspoke.topology import StackPlan, plan_stacks

HEALTHY = {"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE", "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS"}
# The first deploy failed and rolled back: CloudFormation allows nothing but a delete. CREATE_FAILED is not
# among them: a create that stopped without rolling back (DisableRollback) keeps what it provisioned, and
# RollbackStack "rolls back the specified stack to the last known stable state from CREATE_FAILED or
# UPDATE_FAILED" (botocore cloudformation model, RollbackStack); an update with DisableRollback ("Preserve the
# state of previously provisioned resources", UpdateStackInput) retries from there.
CREATE_ROLLED_BACK = {"ROLLBACK_COMPLETE", "ROLLBACK_FAILED"}
# An update failed: the stack runs its previous template (or, without rollback, a partial one).
UPDATE_ROLLED_BACK = {
    "UPDATE_ROLLBACK_COMPLETE",
    "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
    "IMPORT_ROLLBACK_COMPLETE",
    "UPDATE_FAILED",
}
# The stack's own event that opens an operation: where the events of the latest attempt begin.
_OPERATION_STARTS = {"CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "IMPORT_IN_PROGRESS", "DELETE_IN_PROGRESS"}
# The stack's own event that opens the rollback of a failed create, update or import.
_ROLLBACK_STARTS = {"ROLLBACK_IN_PROGRESS", "UPDATE_ROLLBACK_IN_PROGRESS", "IMPORT_ROLLBACK_IN_PROGRESS"}
# Resources CloudFormation stops because another one failed carry these reasons: consequences, not causes.
_CONSEQUENCES = ("Resource creation cancelled", "Resource update cancelled")


def stack_rows(ctx: Context, plan: StackPlan) -> list[CheckResult]:
    """The stack's state, its outputs, and whether it was deployed after the stacks it reads."""
    found: list[LiveStack] = []

    def state() -> list[CheckResult]:
        row, live = _state(ctx, plan)
        found.extend([live] if live else [])
        return [row]

    rows = guarded(plan.region, "stack", "cloudformation", state)
    if not found:
        return rows
    live = found[0]
    rows += guarded(plan.region, "outputs", "cloudformation", lambda: _outputs(ctx, live))
    rows += guarded(plan.region, "stale reader", "cloudformation", lambda: _staleness(ctx, live))
    return rows


def _state(ctx: Context, plan: StackPlan) -> tuple[CheckResult, LiveStack | None]:
    region = plan.region
    try:
        live = ctx.stacks.get(plan.id)
    except Unavailable as exc:
        return CheckResult(
            region, "stack", "not checked", str(exc), f"run verify with credentials for {plan.account}"
        ), None
    deploy = ctx.deploy_command(plan.id)
    if live is None:
        return CheckResult(
            region,
            "stack",
            "fail",
            f"{plan.name} does not exist in account {plan.account}",
            f"deploy it after {', '.join(plan.depends_on) or 'nothing'}: {deploy}",
        ), None
    status, name = live.status, plan.name
    if status in HEALTHY:
        return CheckResult(region, "stack", "pass", f"{name} {status} ({_when(live.last_change)})"), live
    if status in CREATE_ROLLED_BACK | UPDATE_ROLLED_BACK or status.endswith("FAILED"):
        failed = blamed_failure(ctx.clients("cloudformation", region), name, status)
        cause = failed.text if failed else live.reason or "no reason recorded"
        fix = _failed_fix(
            status,
            name,
            region,
            failed.logical_id if failed else "<logical-id>",
            deploy,
            retry=ctx.deploy_command(plan.id, "--no-rollback"),
        )
        if plan.kind == "storage" and status in CREATE_ROLLED_BACK:
            # The node volumes (kept on termination), key, secret and buckets of a failed first create are
            # retained although they hold no data yet: every retry would leave another set behind.
            fix += (
                "; first delete what the failed create retained (node volumes tagged hubspoke:cnq-cluster, "
                "its KMS key, admin secret and buckets, none holding data yet): docs/runbooks/"
                "deploy-environment.md, 'After a failed first create of a Storage stack'"
            )
        # A stack whose creation rolled back holds no resources and no outputs: nothing more to check in it.
        return CheckResult(
            region, "stack", "fail", f"{name} {status}: {cause}", fix
        ), None if status in CREATE_ROLLED_BACK else live
    if status == "REVIEW_IN_PROGRESS":
        detail = f"{name} has a change set that was never executed"
        return CheckResult(region, "stack", "fail", detail, f"deploy it: {deploy}"), None
    return CheckResult(
        region,
        "stack",
        "fail",
        f"{name} {status}: an operation is still running",
        "wait until it ends, then run hubspoke verify again",
    ), live


def _failed_fix(status: str, name: str, region: str, logical_id: str, deploy: str, *, retry: str = "") -> str:
    """What CloudFormation allows from a failed state (User Guide, "Stack status codes"), then the deploy."""
    where = f"--stack-name {shlex.quote(name)} --region {region}"
    delete = f"`aws cloudformation delete-stack {where}`"
    retain = f"`aws cloudformation delete-stack --stack-name {shlex.quote(name)} --retain-resources {logical_id} --region {region}`"
    if status == "ROLLBACK_FAILED":
        return (
            f"the rollback stopped at {logical_id}: fix the cause, then {delete} (nothing else is allowed; "
            f"if that delete fails too, {retain} leaves it behind), then {deploy}"
        )
    if status in CREATE_ROLLED_BACK:
        return f"fix the cause, then {delete} (nothing else is allowed) and {deploy}"
    if status == "CREATE_FAILED":
        rollback = f"`aws cloudformation rollback-stack {where}`"
        return (
            f"the create stopped without rolling back and keeps what it made: fix the cause, then retry from "
            f"there with {retry}; or roll back with {rollback} (with no stable state to return to, that deletes "
            f"the stack), or {delete}, then {deploy}"
        )
    if status == "UPDATE_ROLLBACK_FAILED":
        skip = (
            f"`aws cloudformation continue-update-rollback --stack-name {shlex.quote(name)} "
            f"--resources-to-skip {logical_id} --region {region}`"
        )
        return f"fix the cause, or {skip}; then {deploy}"
    if status == "DELETE_FAILED":
        return (
            f"a delete stopped at {logical_id}: fix the cause and delete it again, or {retain}; then {deploy}"
        )
    if status == "UPDATE_FAILED":
        return f"the update stopped without rolling back; fix the cause, then {deploy}"
    if status in UPDATE_ROLLED_BACK:
        return f"the stack runs its previous template; fix the cause, then {deploy}"
    return f"fix the cause (see the stack's events), then {deploy}"


@dataclass(frozen=True)
class Failure:
    """One failed resource event of DescribeStackEvents."""

    logical_id: str
    text: str  # `LogicalId (Type) STATUS: reason`


def blamed_failure(cloudformation: Any, stack_name: str, status: str) -> Failure | None:
    """The failed resource to name for a stack in `status`, from its latest operation's events.

    A stuck rollback (`*ROLLBACK_FAILED`) or delete (`DELETE_FAILED`) is blocked by the resource that
    failed most recently, after the rollback or delete began: that is the one to fix or skip. Any other
    failure is explained by the earliest failed resource that was not merely cancelled.
    """
    events = list(_latest_operation(cloudformation, stack_name))
    if status.endswith("ROLLBACK_FAILED") or status == "DELETE_FAILED":
        since = []
        for event in events:  # newest first, up to the stack's event that began the rollback or delete
            if _is_stack(event, stack_name) and event.get("ResourceStatus") in _ROLLBACK_STARTS:
                break
            since.append(event)
        blockers = [e for e in since if _failed_resource(e, stack_name)]
        if blockers:
            return _failure(blockers[0])
    failures = [e for e in events if _failed_resource(e, stack_name)]
    causes = [e for e in failures if not str(e.get("ResourceStatusReason", "")).startswith(_CONSEQUENCES)]
    # Newest first, so the earliest failure is the last one listed (timestamps can tie at milliseconds).
    return _failure((causes or failures)[-1]) if failures else None


def _failed_resource(event: dict[str, Any], stack_name: str) -> bool:
    return str(event.get("ResourceStatus", "")).endswith("FAILED") and not _is_stack(event, stack_name)


def _failure(event: dict[str, Any]) -> Failure:
    return Failure(
        event["LogicalResourceId"],
        f"{event['LogicalResourceId']} ({event.get('ResourceType', '?')}) {event['ResourceStatus']}: "
        f"{event.get('ResourceStatusReason', 'no reason recorded')}",
    )


def _latest_operation(cloudformation: Any, stack_name: str) -> Iterator[dict[str, Any]]:
    # DescribeStackEvents lists the newest event first (paginator result key StackEvents); stop at the
    # stack's own event that opened the latest operation, so an old failure is never blamed.
    for event in pages(cloudformation, "describe_stack_events", "StackEvents", StackName=stack_name):
        yield event
        if _is_stack(event, stack_name) and event.get("ResourceStatus") in _OPERATION_STARTS:
            return


def _is_stack(event: dict[str, Any], stack_name: str) -> bool:
    return (
        event.get("ResourceType") == "AWS::CloudFormation::Stack"
        and event.get("LogicalResourceId") == stack_name
    )


@dataclass(frozen=True)
class LiveReads:
    """Every Fn::GetStackOutput in the deployed stacks' templates, and the stacks whose template was not read."""

    references: tuple[Reference, ...]
    unseen: dict[str, str]  # stack id -> why its template was not read


# One verify run's reads, keyed by its LiveStacks: each template is fetched once, not once per stack row.
_READS: WeakKeyDictionary[LiveStacks, LiveReads] = WeakKeyDictionary()


def live_reads(ctx: Context) -> LiveReads:
    """Who reads what among the deployed stacks, from the templates CloudFormation holds for them."""
    if ctx.stacks in _READS:
        return _READS[ctx.stacks]
    plans = plan_stacks(ctx.config)
    # A planned stack that does not exist reads nothing; every planned id is given so that references()
    # names each producer by its stack id, deployed or not.
    templates: dict[str, dict[str, Any]] = {p.id: {} for p in plans}
    unseen: dict[str, str] = {}
    for plan in plans:
        try:
            if ctx.stacks.get(plan.id) is None:
                continue
        except Unavailable as exc:
            unseen[plan.id] = str(exc)
            continue
        # GetTemplate, TemplateStage "Original": "the user-submitted template", here what the CDK synthesized,
        # Fn::GetStackOutput as it wrote them; without transforms "Original and Processed return the same
        # template" (botocore cloudformation service-2.json, GetTemplateInput.TemplateStage). botocore hands a
        # JSON body over parsed (handlers.py, json_decode_template_body); the CDK writes JSON.
        cloudformation = ctx.clients("cloudformation", plan.region)
        body = cloudformation.get_template(StackName=plan.name, TemplateStage="Original")["TemplateBody"]
        if isinstance(body, dict):
            templates[plan.id] = body
        else:
            unseen[plan.id] = f"the template of {plan.name} is not JSON, so its reads are unknown"
    reads = LiveReads(references(ctx.config, templates), unseen)
    _READS[ctx.stacks] = reads
    return reads


def _outputs(ctx: Context, live: LiveStack) -> list[CheckResult]:
    """The outputs the CLI reads (hubspoke/outputs.py) and those deployed stacks read must exist.

    A reader resolves Fn::GetStackOutput at its create or update (CloudFormation Template Reference,
    "Fn::GetStackOutput"): an output it reads that is gone fails its next deploy.
    """
    plan = live.plan
    reads = live_reads(ctx)
    readers: dict[str, list[str]] = {}
    for ref in reads.references:
        if ref.producer == plan.id and ref.consumer not in readers.get(ref.output, []):
            readers.setdefault(ref.output, []).append(ref.consumer)
    expected = list(dict.fromkeys([*produced(ctx.config, plan), *readers]))
    if not expected:
        return []
    missing = [o for o in expected if o not in live.outputs]
    if not missing:
        return [
            CheckResult(plan.region, "outputs", "pass", f"{plan.name}: all {len(expected)} outputs present")
        ]
    deploy = ctx.deploy_command(plan.id)
    rows = []
    read = [o for o in missing if o in readers]
    unread = [o for o in missing if o not in readers]
    if read:
        readers_text = "; ".join(f"{o} (read by {', '.join(readers[o])})" for o in read)
        rows.append(
            CheckResult(
                plan.region,
                "outputs",
                "fail",
                f"{plan.name} lacks outputs other stacks read: {readers_text}",
                f"{deploy}, then redeploy those readers",
            )
        )
    if unread:
        # Stacks whose template could not be read might read them too: said, not guessed.
        unknown = "".join(f"; not known for {sid}: {why}" for sid, why in reads.unseen.items())
        rows.append(
            CheckResult(
                plan.region,
                "outputs",
                "warn",
                f"{plan.name} lacks {', '.join(unread)} (read by operators and hubspoke verify, no deployed "
                f"stack{unknown})",
                deploy,
            )
        )
    return rows


def _staleness(ctx: Context, live: LiveStack) -> list[CheckResult]:
    """A reader deployed before its producer's last update may still hold the producer's old outputs.

    Fn::GetStackOutput is resolved when the reading stack is created or updated, not when the producer
    changes (CloudFormation Template Reference, "Fn::GetStackOutput"). Only the times are visible here,
    not the values the reader resolved: a stale reader is a warning, not a failure.
    """
    plan = live.plan
    found = live_reads(ctx)
    if plan.id in found.unseen:
        return [CheckResult(plan.region, "stale reader", "not checked", found.unseen[plan.id])]
    reads: dict[str, list[str]] = {}
    for ref in found.references:
        if ref.consumer == plan.id:
            reads.setdefault(ref.producer, []).append(ref.output)
    if not reads:
        return []
    stale, unseen, current = [], [], []
    for producer, names in reads.items():
        if not ctx.stacks.planned(producer):
            unseen.append(f"{producer} (not a stack of this environment's plan)")
            continue
        try:
            source = ctx.stacks.get(producer)
        except Unavailable as exc:
            unseen.append(f"{producer} ({exc})")
            continue
        if source is None:
            continue  # its own row fails
        if live.last_change < source.last_change:
            stale.append(f"{producer} (changed {_when(source.last_change)}; reads {', '.join(names)})")
        else:
            current.append(producer)
    rows = []
    if stale:
        rows.append(
            CheckResult(
                plan.region,
                "stale reader",
                "warn",
                f"{plan.name} was deployed {_when(live.last_change)}, before "
                + "; ".join(stale)
                + ": it may still hold their old values",
                # An unchanged template is not deployed at all (the CDK CLI's canSkipDeploy; CloudFormation
                # reports no changes), so the refresh token adds a resource and makes it an update
                # (hubspoke/stage.py, _refresh). ASSUMED: CloudFormation resolves every Fn::GetStackOutput
                # again on that update ("resolved at stack create or update time"); not observed here.
                ctx.refresh_command(plan.id),
            )
        )
    if unseen:
        rows.append(
            CheckResult(plan.region, "stale reader", "not checked", "cannot read " + "; ".join(unseen))
        )
    if current and not stale:
        rows.append(
            CheckResult(
                plan.region,
                "stale reader",
                "pass",
                f"{plan.name} was deployed after every stack it reads ({', '.join(current)})",
            )
        )
    return rows


def _when(moment: datetime) -> str:
    """A CloudFormation time (botocore parses them as UTC-aware) as `YYYY-MM-DD HH:MM:SS UTC`."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
