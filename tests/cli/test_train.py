"""`hubspoke train`: the stacks' outputs read from moto, every program through a recording runner
(tests/cli/train_cluster.py): success, each refusal, and a failure half-way whose rerun continues.

Literals come from the sources, not the code: the SSM document AWS-StartPortForwardingSessionToRemoteHost and its
parameters host / portNumber / localPortNumber (Systems Manager User Guide, "Start a session", port forwarding to a
remote host); `aws eks update-kubeconfig --kubeconfig` and, with a profile, the exec env AWS_PROFILE (AWS CLI
reference; awscli customizations/eks/update_kubeconfig.py EKSClient.get_user_entry); the prewarm login's JSON
{"username", "password"} (docs/runbooks/cache-warm-up.md reads those keys with jq).
"""

from __future__ import annotations

import json
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from hubspoke.cli.checks import session_clients
from hubspoke.cli.main import build_parser
from hubspoke.cli.train import run
from tests.cli.train_cluster import (
    JOB_FAILED,
    PORT,
    PYTORCH_DONE,
    PYTORCH_FAILED,
    PYTORCH_RUNNING,
    FakeCluster,
)

ROOT = Path(__file__).resolve().parents[2]
SPOKE = "us-west-2"
IMAGE = f"123456789012.dkr.ecr.{SPOKE}.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32
BASE = f"763104351884.dkr.ecr.{SPOKE}.amazonaws.com/pytorch-training@sha256:" + "cd" * 32
ENDPOINT_HOST = "ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"
INSTANCE = "i-0123456789abcdef0"
REST = "10.20.1.17"
BUCKET = "hubspoke-dev-export-abc123"
PASSWORD = "s3cret-prewarm-password"


def _stack(region: str, name: str, outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Anything": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in outputs.items()},
    }
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName=name, TemplateBody=json.dumps(template)
    )


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """config/dev.yaml (spoke us-west-2 with compute and a cache) and its deployed spoke stacks in moto."""
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    config = tmp_path / "dev.yaml"
    shutil.copy(ROOT / "config" / "dev.yaml", config)
    with mock_aws():
        arn = boto3.client("secretsmanager", region_name=SPOKE).create_secret(
            Name="prewarm", SecretString=json.dumps({"username": "prewarm", "password": PASSWORD})
        )["ARN"]
        _stack(SPOKE, "hubspoke-dev-compute-us-west-2", {
            "EksClusterName": "hubspoke-dev-us-west-2", "EksEndpoint": f"https://{ENDPOINT_HOST}",
            "AccessHostInstanceId": INSTANCE, "ModelExportBucket": BUCKET,
        })  # fmt: skip
        _stack(SPOKE, "hubspoke-dev-storage-us-west-2", {"RestAddress": REST, "PrewarmSecretArn": arn})
        yield config


def train(config: Path, runner: FakeCluster, *extra: str) -> int:
    argv = ["train", "--config", str(config), *extra]
    return run(build_parser(argv).parse_args(argv), runner=runner, clients=session_clients(None))


def _named(runner: FakeCluster, kind: str) -> list[dict[str, Any]]:
    return [d for d in runner.applied() if d["kind"] == kind]


