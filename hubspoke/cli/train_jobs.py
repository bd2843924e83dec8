"""Submit one of `hubspoke train`'s Jobs (bench, prewarm, the reference run, export) and follow it to its end.

What ends each, by its own API: a batch/v1 Job has condition Complete or Failed with status "True" (Kubernetes API,
JobStatus.conditions); a Kubeflow PyTorchJob has Succeeded or Failed (training-operator pkg/apis/kubeflow.org/v1
common_types.go, JobConditionType: "JobSucceeded means all sub-resources ... terminated in success", "JobFailed
means one or more ... reached phase failed with no restarting").
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from hubspoke.cli.tunnel import Cluster, StepFailed, show
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.k8s.names import NAMESPACE

# `kubectl logs --pod-running-timeout`: how long to wait for a pod to run (kubectl reference, "kubectl logs").
POD_RUNNING_TIMEOUT = "15m"
# The label the training operator puts on every pod of a job, valued with the job's name (training-operator
# pkg/apis/kubeflow.org/v1 common_types.go, JobNameLabel).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"


class JobFailed(StepFailed):
    """The job itself reported failure (its Failed condition), as opposed to kubectl or the tunnel failing while
    the job may still run."""


@dataclass(frozen=True)
class Kind:
    """How one resource kind is read and when it has ended."""

    resource: str  # as kubectl names it
    succeeded: str
    failed: str = "Failed"


BATCH_JOB = Kind("job", "Complete")
PYTORCH_JOB = Kind("pytorchjob", "Succeeded")


def state(kind: Kind, found: dict[str, Any] | None) -> str | None:
    """None (absent), "succeeded", "failed" or "running"."""
    if found is None:
        return None
    for condition in (found.get("status") or {}).get("conditions") or []:
        if condition.get("status") == "True" and condition.get("type") in (kind.succeeded, kind.failed):
            return "succeeded" if condition["type"] == kind.succeeded else "failed"
    return "running"


def _get(cluster: Cluster, kind: Kind, name: str) -> dict[str, Any] | None:
    text = cluster.checked(
        "get", kind.resource, name, "--namespace", NAMESPACE, "--ignore-not-found", "--output", "json"
    ).strip()
    return json.loads(text) if text else None


def _program(found: dict[str, Any]) -> Any:
    containers = found["spec"]["template"]["spec"]["containers"]
    return [(c.get("command"), c.get("args")) for c in containers]


def _logs(kind: Kind, name: str, nodes: int) -> list[str]:
    if kind is BATCH_JOB:
        return [f"job/{name}", f"--pod-running-timeout={POD_RUNNING_TIMEOUT}"]
    # Every node's pod, each line prefixed with its pod (kubectl reference, "kubectl logs": --selector, --prefix,
    # --max-log-requests, default 5 concurrent follows).
    return [f"--selector={JOB_NAME_LABEL}={name}", "--prefix", f"--max-log-requests={max(nodes, 1)}"]


def follow_command(kind: Kind, name: str, nodes: int) -> str:
    """The kubectl command a person runs to follow the job's log (after `hubspoke connect`'s steps)."""
    return shlex.join(["kubectl", "logs", "--follow", *_logs(kind, name, nodes), "--namespace", NAMESPACE])


def submit_and_follow(
    cluster: Cluster,
    manifests: Sequence[dict[str, Any]],
    *,
    kind: Kind,
    what: str,
    keep_succeeded: bool,
    poll_seconds: float,
    nodes: int = 1,
) -> None:
    """Apply `manifests` (the last is the one followed) unless a run of it is under way, follow its log and
    status until it ends; JobFailed when it failed, StepFailed when kubectl or the tunnel did. A finished one is replaced (its pod template cannot change:
    Kubernetes API, Job spec.template is immutable), except a succeeded one when `keep_succeeded`."""
    job = manifests[-1]
    name = job["metadata"]["name"]
    found = _get(cluster, kind, name)
    now = state(kind, found)
    if now == "succeeded" and keep_succeeded:
        print(f"{what} {name} has already succeeded: not submitted again", flush=True)
        return
    if now == "running":
        assert found is not None
        if kind is BATCH_JOB and _program(found) != _program(job):
            raise StepFailed(
                f"{what} {name} is running with other options: wait for it, or delete it (kubectl delete "
                f"{kind.resource} {name} -n {NAMESPACE}) and run this again"
            )
        print(f"following the {what} {name} already running", flush=True)
    else:
        if now is not None:
            cluster.checked(
                "delete", kind.resource, name, "--namespace", NAMESPACE, "--cascade=foreground", "--wait=true"
            )
        cluster.checked("apply", "--filename", "-", stdin=yaml.safe_dump_all(manifests, sort_keys=False))
        print(f"submitted {what} {name} in namespace {NAMESPACE}", flush=True)
    since: str | None = None
    while True:
        now = state(kind, _get(cluster, kind, name))
        if now == "succeeded":
            print(f"{what} {name} succeeded", flush=True)
            return
        if now == "failed":
            raise JobFailed(f"{what} {name} failed (its log is above)")
        if now is None:
            raise StepFailed(f"{what} {name} is gone (deleted while it ran?): run this again")
        # The log streams to the terminal; after a reconnect only what is new (--since-time, RFC 3339).
        cluster.kubectl(
            "logs", "--follow", *_logs(kind, name, nodes), "--namespace", NAMESPACE,
            *([f"--since-time={since}"] if since else []),
            capture=False,
        )  # fmt: skip
        since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        cluster.runner.sleep(poll_seconds)


def stop_pods(cluster: Cluster, name: str) -> None:
    """Delete the failed run's pods still running, so no GPU stays held: the reference PyTorchJob keeps its pods
    for their logs (hubspoke/k8s/auto_resume.py, cleanPodPolicy None). Ended pods stay, with their logs
    (status.phase is a pod field selector: Kubernetes docs, "Field Selectors")."""
    cluster.checked(
        "delete", "pods", "--namespace", NAMESPACE, f"--selector={JOB_NAME_LABEL}={name}",
        "--field-selector=status.phase=Running", "--ignore-not-found",
    )  # fmt: skip


# The bench runs `hubspoke train --bench` submits, each one phase named for what the cache holds when it runs
# (`hubspoke bench report` merges results by phase name: hubspoke/bench/analysis.py load).
COLD_RUN, WARM_RUN = "cold", "warm"
# How long the results pod may take to run: it pulls the training image first (docs/runbooks/cache-warm-up.md's
# manual copy waits as long). ASSUMED: no source gives a pull time; a slow pull fails here and a rerun copies again.
RESULTS_READY_TIMEOUT = "10m"


@dataclass(frozen=True)
class BenchRun:
    """One bench run: its Job, the results file it writes on the checkpoint volume, and where train copies it."""

    job: dict[str, Any]
    remote: str
    local: Path


@dataclass(frozen=True)
class Bench:
    """`--bench`'s cold run (before prewarm), warm run (after it) and the pod their results are read through."""

    cold: BenchRun
    warm: BenchRun
    results_pod: dict[str, Any]


