"""`hubspoke deploy` against moto (the bootstrap check) and a recording CDK runner that answers as the pinned CLI.

Sources of the facts written here:
- The CDK CLI decides an environment is bootstrapped from its CDKToolkit stack and the SSM parameter
  /cdk-bootstrap/hnb659fds/version, which must be 6 or newer for aws-cdk-lib's default synthesizer (aws-cdk
  2.1148.1, node_modules/aws-cdk/lib/index.js: DEFAULT_TOOLKIT_STACK_NAME, validateVersion, "This CDK deployment
  requires bootstrap stack version '6'"; aws-cdk-lib 2.275.0 DefaultStackSynthesizer MIN_BOOTSTRAP_STACK_VERSION=6,
  DEFAULT_QUALIFIER hnb659fds); the bootstrap template writes that parameter (bootstrap-template.yaml,
  CdkBootstrapVersion, Value '33').
- The lines the CLI prints per stack (same index.js, CdkToolkit deploy): "<display>: deploying... [i/n]",
  "✅  <display>" or "✅  <display> (no changes)", "❌  <stack name> failed to deploy"; a Stage stack's display is
  "<stage>/<id> (<stack name>)" (CloudFormationStackArtifact displayName).
- A rerun: the CLI skips a stack whose template and parameters did not change ("skipping deployment"), so the
  fake answers "(no changes)" for stacks it deployed before.
- moto's default account is 123456789012 (moto docs, "Multi-account support").
- config/dev.yaml's nine stacks, in plan order, and their expected minutes (hubspoke plan --config config/dev.yaml:
  network 5, link 3, storage 30, compute 150, ops 3, dashboard 1; 216 min on the critical path), written out.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from moto import mock_aws

from hubspoke.cli import deploy
from hubspoke.cli.cdk_run import Progress, subprocess_runner
from hubspoke.cli.main import main
from tests.cli.preflight_world import isolate_from_real_aws
from tests.conftest import NETWORK_ONLY, ROOT, minimal, write_config

DEV = ROOT / "config" / "dev.yaml"
ACCOUNT = "123456789012"
OTHER = "210987654321"
DEV_STACKS = [
    ("hubspoke-dev/network-us-east-2", 5),
    ("hubspoke-dev/network-us-west-2", 5),
    ("hubspoke-dev/link-us-west-2", 3),
    ("hubspoke-dev/storage-us-east-2", 30),
    ("hubspoke-dev/storage-us-west-2", 30),
    ("hubspoke-dev/compute-us-east-2", 150),
    ("hubspoke-dev/compute-us-west-2", 150),
    ("hubspoke-dev/ops-us-west-2", 3),
    ("hubspoke-dev/dashboard-us-east-2", 1),
]
PARAMETER = "/cdk-bootstrap/hnb659fds/version"
# A bootstrap stack as moto can hold it: the template's version parameter (bootstrap-template.yaml).
TOOLKIT_TEMPLATE = """
Resources:
  CdkBootstrapVersion:
    Type: AWS::SSM::Parameter
    Properties: {Type: String, Name: /cdk-bootstrap/hnb659fds/version, Value: '%s'}