def test_warms_trains_follows_and_exports_through_a_tunnel_it_closes(world: Path) -> None:
    runner = FakeCluster()
    assert train(world, runner, "--image", IMAGE, "--profile", "ml-dev") == 0
    # The tunnel: Session Manager's port-forward document to the endpoint's 443, on the port train chose.
    [tunnel] = [c for c in runner.calls if c[:3] == ["aws", "ssm", "start-session"]]
    assert tunnel[tunnel.index("--target") + 1] == INSTANCE
    assert tunnel[tunnel.index("--document-name") + 1] == "AWS-StartPortForwardingSessionToRemoteHost"
    assert json.loads(tunnel[tunnel.index("--parameters") + 1]) == {
        "host": [ENDPOINT_HOST], "portNumber": ["443"], "localPortNumber": [str(PORT)]
    }  # fmt: skip
    # --profile on every aws command (the kubeconfig's exec credentials take it from update-kubeconfig).
    aws = [c for c in runner.calls if c[0] == "aws"]
    assert len(aws) == 2 and all(c[c.index("--profile") + 1] == "ml-dev" for c in aws)
    [update] = [c for c in aws if c[1:3] == ["eks", "update-kubeconfig"]]
    kubeconfig = Path(update[update.index("--kubeconfig") + 1])
    assert not kubeconfig.parent.exists(), "the temporary kubeconfig is removed"
    assert all(c[c.index("--kubeconfig") + 1] == str(kubeconfig) for c in runner.calls if c[0] == "kubectl")
    # The order: Secret, prewarm, training, export; the tunnel closed at the end.
    kinds = [(d["kind"], d["metadata"]["name"]) for d in runner.applied()]
    assert kinds == [
        ("Secret", "hubspoke-qumulo-prewarm"), ("Job", "hubspoke-prewarm"), ("PyTorchJob", "hubspoke-reference"),
        ("ServiceAccount", "hubspoke-model-export"), ("Job", "hubspoke-export-hubspoke-reference"),
    ]  # fmt: skip
    assert [t.up for t in runner.tunnels] == [False]
    # The login from Secrets Manager reaches the Secret on stdin, never a command line.
    assert _named(runner, "Secret")[0]["stringData"] == {"username": "prewarm", "password": PASSWORD}
    assert not any(PASSWORD in " ".join(c) for c in runner.calls)
    # The stack outputs reach the Jobs: prewarm's REST address, export's bucket; the image everywhere.
    [prewarm] = [d for d in _named(runner, "Job") if d["metadata"]["name"] == "hubspoke-prewarm"]
    assert f"--host={REST}" in prewarm["spec"]["template"]["spec"]["containers"][0]["command"]
    export = _named(runner, "Job")[-1]["spec"]["template"]["spec"]["containers"][0]
    assert f"--bucket={BUCKET}" in export["command"] and export["image"] == IMAGE
    # The training job's log followed across both nodes, by the operator's job-name label.
    logs = [c for c in runner.kubectl_calls if c[0] == "logs"]
    assert ["logs", "--follow", "--selector=training.kubeflow.org/job-name=hubspoke-reference", "--prefix",
            "--max-log-requests=2", "--namespace", "hyperpod-training"] in logs  # fmt: skip


def test_builds_and_pushes_the_image_when_none_is_recorded(world: Path) -> None:
    runner = FakeCluster(record=world.with_name("dev.images.json"), image=IMAGE)
    assert train(world, runner, "--base", BASE, "--profile", "ml-dev") == 0
    [build] = [c for c in runner.calls if "image" in c and "build" in c]
    assert build[build.index("image") :] == [
        "image", "build", "--config", str(world), "--base", BASE, "--profile", "ml-dev"
    ]  # fmt: skip
    assert {d["spec"]["template"]["spec"]["containers"][0]["image"] for d in _named(runner, "Job")} == {IMAGE}


def test_without_base_the_build_takes_the_configs_base_image(world: Path) -> None:
    """No image recorded and no --base: `hubspoke image build` runs without --base and pins the config's
    training_base_image itself (docs/getting-started.md step 9 passes none)."""
    runner = FakeCluster(record=world.with_name("dev.images.json"), image=IMAGE)
    assert train(world, runner) == 0
    [build] = [c for c in runner.calls if "image" in c and "build" in c]
    assert build[build.index("image") :] == ["image", "build", "--config", str(world)]


@pytest.mark.parametrize(
    ("change", "extra", "says"),
    [
        (lambda c: c["dataset"].pop("version"), ("--image", IMAGE), "dataset.version"),
        (
            lambda c: None,
            ("--image", IMAGE, "--region", "us-east-2", "--wait-for-cached-fraction", "1"),
            "no cache",
        ),
        (lambda c: None, ("--image", IMAGE, "--region", "us-east-2", "--bench"), "no cache to measure"),
        (lambda c: None, ("--base", "pytorch:latest"), "not pinned by digest"),
        # The hub's one g5.8xlarge loader node (what `hubspoke init` writes): 1 GPU, EC2 "Accelerated computing".
        (
            lambda c: (
                c["hub"]
                .setdefault("compute", {})
                .update(
                    instance_groups=[
                        {
                            "name": "loader",
                            "instance_type": "ml.g5.8xlarge",
                            "count": 1,
                            "on_start_deep_health_checks": [],
                        }
                    ]
                )
            ),
            ("--image", IMAGE, "--region", "us-east-2"),
            "needs 8 GPUs a node",
        ),
    ],
    ids=[
        "no-dataset-pinned",
        "wait-without-cache",
        "bench-without-cache",
        "base-without-digest",
        "hub-without-8-gpus",
    ],
)
def test_refusals_run_nothing(
    world: Path, capsys: pytest.CaptureFixture[str], change: Any, extra: tuple[str, ...], says: str
) -> None:
    data = yaml.safe_load(world.read_text())
    change(data)
    world.write_text(yaml.safe_dump(data))
    runner = FakeCluster()
    assert train(world, runner, *extra) == 2
    assert says in capsys.readouterr().err
    assert runner.calls == []


