"""Submit one of `hubspoke train`'s Jobs (prewarm, the reference run, export) and follow it to its end.

What ends each, by its own API: a batch/v1 Job has condition Complete or Failed with status "True" (Kubernetes API,
JobStatus.conditions); a Kubeflow PyTorchJob has Succeeded or Failed (training-operator pkg/apis/kubeflow.org/v1
common_types.go, JobConditionType: "JobSucceeded means all sub-resources ... terminated in success", "JobFailed
means one or more ... reached phase failed with no restarting").
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from hubspoke.cli.tunnel import Cluster, StepFailed
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
