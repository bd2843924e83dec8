"""`hubspoke dataset load`: input refused before anything runs, the load Job rendered and started with kubectl
through the access path, its log followed, its outcome the exit status, a rerun resuming.

kubectl is tests/cli/kubectl_stub.py on PATH, recording every call; the load's own behaviour (Shift-From,
checksums through the mount, refusals, resume) is tested in tests/test_dataset_load.py and, as the Job runs it,
tests/workload/test_load.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke.cli.main import main
from tests.conftest import with_pins

STUB = Path(__file__).with_name("kubectl_stub.py")
IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32
COMPLETE = [{"type": "Complete", "status": "True"}]
# A Job failed by its podFailurePolicy's FailJob rule carries reason PodFailurePolicy (Kubernetes docs, "Jobs",
# "Pod failure policy"); one out of retries carries BackoffLimitExceeded.
REFUSED = [{"type": "Failed", "status": "True", "reason": "PodFailurePolicy"}]
FAILED = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]


def _config(tmp_path: Path, **dataset: Any) -> Path:
    raw = with_pins(
        {
            "environment": "dev",
            "account": "123456789012",
            "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"training_image": IMAGE}},
            "dataset": {"name": "c4-llama3", "version": "v1", **dataset},
        }
    )
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


class Cluster:
    """The stub's state and what kubectl was asked."""

    def __init__(self, home: Path):
        self.home = home

    def set(self, **state: Any) -> None:
        current = json.loads((self.home / "state.json").read_text())
        current.update(state)
        (self.home / "state.json").write_text(json.dumps(current))

    @property
    def jobs(self) -> dict[str, Any]:
        return dict(json.loads((self.home / "state.json").read_text())["jobs"])

    @property
    def calls(self) -> list[dict[str, Any]]:
        path = self.home / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    @property
    def verbs(self) -> list[str]:
        return [c["argv"][0] for c in self.calls]


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Cluster:
    home, bin_dir = tmp_path / "kube", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    # The hub's Compute stack deployed with source buckets: the load Job's settings exist.
    state = {"jobs": {}, "configmaps": ["hubspoke-dataset-loader"], "log": [], "outcome": COMPLETE}
    (home / "state.json").write_text(json.dumps(state))
    kubectl = bin_dir / "kubectl"
    # Python without site's imports (-S) and PyYAML's folder on its path: the stub's one non-standard import.
    packages = Path(yaml.__file__).parent.parent
    kubectl.write_text(f'#!/bin/sh\nPYTHONPATH="{packages}" exec "{sys.executable}" -S "{STUB}" "$@"\n')
    kubectl.chmod(0o755)
    monkeypatch.setenv("KUBECTL_STUB_DIR", str(home))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return Cluster(home)


CONTEXT = "hubspoke-dev-us-east-2"


def _argv(path: Path, *extra: str, source: str = "s3://hubspoke-datasets/c4/llama3/") -> list[str]:
    """Through the user's own kubeconfig context (--kube-context): kubectl is the stub on PATH."""
    return ["dataset", "load", "--config", str(path), "--name", "c4-llama3", "--version", "v2", "--source", source,
            "--poll-seconds", "5", "--kube-context", CONTEXT, *extra]  # fmt: skip


# ----- refusals before any kubectl call
@pytest.mark.parametrize(
    ("source", "field"),
    [
        ("s3://unlisted-bucket/c4/", "dataset.source_buckets"),
        ("https://example.com/c4", "--source"),
        ("s3://hubspoke-datasets/c4/../x/", "--source"),
    ],
)
def test_a_source_outside_the_configured_buckets_is_refused_before_kubectl(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str], source: str, field: str
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    assert main(_argv(path, source=source)) == 2
    err = capfd.readouterr().err
    assert f"{path}: {field}:" in err and "Traceback" not in err
    assert cluster.calls == []


