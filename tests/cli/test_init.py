"""`hubspoke init` against moto: a role session's caller, Canonical's parameter (answered as preflight_world does),
and the environment file it writes, refuses or leaves alone.

Expected values are written out with their source: moto's account is 123456789012 (moto docs, "Multi-account
support": the default account ID); a role ARN carries the role's path, a role session's ARN does not (IAM User Guide,
"IAM identifiers", IAM ARNs: arn:aws:iam::<account>:role/<path>/<name>, arn:aws:sts::<account>:assumed-role/<name>/
<session>); GetRoleResponse.Role.Arn is that role ARN (botocore iam 2010-05-08 model).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from hubspoke.cli import init
from hubspoke.cli.envfile import BadInput, write_new
from hubspoke.config import load
from tests.cli.preflight_world import Unsupported, isolate_from_real_aws
from tests.conftest import ROOT

EAST_IMAGE = "ami-0123456789abcdef0"
WEST_IMAGE = "ami-0fedcba9876543210"
ROLE_ARN = "arn:aws:iam::123456789012:role/teams/ml/Admins"
FLAGS = ["--environment", "team", "--hub-region", "us-east-2", "--spoke-region", "us-west-2"]
FLAGS += ["--alarm-email", "you@example.com"]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    init.add_parser(parser.add_subparsers(), "write a new environment file")
    return parser.parse_args(["init", *argv])


def role_session(**images: str) -> Unsupported:
    """Clients signed as a session of role Admins (path /teams/ml/), with Canonical's parameter per Region."""
    boto3.client("iam", region_name="us-east-1").create_role(
        RoleName="Admins", Path="/teams/ml/", AssumeRolePolicyDocument="{}"
    )
    keys = boto3.client("sts", region_name="us-east-2").assume_role(RoleArn=ROLE_ARN, RoleSessionName="me")
    creds = keys["Credentials"]
    session = boto3.Session(
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )
    return Unsupported(
        lambda service, region: session.client(service, region_name=region),
        ubuntu_images=images or {"us-east-2": EAST_IMAGE, "us-west-2": WEST_IMAGE},
    )


