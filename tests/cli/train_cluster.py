"""A recording Runner for `hubspoke train` tests: every program it is asked to run is recorded, kubectl answers from
an in-memory cluster, the tunnel is a flag, and `hubspoke image build` writes the record the real one writes.

kubectl's answers follow its reference for the verbs train uses: `get KIND NAME --ignore-not-found -o json` prints
nothing (exit 0) for a missing object; `apply -f -` creates each document read from stdin; `logs --follow` returns
when the followed pods end, after which the cluster gives the job the scenario's next status; `delete` removes;
`wait --for=condition=Ready pod/NAME` makes a pod Ready, and fails for a missing one ('Error from server
(NotFound)'); `exec POD -- cat FILE` needs a Ready pod and prints FILE from the checkpoint volume, coreutils cat's
"No such file or directory" (exit 1) when it is not there. A bench Job's results file (its --out) holds only its
first line while the Job runs and all of it once the Job completed (workload/bench_reader.py appends as it reads).
What ends a job is written here from its API, not imported: a batch/v1 Job ends with condition Complete or Failed
"True" (Kubernetes API, JobStatus); a PyTorchJob with Succeeded or Failed (kubeflow training-operator
pkg/apis/kubeflow.org/v1 common_types.go JobConditionType).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from hubspoke.cli.tunnel import Runner

JOB_DONE = {"conditions": [{"type": "Complete", "status": "True"}]}
JOB_FAILED = {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}
PYTORCH_DONE = {
    "conditions": [{"type": "Running", "status": "False"}, {"type": "Succeeded", "status": "True"}]
}
PYTORCH_FAILED = {"conditions": [{"type": "Failed", "status": "True"}]}
PYTORCH_RUNNING = {"conditions": [{"type": "Running", "status": "True"}]}
PORT = 18443


class FakeTunnel:
    def __init__(self, *, up: bool = True) -> None:
        self.up = up

    def running(self) -> bool:
        return self.up

    def stop(self) -> None:
        self.up = False


def _done(done: bool, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([], 0 if done else 1, out, err)


class FakeCluster(Runner):
    """The programs train runs, recorded; `objects` is the cluster: (resource, name) -> object."""

    def __init__(self, *, record: Path | None = None, image: str = "", build_ok: bool = True) -> None:
        self.calls: list[list[str]] = []
        self.stdin: list[str] = []
        self.tunnels: list[FakeTunnel] = []
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        # name -> the statuses a job takes, one per ended log follow (default: it succeeds).
        self.outcomes: dict[str, list[dict[str, Any]]] = {}
        self.record, self.image, self.build_ok = record, image, build_ok
        self.drop_tunnel_at: int | None = None  # the kubectl call before which the tunnel drops
        # kubectl call number -> the stderr it exits 1 with, the tunnel staying up (the API server refused or
        # timed out).
        self.kubectl_fails: dict[int, str] = {}
        self.tunnel_logs: list[Path] = []
        self.tunnel_starts = True  # False: the tunnel process ends before it listens
        self.tunnel_says = f"Port {PORT} opened for sessionId hubspoke."
        # The checkpoint volume (path -> text), and what each bench Job's results file holds once it completed.
        self.volume: dict[str, str] = {}
        self.bench_results: dict[str, str] = {}

    # ----- Runner
    def run(
        self, argv: Sequence[str], *, stdin: str | None = None, capture: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = list(argv)
        self.calls.append(argv)
        if stdin is not None:
            self.stdin.append(stdin)
        if argv[0] == sys.executable:
            return self._build(argv)
        if argv[0] != "kubectl":
            return _done(True)
        if argv[1:3] == ["config", "set-cluster"]:
            return _done(True)
        assert argv[1] == "--kubeconfig" and argv[3] == "--context", argv
        if self.drop_tunnel_at is not None and len(self.kubectl_calls) == self.drop_tunnel_at:
            self.tunnels[-1].up = False
        if not (self.tunnels and self.tunnels[-1].up):
            return _done(False, err="The connection to the server localhost:18443 was refused")
        if (said := self.kubectl_fails.pop(len(self.kubectl_calls) - 1, None)) is not None:
            return _done(False, err=said)
        return self._kubectl(argv[5:], stdin)

    def start(self, argv: Sequence[str], *, log: Path) -> FakeTunnel:
        self.calls.append(list(argv))
        self.tunnel_logs.append(log)
        # What the plugin prints when it opens a port forward ("Starting session with SessionId: ..." and "Port N
        # opened for sessionId ...": Systems Manager User Guide, "Start a session", port forwarding example).
        with log.open("a") as out:
            out.write(f"Starting session with SessionId: hubspoke-{len(self.tunnels)}\n{self.tunnel_says}\n")
        self.tunnels.append(FakeTunnel(up=self.tunnel_starts))
        return self.tunnels[-1]

    def free_port(self) -> int:
        return PORT

    def port_open(self, port: int) -> bool:
        return port == PORT and bool(self.tunnels) and self.tunnels[-1].up

    def sleep(self, seconds: float) -> None:
        pass

    # ----- what was asked
    @property
    def kubectl_calls(self) -> list[list[str]]:
        return [c[5:] for c in self.calls if c[0] == "kubectl" and c[1:3] != ["config", "set-cluster"]]

    def applied(self) -> list[dict[str, Any]]:
        return [d for s in self.stdin for d in yaml.safe_load_all(s) if d]

    def put(self, resource: str, manifest: dict[str, Any], status: dict[str, Any]) -> None:
        self.objects[resource, manifest["metadata"]["name"]] = {**manifest, "status": status}

    # ----- behaviour
    def _build(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        if not self.build_ok:
            return _done(False, err="docker build failed")
        assert self.record is not None
        config = argv[argv.index("--config") + 1]
        region = self.image.split(".")[3]
        self.record.write_text(
            json.dumps(
                {
                    "environment": "dev",
                    "tag": "abc",
                    # Without --base, image build pins the config's training_base_image (its own tests).
                    "base": argv[argv.index("--base") + 1] if "--base" in argv else "<training_base_image>",
                    "images": {region: self.image},
                }
            )
        )
        assert Path(config).with_name(Path(config).stem + ".images.json") == self.record
        return _done(True)

    def _kubectl(self, args: list[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
        verb = args[0]
        if verb == "get":
            found = self.objects.get((args[1], args[2]))
            return _done(True, json.dumps(found) if found else "")
        if verb == "apply":
            for document in (d for d in yaml.safe_load_all(stdin or "") if d):
                resource = {"PyTorchJob": "pytorchjob", "Job": "job", "Pod": "pod"}.get(
                    document["kind"], document["kind"]
                )
                self.put(resource, document, {})
                if (out := _results_file(document)) is not None:
                    self.volume[out] = self.bench_results.get(out, "").partition("\n")[0]
            return _done(True)
        if verb == "logs":
            target = next(a for a in args if a.startswith(("job/", "--selector=")))
            name = target.removeprefix("job/").rsplit("=", 1)[-1]
            resource = "job" if target.startswith("job/") else "pytorchjob"
            default = JOB_DONE if resource == "job" else PYTORCH_DONE
            following = self.outcomes.get(name) or [default]
            job = self.objects[resource, name]
            job["status"] = following.pop(0)
            if job["status"] == JOB_DONE and (out := _results_file(job)) is not None:
                self.volume[out] = self.bench_results.get(out, "")
            return _done(True)
        if verb == "wait":
            pod = self.objects.get(("pod", args[3].removeprefix("pod/")))
            if pod is None:
                return _done(False, err=f'Error from server (NotFound): pods "{args[3][4:]}" not found')
            pod["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
            return _done(True)
        if verb == "exec":
            pod = self.objects.get(("pod", args[1]))
            if pod is None or pod["status"].get("conditions") is None:
                return _done(
                    False, err='error: unable to upgrade connection: container not found ("results")'
                )
            assert args[4:6] == ["--", "cat"], args
            if args[6] not in self.volume:
                return _done(False, err=f"cat: {args[6]}: No such file or directory")
            return _done(True, self.volume[args[6]])
        if verb == "delete":
            if args[1] != "pods":
                self.objects.pop((args[1], args[2]), None)
            return _done(True)
        raise AssertionError(f"kubectl {args}: not a verb train uses")


def _results_file(job: dict[str, Any]) -> str | None:
    """The --out a bench Job writes its results to, if it is one."""
    if job.get("kind") != "Job":
        return None
    container = job["spec"]["template"]["spec"]["containers"][0]
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return next((w.removeprefix("--out=") for w in words if w.startswith("--out=")), None)
