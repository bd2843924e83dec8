"""`hubspoke verify` as a command: exit codes, JSON, credentials, unreachable AWS, denied calls, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from botocore.awsrequest import AWSResponse

import hubspoke.cli.verify as verify_command
from hubspoke.cli.checks import session_clients
from hubspoke.cli.main import main
from tests.cli.preflight_world import isolate_from_real_aws
from tests.cli.test_verify import COMPUTE, only_areas, quoted_command_problems, verify
from tests.cli.verify_fixtures import Kube, exec_plugin
from tests.cli.verify_world import DeployedWorld
from tests.conftest import ROOT
from tests.fakes.loopback import closed_port


def _use(monkeypatch: pytest.MonkeyPatch, world: DeployedWorld) -> None:
    monkeypatch.setattr(verify_command, "session_clients", lambda profile=None: world.clients)


def test_healthy_environment_exits_0_with_json(
    deployed: DeployedWorld,
    deployed_config: Path,
    kube: Kube,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _use(monkeypatch, deployed)
    code = main(["verify", "--config", str(deployed_config), "--json", "--kubeconfig", str(kube.kubeconfig)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["summary"] == {"pass": len(out["results"]) - 1, "warn": 0, "fail": 0, "not checked": 1}
    assert set(out["results"][0]) == {"region", "check", "status", "detail", "fix"}


def test_a_failure_exits_1_and_a_stale_reader_alone_exits_0(
    deployed: DeployedWorld,
    deployed_config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _use(monkeypatch, deployed)
    deployed.update("storage-us-east-2")
    # Without a kubeconfig the Kubernetes rows are `not checked`, which is no failure either.
    assert main(["verify", "--config", str(deployed_config), "--kubeconfig", "/nonexistent/kubeconfig"]) == 0
    assert re.search(r"stale reader\s+warn", capsys.readouterr().out)
    table = deployed.route_table("us-east-2", "use2-az2")
    deployed.clients("ec2", "us-east-2").delete_route(RouteTableId=table, DestinationCidrBlock="10.30.0.0/16")
    assert main(["verify", "--config", str(deployed_config), "--region", "us-east-2"]) == 1
    out = capsys.readouterr().out
    assert "aws ec2 create-route --destination-cidr-block 10.30.0.0/16" in out
    # The table says which command judged which config (the title above its rows).
    assert f"Verify of {deployed_config} (environment dev)" in out
    assert "us-west-2" not in {line.split()[0] for line in out.splitlines() if line.strip()}


def test_denied_reads_name_the_permission_of_the_service_that_refused(
    deployed: DeployedWorld,
    deployed_config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def deny(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        body = {"Error": {"Code": "AccessDenied", "Message": f"not authorized to perform {model.name}"}}
        return AWSResponse("https://stub", 403, {}, None), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    deployed.clients("cloudformation", "us-west-2").meta.events.register("before-call.cloudformation.*", deny)
    _use(monkeypatch, deployed)
    assert main(["verify", "--config", str(deployed_config), "--region", "us-west-2", "--json"]) == 1
    results = json.loads(capsys.readouterr().out)["results"]
    stack = next(r for r in results if r["check"] == "stack")
    assert stack["fix"] == "allow cloudformation:DescribeStacks (read-only) for these credentials"
    # The network checks read their IDs from the stacks: the missing permission is still CloudFormation's.
    routes = next(r for r in results if r["check"] == "routes")
    assert routes["fix"] == "allow cloudformation:DescribeStacks (read-only) for these credentials"


def test_without_credentials_one_row_says_so(
    tmp_path: Path, deployed_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)
    assert main(["verify", "--config", str(deployed_config), "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["check"] == "credentials" and "AWS_PROFILE" in row["fix"]


def test_unreachable_endpoint_fails_without_traceback(
    deployed_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    assert main(["verify", "--config", str(deployed_config), "--region", "eu-west-1"]) == 1
    captured = capsys.readouterr()
    assert "cannot reach AWS" in captured.out and "Traceback" not in captured.err


def test_bad_input_exits_2(
    tmp_path: Path, deployed_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch)
    assert main(["verify", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: (file): file not found" in capsys.readouterr().err
    assert main(["verify", "--config", str(deployed_config), "--region", "eu-west-9"]) == 2
    assert "--region: eu-west-9" in capsys.readouterr().err
    assert main(["verify", "--config", str(deployed_config), "--profile", "no-such-profile"]) == 2
    assert "no-such-profile" in capsys.readouterr().err
    assert session_clients  # the real factory is what `run` uses when nothing is patched


def _reject_tokens(world: DeployedWorld, *regions: str) -> None:
    """STS in these Regions refuses the credentials as it does in a Region the account has not enabled:
    403 InvalidClientTokenId "The security token included in the request is invalid" (STS error, IAM User
    Guide "Activating and deactivating AWS STS in an AWS Region"). eu-west-1 stands in for an opt-in Region."""

    def refuse(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        error = {
            "Code": "InvalidClientTokenId",
            "Message": "The security token included in the request is invalid.",
        }
        return AWSResponse("https://stub", 403, {}, None), {
            "Error": error,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    for region in regions:
        world.clients("sts", region).meta.events.register("before-call.sts.GetCallerIdentity", refuse)


def test_a_region_not_enabled_is_its_own_row_and_the_others_are_checked(
    deployed: DeployedWorld,
    deployed_config: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _use(monkeypatch, deployed)
    _reject_tokens(deployed, "eu-west-1")
    assert main(["verify", "--config", str(deployed_config), "--json", "--kubeconfig", "/nonexistent"]) == 1
    results = json.loads(capsys.readouterr().out)["results"]
    spoke = [r for r in results if r["region"] == "eu-west-1"]
    assert [(r["check"], r["status"]) for r in spoke] == [("account", "fail"), ("checks", "not checked")]
    assert "is eu-west-1 enabled for account 123456789012?" in spoke[0]["detail"]
    # AWS Account Management EnableRegion and GetRegionOptStatus take RegionName (botocore account model).
    # (The credentials advice after them is checks.py's CREDENTIALS_FIX, shared with preflight.)
    commands = quoted_command_problems(spoke[0]["fix"])
    assert {c: p for c, p in commands.items() if c.startswith("aws account")} == {
        "aws account enable-region --region-name eu-west-1": [],
        "aws account get-region-opt-status --region-name eu-west-1": [],
    }
    assert "credentials" not in {r["check"] for r in results}
    # The enabled Regions were checked through to the end.
    assert {r["region"] for r in results if r["check"] == "stack" and r["status"] == "pass"} == {
        "us-east-2",
        "us-west-2",
    }
    _reject_tokens(deployed, "us-east-2", "us-west-2")
    assert main(["verify", "--config", str(deployed_config), "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)["results"]
    assert row["check"] == "credentials" and "us-east-2, us-west-2, eu-west-1" in row["detail"]


def test_profile_reaches_the_kubeconfigs_credential_plugin(
    deployed: DeployedWorld,
    deployed_config: Path,
    kube: Kube,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The plugin's token is the mapped identity's only under AWS_PROFILE=ml-dev (exec_plugin). The command runs
    its compute area alone (test_verify.only_areas), where the Kubernetes rows are: the whole run's exit code is
    test_healthy_environment_exits_0_with_json's."""
    _use(monkeypatch, deployed)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    config = yaml.safe_load(kube.kubeconfig.read_text())
    for user in config["users"]:
        user["user"]["exec"] = exec_plugin("test-token", profile="ml-dev")
    kube.kubeconfig.write_text(yaml.safe_dump(config))
    args = ["verify", "--config", str(deployed_config), "--json", "--kubeconfig", str(kube.kubeconfig)]
    with only_areas(COMPUTE):
        assert main([*args, "--profile", "ml-dev"]) == 0
    nodes = [r for r in json.loads(capsys.readouterr().out)["results"] if r["check"] == "kubernetes nodes"]
    assert [r["status"] for r in nodes] == ["pass", "pass"]
    with only_areas(COMPUTE):
        main(args)
    nodes = [r for r in json.loads(capsys.readouterr().out)["results"] if r["check"] == "kubernetes nodes"]
    assert [r["status"] for r in nodes] == ["not checked", "not checked"]


