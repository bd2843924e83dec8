"""`hubspoke preflight --config PATH`: read-only AWS checks per Region, so a deploy does not fail an hour in.

Credentials come from the standard AWS chain (AWS_PROFILE or --profile, environment keys, SSO, instance
roles); AWS_ENDPOINT_URL redirects every call (tests point it at a local moto server). The Region of each
call is the configured Region being checked, so AWS_REGION does not change what is checked.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    CredentialRetrievalError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
    SSOError,
    TokenRetrievalError,
)

from hubspoke.cli.commands import COMMANDS
from hubspoke.cli.output import Table, fail, print_json, print_tables
from hubspoke.cli.preflight_checks import (
    CheckResult,
    check_account,
    check_availability_zones,
    check_bootstrap,
    check_cidrs,
    check_kubernetes_version,
    check_peering_quota,
    denied_or_error,
)
from hubspoke.cli.preflight_cnq import (
    check_host_configuration,
    check_release,
    check_staged_package,
    check_ubuntu_image,
)
from hubspoke.cli.preflight_quotas import (
    check_hyperpod_quotas,
    check_lambda_concurrency,
    check_security_group_rules,
)
from hubspoke.config import HubSpokeConfig, RegionConfig, load
from hubspoke.topology import plan_stacks

_CREDENTIAL_ERRORS = (
    NoCredentialsError,
    PartialCredentialsError,
    CredentialRetrievalError,
    SSOError,
    TokenRetrievalError,
)
_BAD_CREDENTIAL_CODES = {
    "InvalidClientTokenId",
    "ExpiredToken",
    "ExpiredTokenException",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
    "AuthFailure",
}
_UNREACHABLE = (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError)
_CREDENTIALS_FIX = (
    "set AWS_PROFILE (or --profile) to a profile for the configured account, export AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or run `aws sso login`"
)


class Clients(Protocol):
    """Makes a boto3 client for a service in a Region (a session in the command, fakes in tests)."""

    def __call__(self, service: str, region: str) -> Any: ...


class CredentialsProblem(Exception):
    """No usable credentials: nothing can be checked."""


class LastCall:
    """The IAM action of the last AWS call made through the clients it watches.

    A check may call two services (the peering check reads EC2, then Service Quotas); when a call fails, the
    row must name that call's permission, not the check's main service. The action is the client's signing
    name and the operation (e.g. ec2:DescribeVpcPeeringConnections, servicequotas:GetServiceQuota), which is
    the IAM action for every service preflight calls (IAM Service Authorization Reference prefixes).
    """

    def __init__(self) -> None:
        self.action: str | None = None

    def watch(self, client: Any) -> Any:
        prefix = client.meta.service_model.signing_name

        def record(model: Any, **_: Any) -> None:
            self.action = f"{prefix}:{model.name}"

        # before-parameter-build reaches every handler (before-call stops at the first that answers).
        client.meta.events.register(
            "before-parameter-build", record, unique_id=f"hubspoke-last-call-{id(self)}"
        )
        return client


def session_clients(profile: str | None = None) -> Clients:
    """Clients from the standard credential chain, with short timeouts so a bad network fails fast."""
    import boto3
    from botocore.config import Config

    session = boto3.Session(profile_name=profile)
    settings = Config(connect_timeout=5, read_timeout=20, retries={"max_attempts": 3, "mode": "standard"})

    made: dict[tuple[str, str], Any] = {}

    def make(service: str, region: str) -> Any:
        # One client per service and Region: building one loads its API model, which is not free.
        if (service, region) not in made:
            made[service, region] = session.client(service, region_name=region, config=settings)
        return made[service, region]

    return make


def run_preflight(
    config: HubSpokeConfig, clients: Clients, *, only: set[str] | None = None
) -> list[CheckResult]:
    """Every check for every configured Region (or those in `only`); credential trouble is one failing row."""
    results: list[CheckResult] = []
    try:
        for region in config.regions():
            if not only or region.region in only:
                results += _region_checks(config, region, clients)
    except CredentialsProblem as exc:
        results.append(CheckResult("-", "credentials", "fail", str(exc), _CREDENTIALS_FIX))
    return results


def _region_checks(config: HubSpokeConfig, region: RegionConfig, raw_clients: Clients) -> list[CheckResult]:
    name = region.region
    expected = config.account_of(region)
    last = LastCall()

    def clients(service: str, region_name: str) -> Any:
        return last.watch(raw_clients(service, region_name))

    def guarded(check: str, service: str, body: Callable[[], list[CheckResult]]) -> list[CheckResult]:
        last.action = None
        try:
            return body()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _BAD_CREDENTIAL_CODES:
                raise CredentialsProblem(f"AWS rejected the credentials: {exc}") from None
            return [denied_or_error(name, check, service, exc, action=last.action)]
        except _UNREACHABLE as exc:
            return [
                CheckResult(
                    name,
                    check,
                    "fail",
                    f"not checked: cannot reach AWS ({exc})",
                    "check the network, proxy or AWS_ENDPOINT_URL",
                )
            ]
        except _CREDENTIAL_ERRORS as exc:
            raise CredentialsProblem(f"no usable AWS credentials ({exc})") from None
        except BotoCoreError as exc:
            return [
                CheckResult(name, check, "fail", f"not checked: {exc}", "retry; run with valid AWS settings")
            ]

    account_rows: list[CheckResult] = []

    def account() -> list[CheckResult]:
        row, _ = check_account(clients("sts", name), region=name, expected=expected)
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
        "az ids", "ec2", lambda: check_availability_zones(clients("ec2", name), config=config, region=region)
    )
    if any(p.kind == "ops" and p.region == name for p in plan_stacks(config)):
        rows += guarded(
            "lambda concurrency",
            "lambda",
            lambda: [check_lambda_concurrency(clients("lambda", name), config=config, region=region)],
        )
    if region.storage.enabled:
        rows += guarded(
            "qumulo core package",
            "s3",
            lambda: [
                check_staged_package(clients("s3", name), config=config, region=region),
                check_host_configuration(clients("s3", name), region=region),
                check_release(config, region),
            ],
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
    return rows


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "preflight",
        help=COMMANDS["preflight"].summary,
        description="Read-only AWS checks per Region: account, CDK bootstrap, CIDR overlaps, peering quota, "
        "security-group rules quota, AZ IDs and accelerator offerings, Lambda concurrency (canary Regions), "
        "the staged Qumulo Core package and the pinned Ubuntu image, HyperPod quotas against instances already "
        "in use, EKS Kubernetes version. "
        "Exit 0 when nothing fails, 1 when a check fails, 2 for bad input.",
        epilog="Example:\n  AWS_PROFILE=ml-dev hubspoke preflight --config config/dev.yaml\n"
        "  hubspoke preflight --config config/dev.yaml --region us-west-2 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument(
        "--profile", metavar="NAME", help="AWS profile (default: AWS_PROFILE or the default chain)"
    )
    parser.add_argument(
        "--region",
        action="append",
        metavar="REGION",
        help="check only this configured Region (repeatable); e.g. one account's Regions at a time",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, *, clients: Clients | None = None) -> int:
    config = load(args.config).config
    configured = {r.region for r in config.regions()}
    unknown = sorted(set(args.region or ()) - configured)
    if unknown:
        return fail(
            f"--region: {', '.join(unknown)} not in {args.config}; choose from {', '.join(sorted(configured))}"
        )
    if clients is None:
        try:
            clients = session_clients(args.profile)
        except ProfileNotFound as exc:
            return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    results = run_preflight(config, clients, only=set(args.region or ()))
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "warn", "fail")}
    if args.json:
        print_json({"results": [asdict(r) for r in results], "summary": counts})
    else:
        table = Table(
            f"Preflight of {args.config} (environment {config.environment})",
            ("region", "check", "status", "detail", "fix"),
        )
        for r in results:
            table.add(r.region, r.check, r.status, r.detail, r.fix)
        print_tables([table], notes=[f"{counts['pass']} pass, {counts['warn']} warn, {counts['fail']} fail"])
    return 1 if counts["fail"] else 0
