"""`hubspoke teardown --config PATH`: delete an environment's stacks in reverse deploy order, then what they retain.

Dry run by default. `--yes` deletes the stacks; the resources they leave behind are deleted only after the
environment's name is typed (at the prompt, or as `--confirm <environment>`). The dataset and the exported
models stay unless `--delete-dataset` / `--delete-models` ask for them; keeping the dataset keeps the hub's
Storage stack (and its Network) standing, since its retained buckets cannot be attached to another cluster, and
with `--delete-dataset` those stacks are deleted only after the typed name. Every step reads the live state first,
so a run that stopped (a refusal, a timeout, Ctrl-C) is resumed by running the same command again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace

from botocore.exceptions import BotoCoreError, ClientError, ProfileNotFound

from hubspoke.cli.checks import CREDENTIALS_FIX, Clients, add_aws_options, session_clients, unknown_regions
from hubspoke.cli.output import Table, fail, print_tables
from hubspoke.cli.teardown import stacks as stack_steps
from hubspoke.cli.teardown.removal import remove
from hubspoke.cli.teardown.retained import Choices, Retained, find
from hubspoke.cli.teardown.stacks import StackState, TeardownStopped
from hubspoke.config import HubSpokeConfig, load
from hubspoke.topology import StackPlan

# What the fix line points at: the IAM actions teardown calls, listed where a person reads them.
PERMISSIONS_DOC = 'docs/cli.md, "teardown"'


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "teardown",
        help=summary,
        description="Delete the environment's stacks in reverse deploy order (CloudFormation DeleteStack in each "
        "stack's Region, waiting for each), then list what they retained (found by the environment's tags) and "
        "delete it once you type the environment's name. Without --yes nothing changes: it prints what it "
        "would do. The hub's CNQ buckets and volumes (the dataset) and the model export buckets stay unless "
        "--delete-dataset / --delete-models ask, and so do the KMS keys that encrypt them. Run it again after "
        "any failure: it continues from what is left. Exit 0 when done, 1 when a step failed or the name was "
        "not confirmed, 2 for bad input.",
        # The actions the teardown modules call (boto3 client methods), for the permissions the failure message asks for.
        epilog="IAM actions: sts:GetCallerIdentity; cloudformation:DescribeStacks, ListStackResources, GetTemplate, "
        "DescribeStackEvents; s3:ListAllMyBuckets, GetBucketTagging, GetEncryptionConfiguration; "
        "ec2:DescribeVolumes; ecr:DescribeRepositories, ListTagsForResource; secretsmanager:ListSecrets; "
        "logs:DescribeLogGroups, ListTagsForResource; kms:ListKeys, DescribeKey, ListResourceTags. With --yes "
        "also cloudformation:DeleteStack, ec2:DeleteVolume, s3:ListBucketVersions, DeleteObjectVersion, "
        "DeleteBucket, ecr:DeleteRepository, secretsmanager:DeleteSecret, logs:DeleteLogGroup, "
        "kms:ScheduleKeyDeletion.\n\n"
        "Example:\n  hubspoke teardown --config config/dev.yaml\n"
        "  hubspoke teardown --config config/dev.yaml --yes\n"
        "  hubspoke teardown --config config/dev.yaml --yes --confirm dev --delete-models",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_aws_options(parser)
    parser.add_argument("--yes", action="store_true", help="delete the stacks (without it: a dry run)")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what it would do and change nothing (the default without --yes)",
    )
    parser.add_argument(
        "--confirm",
        metavar="ENVIRONMENT",
        help="the environment's name, typed ahead: delete the retained resources without the prompt",
    )
    parser.add_argument(
        "--delete-dataset", action="store_true", help="also delete the hub's CNQ buckets and volumes"
    )
    parser.add_argument("--delete-models", action="store_true", help="also delete the model export buckets")
    parser.set_defaults(run=run)


def run(
    args: argparse.Namespace,
    *,
    clients: Clients | None = None,
    ask: Callable[[str], str] = input,
    poll_seconds: int = stack_steps.POLL_SECONDS,
) -> int:
    config = load(args.config).config
    error = unknown_regions(args, config)
    if error:
        return fail(error)
    if args.json:
        return fail("--json: teardown prints its progress as it goes; leave --json out")
    if args.dry_run and args.yes:
        return fail("--dry-run and --yes: choose one (without --yes, teardown only prints what it would do)")
    regions = set(args.region or (r.region for r in config.regions()))
    plans = stack_steps.teardown_order(config, regions)
    accounts = ", ".join(sorted({p.account for p in plans})) or config.account
    if not args.yes:
        # The order comes from the config alone, so a dry run shows it even before credentials work.
        dataset = stack_steps.dataset_stacks(config, plans)
        print_tables(_order_tables(plans, dataset, args.delete_dataset, config.environment))
        print(f"Reading their state and what they retain needs credentials for account {accounts}.")
    if clients is None:
        try:
            clients = session_clients(args.profile)
        except ProfileNotFound as exc:
            return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    choices = Choices(dataset=args.delete_dataset, models=args.delete_models)
    try:
        return _teardown(args, config, clients, regions, choices, ask, poll_seconds)
    except TeardownStopped as exc:
        print(f"stopped: {exc}", file=sys.stderr)
        print(f"  fix: {exc.fix}", file=sys.stderr)
        return 1
    except (ClientError, BotoCoreError) as exc:
        print(f"stopped: AWS answered {exc}", file=sys.stderr)
        print(
            f"  fix: use credentials for account {accounts} ({CREDENTIALS_FIX}) allowed the actions in "
            f"{PERMISSIONS_DOC}, check the network, then run the same command again",
            file=sys.stderr,
        )
        return 1


def _teardown(
    args: argparse.Namespace,
    config: HubSpokeConfig,
    clients: Clients,
    regions: set[str],
    choices: Choices,
    ask: Callable[[str], str],
    poll_seconds: int,
) -> int:
    env = config.environment
    plans = stack_steps.teardown_order(config, regions)
    mismatch = _foreign_accounts(clients, config, regions)
    if mismatch:
        return fail(mismatch)
    dataset = stack_steps.dataset_stacks(config, plans)
    states = stack_steps.states(clients, plans)
    first = [s for s in states if s.plan not in dataset]
    last = [s for s in states if s.plan in dataset]
    # Without --delete-dataset the dataset's stacks stay standing, and so does everything they hold.
    standing = [] if choices.dataset else [s.plan for s in last]
    print_tables([_stack_table(first)] if args.yes else [_now_table(states)])
    if not args.yes:
        managed: dict[str, tuple[str, bool]] = {}
        for s in states:
            if s.stack_id:
                managed |= stack_steps.retained_in(clients("cloudformation", s.plan.region), s.stack_id)
        left = _keep_standing(_find(clients, config, regions, choices, managed), standing)
        print_tables(
            [
                _retained_table(
                    left,
                    "Then left behind (found by the tag hubspoke:environment="
                    f"{env}), deleted only after you type `{env}`",
                )
            ]
        )
        for spoke in [r for r in config.spokes if r.region in regions and r.storage.enabled]:
            print(
                f"{spoke.region}: its Storage stack, buckets and volumes go with no flag of their own, and with "
                "them the checkpoints on its CNQ: export each run you keep first (`hubspoke render export "
                f"--config {args.config} --region {spoke.region} --run <job-name>`)."
            )
        print(
            f"Dry run: nothing changed. `hubspoke teardown --config {args.config} --yes` deletes the stacks."
        )
        return 0
    for s in first:
        stack_steps.delete(clients, s, say=print, poll_seconds=poll_seconds)
    if standing:
        print_tables([_standing_table(standing)])
    left = _keep_standing(_find(clients, config, regions, choices, {}), standing)
    doomed = [r for r in left if r.kept is None]
    dataset_left = [s for s in last if s.status] if choices.dataset else []
    print_tables([_retained_table(left, f"Left behind by the stacks (tag hubspoke:environment={env})")])
    if dataset_left:
        print_tables([_stack_table(dataset_left, "Then, once you type the name, the dataset's stacks")])
    if not doomed and not dataset_left:
        print("Nothing left to delete.")
        return 0
    typed = args.confirm
    if typed is None:
        try:
            typed = ask(
                f"Type the environment's name ({env}) to delete the {len(doomed)} resources marked "
                f"'delete'{' and the dataset' if dataset_left else ''}, or anything else to keep them: "
            ).strip()
        except EOFError:
            typed = ""
    if typed != env:
        print(
            f"Not confirmed: nothing retained{' and none of the dataset' if dataset_left else ''} was deleted. Run again with --yes and type `{env}` (or pass "
            f"--confirm {env}) to delete them.",
            file=sys.stderr,
        )
        return 1
    if dataset_left:
        for s in dataset_left:
            stack_steps.delete(clients, s, say=print, poll_seconds=poll_seconds)
        # The dataset's stacks retained their buckets, volumes, secrets and keys: find them again.
        doomed = [r for r in _find(clients, config, regions, choices, {}) if r.kept is None]
    for r in doomed:
        print(f"  {remove(clients, r)}")
    print(f"Done: {len(doomed)} resources deleted or scheduled for deletion; the kept ones are listed above.")
    return 0


def _foreign_accounts(clients: Clients, config: HubSpokeConfig, regions: set[str]) -> str | None:
    """The error when a chosen Region belongs to an account these credentials are not for."""
    for region in sorted(regions):
        expected = config.account_of(config.region_config(region))
        actual = str(clients("sts", region).get_caller_identity()["Account"])
        if actual != expected:
            return (
                f"{region} is in account {expected}, these credentials are for {actual}: run once per account "
                f"with its --profile and --region for its Regions, spoke accounts first"
            )
    return None


def _find(
    clients: Clients,
    config: HubSpokeConfig,
    regions: set[str],
    choices: Choices,
    managed: dict[str, tuple[str, bool]],
) -> list[Retained]:
    # Spokes first, then the hub, as the stacks go.
    order = [r.region for r in reversed(list(config.regions())) if r.region in regions]
    return [r for region in order for r in find(clients, config, region, choices=choices, managed=managed)]


def _keep_standing(left: list[Retained], standing: list[StackPlan]) -> list[Retained]:
    """`left`, with what a stack that stays standing holds (its hubspoke:stack and Region tags) marked kept."""
    # Keyed as a Retained's tag is read (its stack kind may be absent), so the lookup below type-checks.
    names: dict[tuple[str | None, str], str] = {(p.kind, p.region): p.name for p in standing}
    return [
        replace(r, kept=f"its stack {names[(r.stack, r.region)]} stays standing")
        if r.kept is None and (r.stack, r.region) in names
        else r
        for r in left
    ]


def _standing_table(standing: list[StackPlan]) -> Table:
    table = Table("Kept standing (--delete-dataset deletes them after you type the name)", ("stack", "why"))
    for p in standing:
        table.add(p.name, _why_standing(p))
    return table


def _why_standing(plan: StackPlan) -> str:
    if plan.kind == "storage":
        return "the dataset: once this stack is gone its retained buckets and volumes can never be attached again"
    return "the hub's Storage stack needs it"


def _stack_table(
    states: list[StackState],
    title: str = "Deleting these stacks, in this order (the reverse of the deploy order)",
) -> Table:
    table = Table(title, ("#", "stack", "region", "account", "now"))
    for n, s in enumerate(states, start=1):
        table.add(n, s.plan.name, s.plan.region, s.plan.account, s.status or "gone")
    return table


def _order_tables(plans: list[StackPlan], dataset: list[StackPlan], delete: bool, env: str) -> list[Table]:
    """The stacks --yes would delete, in order; the dataset's last, after the typed name, or kept standing."""
    table = Table(
        "Would delete these stacks, in this order (the reverse of the deploy order)",
        ("#", "stack", "region", "account", "when"),
    )
    for n, p in enumerate([p for p in plans if delete or p not in dataset], start=1):
        table.add(n, p.name, p.region, p.account, f"after you type `{env}`" if p in dataset else "with --yes")
    return [table] if delete or not dataset else [table, _standing_table(dataset)]


def _now_table(states: list[StackState]) -> Table:
    table = Table("Their state now", ("stack", "now"))
    for s in states:
        table.add(s.plan.name, s.status or "gone")
    return table


def _retained_table(left: list[Retained], title: str) -> Table:
    table = Table(title, ("region", "kind", "id", "holds", "action"))
    for r in left:
        action = "delete" if r.kept is None else f"keep: {r.kept}"
        if r.owner:
            action += f" (retained when {r.owner} is deleted)"
        table.add(r.region, r.kind, r.id, r.holds, action)
    return table
