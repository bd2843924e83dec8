"""`hubspoke deploy --config PATH`: bootstrap each account and Region that needs it, then run the plan's `cdk
deploy`, with per-stack progress against the plan's expected durations; after a failure, run it again.

The commands are `hubspoke plan`'s own (plan.build_plan: its bootstrap lines and its `deploy_all` line), with
--profile added. A rerun is safe: `cdk bootstrap` runs only where a pair is not bootstrapped, and the CDK CLI skips
a stack whose template and parameters are unchanged ("<stack>: skipping deployment (use --force to override)",
deployStack's canSkipDeploy) and deletes then re-creates one whose first create failed ("Found existing stack ...
that had previously failed creation. Deleting it before attempting to re-create it."): aws-cdk 2.1148.1,
node_modules/aws-cdk/lib/index.js.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, ProfileNotFound

from hubspoke.cli.cdk_run import Progress, Runner, subprocess_runner
from hubspoke.cli.checks import CREDENTIALS_FIX, Clients, error_code, session_clients
from hubspoke.cli.output import fail
from hubspoke.cli.plan import build_plan
from hubspoke.cli.preflight.checks import BOOTSTRAP_PARAMETER, MIN_BOOTSTRAP_VERSION
from hubspoke.config import HubSpokeConfig, load
from hubspoke.regions import is_opt_in, opt_in_note

# The CDK CLI's bootstrap stack, and the states in which it treats that stack as absent and bootstraps it again
# (aws-cdk 2.1148.1, lib/index.js: DEFAULT_TOOLKIT_STACK_NAME = "CDKToolkit"; ToolkitInfo.lookup returns "not
# found" when stackStatus.isCreationFailure, which is ROLLBACK_COMPLETE or ROLLBACK_FAILED).
TOOLKIT_STACK = "CDKToolkit"
CREATION_FAILED = ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED")
# The role another account's bootstrap lets the trusted account assume to deploy; it may read the version
# parameter (bootstrap-template.yaml: DeploymentActionRole, RoleName cdk-${Qualifier}-deploy-role-${AWS::AccountId}-
# ${AWS::Region}, statement ReadVersion). The CLI reads the version through this role too (validateVersion).
QUALIFIER = BOOTSTRAP_PARAMETER.split("/")[2]
Pair = tuple[str, str]


class Refusal(Exception):
    """Something to fix before deploying: printed as one line, exit 2."""


class Unreachable(Exception):
    """AWS could not be asked, or refused for a reason other than the input (throttling, a network error): printed
    as one line, exit 1, since exit 2 is bad input's."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "deploy",
        help=summary,
        description="Bootstrap each account and Region that needs it (no CDKToolkit stack, or "
        f"{BOOTSTRAP_PARAMETER} below {MIN_BOOTSTRAP_VERSION}), then run the `cdk deploy` that `hubspoke plan` "
        "prints, with each stack's progress against the plan's expected minutes. After a failure, run it again: "
        "unchanged stacks are skipped. Exit 0 deployed, 1 another account needs bootstrapping, the CDK CLI's "
        "code when it failed, 2 bad input.",
        epilog="Example:\n  hubspoke deploy --config config/dev.yaml --profile dev",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument(
        "--profile",
        metavar="NAME",
        help="AWS profile for the checks and every cdk command (default: AWS_PROFILE or the chain)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the commands; run nothing, call no AWS API",
    )
    parser.set_defaults(run=run)


