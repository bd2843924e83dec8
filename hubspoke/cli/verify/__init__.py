"""`hubspoke verify --config PATH`: after a deploy, read-only checks of the live environment against its config.

Per configured Region (hub first), in plan order: the account, every planned stack (state, outputs, stale
readers), the network (VPC CIDRs, peering, routes, cross-Region ingress), the spoke's canary (hub reachable,
portal ACTIVE and on the hub's current addresses, recent reports), compute (HyperPod, EKS and its version step,
add-ons, Kubernetes nodes, claims and the volumes' CNQ addresses) and the alarms. Same rows, exit codes and credential handling as `hubspoke preflight` (hubspoke/cli/checks.py).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from hubspoke.cli.checks import (
    Check,
    CheckResult,
    Clients,
    CredentialsProblem,
    account_or_rejected,
    add_aws_options,
    collapse_rejections,
    credentials_row,
    guarded,
    run_command,
    run_listed,
    session_clients,
)
from hubspoke.cli.preflight.checks import check_account
from hubspoke.cli.verify.alarms import alarm_rows
from hubspoke.cli.verify.cache import cache_rows
from hubspoke.cli.verify.canary import canary_rows
from hubspoke.cli.verify.compute import compute_rows
from hubspoke.cli.verify.kube import default_kubeconfig
from hubspoke.cli.verify.live import Context, Scope
from hubspoke.cli.verify.network import network_rows
from hubspoke.cli.verify.stacks import stack_rows
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.topology import plan_stacks

__all__ = ["run_verify"]


def run_verify(
    config: HubSpokeConfig,
    clients: Clients,
    *,
    config_path: str,
    only: set[str] | None = None,
    now: datetime | None = None,
    kubeconfig: tuple[Path, ...] | None = None,
    profile: str | None = None,
) -> list[CheckResult]:
    """Every check for every configured Region (or those in `only`); credential trouble is one failing row."""
    ctx = Context(
        config=config,
        config_path=config_path,
        clients=clients,
        now=now or datetime.now(UTC),
        kubeconfig=default_kubeconfig() if kubeconfig is None else kubeconfig,
        profile=profile,
    )
    results: list[CheckResult] = []
    regions = [r for r in config.regions() if not only or r.region in only]
    try:
        for region in regions:
            results += _region_rows(ctx, region)
    except CredentialsProblem as exc:
        results.append(credentials_row(exc))
    return collapse_rejections(results, [r.region for r in regions])


def _stacks(s: Scope) -> list[CheckResult]:
    return [
        row for plan in plan_stacks(s.ctx.config) if plan.region == s.code for row in stack_rows(s.ctx, plan)
    ]


def _compute(s: Scope) -> bool:
    return any(p.kind == "compute" and p.region == s.code for p in plan_stacks(s.ctx.config))


# Every area after the account's, in report order; each guards its own rows (service "").
AREAS: tuple[Check[Scope], ...] = (
    Check("stacks", "", lambda s: True, _stacks),
    Check("network", "", lambda s: True, network_rows),
    Check("canary", "", lambda s: s.spoke, lambda s: canary_rows(s.ctx, s.region)),
    Check("compute", "", _compute, compute_rows),
    Check("cache", "", _compute, lambda s: cache_rows(s.ctx, s.region)),
    Check("alarms", "", lambda s: True, lambda s: alarm_rows(s.ctx, s.region)),
)


def _region_rows(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    expected = ctx.config.account_of(region)
    accounts: list[str] = []

    def account() -> list[CheckResult]:
        row, actual = account_or_rejected(
            lambda: check_account(ctx.clients("sts", code), region=code, expected=expected), code, expected
        )
        if actual is not None:
            accounts.append(actual)
        return [row]

    rows = guarded(code, "account", "sts", account)
    if not accounts or accounts[0] != expected:
        return [*rows, CheckResult(code, "checks", "not checked", "the account check did not pass")]
    ctx.stacks.caller_account = accounts[0]
    return rows + run_listed(AREAS, Scope(ctx, region), partial(guarded, code))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "verify",
        help=summary,
        description="Read-only checks of a deployed environment against its config, per Region in plan order: "
        "stacks (complete, outputs present, no stale reader), network (VPC CIDRs, peering, routes, "
        "cross-Region ingress), the spoke canary (hub reachable, portal ACTIVE and on the hub's current "
        "addresses), compute (HyperPod, EKS and its version, add-ons, Kubernetes nodes and volumes when a "
        "kubeconfig reaches the cluster) and alarms. "
        "Exit 0 when nothing fails, 1 when a check fails, 2 for bad input.",
        epilog="Example:\n  AWS_PROFILE=ml-dev hubspoke verify --config config/dev.yaml\n"
        "  hubspoke verify --config config/dev.yaml --region us-west-2 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_aws_options(parser)
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        action="append",
        metavar="PATH",
        help="kubeconfig file for the Kubernetes checks (repeatable; default: KUBECONFIG, else ~/.kube/config)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, *, clients: Clients | None = None) -> int:
    return run_command(
        args,
        name="Verify",
        clients=clients,
        make=session_clients,
        checks=lambda config, made: run_verify(
            config,
            made,
            config_path=str(args.config),
            only=set(args.region or ()),
            kubeconfig=tuple(args.kubeconfig) if args.kubeconfig else None,
            profile=args.profile,
        ),
    )
