"""The prewarm and benchmark Jobs: schema-valid, CPU only, on the right claims, failing fast on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH, DATASET_CLAIM, NAMESPACE
from hubspoke.k8s.bench import bench_job
from hubspoke.k8s.prewarm import DEFAULT_PARALLEL as JOB_PARALLEL
from hubspoke.k8s.prewarm import QUMULO_SECRET, prewarm_job
from hubspoke.k8s.run import DatasetNotPinned, PinnedDataset, pinned_dataset, state_path
from tests.k8s.crd_schemas import k8s_validate


def _jobs(config: HubSpokeConfig) -> list[dict[str, Any]]:
    spoke = config.region_config("us-west-2")
    return [
        prewarm_job(config, spoke, rest_address="10.20.64.10"),
        bench_job(config, spoke, run="first", max_seconds=600),
        bench_job(config, config.hub, run="hub-baseline"),
    ]


def _container(job: dict[str, Any]) -> dict[str, Any]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


def _claims(job: dict[str, Any]) -> dict[str, bool]:
    """claim name -> mounted read-only, joining volumes to the container's mounts."""
    spec = job["spec"]["template"]["spec"]
    by_volume = {
        v["name"]: v["persistentVolumeClaim"] for v in spec["volumes"] if "persistentVolumeClaim" in v
    }
    return {
        by_volume[m["name"]]["claimName"]: bool(m.get("readOnly"))
        for m in _container(job)["volumeMounts"]
        if m["name"] in by_volume
    }


def test_jobs_are_valid_kubernetes(dev_config: HubSpokeConfig) -> None:
    for job in _jobs(dev_config):
        k8s_validate(job, dev_config.hub.compute.kubernetes_version)


def test_jobs_are_cpu_only_and_unprivileged(dev_config: HubSpokeConfig) -> None:
    for job in _jobs(dev_config):
        assert job["metadata"]["namespace"] == NAMESPACE
        container = _container(job)
        for section in ("requests", "limits"):
            assert not any("gpu" in k or "efa" in k for k in container["resources"].get(section, {}))
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]


def test_bad_arguments_fail_the_job_instead_of_retrying(dev_config: HubSpokeConfig) -> None:
    for job in _jobs(dev_config):
        rules = job["spec"]["podFailurePolicy"]["rules"]
        fail = [r for r in rules if r["action"] == "FailJob"]
        assert fail and 2 in fail[0]["onExitCodes"]["values"]
        assert fail[0]["onExitCodes"]["containerName"] == _container(job)["name"]


def test_prewarm_uses_rest_not_the_dataset_mount_and_resumes_from_the_checkpoint_volume(
    dev_config: HubSpokeConfig,
) -> None:
    spoke = dev_config.region_config("us-west-2")
    job = prewarm_job(dev_config, spoke, rest_address="10.20.64.10", parallel=4)
    assert _claims(job) == {CHECKPOINT_CLAIM: False}
    command = _container(job)["command"]
    assert "--host=10.20.64.10" in command and "--parallel=4" in command
    # The pinned version only (config dataset.name/version), its manifest read through REST.
    assert (
        f"--root={spoke.storage.dataset_path}/{dev_config.dataset.name}/{dev_config.dataset.version}"
        in command
    )
    assert "--version-manifest" in command
    state = next(a.split("=", 1)[1] for a in command if a.startswith("--state="))
    pinned = pinned_dataset(dev_config.dataset)
    assert state == state_path(spoke, pinned) and state.startswith(CHECKPOINT_MOUNT_PATH + "/")
    # Retries resume from the journal, so the Job may retry.
    assert job["spec"]["backoffLimit"] > 0
    secrets = {e["valueFrom"]["secretKeyRef"]["name"] for e in _container(job)["env"] if "valueFrom" in e}
    assert secrets == {QUMULO_SECRET}
    assert not any("value" in e and "pass" in e["name"].lower() for e in _container(job)["env"])


def test_bench_reads_the_dataset_read_only_and_writes_results_to_checkpoints(
    dev_config: HubSpokeConfig,
) -> None:
    spoke = dev_config.region_config("us-west-2")
    job = bench_job(dev_config, spoke, run="first")
    assert _claims(job) == {DATASET_CLAIM: True, CHECKPOINT_CLAIM: False}
    command = _container(job)["command"]
    out = next(a.split("=", 1)[1] for a in command if a.startswith("--out="))
    assert out.startswith(CHECKPOINT_MOUNT_PATH + "/") and out.endswith("/first.jsonl")
    # A retried benchmark would run its "cold" phase warm: never retry.
    assert job["spec"]["backoffLimit"] == 0
    terms = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [spoke.compute.instance_groups[0].instance_type]


