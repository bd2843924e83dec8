"""`hubspoke preflight --config PATH`: read-only AWS checks per Region, so a deploy does not fail an hour in.

Credentials come from the standard AWS chain (AWS_PROFILE or --profile, environment keys, SSO, instance
roles); AWS_ENDPOINT_URL redirects every call (tests point it at a local moto server). The Region of each
call is the configured Region being checked, so AWS_REGION does not change what is checked.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import (
    CheckResult,
    Clients,
    CredentialsProblem,
    account_or_rejected,
    add_aws_options,
    collapse_rejections,
    credentials_row,
    run_command,
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
from hubspoke.cli.preflight.namespace import CHECK as CHECK_OLD_NAMESPACE
from hubspoke.cli.preflight.namespace import check_old_namespace
from hubspoke.cli.preflight.quotas import (
    check_hyperpod_quotas,
    check_lambda_concurrency,
    check_route_table_routes,
    check_security_group_rules,
    check_security_groups_per_interface,
)
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
        return rows + [
            CheckResult(name, c, "warn", "not checked: the account check did not pass") for c in later
        ]

    rows += guarded(
        "cdk bootstrap", "ssm", lambda: [check_bootstrap(clients("ssm", name), region=name, account=expected)]
    )
    own_vpc: list[str | None] = [None]

    def cidrs() -> list[CheckResult]:
        found, own_vpc[0] = check_cidrs(clients("ec2", name), config=config, region=region)
        return found

    rows += guarded("cidr overlap", "ec2", cidrs)
    if region is config.hub and config.spokes:
        rows += guarded(
            "peering quota",
            "service-quotas",
            lambda: [
                check_peering_quota(
                    clients("ec2", name),
                    clients("service-quotas", name),
                    config=config,
                    hub_vpc_id=own_vpc[0],
                )
            ],
        )
    rows += guarded(
        "security group rules",
        "service-quotas",
        lambda: [check_security_group_rules(clients("service-quotas", name), config=config, region=region)],
    )
    rows += guarded(
        "routes per route table",
        "service-quotas",
        lambda: [check_route_table_routes(clients("service-quotas", name), config=config, region=region)],
    )
    rows += guarded(
        "security groups per interface",
        "service-quotas",
        lambda: [
            check_security_groups_per_interface(clients("service-quotas", name), config=config, region=region)
        ],
    )
    rows += guarded(
        "az ids", "ec2", lambda: check_availability_zones(clients("ec2", name), config=config, region=region)
    )
    if any(p.kind == "ops" and p.region == name for p in plan_stacks(config)):
        rows += guarded(
            "lambda concurrency",
            "lambda",
            lambda: [
                check_lambda_concurrency(
                    clients("lambda", name),
                    config=config,
                    region=region,
                    cloudformation=clients("cloudformation", name),
                )
            ],
        )
    if region.storage.enabled:
        # One row each: an error reading one object must not hide the other's answer.
        rows += guarded(
            "qumulo core package",
            "s3",
            lambda: [
                check_staged_package(
                    clients("s3", name), config=config, region=region, kms=clients("kms", name)
                )
            ],
        )
        rows += guarded(
            "qumulo host configuration",
            "s3",
            lambda: [check_host_configuration(clients("s3", name), region=region)],
        )
        rows += [check_release(config, region)]
        rows += guarded(
            "floating ip room",
            "ec2",
            lambda: [check_floating_ip_room(clients("ec2", name), config=config, region=region)],
        )
        rows += guarded(
            "cnq deployed shape",
            "cloudformation",
            lambda: check_deployed_cluster(
                clients("cloudformation", name), clients("ec2", name), config=config, region=region
            ),
        )
        rows += guarded(
            "ubuntu image",
            "ec2",
            lambda: check_ubuntu_image(
                clients("ssm", name), clients("ec2", name), config=config, region=region
            ),
        )
    if region.compute.enabled:
        rows += guarded(
            "sagemaker quota",
            "service-quotas",
            lambda: check_hyperpod_quotas(
                clients("service-quotas", name), clients("sagemaker", name), config=config, region=region
            ),
        )
        rows += guarded(
            "kubernetes version",
            "eks",
            lambda: [check_kubernetes_version(clients("eks", name), config=config, region=region)],
        )
        rows += guarded(
            "deployed kubernetes",
            "eks",
            lambda: [check_deployed_kubernetes(clients("eks", name), config=config, region=region)],
        )
        rows += guarded(
            "eks add-on versions",
            "eks",
            lambda: check_addon_versions(clients("eks", name), config=config, region=region),
        )
        rows += guarded(
            CHECK_OLD_NAMESPACE,
            "eks",
            lambda: [check_old_namespace(clients("eks", name), config=config, region=region)],
        )
        if config.access.administrators:
            rows += guarded(
                "administrators exist",
                "iam",
                lambda: check_administrators(clients("iam", name), config=config, region=region),
            )
    return rows


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "preflight",
        help=summary,
        description="Read-only AWS checks per Region: account, CDK bootstrap, CIDR overlaps, peering quota, "
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