def bench_plan(config: HubSpokeConfig, region: RegionConfig, *, image: str, directory: Path) -> Bench:
    from hubspoke.k8s.bench import bench_job, results_path
    from hubspoke.k8s.results import results_pod

    def one(run: str) -> BenchRun:
        job = bench_job(config, region, run=run, phases=run, image=image)
        return BenchRun(job, results_path(run), directory / f"{run}.jsonl")

    return Bench(one(COLD_RUN), one(WARM_RUN), results_pod(config, region, image=image))


def bench_dry_run(bench: Bench, follow: str) -> tuple[list[str], list[str]]:
    """What `--dry-run` prints for the bench: the lines before the prewarm and those after it."""
    pod = bench.results_pod["metadata"]["name"]

    def steps(run: BenchRun, which: str) -> list[str]:
        copy = ["kubectl", "exec", pod, "--namespace", NAMESPACE, "--", "cat", run.remote]
        return [
            f"+ kubectl apply --filename -   # the {which} bench Job below, unless {run.local} exists or it "
            f"succeeded; {follow}",
            f"+ {shlex.join(copy)} > {shlex.quote(str(run.local))}   # once it ended, through the results pod "
            "below (created, waited for Ready, deleted)",
        ]

    report = ["hubspoke", "bench", "report", str(bench.cold.local), str(bench.warm.local)]
    return steps(bench.cold, "cold"), [*steps(bench.warm, "warm"), "+ " + shlex.join(report)]


