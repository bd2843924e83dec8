"""`hubspoke preflight --config PATH`: read-only AWS checks per Region, so a deploy does not fail an hour in.

Credentials come from the standard AWS chain (AWS_PROFILE or --profile, environment keys, SSO, instance
roles); AWS_ENDPOINT_URL redirects every call (tests point it at a local moto server). The Region of each
call is the configured Region being checked, so AWS_REGION does not change what is checked.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import (
    Check,
    CheckResult,
    Clients,
    CredentialsProblem,
    account_or_rejected,
    add_aws_options,
    collapse_rejections,
    credentials_row,
    run_command,
    run_listed,
    session_clients,
)
from hubspoke.cli.checks import guarded as guarded_check
from hubspoke.cli.preflight.addons import check_addon_versions, check_administrators
from hubspoke.cli.preflight.checks import (
    check_account,
    check_availability_zones,
    check_bootstrap,
    check_cidrs,
    check_deployed_kubernetes,
    check_kubernetes_version,
    check_peering_quota,
)
from hubspoke.cli.preflight.cnq import (
    check_deployed_cluster,
    check_floating_ip_room,
    check_host_configuration,
    check_release,
    check_staged_package,
    check_ubuntu_image,
)
from hubspoke.cli.preflight.quotas import (
    check_hyperpod_quotas,
    check_lambda_concurrency,
    check_route_table_routes,
    check_security_group_rules,
    check_security_groups_per_interface,
)
from hubspoke.cli.preflight.tools import check_local_tools
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.topology import plan_stacks

# Re-exported: tests and other modules import these names from here.
__all__ = ["Clients", "run_preflight", "session_clients"]


def run_preflight(
    config: HubSpokeConfig, clients: Clients, *, only: set[str] | None = None
) -> list[CheckResult]:
    """Every check for every configured Region (or those in `only`); credential trouble is one failing row."""
    results: list[CheckResult] = []
    regions = [r for r in config.regions() if not only or r.region in only]
    try:
        for region in regions:
            results += _region_checks(config, region, clients)
    except CredentialsProblem as exc:
        results.append(credentials_row(exc))
    return collapse_rejections(results, [r.region for r in regions])


class LastCall:
    """Which service the last AWS call made through the clients it watches went to.

    A check may call two services (the peering check reads EC2, then Service Quotas); when a call fails, the
    row must name that call's permission, not the check's main service. checks.guarded reads the service from
    the error's `hubspoke_service`, which this sets.
    """

    def __init__(self) -> None:
        self.service: str | None = None

    def watch(self, service: str, client: Any) -> Any:
        def record(**_: Any) -> None:
            self.service = service

        # before-parameter-build reaches every handler (before-call stops at the first that answers).
        client.meta.events.register(
            "before-parameter-build", record, unique_id=f"hubspoke-last-call-{id(self)}"
        )
        return client


@dataclass
class Scope:
    """What a preflight check reads: the config, the Region, its clients, and the own VPC the CIDR check found."""

    config: HubSpokeConfig
    region: RegionConfig
    client: Callable[[str], Any]  # a client for a service in this Region
    own_vpc: str | None = None


def _always(_: Scope) -> bool:
    return True


def _storage(s: Scope) -> bool:
    return s.region.storage.enabled


def _compute(s: Scope) -> bool:
    return s.region.compute.enabled


def _cidrs(s: Scope) -> list[CheckResult]:
    found, s.own_vpc = check_cidrs(s.client("ec2"), config=s.config, region=s.region)
    return found


# Bound with partial() in CHECKS, so they run when a check answers: a factory returning a lambda ran once, at
# import, before mutmut switches a mutant on, and its mutants could never be seen.
def _one(check: Callable[..., CheckResult], services: tuple[str, ...], s: Scope) -> list[CheckResult]:
    """A check answering one row from clients of `services`, the config and the Region."""
    return [check(*map(s.client, services), config=s.config, region=s.region)]


def _rows(check: Callable[..., list[CheckResult]], services: tuple[str, ...], s: Scope) -> list[CheckResult]:
    """A check answering several rows from clients of `services`, the config and the Region."""
    return check(*map(s.client, services), config=s.config, region=s.region)


# Every check after the account's, in report order. An entry's service is the one its failed call names.
CHECKS: tuple[Check[Scope], ...] = (
    # The tools on this machine, once: with the hub's rows (they do not depend on the Region).
    Check("local tools", "", lambda s: s.region is s.config.hub, lambda s: check_local_tools(s.region.region)),
    Check("cdk bootstrap", "ssm", _always, lambda s: [
        check_bootstrap(s.client("ssm"), region=s.region.region, account=s.config.account_of(s.region),
                        deployer=s.config.account)]),
    Check("cidr overlap", "ec2", _always, _cidrs),
    Check("peering quota", "service-quotas", lambda s: s.region is s.config.hub and bool(s.config.spokes),
          lambda s: [check_peering_quota(s.client("ec2"), s.client("service-quotas"), config=s.config,
                                         hub_vpc_id=s.own_vpc)]),
    Check("security group rules", "service-quotas", _always, partial(_one, check_security_group_rules, ("service-quotas",))),
    Check("routes per route table", "service-quotas", _always, partial(_one, check_route_table_routes, ("service-quotas",))),
    Check("security groups per interface", "service-quotas", _always,
          partial(_one, check_security_groups_per_interface, ("service-quotas",))),
    Check("az ids", "ec2", _always, partial(_rows, check_availability_zones, ("ec2",))),
    Check("lambda concurrency", "lambda",
          lambda s: any(p.kind == "ops" and p.region == s.region.region for p in plan_stacks(s.config)),
          lambda s: [check_lambda_concurrency(s.client("lambda"), config=s.config, region=s.region,
                                              cloudformation=s.client("cloudformation"))]),
    # One row each: an error reading one object must not hide the other's answer.
    Check("qumulo core package", "s3", _storage, lambda s: [
        check_staged_package(s.client("s3"), config=s.config, region=s.region, kms=s.client("kms"))]),
    Check("qumulo host configuration", "s3", _storage,
          lambda s: [check_host_configuration(s.client("s3"), region=s.region)]),
    Check("qumulo core release", "", _storage, lambda s: [check_release(s.config, s.region)]),
    Check("floating ip room", "ec2", _storage, partial(_one, check_floating_ip_room, ("ec2",))),
    Check("cnq deployed shape", "cloudformation", _storage, partial(_rows, check_deployed_cluster, ("cloudformation", "ec2"))),
    Check("ubuntu image", "ec2", _storage, partial(_rows, check_ubuntu_image, ("ssm", "ec2"))),
    Check("sagemaker quota", "service-quotas", _compute, partial(_rows, check_hyperpod_quotas, ("service-quotas", "sagemaker"))),
    Check("kubernetes version", "eks", _compute, partial(_one, check_kubernetes_version, ("eks",))),
    Check("deployed kubernetes", "eks", _compute, partial(_one, check_deployed_kubernetes, ("eks",))),
    Check("eks add-on versions", "eks", _compute, partial(_rows, check_addon_versions, ("eks",))),
    Check("administrators exist", "iam", lambda s: _compute(s) and bool(s.config.access.administrators),
          partial(_rows, check_administrators, ("iam",))),
)  # fmt: skip


def _region_checks(config: HubSpokeConfig, region: RegionConfig, raw_clients: Clients) -> list[CheckResult]:
    name = region.region
    expected = config.account_of(region)
    last = LastCall()

    def clients(service: str, region_name: str) -> Any:
        return last.watch(service, raw_clients(service, region_name))

    def guarded(check: str, service: str, body: Callable[[], list[CheckResult]]) -> list[CheckResult]:
        def traced() -> list[CheckResult]:
            last.service = None
            try:
                return body()
            except ClientError as exc:
                if last.service and not hasattr(exc, "hubspoke_service"):
                    exc.hubspoke_service = last.service
                raise

        return guarded_check(name, check, service, traced)

    account_rows: list[CheckResult] = []

    def account() -> list[CheckResult]:
        row, _ = account_or_rejected(
            lambda: check_account(clients("sts", name), region=name, expected=expected), name, expected
        )
        account_rows.append(row)
        return [row]

    rows = guarded("account", "sts", account)
    if not account_rows or account_rows[0].status != "pass":
        later = ["cdk bootstrap", "cidr overlap", "az ids"]
        return rows + [CheckResult(name, c, "not checked", "the account check did not pass") for c in later]
    return rows + run_listed(CHECKS, Scope(config, region, lambda service: clients(service, name)), guarded)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "preflight",
        help=summary,
        description="Read-only AWS checks per Region: account, the local tools the AWS path runs (AWS CLI v2, "
        "session-manager-plugin, kubectl, docker; with the hub's rows), CDK bootstrap, CIDR overlaps, peering quota, "
        "AZ IDs and accelerator offerings, the staged Qumulo Core package and the pinned Ubuntu image, "
        "SageMaker cluster quota, EKS Kubernetes version and add-ons, the administrators' IAM principals. "
        "Exit 0 when nothing fails, 1 when a check fails, 2 for bad input.",
        epilog="Example:\n  AWS_PROFILE=ml-dev hubspoke preflight --config config/dev.yaml\n"
        "  hubspoke preflight --config config/dev.yaml --region us-west-2 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_aws_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, *, clients: Clients | None = None) -> int:
    return run_command(
        args,
        name="Preflight",
        clients=clients,
        make=session_clients,
        checks=lambda config, made: run_preflight(config, made, only=set(args.region or ())),
    )