def test_a_version_that_is_not_a_directory_name_is_refused(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    argv = ["dataset", "load", "--config", str(path), "--name", "c4", "--version", "../v1"]
    assert main([*argv, "--source", "s3://hubspoke-datasets/c4/"]) == 2
    assert "--version: '../v1' must be" in capfd.readouterr().err and cluster.calls == []


def test_dry_run_prints_the_job_and_runs_no_kubectl(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    assert main(_argv(path, "--dry-run")) == 0
    (job,) = [d for d in yaml.safe_load_all(capfd.readouterr().out) if d]
    assert job["kind"] == "Job" and job["metadata"]["namespace"] == "hyperpod-training"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE
    assert "--source=s3://hubspoke-datasets/c4/llama3/" in container["command"]
    assert cluster.calls == []


# ----- the Job on the cluster
def test_a_load_applies_the_job_follows_its_log_and_exits_0(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    cluster.set(log=[" 42.0 %  0.50 of 1.19 GB, 1 of 3 files", "sealed c4-llama3/v2: 3 files"])
    assert main(_argv(path)) == 0
    out = capfd.readouterr().out
    assert "started load Job" in out and " 42.0 %" in out and "sealed c4-llama3/v2" in out
    assert cluster.verbs == ["get", "get", "apply", "get", "logs", "get"]
    (job,) = cluster.jobs.values()
    assert job["spec"]["template"]["spec"]["serviceAccountName"]
    logs = cluster.calls[4]["argv"]
    assert logs[:3] == ["logs", "--follow", f"job/{job['metadata']['name']}"] and "hyperpod-training" in logs
    # Every call names the context given (kubectl reference, "kubectl options": --context).
    assert all(c["argv"][-2:] == ["--context", CONTEXT] for c in cluster.calls)


def test_a_rerun_after_a_failed_job_replaces_it_and_resumes(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    cluster.set(outcome=FAILED, log=["load: the Shift-From job failed: Access Denied"])
    assert main(_argv(path)) == 1
    assert "run the same command again to resume" in capfd.readouterr().err
    cluster.set(outcome=COMPLETE, log=["resuming the load into /dataset/c4-llama3/v2"])
    assert main(_argv(path)) == 0
    out = capfd.readouterr().out
    assert "replaced the finished load Job" in out and "resuming the load" in out
    assert cluster.verbs[6:] == ["get", "get", "delete", "apply", "get", "logs", "get"]
    assert "--cascade=foreground" in cluster.calls[8]["argv"]


def test_a_rerun_while_the_job_runs_follows_it_without_a_second_job(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    assert main([*_argv(path), "--dry-run"]) == 0
    running = yaml.safe_load(capfd.readouterr().out)
    cluster.set(jobs={running["metadata"]["name"]: {**running, "status": {"active": 1}}})
    assert main(_argv(path)) == 0
    assert "following the running load Job" in capfd.readouterr().out
    assert cluster.verbs == ["get", "get", "get", "logs", "get"]


def test_a_running_job_with_other_options_is_not_touched(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    assert main([*_argv(path), "--dry-run"]) == 0
    running = yaml.safe_load(capfd.readouterr().out)
    running["spec"]["template"]["spec"]["containers"][0]["command"][-1] = "--hash-workers=8"
    cluster.set(jobs={running["metadata"]["name"]: {**running, "status": {"active": 1}}})
    assert main(_argv(path)) == 2
    assert "already loading this version with other options" in capfd.readouterr().err
    assert cluster.verbs == ["get", "get"]


def test_a_refusal_inside_the_job_exits_2(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    cluster.set(outcome=REFUSED, log=["load: /dataset/c4-llama3/v2 is already loaded and sealed"])
    assert main(_argv(path)) == 2
    captured = capfd.readouterr()
    assert "already loaded and sealed" in captured.out and "fix the input" in captured.err


def test_an_unreachable_cluster_says_how_to_connect_and_applies_nothing(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    cluster.set(unreachable=True)
    assert main(_argv(path)) == 1
    err = capfd.readouterr().err
    assert f"hubspoke connect --config {path} --region us-east-2" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert cluster.verbs == ["get"] and cluster.jobs == {}


def test_a_cluster_without_the_loaders_settings_names_the_deploy_and_applies_nothing(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    """A hub Compute stack deployed before source buckets were listed has no ConfigMap for the Job: its pod
    could not start (a configMapKeyRef to a missing ConfigMap), so the command stops before creating it."""
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    cluster.set(configmaps=[])
    assert main(_argv(path)) == 1
    err = capfd.readouterr().err
    assert "no ConfigMap hyperpod-training/hubspoke-dataset-loader" in err
    assert f"npx cdk deploy -c config={path} --exclusively hubspoke-dev/compute-us-east-2" in err
    assert cluster.verbs == ["get"] and cluster.jobs == {}


def test_a_pod_lost_mid_load_is_followed_by_the_one_the_job_starts_next(
    tmp_path: Path, cluster: Cluster, capfd: pytest.CaptureFixture[str]
) -> None:
    """A pod that ends early (a node drained) counts as failed and the Job starts another (Kubernetes docs,
    "Jobs", backoffLimit); the command follows the new one and exits with the Job's outcome."""
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    cluster.set(outcomes=[{"active": 1, "failed": 1}, {"conditions": COMPLETE, "failed": 1, "succeeded": 1}])
    assert main(_argv(path)) == 0
    assert "ended early; following the one the Job started next" in capfd.readouterr().out
    assert cluster.verbs.count("logs") == 2 and cluster.verbs.count("apply") == 1