def run_bench(cluster: Cluster, run: BenchRun, bench: Bench, *, poll_seconds: float) -> None:
    """The bench Job followed to its end, unless its results were copied already, then its results file copied
    here: only then is it complete (workload/bench_reader.py writes it as it reads)."""
    name = run.job["metadata"]["name"]
    if run.local.exists():
        print(f"bench Job {name}: its results are in {run.local} already: not run again", flush=True)
        return
    try:
        # A succeeded run is kept: run again, a cold phase would read a warm cache.
        submit_and_follow(
            cluster,
            [run.job],
            kind=BATCH_JOB,
            what="bench Job",
            keep_succeeded=True,
            poll_seconds=poll_seconds,
        )
    except JobFailed as exc:
        raise JobFailed(
            f"{exc}; nothing was trained: run hubspoke train --bench again to replace it and continue, or "
            "without --bench to train without the benchmark"
        ) from None
    copy_results(cluster, bench.results_pod, run.remote, run.local)


def copy_results(cluster: Cluster, pod: dict[str, Any], remote: str, local: Path) -> None:
    """`remote` from the checkpoint volume to `local`, through the read-only results pod (hubspoke/k8s/results.py:
    an ended Job's pod has no running container to exec into); written whole or not at all."""
    name = pod["metadata"]["name"]
    # One left from an earlier copy may have ended (activeDeadlineSeconds) or hold another image: start afresh.
    cluster.checked("delete", "pod", name, "--namespace", NAMESPACE, "--ignore-not-found")
    cluster.checked("apply", "--filename", "-", stdin=yaml.safe_dump(pod, sort_keys=False))
    try:
        cluster.checked(
            "wait", "--for=condition=Ready", f"--timeout={RESULTS_READY_TIMEOUT}", f"pod/{name}",
            "--namespace", NAMESPACE,
        )  # fmt: skip
        text = cluster.checked("exec", name, "--namespace", NAMESPACE, "--", "cat", remote)
    finally:
        # Unchecked: a pod left behind ends itself within the hour (activeDeadlineSeconds).
        cluster.kubectl("delete", "pod", name, "--namespace", NAMESPACE, "--ignore-not-found")
    local.parent.mkdir(parents=True, exist_ok=True)
    partial = local.with_name(local.name + ".part")
    partial.write_text(text)
    partial.replace(local)
    print(f"copied {remote} to {local}", flush=True)


def bench_report(bench: Bench) -> None:
    """`hubspoke bench report` on the two results files, in this process (bench.py's parser, so its defaults)."""
    from hubspoke.cli import bench as bench_cli

    argv = ["bench", "report", str(bench.cold.local), str(bench.warm.local)]
    show(["hubspoke", *argv])
    parser = argparse.ArgumentParser(prog="hubspoke")
    bench_cli.add_parser(parser.add_subparsers(), "")
    args = parser.parse_args(argv)
    if args.run(args) != 0:
        raise StepFailed(
            f"the bench report failed (above); the results are in {bench.cold.local.parent}: nothing was trained; "
            "run hubspoke train without --bench to train now"
        )