def run(
    args: argparse.Namespace,
    *,
    runner: Runner | None = None,
    clients: Clients | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    config = load(args.config).config
    data = build_plan(config, config_path=str(args.config))
    # The CDK CLI's global option: "Use the indicated AWS profile as the default environment" (aws-cdk 2.1148.1,
    # lib/cli/parse-command-line-arguments.js).
    as_profile = ["--profile", args.profile] if args.profile else []
    planned = {_pair(c): c for c in data["commands"]["bootstrap"]}
    bootstraps = {pair: [*shlex.split(c), *as_profile] for pair, c in planned.items()}
    deploy = [*shlex.split(data["commands"]["deploy_all"]), *as_profile]
    again = shlex.join(["hubspoke", "deploy", "--config", str(args.config), *as_profile])
    timing = data["deploy_time"]
    if args.dry_run:
        # Comments only above the commands: the output stays a shell script (and one YAML document).
        print(
            f"# Checked first: each pair's {TOOLKIT_STACK} stack and {BOOTSTRAP_PARAMETER} (>= "
            f"{MIN_BOOTSTRAP_VERSION}); `cdk bootstrap` runs only where one is missing or older."
        )
        print(f"# Then {len(data['stacks'])} stacks deploy, {_hours(timing['expected_minutes'])} expected.")
        print("\n".join(shlex.join(argv) for argv in [*bootstraps.values(), deploy]))
        return 0
    if not Path("cdk.json").is_file():
        # The CDK CLI reads the app to synthesize from ./cdk.json (CDK Developer Guide, "cdk.json").
        return fail(
            "no cdk.json here: run hubspoke deploy from the repository root (where `make synth` runs)"
        )
    try:
        need = _unbootstrapped(config, clients or session_clients(args.profile), list(planned))
    except ProfileNotFound as exc:
        return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    except Refusal as exc:
        return fail(str(exc))
    except Unreachable as exc:
        print(f"hubspoke deploy: {exc}; run again: {again}", file=sys.stderr)
        return 1
    foreign = {pair: why for pair, why in need.items() if pair[0] != config.account}
    if foreign:
        print("hubspoke deploy: another account must be bootstrapped with its own credentials first:")
        for pair, why in foreign.items():
            print(f"  {why}:\n  {planned[pair]} --profile <a profile of {pair[0]}>")
        print(f"Then run again: {again}")
        return 1
    run_line = runner or subprocess_runner
    for pair, why in need.items():
        _say(f"bootstrapping aws://{pair[0]}/{pair[1]} ({why})\n$ {shlex.join(bootstraps[pair])}")
        code = run_line(bootstraps[pair], _echo)
        if code:
            _say(f"`cdk bootstrap` exited {code}; fix the cause above, then run again: {again}")
            return code
    follow = Progress(
        expected={
            s["selector"]: timing["stack_kinds"][s["kind"]]["expected_minutes"] for s in data["stacks"]
        },
        total_expected=timing["expected_minutes"],
        clock=clock,
    )
    _say(
        f"{len(data['stacks'])} stacks, {_hours(timing['expected_minutes'])} expected (critical path "
        f"{' -> '.join(timing['critical_path'])})\n$ {shlex.join(deploy)}"
    )
    code = run_line(deploy, follow.line)
    if code:
        _say(
            f"`cdk deploy` exited {code}; failed: {', '.join(follow.failed) or 'see the CDK output above'}; not "
            f"deployed: {', '.join(follow.left()) or 'none'}. Fix the cause above "
            f"(docs/runbooks/deploy-environment.md), then run again: {again}"
        )
        return code
    verify = shlex.join(["hubspoke", "verify", "--config", str(args.config), *as_profile])
    _say(f"{len(follow.finished)} stacks deployed ({sum(follow.finished.values())} changed). Next: {verify}")
    return 0


def _say(message: str) -> None:
    print(f"hubspoke deploy: {message}", flush=True)


def _pair(command: str) -> Pair:
    """The (account, Region) of a plan's `npx cdk bootstrap aws://ACCOUNT/REGION ...` line."""
    target = next(w for w in shlex.split(command) if w.startswith("aws://"))
    account, region = target.removeprefix("aws://").split("/")
    return account, region


def _echo(line: str) -> None:
    print(line, flush=True)


def _hours(minutes: float) -> str:
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def _unbootstrapped(config: HubSpokeConfig, clients: Clients, pairs: Sequence[Pair]) -> dict[Pair, str]:
    """Pair -> why it needs `cdk bootstrap`, for each pair that does. Refusal when the credentials are not the
    environment's account, or AWS cannot be asked."""
    caller = _ask(
        config.hub.region, lambda: clients("sts", config.hub.region).get_caller_identity()["Account"]
    )
    if caller != config.account:
        raise Refusal(
            f"credentials are for account {caller}, but account in the config is {config.account}: pass "
            "--profile with a profile of that account (list them: `aws configure list-profiles`)"
        )
    need = {}
    for account, region in pairs:
        if account == caller:
            why = _ask(region, lambda r=region: _own_reason(clients("cloudformation", r), clients("ssm", r)))
        else:
            why = _ask(region, lambda a=account, r=region: _foreign_reason(clients("sts", r), a, r))
        if why:
            need[account, region] = why
    return need


def _ask(region: str, call: Any) -> Any:
    """`call()`, with AWS's answers turned into one line: a Refusal for what the user fixes (no credentials, an
    opt-in Region not enabled), Unreachable for the rest."""
    try:
        return call()
    except NoCredentialsError:
        raise Refusal(f"no AWS credentials: {CREDENTIALS_FIX}") from None
    except ClientError as exc:
        # STS refuses every token in an opt-in Region the account has not enabled (regions.opt_in_note).
        if is_opt_in(region) and error_code(exc) in ("InvalidClientTokenId", "UnrecognizedClientException"):
            raise Refusal(f"{region}: {opt_in_note([region])}") from None
        raise Unreachable(f"{region}: {exc}") from None
    except BotoCoreError as exc:
        # Endpoint, connection and read-timeout errors are BotoCoreErrors (botocore/exceptions.py).
        raise Unreachable(f"{region}: {exc}") from None


def _own_reason(cfn: Any, ssm: Any) -> str | None:
    """Why a pair in the caller's account needs bootstrapping (the CLI's own test: toolkit stack, then version)."""
    try:
        status = cfn.describe_stacks(StackName=TOOLKIT_STACK)["Stacks"][0]["StackStatus"]
    except ClientError as exc:
        # DescribeStacks answers ValidationError "Stack with id CDKToolkit does not exist" (CloudFormation API).
        if error_code(exc) != "ValidationError":
            raise
        return f"no {TOOLKIT_STACK} stack"
    if status in CREATION_FAILED:
        return f"{TOOLKIT_STACK} failed to create ({status})"
    return _version_reason(ssm)


def _version_reason(ssm: Any) -> str | None:
    try:
        value = str(ssm.get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"])
    except ClientError as exc:
        if error_code(exc) != "ParameterNotFound":
            raise
        return f"{BOOTSTRAP_PARAMETER} not found"
    if not value.isdigit() or int(value) < MIN_BOOTSTRAP_VERSION:
        return f"{BOOTSTRAP_PARAMETER} is {value}; the stacks need {MIN_BOOTSTRAP_VERSION} or newer"
    return None


def _foreign_reason(sts: Any, account: str, region: str) -> str | None:
    """Why another account's pair needs bootstrapping: its deploy role cannot be assumed, or its version is old."""
    import boto3

    role = f"arn:aws:iam::{account}:role/cdk-{QUALIFIER}-deploy-role-{account}-{region}"
    try:
        keys = sts.assume_role(RoleArn=role, RoleSessionName="hubspoke-deploy")["Credentials"]
    except ClientError as exc:
        if error_code(exc) != "AccessDenied":
            raise
        return f"aws://{account}/{region}: cannot assume {role} (not bootstrapped, or without --trust)"
    ssm = boto3.client(
        "ssm",
        region_name=region,
        aws_access_key_id=keys["AccessKeyId"],
        aws_secret_access_key=keys["SecretAccessKey"],
        aws_session_token=keys["SessionToken"],
    )
    why = _version_reason(ssm)
    return f"aws://{account}/{region}: {why}" if why else None