@pytest.mark.parametrize("dataset_path", ["/dataset", "/data/c4/tokenized"])
def test_state_file_differs_per_dataset(dataset_path: str) -> None:
    config = HubSpokeConfig.model_validate(
        {
            "environment": "dev",
            "account": "123456789012",
            "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
            "spokes": [
                {"region": "us-west-2", "cidr": "10.20.0.0/16", "storage": {"dataset_path": dataset_path}}
            ],
        }
    )
    v1, v2 = PinnedDataset("c4", "v1", 4, 128256), PinnedDataset("c4", "v2", 4, 128256)
    path = state_path(config.spokes[0], v1)
    assert "us-west-2" in path and dataset_path.strip("/").split("/")[-1] in path
    # docs/operations.md: a new version's warm-up starts afresh, with its own journal and status.
    assert state_path(config.spokes[0], v2) != path


def test_prewarm_pins_the_version_the_job_reads(dev_config: HubSpokeConfig) -> None:
    """Review of issue 24: prewarm warmed every version under /dataset and its status named none. It now warms
    the config's pin, or --dataset-version's, and its status path is the one that version's job reads."""
    from hubspoke.k8s.job import training_job
    from tests.stacks.test_dashboard import job_argument

    spoke = dev_config.region_config("us-west-2")
    command = _container(prewarm_job(dev_config, spoke, rest_address="10.20.64.10", dataset_version="v9"))[
        "command"
    ]
    assert f"--root={spoke.storage.dataset_path}/{dev_config.dataset.name}/v9" in command
    status = next(a.split("=", 1)[1] for a in command if a.startswith("--status="))
    assert job_argument(training_job(dev_config, spoke, dataset_version="v9"), "cache-status") == status
    assert job_argument(training_job(dev_config, spoke), "cache-status") != status
    unpinned = dev_config.model_copy(
        update={"dataset": dev_config.dataset.model_copy(update={"version": None})}
    )
    with pytest.raises(DatasetNotPinned, match=r"dataset\.version"):
        prewarm_job(unpinned, spoke, rest_address="10.20.64.10")


def test_the_training_job_reads_the_status_file_prewarm_writes(dev_config: HubSpokeConfig) -> None:
    """prewarm writes its cached fraction where the spoke's training job reads it (and republishes it for the
    cache alarms); the hub's job has no cache to read about."""
    import sys as _sys

    from hubspoke.k8s.job import training_job
    from hubspoke.k8s.run import TrainingSettings
    from tests.stacks.test_dashboard import job_argument

    _sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
    import prewarm as prewarm_script

    spoke = dev_config.region_config("us-west-2")
    command = _container(prewarm_job(dev_config, spoke, rest_address="10.20.64.10"))["command"]
    status = next(a.split("=", 1)[1] for a in command if a.startswith("--status="))
    # The script's own default agrees, so a hand-run prewarm with only --state feeds the same job.
    assert status == str(
        prewarm_script.status_path(Path(state_path(spoke, pinned_dataset(dev_config.dataset))))
    )
    assert job_argument(training_job(dev_config, spoke), "cache-status") == status
    assert job_argument(training_job(dev_config, spoke), "wait-for-cached-fraction") == ""
    waiting = training_job(dev_config, spoke, settings=TrainingSettings(wait_for_cached_fraction=1.0))
    assert job_argument(waiting, "wait-for-cached-fraction") == "1"
    hub = dev_config.region_config(dev_config.hub.region)
    assert job_argument(training_job(dev_config, hub), "cache-status") == ""
    # A hand-run prewarm and the rendered Job keep the long path equally busy (benchmarks/prewarm_path.py).
    assert prewarm_script.DEFAULT_PARALLEL == JOB_PARALLEL


@pytest.mark.parametrize("kind", ["pytorchjob", "hyperpod"])
def test_bench_replays_one_node_of_the_rendered_training_job(dev_config: HubSpokeConfig, kind: str) -> None:
    """Issue 40: the bench read whole files in 1 MiB blocks. It now gets the training job's own loader numbers
    (the oracle is the rendered training job's command, not bench.py): its version, token width, windows,
    batch, workers and prefetch, and a world of --nnodes x --nproc-per-node of which it plays one node."""
    from hubspoke.k8s.job import training_job
    from tests.stacks.test_dashboard import job_argument

    spoke = dev_config.region_config("us-west-2")
    train = training_job(dev_config, spoke, kind=kind)
    bench = bench_job(dev_config, spoke, run="r1")
    pinned = (
        job_argument(train, "data-dir"),
        job_argument(train, "dataset-name"),
        job_argument(train, "dataset-version"),
    )
    assert job_argument(bench, "root") == "/".join(pinned)
    for flag in ("token-bytes", "seq-len", "batch-size", "num-workers", "prefetch-factor"):
        assert job_argument(bench, flag) == job_argument(train, flag) != "", flag
    nodes, gpus = int(job_argument(train, "nnodes")), int(job_argument(train, "nproc-per-node"))
    assert job_argument(bench, "world-size") == str(nodes * gpus)
    assert job_argument(bench, "ranks") == f"0-{gpus - 1}"
    unpinned = dev_config.model_copy(
        update={"dataset": dev_config.dataset.model_copy(update={"version": None})}
    )
    with pytest.raises(DatasetNotPinned, match=r"dataset\.version"):
        bench_job(unpinned, spoke, run="r1")
