"""What the read-only AWS checks of `hubspoke preflight` and `hubspoke verify` share: rows, clients, errors, report.

Credentials come from the standard AWS chain (AWS_PROFILE or --profile, environment keys, SSO, container and
instance roles); AWS_ENDPOINT_URL redirects every call (tests point it at a local moto server). Each call goes
to the configured Region being checked, so AWS_REGION does not change what is checked. A call that fails
becomes a failing row naming the permission to grant or the endpoint that cannot be reached, never a
traceback; credentials that are missing or rejected stop the run with one `credentials` row.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

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

from hubspoke.cli.output import Table, fail, print_json, print_tables
from hubspoke.config import HubSpokeConfig, load

# "not checked" is a row whose subject is out of reach by design (a private Kubernetes endpoint, no
# kubeconfig); a check that could not run because AWS refused or was unreachable fails instead.
Status = Literal["pass", "warn", "fail", "not checked"]
STATUSES: tuple[Status, ...] = ("pass", "warn", "fail", "not checked")
S = TypeVar("S")  # what a check list's entries read: a Region's config, clients and what earlier checks found

CREDENTIALS_FIX = (
    "set AWS_PROFILE (or --profile) to a profile for the configured account, export AWS_ACCESS_KEY_ID and "
    "AWS_SECRET_ACCESS_KEY, or run `aws sso login`"
)
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
# SNS says AuthorizationError (botocore sns service-2.json, AuthorizationErrorException: 403, "denied access").
_DENIED = {
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "UnauthorizedException",
    "AuthorizationError",
}
# Service name in botocore -> prefix of its IAM actions, where the two differ.
_IAM_PREFIX = {"service-quotas": "servicequotas"}


@dataclass(frozen=True)
class CheckResult:
    """One row of a check report."""

    region: str
    check: str
    status: Status
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Check(Generic[S]):
    """One entry of a check list: its row name, the AWS service a failed call names ("" when it calls none), when
    it applies to a Region's scope, and what answers it."""

    name: str
    service: str
    applies: Callable[[S], bool]
    answer: Callable[[S], list[CheckResult]]


def run_listed(
    checks: Sequence[Check[S]],
    scope: S,
    guard: Callable[[str, str, Callable[[], list[CheckResult]]], list[CheckResult]],
) -> list[CheckResult]:
    """The rows of every check that applies to `scope`, in list order; `guard` turns a check's AWS errors into its row."""
    rows: list[CheckResult] = []
    for check in checks:
        if check.applies(scope):
            answer = partial(check.answer, scope)
            rows += guard(check.name, check.service, answer) if check.service else answer()
    return rows


class Clients(Protocol):
    """Makes a boto3 client for a service in a Region (a session in the command, fakes in tests)."""

    def __call__(self, service: str, region: str) -> Any: ...


class CredentialsProblem(Exception):
    """No usable credentials: nothing can be checked."""


def session_clients(profile: str | None = None) -> Clients:
    """Clients from the standard credential chain, with short timeouts so a bad network fails fast."""
    import boto3
    from botocore.config import Config

    session = boto3.Session(profile_name=profile)
    # botocore Config: max_attempts counts retries after the first request, total_max_attempts every attempt;
    # docs/cli.md promises 3 attempts.
    settings = Config(
        connect_timeout=5, read_timeout=20, retries={"total_max_attempts": 3, "mode": "standard"}
    )

    made: dict[tuple[str, str], Any] = {}

    def make(service: str, region: str) -> Any:
        # One client per service and Region: building one loads its API model, which is not free.
        if (service, region) not in made:
            made[service, region] = session.client(service, region_name=region, config=settings)
        return made[service, region]

    return make


def iam_action(service: str, operation: str) -> str:
    """The IAM action behind a botocore operation, e.g. `ec2:DescribeVpcs`."""
    return f"{_IAM_PREFIX.get(service, service)}:{operation}"


def denied_or_error(region: str, check: str, service: str, exc: ClientError) -> CheckResult:
    """A call that failed: say which permission is missing, or what AWS answered."""
    code = exc.response.get("Error", {}).get("Code", "")
    action = iam_action(service, exc.operation_name)
    if code in _DENIED:
        return CheckResult(
            region,
            check,
            "fail",
            f"not checked: {action} was denied",
            f"allow {action} (read-only) for these credentials",
        )
    message = exc.response.get("Error", {}).get("Message", str(exc))
    return CheckResult(
        region,
        check,
        "fail",
        f"not checked: {action} answered {code}: {message}",
        "retry; if it persists, check the AWS Health Dashboard",
    )