"""


def bootstrap_in_moto(region: str, version: str = "33") -> None:
    """Create the bootstrap stack, or update it as `cdk bootstrap` does where one exists."""
    cfn = boto3.client("cloudformation", region_name=region)
    try:
        cfn.create_stack(StackName="CDKToolkit", TemplateBody=TOOLKIT_TEMPLATE % version)
    except cfn.exceptions.AlreadyExistsException:
        cfn.update_stack(StackName="CDKToolkit", TemplateBody=TOOLKIT_TEMPLATE % version)


class FakeCdk:
    """Records each command; `cdk bootstrap` creates the bootstrap stack in moto; `cdk deploy` prints the CLI's
    per-stack lines for `stacks`, "(no changes)" for those deployed before, and fails on `fail_on` once."""

    def __init__(self, stacks: Sequence[str], fail_on: str | None = None) -> None:
        self.stacks = list(stacks)
        self.fail_on = fail_on
        self.deployed: set[str] = set()
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], on_line: Callable[[str], None]) -> int:
        self.calls.append(list(argv))
        if argv[2] == "bootstrap":
            target = next(a for a in argv if a.startswith("aws://"))
            bootstrap_in_moto(target.rsplit("/", 1)[1])
            on_line(f" ✅  Environment {target} bootstrapped.")
            return 0
        for n, selector in enumerate(self.stacks, start=1):
            name = selector.replace("/", "-")
            on_line(f"{selector} ({name}): deploying... [{n}/{len(self.stacks)}]")
            if selector == self.fail_on:
                self.fail_on = None
                on_line(f"❌  {name} failed to deploy")
                return 1
            on_line("")
            on_line(f"✅  {selector} ({name})" + (" (no changes)" if selector in self.deployed else ""))
            self.deployed.add(selector)
        return 0


def args(config: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    deploy.add_parser(parser.add_subparsers(), "deploy")
    return parser.parse_args(["deploy", "--config", str(config), *extra])


def run(config: Path, cdk: Any, *extra: str, clients: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = deploy.run(args(config, *extra), runner=cdk, clients=clients, clock=lambda: 0.0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    isolate_from_real_aws(monkeypatch)
    with mock_aws():
        yield


def never(*_: Any) -> Any:
    raise AssertionError("called")


def bootstrap(region: str, account: str = ACCOUNT, config: Path = DEV) -> list[str]:
    """With cdk.json present `cdk bootstrap` synthesizes the app even for a named environment (aws-cdk 2.1148.1,
    node_modules/aws-cdk/lib/index.js, CdkToolkit.defineEnvironments: `if (this.props.cloudExecutable.hasApp)`),
    and app.py without `-c config=` builds every config/*.yaml: so bootstrap names the one config."""
    return ["npx", "cdk", "bootstrap", "-c", f"config={config}", f"aws://{account}/{region}"]


DEPLOY = ["npx", "cdk", "deploy", "-c", f"config={DEV}", "--require-approval", "never", "--concurrency", "3"]
DEPLOY += ["hubspoke-dev/*"]


def test_bootstraps_each_pair_then_deploys_with_per_stack_progress(aws: None) -> None:
    cdk = FakeCdk([s for s, _ in DEV_STACKS])
    code, out, err = run(DEV, cdk)
    assert (code, err) == (0, "")
    assert cdk.calls == [bootstrap("us-east-2"), bootstrap("us-west-2"), DEPLOY]
    assert "bootstrapping aws://123456789012/us-east-2 (no CDKToolkit stack)" in out
    assert "$ npx cdk deploy -c config=" in out and "9 stacks, 3 h 36 min expected" in out
    for selector, minutes in DEV_STACKS:
        assert f"started {selector} (expected {minutes} min)" in out
        assert f"finished {selector} in 0 min 00 s (expected {minutes} min)" in out
    assert "9/9 stacks done, 0 min 00 s elapsed of 216 min expected" in out
    assert out.rstrip().endswith(f"9 stacks deployed (9 changed). Next: hubspoke verify --config {DEV}")


def test_bootstraps_only_the_pairs_that_need_it(aws: None) -> None:
    bootstrap_in_moto("us-east-2")
    bootstrap_in_moto("us-west-2", version="5")  # older than the default synthesizer's 6
    cdk = FakeCdk([s for s, _ in DEV_STACKS])
    code, out, _ = run(DEV, cdk)
    assert code == 0
    assert cdk.calls == [bootstrap("us-west-2"), DEPLOY]
    assert f"{PARAMETER} is 5; the stacks need 6 or newer" in out


def test_a_failure_half_way_says_what_to_run_and_the_rerun_deploys_what_is_left(
    aws: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A named profile in the shared config file (AWS CLI User Guide, "Configuration and credential file
    # settings": [profile NAME] sections in ~/.aws/config, or the file AWS_CONFIG_FILE names).
    (tmp_path / "config").write_text(
        "[profile dev]\naws_access_key_id = testing\naws_secret_access_key = x\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    cdk = FakeCdk([s for s, _ in DEV_STACKS], fail_on="hubspoke-dev/network-us-west-2")
    code, out, _ = run(DEV, cdk, "--profile", "dev")
    assert code == 1
    last = out.rstrip().splitlines()[-1]
    assert "failed: hubspoke-dev/network-us-west-2; not deployed: hubspoke-dev/network-us-west-2, " in last
    assert "hubspoke-dev/dashboard-us-east-2. Fix the cause above" in last
    assert last.endswith(f"then run again: hubspoke deploy --config {DEV} --profile dev")

    cdk.calls.clear()
    code, out, _ = run(DEV, cdk, "--profile", "dev")
    assert code == 0
    assert cdk.calls == [[*DEPLOY, "--profile", "dev"]]  # bootstrapped by the first run: no bootstrap again
    assert "unchanged hubspoke-dev/network-us-east-2" in out
    assert "finished hubspoke-dev/network-us-west-2" in out
    assert "9 stacks deployed (8 changed)" in out


def test_a_failed_bootstrap_stops_before_deploying(aws: None) -> None:
    calls: list[list[str]] = []

    def refusing(argv: Sequence[str], on_line: Callable[[str], None]) -> int:
        calls.append(list(argv))
        return 1

    code, out, _ = run(DEV, refusing)
    assert code == 1 and calls == [bootstrap("us-east-2")]
    assert (
        f"`cdk bootstrap` exited 1; fix the cause above, then run again: hubspoke deploy --config {DEV}"
        in out
    )


def test_dry_run_prints_the_commands_only(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(DEV, never, "--dry-run", "--profile", "dev", clients=never)
    assert (code, err) == (0, "")
    commands = [line for line in out.splitlines() if not line.startswith("#")]
    assert commands == [
        " ".join([*bootstrap("us-east-2"), "--profile", "dev"]),
        " ".join([*bootstrap("us-west-2"), "--profile", "dev"]),
        " ".join([*DEPLOY[:-1], "'hubspoke-dev/*'", "--profile", "dev"]),
    ]


def test_dry_run_through_the_console_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_from_real_aws(monkeypatch)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["deploy", "--config", str(DEV), "--dry-run"]) == 0
    assert out.getvalue().rstrip().endswith("'hubspoke-dev/*'")


def test_an_unknown_profile_is_one_line_and_exit_2(aws: None) -> None:
    code, out, err = run(DEV, never, "--profile", "no-such-profile")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--profile" in err and "no-such-profile" in err


def test_no_credentials_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)
    code, out, err = run(DEV, never)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no AWS credentials" in err


def test_credentials_of_another_account_are_refused(aws: None, tmp_path: Path) -> None:
    config = write_config(tmp_path, minimal(account="111122223333"))
    code, out, err = run(config, never)
    assert code == 2 and out == ""
    assert err == (
        "hubspoke: credentials are for account 123456789012, but account in the config is 111122223333: pass "
        "--profile with a profile of that account (list them: `aws configure list-profiles`)\n"
    )


def test_an_opt_in_region_not_enabled_is_one_line_and_exit_2(aws: None, tmp_path: Path) -> None:
    """STS refuses every token in an opt-in Region the account has not enabled (AWS Account Management guide,
    "Enable or disable AWS Regions"; the code botocore raises: InvalidClientTokenId)."""
    config = write_config(
        tmp_path, minimal(spokes=[{"region": "ap-east-1", "cidr": "10.20.0.0/16", **NETWORK_ONLY}])
    )

    def clients(service: str, region: str) -> Any:
        if region == "ap-east-1":
            raise ClientError({"Error": {"Code": "InvalidClientTokenId", "Message": "invalid"}}, "Describe")
        return boto3.client(service, region_name=region)

    code, out, err = run(config, never, clients=clients)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "aws account enable-region --region-name ap-east-1" in err


@pytest.mark.parametrize(
    "error",
    [
        # The throttling code AWS answers (AWS SDKs and Tools Reference Guide, "Retry behavior": Throttling).
        ClientError({"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}, "DescribeStacks"),
        EndpointConnectionError(endpoint_url="https://cloudformation.us-west-2.amazonaws.com/"),
    ],
    ids=["throttled", "no-network"],
)
def test_aws_throttling_or_unreachable_is_one_line_and_exit_1_not_the_bad_input_2(
    aws: None, error: Exception
) -> None:
    """Exit 2 is reserved for bad input (hubspoke/cli/output.py, fail); a throttled or unreachable AWS is not input."""

    def clients(service: str, region: str) -> Any:
        if region == "us-west-2":
            raise error
        return boto3.client(service, region_name=region)

    code, out, err = run(DEV, never, clients=clients)
    assert code == 1 and out == ""
    assert (
        err.count("\n") == 1 and "us-west-2:" in err and f"run again: hubspoke deploy --config {DEV}" in err
    )


def test_another_accounts_pair_is_named_with_its_bootstrap_command(aws: None, tmp_path: Path) -> None:
    """A spoke in another account is bootstrapped with that account's credentials (the CLI refuses to bootstrap an
    account other than the caller's); its deploy role, which trusts ours, reads the version (moto lets any role
    be assumed and answers as that role's account)."""
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "account": OTHER, **NETWORK_ONLY}
    config = write_config(tmp_path, minimal(spokes=[spoke]))
    code, out, _ = run(config, never)
    assert code == 1
    assert (
        f"npx cdk bootstrap -c config={config} aws://{OTHER}/us-west-2 --trust {ACCOUNT} --cloudformation-execution-policies "
        f"arn:aws:iam::aws:policy/AdministratorAccess --profile <a profile of {OTHER}>"
    ) in out
    assert f"{PARAMETER} not found" in out


def test_progress_reads_coloured_lines_and_ignores_the_bootstrap_line() -> None:
    """chalk wraps the display name in bold (ESC[1m ... ESC[22m) on a terminal."""
    out = io.StringIO()
    ticks = iter([0.0, 0.0, 90.0])
    progress = Progress({"s/a": 5.0}, 5.0, out=out, clock=lambda: next(ticks))
    progress.line(" ✅  Environment aws://123456789012/us-east-2 bootstrapped (no changes).")
    progress.line("\x1b[1ms/a (x-a)\x1b[22m: deploying... [1/1]")
    progress.line("\x1b[32m✅  s/a (x-a) (no changes)\x1b[39m")
    assert "unchanged s/a in 1 min 30 s (expected 5 min); 1/1 stacks done" in out.getvalue()
    assert progress.left() == [] and progress.finished == {"s/a": False}


def test_a_bootstrap_stack_whose_create_failed_is_bootstrapped_again(aws: None) -> None:
    """The CLI treats CDKToolkit in ROLLBACK_COMPLETE as absent (ToolkitInfo.lookup, isCreationFailure); moto
    cannot fail a create, so DescribeStacks answers it here in the API's shape (botocore cloudformation model)."""

    class RolledBack:
        def describe_stacks(self, StackName: str) -> dict[str, Any]:
            return {"Stacks": [{"StackName": StackName, "StackStatus": "ROLLBACK_COMPLETE"}]}

    def clients(service: str, region: str) -> Any:
        if service == "cloudformation" and region == "us-west-2":
            return RolledBack()
        return boto3.client(service, region_name=region)

    bootstrap_in_moto("us-east-2")
    cdk = FakeCdk([s for s, _ in DEV_STACKS])
    code, out, _ = run(DEV, cdk, clients=clients)
    assert code == 0 and cdk.calls == [bootstrap("us-west-2"), DEPLOY]
    assert "(CDKToolkit failed to create (ROLLBACK_COMPLETE))" in out


def test_outside_the_repository_root_is_refused(
    aws: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(DEV, never)
    assert code == 2 and out == "" and "no cdk.json here" in err and err.count("\n") == 1


def test_the_real_runner_streams_both_streams_and_returns_the_exit_code() -> None:
    lines: list[str] = []
    script = "import sys; print('out', flush=True); sys.stderr.write('err\\n'); sys.exit(3)"
    assert subprocess_runner([sys.executable, "-c", script], lines.append) == 3
    assert lines == ["out", "err"]
    assert subprocess_runner(["/nonexistent/npx"], lines.append) == 127
    assert "not found" in lines[-1]


def test_the_real_runner_reads_utf_8_and_replaces_bad_bytes() -> None:
    """The CLI's markers are UTF-8 ✅ and ❌ (aws-cdk 2.1148.1 node_modules/aws-cdk/lib/index.js, CdkToolkit's
    deploy); a byte that is not UTF-8 (0xff never is: RFC 3629, section 1) must not end the run with a traceback."""
    lines: list[str] = []
    script = "import sys; sys.stdout.buffer.write(b'\\xe2\\x9c\\x85  hubspoke-dev/x\\n\\xff\\n')"
    assert subprocess_runner([sys.executable, "-c", script], lines.append) == 0
    assert lines == ["\u2705  hubspoke-dev/x", "\ufffd"]
