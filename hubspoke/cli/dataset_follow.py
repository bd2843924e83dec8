"""The load Job on the hub's cluster through kubectl: started (or a finished one replaced, a running one joined),
its log followed across the pods it starts, its outcome the exit status; for `hubspoke dataset load`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from hubspoke.k8s.load import SETTINGS
from hubspoke.k8s.names import NAMESPACE
from hubspoke.shift_from import EXIT_BAD_INPUT, EXIT_FAILED, LoadError

# `kubectl logs --pod-running-timeout`: how long to wait for the Job's pod to run (kubectl reference, "kubectl
# logs": "The length of time (like 5s, 2m, or 3h, higher than zero) to wait until at least one pod is running").
POD_RUNNING_TIMEOUT = "15m"
# Log follows before giving up on a Job that neither completes nor fails: one per pod the Job may start
# (backoffLimit 2 in hubspoke/k8s/load.py, so 3 pods) and one spare.
FOLLOWS = 4
# Status reads, 5 s apart, while the Job controller catches up with a pod that ended (2 minutes).
SETTLE_POLLS = 24

Kubectl = Callable[[Sequence[str], "str | None", bool], subprocess.CompletedProcess[str]]


def kubectl(
    args: Sequence[str], stdin: str | None = None, capture: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run kubectl with the user's own kubeconfig (--kube-context names the context)."""
    return subprocess.run(
        ["kubectl", *args], input=stdin, text=True, capture_output=capture, check=False, timeout=None
    )


def _checked(done: subprocess.CompletedProcess[str], what: str, *, hint: str) -> str:
    if done.returncode != 0:
        said = (done.stderr or done.stdout or "").strip().splitlines()
        raise LoadError(f"kubectl {what} failed ({said[-1] if said else f'exit {done.returncode}'}); {hint}")
    return done.stdout or ""


def _count(job: dict[str, Any] | None, field: str) -> int:
    """JobStatus `active`, `failed` or `succeeded`: pods running, or ended in that phase (absent means 0)."""
    return int(((job or {}).get("status") or {}).get(field) or 0)


def _state(job: dict[str, Any] | None) -> str | None:
    """None (no Job), "Complete", "Failed" or "running", from the Job's status conditions (Kubernetes API,
    JobStatus.conditions: types Complete and Failed with status "True" end a Job)."""
    if job is None:
        return None
    for condition in job.get("status", {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return "running"


def start_and_follow(
    job: dict[str, Any],
    *,
    kube: Kubectl,
    sleep: Callable[[float], None],
    hint: str,
    deploy: str,
) -> int:
    name = job["metadata"]["name"]
    where = ["--namespace", NAMESPACE]

    def current() -> dict[str, Any] | None:
        done = kube(["get", "job", name, *where, "--ignore-not-found", "--output", "json"], None, True)
        text = _checked(done, "get job", hint=hint).strip()
        return json.loads(text) if text else None

    # The Job's settings and service account come with the hub's Compute stack (hubspoke/constructs/
    # dataset_loader.py); without them its pod could never start, so say so before creating anything.
    done = kube(["get", "configmap", SETTINGS, *where, "--ignore-not-found", "--output", "name"], None, True)
    if not _checked(done, "get configmap", hint=hint).strip():
        raise LoadError(
            f"the hub's cluster has no ConfigMap {NAMESPACE}/{SETTINGS}, which the hub's Compute stack creates "
            f"when dataset.source_buckets is set: deploy that stack ({deploy}), then run this again"
        )
    existing = current()
    state = _state(existing)
    if state == "running":
        assert existing is not None
        theirs = existing["spec"]["template"]["spec"]["containers"][0]["command"]
        if theirs != job["spec"]["template"]["spec"]["containers"][0]["command"]:
            raise LoadError(
                f"Job {name} is already loading this version with other options: wait for it, or delete it "
                f"(kubectl delete job {name} -n {NAMESPACE}) and run this again",
                code=EXIT_BAD_INPUT,
            )
        print(f"following the running load Job {name}", flush=True)
    else:
        if state is not None:
            # A finished Job's pod template cannot change (Kubernetes API: Job spec.template is immutable), so a
            # rerun replaces it; its pods go first (--cascade=foreground) so the log followed is the new one's.
            done = kube(["delete", "job", name, *where, "--cascade=foreground", "--wait=true"], None, True)
            _checked(done, "delete job", hint=hint)
            print(
                f"replaced the finished load Job {name} ({state}); the new one resumes the load", flush=True
            )
        done = kube(["apply", "--filename", "-"], yaml.safe_dump(job, sort_keys=False), True)
        _checked(done, "apply", hint=hint)
        print(f"started load Job {name} in namespace {NAMESPACE} on the hub's cluster", flush=True)
    for _ in range(FOLLOWS):
        failed_before = _count(current(), "failed")
        # The log goes straight to this terminal; its lines are the load's progress.
        kube(
            ["logs", "--follow", f"job/{name}", *where, f"--pod-running-timeout={POD_RUNNING_TIMEOUT}"],
            None,
            False,
        )
        # The pod has ended; the Job controller then marks the Job finished, or counts the failed pod and starts
        # another (Kubernetes docs, "Jobs": backoffLimit). Wait for either before following again.
        for _ in range(SETTLE_POLLS):
            final = current()
            state = _state(final)
            if state != "running" or (_count(final, "failed") > failed_before and _count(final, "active")):
                break
            sleep(5)
        if state == "Complete":
            return 0
        if state == "Failed":
            reasons = [c.get("reason") for c in (final or {}).get("status", {}).get("conditions") or []]
            # podFailurePolicy FailJob (exit 2, a refusal) marks the Job Failed with reason PodFailurePolicy
            # (Kubernetes docs, "Jobs": "Pod failure policy").
            code = EXIT_BAD_INPUT if "PodFailurePolicy" in reasons else EXIT_FAILED
            raise LoadError(
                f"load Job {name} failed (see its log above); "
                + (
                    "fix the input and run again"
                    if code == EXIT_BAD_INPUT
                    else "run the same command again to resume"
                ),
                code=code,
            )
        if state is None:
            raise LoadError(
                f"load Job {name} is gone (deleted while it ran?); run the same command again to resume"
            )
        print(f"a pod of load Job {name} ended early; following the one the Job started next", flush=True)
    raise LoadError(
        f"load Job {name} is still running; follow it with `kubectl logs --follow job/{name} -n {NAMESPACE}` or "
        "run this command again"
    )