def test_a_failed_run_exits_1_frees_its_gpus_closes_the_tunnel_and_a_rerun_continues(world: Path) -> None:
    runner = FakeCluster()
    runner.outcomes["hubspoke-reference"] = [PYTORCH_RUNNING, PYTORCH_FAILED]
    assert train(world, runner, "--image", IMAGE) == 1
    assert [d["kind"] for d in runner.applied()][-1] == "PyTorchJob", "no export after a failed run"
    deletes = [c for c in runner.kubectl_calls if c[:2] == ["delete", "pods"]]
    assert deletes and "--field-selector=status.phase=Running" in deletes[0]
    assert [t.up for t in runner.tunnels] == [False]
    # The rerun replaces the failed run (same name: it resumes from its checkpoints), then exports.
    runner.stdin.clear()
    assert train(world, runner, "--image", IMAGE) == 0
    assert ["delete", "pytorchjob", "hubspoke-reference"] in [c[:3] for c in runner.kubectl_calls]
    assert "PyTorchJob" in [d["kind"] for d in runner.applied()]


@pytest.mark.parametrize("status", [PYTORCH_DONE, PYTORCH_RUNNING], ids=["succeeded", "running"])
def test_a_rerun_does_not_resubmit_a_run_that_succeeded_or_is_running(world: Path, status: Any) -> None:
    runner = FakeCluster()
    runner.put("pytorchjob", {"kind": "PyTorchJob", "metadata": {"name": "hubspoke-reference"}}, status)
    assert train(world, runner, "--image", IMAGE) == 0
    assert "PyTorchJob" not in [d["kind"] for d in runner.applied()]
    assert _named(runner, "Job")[-1]["metadata"]["name"] == "hubspoke-export-hubspoke-reference"


def test_a_dropped_tunnel_is_reopened(world: Path) -> None:
    runner = FakeCluster()
    runner.drop_tunnel_at = 4
    assert train(world, runner, "--image", IMAGE) == 0
    assert len(runner.tunnels) == 2 and not any(t.up for t in runner.tunnels)