def test_verifys_help_is_the_reviewed_reference_in_docs_cli_md() -> None:
    """docs/cli.md's `verify` section is the reviewed text of `hubspoke verify --help` (usage, description, options,
    example); tests/cli/test_reference.py holds the whole page to the parsers, this holds verify's own parser to
    its section, so a changed word of verify's help fails with verify's tests."""
    from hubspoke.cli.reference import render

    def section(text: str) -> str:
        return text.split("\n## verify\n", 1)[1].split("\n## ", 1)[0]

    page = (ROOT / "docs" / "cli.md").read_text()
    assert section(render()) == section(page)
    # What a reader of the section needs, as docs/cli.md says it: the exit codes and the repeatable option.
    assert "Exit 0 when nothing fails, 1 when a check fails, 2 for bad input." in section(page)
    assert "--kubeconfig" in section(page) and "repeatable" in section(page)


@pytest.mark.parametrize(
    ("region", "operation", "checks"),
    [
        # Who reads what comes from the deployed templates: both rows that need it say which read was refused.
        ("us-west-2", "cloudformation.GetTemplate", {"outputs", "stale reader"}),
        ("us-west-2", "cloudwatch.DescribeAlarms", {"alarms"}),
        ("us-west-2", "ec2.DescribeVpcs", {"vpc"}),
        ("us-west-2", "ec2.DescribeVpcPeeringConnections", {"peering"}),
        ("us-east-2", "ec2.DescribeRouteTables", {"routes"}),
        ("us-west-2", "sts.GetCallerIdentity", {"account"}),
        # Every row reading a stack's outputs needs it too; the stack rows are the first of them.
        ("us-west-2", "cloudformation.DescribeStacks", {"stack", "vpc", "routes"}),
    ],
)
def test_a_denied_read_fails_the_rows_that_need_it_with_its_permission(
    deployed: DeployedWorld, deployed_config: Path, region: str, operation: str, checks: set[str]
) -> None:
    """An IAM action is the service prefix and the API operation's name (Service Authorization Reference, e.g.
    "Actions defined by Amazon EC2": ec2:DescribeRouteTables); AccessDenied answers 403 (moto's own denial)."""
    service, name = operation.split(".")

    def deny(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        body = {"Error": {"Code": "AccessDenied", "Message": f"not authorized to perform {name}"}}
        return AWSResponse("https://stub", 403, {}, None), {
            **body,
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }

    deployed.clients(service, region).meta.events.register(f"before-call.{operation}", deny)
    results = verify(deployed, deployed_config, only={region})
    allow = f"allow {service}:{name} (read-only) for these credentials"
    denied = {r.check for r in results if r.region == region and r.fix == allow}
    assert checks <= denied if name == "DescribeStacks" else denied == checks
    assert all(r.status == "fail" for r in results if r.check in checks)
