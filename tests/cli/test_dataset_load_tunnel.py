"""`hubspoke dataset load` opening the hub's tunnel itself: the hub Compute stack's outputs read from moto, every
program through the recording runner of tests/cli/train_cluster.py; success, refusals, and failures half-way.

Literals come from the sources, not the code: the SSM document AWS-StartPortForwardingSessionToRemoteHost and its
parameters host / portNumber / localPortNumber (Systems Manager User Guide, "Start a session", port forwarding to a
remote host); `aws eks update-kubeconfig --kubeconfig` and, with a profile, `--profile` on every aws command (AWS
CLI reference; awscli customizations/eks/update_kubeconfig.py EKSClient.get_user_entry writes it as AWS_PROFILE).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from hubspoke.cli.checks import session_clients
from hubspoke.cli.dataset import run
from hubspoke.cli.main import build_parser
from tests.cli.preflight_world import isolate_from_real_aws
from tests.cli.test_dataset_load import _config
from tests.cli.train_cluster import JOB_FAILED, PORT, FakeCluster

HUB = "us-east-2"
INSTANCE = "i-0123456789abcdef0"
ENDPOINT_HOST = "ABCDEF0123456789.gr7.us-east-2.eks.amazonaws.com"
SOURCE = "s3://hubspoke-datasets/c4/llama3/"
# The ConfigMap the hub's Compute stack creates for the load Job (hubspoke/constructs/dataset_loader.py).
SETTINGS = ("configmap", "hubspoke-dataset-loader")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A hub-only environment with source buckets and its deployed hub Compute stack in moto."""
    isolate_from_real_aws(monkeypatch)
    with mock_aws():
        template = {
            "Resources": {"Anything": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {
                "EksClusterName": {"Value": f"hubspoke-dev-{HUB}"},
                "EksEndpoint": {"Value": f"https://{ENDPOINT_HOST}"},
                "AccessHostInstanceId": {"Value": INSTANCE},
            },
        }
        boto3.client("cloudformation", region_name=HUB).create_stack(
            StackName=f"hubspoke-dev-compute-{HUB}", TemplateBody=json.dumps(template)
        )
        yield _config(tmp_path, source_buckets=["hubspoke-datasets"])


def cluster() -> FakeCluster:
    runner = FakeCluster()
    runner.objects[SETTINGS] = {"kind": "ConfigMap", "metadata": {"name": SETTINGS[1]}}
    return runner


def load(config: Path, runner: FakeCluster, *extra: str, clients: object = None) -> int:
    argv = ["dataset", "load", "--config", str(config), "--source", SOURCE, "--poll-seconds", "1", *extra]
    return run(build_parser(argv).parse_args(argv), runner=runner, clients=clients or session_clients(None),
               sleep=lambda _: None)  # fmt: skip


def job_name(config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert load(config, cluster(), "--dry-run") == 0
    return str(yaml.safe_load(capsys.readouterr().out)["metadata"]["name"])


def test_opens_the_hubs_tunnel_with_the_profile_loads_the_configs_version_and_closes_it(world: Path) -> None:
    runner = cluster()
    assert load(world, runner, "--profile", "ml-dev") == 0
    [tunnel] = [c for c in runner.calls if c[:3] == ["aws", "ssm", "start-session"]]
    assert tunnel[tunnel.index("--target") + 1] == INSTANCE
    assert tunnel[tunnel.index("--region") + 1] == HUB
    assert tunnel[tunnel.index("--document-name") + 1] == "AWS-StartPortForwardingSessionToRemoteHost"
    assert json.loads(tunnel[tunnel.index("--parameters") + 1]) == {
        "host": [ENDPOINT_HOST], "portNumber": ["443"], "localPortNumber": [str(PORT)]
    }  # fmt: skip
    aws = [c for c in runner.calls if c[0] == "aws"]
    assert len(aws) == 2 and all(c[c.index("--profile") + 1] == "ml-dev" for c in aws)
    [update] = [c for c in aws if c[1:3] == ["eks", "update-kubeconfig"]]
    kubeconfig = Path(update[update.index("--kubeconfig") + 1])
    assert not kubeconfig.parent.exists(), "the temporary kubeconfig is removed"
    assert all(c[c.index("--kubeconfig") + 1] == str(kubeconfig) for c in runner.calls if c[0] == "kubectl")
    assert [t.up for t in runner.tunnels] == [False]
    # --name and --version left out: the config's dataset.name / dataset.version (c4-llama3, v1).
    [job] = runner.applied()
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--name=c4-llama3" in command and "--version=v1" in command and f"--source={SOURCE}" in command
    assert [c[0] for c in runner.kubectl_calls] == ["get", "get", "apply", "get", "logs", "get"]


def test_without_the_loaders_settings_nothing_is_applied_and_the_tunnel_closes(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeCluster()  # the hub's Compute stack deployed before source buckets were listed
    assert load(world, runner) == 1
    assert "no ConfigMap hyperpod-training/hubspoke-dataset-loader" in capsys.readouterr().err
    assert runner.applied() == [] and [t.up for t in runner.tunnels] == [False]


def test_a_hub_without_its_compute_stack_starts_nothing(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("cloudformation", region_name=HUB).delete_stack(StackName=f"hubspoke-dev-compute-{HUB}")
    runner = cluster()
    assert load(world, runner) == 1
    err = capsys.readouterr().err
    assert f"hubspoke-dev-compute-{HUB} does not exist" in err and "Traceback" not in err
    assert runner.calls == []


# The loader refuses a version without a name (dataset.name: "version v1 is a version of no dataset").
@pytest.mark.parametrize(
    ("removed", "missing", "flag"),
    [(("name", "version"), "name", "--name"), (("version",), "version", "--version")],
)
def test_no_version_given_or_configured_is_refused_before_any_call(
    world: Path, capsys: pytest.CaptureFixture[str], removed: tuple[str, ...], missing: str, flag: str
) -> None:
    data = yaml.safe_load(world.read_text())
    for key in removed:
        del data["dataset"][key]
    world.write_text(yaml.safe_dump(data))
    runner = cluster()
    assert load(world, runner, clients=lambda *a: pytest.fail("AWS read")) == 2
    err = capsys.readouterr().err
    assert f"dataset.{missing}" in err and flag in err and err.count("\n") == 1
    assert runner.calls == []


def test_an_unknown_profile_is_one_line(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["dataset", "load", "--config", str(world), "--source", SOURCE, "--profile", "nope"]
    runner = cluster()
    assert run(build_parser(argv).parse_args(argv), runner=runner) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--profile" in err and "nope" in err
    assert runner.calls == []


def test_a_failed_load_closes_the_tunnel_and_a_rerun_resumes(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = job_name(world, capsys)
    runner = cluster()
    runner.outcomes[name] = [JOB_FAILED]
    assert load(world, runner) == 1
    assert "run the same command again to resume" in capsys.readouterr().err
    assert [t.up for t in runner.tunnels] == [False]
    # The rerun replaces the finished Job (its template cannot change) and follows the new one to its end.
    assert load(world, runner) == 0
    assert ["delete", "job", name] in [c[:3] for c in runner.kubectl_calls]
    assert len(runner.applied()) == 2 and [t.up for t in runner.tunnels] == [False, False]


def test_a_tunnel_dropped_mid_load_is_reopened(world: Path) -> None:
    runner = cluster()
    runner.drop_tunnel_at = 3  # before the status read that follows the apply
    assert load(world, runner) == 0
    assert len(runner.tunnels) == 2 and not any(t.up for t in runner.tunnels)


def test_dry_run_names_the_tunnel_with_the_profile_and_runs_nothing(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = cluster()
    assert load(world, runner, "--profile", "ml-dev", "--dry-run", clients=lambda *a: pytest.fail("AWS")) == 0
    out = capsys.readouterr().out
    assert f"hubspoke connect --config {world} --region {HUB} --profile ml-dev" in out
    assert [d["kind"] for d in yaml.safe_load_all(out) if d] == ["Job"] and runner.calls == []


BASE = "763104351884.dkr.ecr.us-east-2.amazonaws.com/pytorch-training@sha256:" + "cd" * 32
HUB_IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ef" * 32


def no_image(config: Path) -> None:
    """The environment as `hubspoke init` writes it: no training image configured or recorded yet."""
    data = yaml.safe_load(config.read_text())
    del data["hub"]["compute"]["training_image"]
    config.write_text(yaml.safe_dump(data))


def test_with_no_image_base_builds_one_first_and_the_job_runs_it(world: Path) -> None:
    """The load Job runs the training image (workload/load.py), so the first command that needs it builds it, as
    `hubspoke train --base` does; the build records every compute Region's digest, so train reuses it."""
    no_image(world)
    runner = cluster()
    runner.record, runner.image = world.with_name("dev.images.json"), HUB_IMAGE
    assert load(world, runner, "--base", BASE, "--profile", "ml-dev") == 0
    [build] = [c for c in runner.calls if "image" in c and "build" in c]
    assert build[build.index("image") :] == [
        "image", "build", "--config", str(world), "--base", BASE, "--profile", "ml-dev"
    ]  # fmt: skip
    assert runner.calls.index(build) < min(i for i, c in enumerate(runner.calls) if c[0] == "aws")
    [job] = runner.applied()
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == HUB_IMAGE


def test_a_failed_build_opens_no_tunnel_and_a_rerun_builds_again(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_image(world)
    runner = FakeCluster(record=world.with_name("dev.images.json"), image=HUB_IMAGE, build_ok=False)
    runner.objects[SETTINGS] = {"kind": "ConfigMap", "metadata": {"name": SETTINGS[1]}}
    assert load(world, runner, "--base", BASE) == 1
    assert "image build failed" in capsys.readouterr().err
    assert runner.tunnels == [] and runner.applied() == []
    runner.build_ok = True
    assert load(world, runner, "--base", BASE) == 0
    assert len(runner.applied()) == 1


def test_a_base_not_pinned_by_digest_is_refused_before_any_call(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_image(world)
    runner = cluster()
    assert load(world, runner, "--base", "pytorch:latest", clients=lambda *a: pytest.fail("AWS read")) == 2
    err = capsys.readouterr().err
    assert "not pinned" in err and err.count("\n") == 1 and runner.calls == []


def test_without_an_image_or_base_the_build_takes_the_configs_base(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No image recorded and no --base: `hubspoke image build` runs without --base, so it pins the config's
    training_base_image itself (docs/getting-started.md step 8 passes none)."""
    no_image(world)
    runner = cluster()
    assert load(world, runner, "--dry-run", clients=lambda *a: pytest.fail("AWS")) == 0
    out = capsys.readouterr().out
    assert f"# + hubspoke image build --config {world}\n" in out


def test_dry_run_without_an_image_prints_the_build(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    no_image(world)
    runner = cluster()
    assert load(world, runner, "--base", BASE, "--dry-run", clients=lambda *a: pytest.fail("AWS")) == 0
    out = capsys.readouterr().out
    assert f"# + hubspoke image build --config {world} --base {BASE}" in out
    assert [d["kind"] for d in yaml.safe_load_all(out) if d] == ["Job"] and runner.calls == []