def test_dry_run_prints_commands_as_comments_and_manifests_and_runs_nothing(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeCluster()
    argv = ["train", "--config", str(world), "--base", BASE, "--profile", "ml-dev", "--dry-run"]
    assert (
        run(build_parser(argv).parse_args(argv), runner=runner, clients=lambda *a: pytest.fail("AWS read"))
        == 0
    )
    out = capsys.readouterr().out
    assert runner.calls == []
    comments = [line for line in out.splitlines() if line.startswith("# + ")]
    assert shlex.split(comments[0][4:]) == [
        "hubspoke", "image", "build", "--config", str(world), "--base", BASE, "--profile", "ml-dev"
    ]  # fmt: skip
    kinds = [d["kind"] for d in yaml.safe_load_all(out) if d]
    assert kinds == ["Job", "PyTorchJob", "ServiceAccount", "Job"]


def test_kubectl_failing_while_the_run_runs_deletes_no_pods_and_says_how_to_follow_it(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `kubectl get` that exits 1 with the tunnel up (an API server timeout) says nothing of the job: its pods
    are left running, since the training operator recreates deleted pods of a running job (training-operator
    pkg/controller.v1/common/pod.go ReconcilePods), which would restart the run from its last checkpoint."""

    def running_run() -> FakeCluster:
        runner = FakeCluster()
        runner.outcomes["hubspoke-reference"] = [PYTORCH_RUNNING, PYTORCH_RUNNING, PYTORCH_DONE]
        return runner

    probe = running_run()
    assert train(world, probe, "--image", IMAGE) == 0
    reads = [
        i for i, c in enumerate(probe.kubectl_calls) if c[:3] == ["get", "pytorchjob", "hubspoke-reference"]
    ]
    runner = running_run()
    # The third status read, the run still running, times out.
    runner.kubectl_fails[reads[2]] = "Unable to connect to the server: net/http: TLS handshake timeout"
    capsys.readouterr()
    assert train(world, runner, "--image", IMAGE) == 1
    assert not [c for c in runner.kubectl_calls if c[:2] == ["delete", "pods"]]
    assert [t.up for t in runner.tunnels] == [False]
    err = capsys.readouterr().err
    assert "TLS handshake timeout" in err
    assert "kubectl logs --follow --selector=training.kubeflow.org/job-name=hubspoke-reference" in err
    assert "hubspoke train again" in err


def test_the_tunnels_output_goes_to_a_file_and_shows_only_when_it_fails(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeCluster()
    assert train(world, runner, "--image", IMAGE) == 0
    assert "Starting session with SessionId" not in "".join(capsys.readouterr())
    failing = FakeCluster()
    failing.tunnel_starts = False
    failing.tunnel_says = "SessionManagerPlugin is not found."
    assert train(world, failing, "--image", IMAGE) == 1
    err = capsys.readouterr().err
    assert "SessionManagerPlugin is not found." in err and "Starting session" in err


# --bench. Where the bench Jobs write (docs/runbooks/cache-warm-up.md's manual copy reads
# /mnt/checkpoints/.hubspoke/bench/<run>.jsonl) and the Job names `hubspoke render bench --run RUN` gives
# (hubspoke-bench-<run>), written here from the manual path, not imported.
BENCH_DIR = "/mnt/checkpoints/.hubspoke/bench"
SAMPLE = ROOT / "tests" / "data" / "bench" / "synthetic-cold-warm.jsonl"


def _bench_cluster() -> tuple[FakeCluster, dict[str, str]]:
    """A cluster whose bench Jobs write the synthetic sample's cold and warm phases (tests/data/bench/README.md)."""
    lines = SAMPLE.read_text().splitlines(keepends=True)
    phases = {p: "".join(line for line in lines if f'"phase":"{p}"' in line) for p in ("cold", "warm")}
    runner = FakeCluster()
    runner.bench_results = {f"{BENCH_DIR}/{p}.jsonl": text for p, text in phases.items()}
    return runner, phases


def _events(runner: FakeCluster) -> list[str]:
    """What train did on the cluster, in order: each apply by kind/name, each results file read."""
    events, applied = [], iter(runner.stdin)
    for call in runner.kubectl_calls:
        if call[0] == "apply":
            events += [f"{d['kind']}/{d['metadata']['name']}" for d in yaml.safe_load_all(next(applied)) if d]
        elif call[0] == "exec":
            events.append(f"read {call[-1].rsplit('/', 1)[-1]}")
    return events


def test_bench_measures_cold_then_prewarms_measures_warm_reports_and_trains(
    world: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner, phases = _bench_cluster()
    out = tmp_path / "bench"
    assert train(world, runner, "--image", IMAGE, "--bench", "--bench-dir", str(out)) == 0
    events = [e for e in _events(runner) if not e.startswith(("Secret/", "ServiceAccount/"))]
    assert events == [
        "Job/hubspoke-bench-cold", "Pod/hubspoke-results", "read cold.jsonl", "Job/hubspoke-prewarm",
        "Job/hubspoke-bench-warm", "Pod/hubspoke-results", "read warm.jsonl",
        "PyTorchJob/hubspoke-reference", "Job/hubspoke-export-hubspoke-reference",
    ]  # fmt: skip
    # Each results file whole: read after its Job completed (the fake holds only the first line before).
    assert (out / "cold.jsonl").read_text() == phases["cold"]
    assert (out / "warm.jsonl").read_text() == phases["warm"]
    [cold] = [d for d in runner.applied() if d["metadata"]["name"] == "hubspoke-bench-cold"]
    words = cold["spec"]["template"]["spec"]["containers"][0]
    assert "--phases=cold" in [*words.get("command", []), *words.get("args", [])]
    # The report, printed before the training job is submitted; the results pod deleted after each copy.
    printed = capsys.readouterr().out
    assert printed.index("cold vs warm:") < printed.index("submitted training job hubspoke-reference")
    assert (out / "cold.png").exists()
    deletes = [c for c in runner.kubectl_calls if c[:3] == ["delete", "pod", "hubspoke-results"]]
    assert len(deletes) == 4  # a leftover removed before, and the pod after, each copy
    assert ("pod", "hubspoke-results") not in runner.objects


def test_a_failed_bench_job_stops_before_training_and_a_rerun_skips_the_finished_run(
    world: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner, phases = _bench_cluster()
    runner.outcomes["hubspoke-bench-warm"] = [JOB_FAILED]
    out = tmp_path / "bench"
    assert train(world, runner, "--image", IMAGE, "--bench", "--bench-dir", str(out)) == 1
    err = capsys.readouterr().err
    assert "bench Job hubspoke-bench-warm failed" in err and "hubspoke train --bench again" in err
    assert "PyTorchJob" not in [d["kind"] for d in runner.applied()]
    assert not (out / "warm.jsonl").exists(), "no results read from a failed run"
    assert [t.up for t in runner.tunnels] == [False]
    # The rerun: the cold run is done (its results are here) and not run again; the failed warm one is replaced.
    runner.stdin.clear()
    assert train(world, runner, "--image", IMAGE, "--bench", "--bench-dir", str(out)) == 0
    applied = [d["metadata"]["name"] for d in runner.applied()]
    assert "hubspoke-bench-cold" not in applied and "hubspoke-bench-warm" in applied
    assert ["delete", "job", "hubspoke-bench-warm"] in [c[:3] for c in runner.kubectl_calls]
    assert (out / "warm.jsonl").read_text() == phases["warm"]
    assert "hubspoke-reference" in applied


def test_a_rerun_does_not_resubmit_a_bench_job_that_succeeded(world: Path, tmp_path: Path) -> None:
    """Its results not copied yet (the tunnel dropped while copying): the Job is not run again, the file is read."""
    runner, phases = _bench_cluster()
    done = {"kind": "Job", "metadata": {"name": "hubspoke-bench-cold"}}
    runner.put("job", done, {"conditions": [{"type": "Complete", "status": "True"}]})
    runner.volume[f"{BENCH_DIR}/cold.jsonl"] = phases["cold"]
    out = tmp_path / "bench"
    assert train(world, runner, "--image", IMAGE, "--bench", "--bench-dir", str(out)) == 0
    assert "hubspoke-bench-cold" not in [d["metadata"]["name"] for d in runner.applied()]
    assert (out / "cold.jsonl").read_text() == phases["cold"]


def test_bench_dry_run_prints_the_bench_steps_in_order(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runner = FakeCluster()
    argv = ["train", "--config", str(world), "--image", IMAGE, "--bench", "--dry-run"]
    assert (
        run(build_parser(argv).parse_args(argv), runner=runner, clients=lambda *a: pytest.fail("AWS read"))
        == 0
    )
    out = capsys.readouterr().out
    assert runner.calls == []
    comments = [line for line in out.splitlines() if line.startswith("# + ")]
    local = world.with_name("dev.bench") / SPOKE
    reads = [c for c in comments if "kubectl exec hubspoke-results" in c]
    assert [c.split(" -- cat ")[1] for c in reads] == [
        f"{BENCH_DIR}/cold.jsonl > {local / 'cold.jsonl'}   # once it ended, through the results pod below "
        "(created, waited for Ready, deleted)",
        f"{BENCH_DIR}/warm.jsonl > {local / 'warm.jsonl'}   # once it ended, through the results pod below "
        "(created, waited for Ready, deleted)",
    ]
    assert f"# + hubspoke bench report {local / 'cold.jsonl'} {local / 'warm.jsonl'}" in comments
    names = [f"{d['kind']}/{d['metadata']['name']}" for d in yaml.safe_load_all(out) if d]
    assert names == [
        "Job/hubspoke-bench-cold", "Pod/hubspoke-results", "Job/hubspoke-prewarm", "Job/hubspoke-bench-warm",
        "PyTorchJob/hubspoke-reference", "ServiceAccount/hubspoke-model-export",
        "Job/hubspoke-export-hubspoke-reference",
    ]  # fmt: skip


def test_a_report_that_fails_stops_before_training_and_says_how_to_train(
    world: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Results `hubspoke bench report` cannot read ('not JSON': hubspoke/bench/analysis.py load) train nothing."""
    runner, _ = _bench_cluster()
    runner.bench_results = {f"{BENCH_DIR}/{p}.jsonl": "not json\n" for p in ("cold", "warm")}
    assert train(world, runner, "--image", IMAGE, "--bench", "--bench-dir", str(tmp_path / "bench")) == 1
    err = capsys.readouterr().err
    assert "not JSON" in err and "hubspoke train without --bench" in err
    assert "PyTorchJob" not in [d["kind"] for d in runner.applied()]