def test_writes_a_valid_environment_from_the_callers_identity(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "team.yaml"
    assert init.run(parse(*FLAGS, "--output", str(out)), clients=role_session()) == 0
    config = load(out).config
    assert config.environment == "team"
    assert config.account == "123456789012"
    # The role with its path, not the session arn:aws:sts::123456789012:assumed-role/Admins/me.
    assert config.access.administrators == [ROLE_ARN]
    assert config.hub.storage.ami_id == EAST_IMAGE
    assert config.spokes[0].storage.ami_id == WEST_IMAGE
    core = config.spokes[0].storage.qumulo_core
    assert core is not None
    assert core.install_uri == "s3://hubspoke-team-staging-123456789012-us-west-2/cnq/qumulo-core-install/"
    # pyproject.toml pins qumulo-api 7.10.2.1, the one release preflight accepts (docs/runbooks/qumulo-core.md).
    assert core.version == "7.10.2.1"
    # docs/configuration.md: compute.kubernetes_version defaults to 1.35; written out so a new default never moves it.
    assert config.hub.compute.kubernetes_version == "1.35"
    assert 'kubernetes_version: "1.35"' in out.read_text()
    assert config.ops.alarm_emails == ["you@example.com"]
    assert "# Who may run kubectl" in out.read_text()
    printed = capsys.readouterr().out
    assert "aws iam get-role --role-name Admins --query Role.Arn" in printed
    assert f"wrote {out}" in printed


def test_an_iam_user_is_its_own_administrator(backend: str, tmp_path: Path) -> None:
    iam = boto3.client("iam", region_name="us-east-1")
    iam.create_user(UserName="alice", Path="/ops/")
    key = iam.create_access_key(UserName="alice")["AccessKey"]
    session = boto3.Session(
        aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"]
    )
    clients = Unsupported(
        lambda s, r: session.client(s, region_name=r),
        ubuntu_images={"us-east-2": EAST_IMAGE, "us-west-2": WEST_IMAGE},
    )
    out = tmp_path / "team.yaml"
    assert init.run(parse(*FLAGS, "--output", str(out)), clients=clients) == 0
    # IAM identifiers: arn:aws:iam::<account>:user/<path>/<name>.
    assert load(out).config.access.administrators == ["arn:aws:iam::123456789012:user/ops/alice"]


def test_answers_asked_on_a_terminal(backend: str, tmp_path: Path) -> None:
    answers = iter(["team", "us-east-2", "us-west-2", "you@example.com"])
    out = tmp_path / "team.yaml"
    args = parse("--output", str(out))
    assert init.run(args, clients=role_session(), ask=lambda _: next(answers)) == 0
    assert [r.region for r in load(out).config.regions()] == ["us-east-2", "us-west-2"]


def test_never_overwrites(backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "team.yaml"
    out.write_text("# mine\n")
    assert init.run(parse(*FLAGS, "--output", str(out)), clients=role_session()) == 2
    assert out.read_text() == "# mine\n"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "never overwritten" in err


def test_a_file_that_appears_meanwhile_is_not_replaced(tmp_path: Path) -> None:
    # The check before any AWS call passed; the file appeared while AWS answered (link(2) refuses EEXIST).
    out = tmp_path / "team.yaml"
    out.write_text("# mine\n")
    text = (ROOT / "config" / "dev.yaml").read_text()
    with pytest.raises(BadInput, match="never overwritten"):
        write_new(out, text)
    assert out.read_text() == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["team.yaml"]


def test_refuses_a_second_file_of_the_same_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Synth reads every config/*.yaml and refuses two of one environment (hubspoke.config.load_environments).
    (tmp_path / "other.yaml").write_text("environment: team\n")
    assert init.run(parse(*FLAGS, "--output", str(tmp_path / "team.yaml"), "--dry-run")) == 2
    assert "other.yaml already holds environment 'team'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--environment", "team", "--hub-region", "us-east-9", "--spoke-region", "us-west-2"], "us-east-9"),
        (["--environment", "team", "--hub-region", "us-east-2"], "--spoke-region is required"),
        (
            ["--environment", "team", "--hub-region", "us-east-2", "--spoke-region", "us-west-2"],
            "--alarm-email",
        ),
        ([*FLAGS, "--spoke-cidr", "10.20.0.0/16", "--spoke-cidr", "10.30.0.0/16"], "one each"),
        ([*FLAGS, "--spoke-region", "us-east-2"], "us-east-2 given twice or as the hub"),
    ],
)
def test_bad_flags_are_one_line(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert init.run(parse(*argv, "--output", str(tmp_path / "x.yaml"))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err
    assert list(tmp_path.iterdir()) == []


def test_unknown_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch)  # AWS_CONFIG_FILE names no file: no profile exists
    assert init.run(parse(*FLAGS, "--output", str(tmp_path / "x.yaml"), "--profile", "nope")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no AWS profile named 'nope'" in err and "aws configure" in err


def test_config_refusal_writes_nothing(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The schema's environment pattern: a lowercase letter, then lowercase letters, digits or hyphens.
    argv = [*FLAGS, "--environment", "Team_1", "--output", str(tmp_path / "x.yaml")]
    assert init.run(parse(*argv), clients=role_session()) == 2
    assert "environment" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_dry_run_reads_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)  # any AWS call would fail for want of credentials
    assert init.run(parse(*FLAGS, "--output", str(tmp_path / "x.yaml"), "--profile", "p", "--dry-run")) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "aws sts get-caller-identity --region us-east-2 --profile p"
    parameter = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
    assert (
        f"aws ssm get-parameter --name {parameter} --region us-west-2 --query Parameter.Value --output text "
        "--profile p"
    ) in printed
    assert list(tmp_path.iterdir()) == []


def test_a_failure_half_way_writes_nothing_and_a_rerun_completes(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "team.yaml"
    clients = role_session(**{"us-east-2": EAST_IMAGE})  # Canonical's parameter unanswered in us-west-2
    assert init.run(parse(*FLAGS, "--output", str(out)), clients=clients) == 1
    assert "us-west-2" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no file, no temporary file
    clients.ubuntu_images["us-west-2"] = WEST_IMAGE
    assert init.run(parse(*FLAGS, "--output", str(out)), clients=clients) == 0
    assert load(out).config.spokes[0].storage.ami_id == WEST_IMAGE


@pytest.mark.parametrize(
    ("caller", "says"),
    [
        # IAM identifiers: the account's root user is arn:aws:iam::<account>:root; EKS takes a role or user.
        ("arn:aws:iam::123456789012:root", "--administrator ARN"),
        ("arn:aws:sts::123456789012:federated-user/bob", "--administrator ARN"),
    ],
)
def test_callers_that_are_no_role_or_user(caller: str, says: str) -> None:
    with pytest.raises(BadInput, match=says):
        init.administrator_of(caller, iam=None)


def test_a_role_it_may_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_from_real_aws(monkeypatch)
    iam: Any = boto3.client("iam", region_name="us-east-1")
    with Stubber(iam) as stub:
        # botocore iam model: GetRole may fail NoSuchEntity or ServiceFailure; a missing grant is AccessDenied.
        stub.add_client_error("get_role", "AccessDenied", "not authorized to perform: iam:GetRole", 403)
        with pytest.raises(BadInput, match=r"--administrator .*aws iam get-role --role-name Admins"):
            init.administrator_of("arn:aws:sts::123456789012:assumed-role/Admins/me", iam)


def test_through_the_console_entry_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As `hubspoke init` runs once the lead registers it in hubspoke/cli/commands.py: one line, exit 2."""
    from hubspoke.cli import commands, main

    isolate_from_real_aws(monkeypatch)
    monkeypatch.setitem(commands.COMMANDS, "init", commands.Command(lambda: init, "init"))
    assert main.main(["init", *FLAGS, "--output", str(tmp_path / "x.yaml"), "--profile", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "aws configure" in err


def test_the_hub_gets_one_small_node_for_the_load_job_and_the_spokes_the_training_group(
    backend: str, tmp_path: Path
) -> None:
    """Issue 44: two ml.p5.48xlarge idle in the hub ($416.54/h) while the spoke trains. The hub runs only the
    dataset load Job, so one ml.g5.8xlarge, the smallest type the lifecycle script allows, with no on-start deep
    health checks (config/smoke.yaml's header: InstanceConnectivity needs 2 nodes, SageMaker developer guide,
    "Deep health checks"). A spoke keeps the documented default group, 2 x ml.p5.48xlarge (docs/configuration.md)."""
    out = tmp_path / "team.yaml"
    assert init.run(parse(*FLAGS, "--output", str(out)), clients=role_session()) == 0
    config = load(out).config
    (hub,) = config.hub.compute.instance_groups
    assert (hub.instance_type, hub.count, hub.on_start_deep_health_checks) == ("ml.g5.8xlarge", 1, [])
    (spoke,) = config.spokes[0].compute.instance_groups
    assert (spoke.instance_type, spoke.count) == ("ml.p5.48xlarge", 2)
    assert config.dataset.name is None and config.dataset.source_buckets == []
    assert "# dataset:" in out.read_text()


def test_the_dataset_and_its_buckets_are_written_before_the_first_deploy(
    backend: str, tmp_path: Path
) -> None:
    """docs/datasets.md: the hub's Storage stack grants the Shift user read on dataset.source_buckets."""
    out = tmp_path / "team.yaml"
    argv = [
        *FLAGS,
        "--dataset",
        "c4-llama3/v1",
        "--source-bucket",
        "my-datasets",
        "--source-bucket",
        "more-data",
    ]
    assert init.run(parse(*argv, "--output", str(out)), clients=role_session()) == 0
    dataset = load(out).config.dataset
    assert (dataset.name, dataset.version) == ("c4-llama3", "v1")
    assert dataset.source_buckets == ["my-datasets", "more-data"]


@pytest.mark.parametrize("given", ["c4-llama3", "c4-llama3/", "/v1", "c4/llama3/v1"])
def test_a_dataset_that_is_not_name_slash_version_is_refused_before_aws(
    given: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)  # any AWS call would fail for want of credentials
    assert init.run(parse(*FLAGS, "--dataset", given, "--output", str(tmp_path / "x.yaml"))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dataset:" in err and "NAME/VERSION" in err
    assert list(tmp_path.iterdir()) == []


def test_a_dataset_name_the_loader_refuses_writes_nothing(
    backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/configuration.md, dataset.name: letters, digits, `.`, `_`, `-`; a space is none of them."""
    argv = [*FLAGS, "--dataset", "c4 llama3/v1", "--output", str(tmp_path / "x.yaml")]
    assert init.run(parse(*argv), clients=role_session()) == 2
    assert "dataset.name" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_mistyped_region_gets_validates_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """us-west-2 is a commercial Region code (AWS General Reference, "Regional endpoints"); a typo is one line."""
    argv = ["--environment", "team", "--hub-region", "us-wset-2", "--spoke-region", "us-west-2"]
    assert init.run(parse(*argv, "--output", str(tmp_path / "x.yaml"), "--dry-run")) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "--hub-region: unknown Region code 'us-wset-2'; did you mean us-west-2?" in err
    )
    assert list(tmp_path.iterdir()) == []


def test_dry_run_shows_the_file_with_placeholders_for_what_aws_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)  # any AWS call would fail for want of credentials
    assert init.run(parse(*FLAGS, "--output", str(tmp_path / "x.yaml"), "--dry-run")) == 0
    out = capsys.readouterr().out
    shown = yaml.safe_load(out[out.index("# Environment team") :])
    assert shown["environment"] == "team" and shown["account"] == "<account>"
    assert shown["hub"]["region"] == "us-east-2" and [s["region"] for s in shown["spokes"]] == ["us-west-2"]
    assert shown["hub"]["storage"]["ami_id"] == "<Ubuntu 24.04 image ID>"
    assert shown["access"]["administrators"] == ["<the role you are signed in as>"]
    assert shown["ops"]["alarm_emails"] == ["you@example.com"]
    assert list(tmp_path.iterdir()) == []