def error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def pages(client: Any, operation: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
    """Every item under `key` of every page of a paginated operation."""
    for page in client.get_paginator(operation).paginate(**params):
        yield from page.get(key, [])


def guarded(
    region: str, check: str, service: str, body: Callable[[], list[CheckResult]]
) -> list[CheckResult]:
    """Run one check; AWS errors become its failing row, credential trouble raises CredentialsProblem."""
    try:
        return body()
    except ClientError as exc:
        if error_code(exc) in _BAD_CREDENTIAL_CODES:
            raise CredentialsProblem(f"AWS rejected the credentials: {exc}") from None
        # A check that also reads another service's data tags the error with that service (verify's stacks).
        return [denied_or_error(region, check, getattr(exc, "hubspoke_service", service), exc)]
    except _UNREACHABLE as exc:
        return [
            CheckResult(
                region,
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
            CheckResult(region, check, "fail", f"not checked: {exc}", "retry; run with valid AWS settings")
        ]


# STS in a Region that is not enabled for the account refuses every token with InvalidClientTokenId, as
# it does bad credentials (IAM User Guide, "Activating and deactivating AWS STS in an AWS Region": tokens
# are not valid in Regions the account has not enabled). One such Region is that Region's row; the others
# are still checked. Every Region refusing them means the credentials are bad.
REJECTED = "STS rejected the credentials here (InvalidClientTokenId)"


def rejected_row(code: str, account: str) -> CheckResult:
    """The account row of a Region whose STS refused the credentials: probably an opt-in Region not enabled."""
    from hubspoke.regions import is_opt_in

    kind = "an opt-in Region" if is_opt_in(code) else "not an opt-in Region, so the credentials are suspect"
    return CheckResult(
        code,
        "account",
        "fail",
        f"{REJECTED}: is {code} enabled for account {account}? It is {kind}; an opt-in Region refuses every "
        "token until it is enabled",
        # AWS Account Management EnableRegion / GetRegionOptStatus (RegionName; ENABLED, ENABLING, DISABLED,
        # ENABLED_BY_DEFAULT: botocore account service-2.json).
        f"enable it: `aws account enable-region --region-name {code}`, then wait until "
        f"`aws account get-region-opt-status --region-name {code}` says ENABLED; if every Region says this, "
        f"the credentials are bad: {CREDENTIALS_FIX}",
    )


def account_or_rejected(
    check: Callable[[], tuple[CheckResult, str]], code: str, account: str
) -> tuple[CheckResult, str | None]:
    """Run an account check; STS's InvalidClientTokenId becomes this Region's rejected row (no account)."""
    try:
        return check()
    except ClientError as exc:
        if error_code(exc) != "InvalidClientTokenId":
            raise
        return rejected_row(code, account), None


def collapse_rejections(results: list[CheckResult], regions: list[str]) -> list[CheckResult]:
    """Every one of several Regions refusing the credentials: one credentials row instead, they are bad."""
    rejected = [r for r in results if r.check == "account" and r.detail.startswith(REJECTED)]
    if len(regions) > 1 and len(rejected) == len(regions):
        return [
            credentials_row(
                CredentialsProblem(f"AWS rejected the credentials in {', '.join(r.region for r in rejected)}")
            )
        ]
    return results


def credentials_row(problem: CredentialsProblem) -> CheckResult:
    return CheckResult("-", "credentials", "fail", str(problem), CREDENTIALS_FIX)


def add_aws_options(parser: argparse.ArgumentParser) -> None:
    """--config, --profile, --region (repeatable) and --json, worded the same for every AWS command."""
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


def unknown_regions(args: argparse.Namespace, config: HubSpokeConfig) -> str | None:
    """The --region error for Regions the config does not have, or None when every one is configured."""
    configured = {r.region for r in config.regions()}
    unknown = sorted(set(args.region or ()) - configured)
    if not unknown:
        return None
    return f"--region: {', '.join(unknown)} not in {args.config}; choose from {', '.join(sorted(configured))}"


def run_command(
    args: argparse.Namespace,
    *,
    name: str,
    clients: Clients | None,
    make: Callable[[str | None], Clients],
    checks: Callable[[HubSpokeConfig, Clients], list[CheckResult]],
) -> int:
    """Load the config, check --region and --profile (exit 2), run the checks with clients from `make`, report."""
    config = load(args.config).config
    error = unknown_regions(args, config)
    if error:
        return fail(error)
    if clients is None:
        try:
            clients = make(args.profile)
        except ProfileNotFound as exc:
            return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    return report(
        checks(config, clients),
        title=f"{name} of {args.config} (environment {config.environment})",
        as_json=args.json,
    )


def report(results: list[CheckResult], *, title: str, as_json: bool) -> int:
    """Print the rows (table or JSON) and the counts; exit 1 when a row failed, else 0."""
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    if as_json:
        print_json({"results": [asdict(r) for r in results], "summary": counts})
    else:
        table = Table(title, ("region", "check", "status", "detail", "fix"))
        for r in results:
            table.add(r.region, r.check, r.status, r.detail, r.fix)
        print_tables([table], notes=[", ".join(f"{n} {s}" for s, n in counts.items())])
    return 1 if counts["fail"] else 0
