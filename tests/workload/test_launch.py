"""The rendered jobs' launch, run for real on the CPU: ranks per pod, and the HyperPod agent's log monitoring.

Both checks run upstream code rather than our reading of it:
- PyTorchJob: torchrun (torch in this environment) launched with the rendered container command, under the
  environment the training operator that our pinned dependencies chart deploys puts in each pod. That is
  kubeflow/training-operator image `v1-855e096` (aws/sagemaker-hyperpod-cli@a00b22d17ea928a6e39a43bd2efdafe01b1005ea,
  helm_chart/HyperPodHelmChart/charts/training-operators/values.yaml, `image.tag`), commit
  855e0960668b34992ba4e1fd5914a08a3362cfb1; `operator_env` below writes its rules out with their lines.
- HyperPodPyTorchJob: the LogAgent of hyperpod-elastic-agent 1.1.3 (PyPI) over the per-rank files torchrun
  writes for a real two-node gloo run of workload/train.py on loopback, with the rendered job's
  logMonitoringConfiguration. The agent watches local rank 0 only: hyperpod_elastic_agent.py,
  HyperPodElasticAgent.start_log_monitoring, `self._log_agent.start(attempt_dir, {0}, ...)` ("Start log
  monitoring only for local rank 0 by default"), with attempt_dir = `<run log dir>/attempt_<restart count>`
  (logagent/log_agent.py LogAgent.compute_attempt_dir); LogAgent._monitor_log_loop reads
  `<attempt_dir>/<local rank>/stdout.log`. Those two facts are the only glue written here.

Not covered (needs a cluster): the operators themselves reconciling the jobs, hyperpodrun's rendezvous with the
HyperPod operator, NCCL over EFA.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.job import training_job
from hubspoke.k8s.run import TRAIN_SCRIPT, TrainingSettings
from tests.fakes.clock import ManualClock
from tests.workload.test_train import _dataset

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "workload"
TORCHRUN = str(Path(sys.executable).parent / "torchrun")
# The port the operator defaults `pytorchjob-port` to (training-operator@855e096,
# pkg/apis/kubeflow.org/v1/pytorch_types.go PyTorchJobDefaultPort = 23456; pytorch_defaults.go
# setPyTorchDefaultPort adds it to a "pytorch" container that has none).
OPERATOR_DEFAULT_PORT = 23456


def operator_env(job: dict[str, Any]) -> dict[str, str]:
    """The variables training-operator@855e096 adds to every container of a PyTorchJob without a Master.

    pkg/controller.v1/pytorch/envvar.go setPodEnv (lines 43-124): PYTHONUNBUFFERED=1 always (54-60); the
    Master branch (66-101: MASTER_ADDR, WORLD_SIZE, RANK, PET_NPROC_PER_NODE, PET_NODE_RANK) only when a Master
    replica exists; with an elasticPolicy the elastic variables (103-113), else PET_NNODES = total replicas (114-120).
    elastic.go Generate (71-125): PET_RDZV_ENDPOINT `<rdzvHost or <job>-worker-0>:<rdzvPort or the worker's
    pytorchjob-port>` (149-172), PET_RDZV_BACKEND (rdzvBackend, default c10d; 189-200), PET_NNODES
    "min:max" (127-147; pytorch_defaults.go setElasticPolicy fills a missing bound from the other or from the
    Worker replicas), then PET_MAX_RESTARTS, PET_NPROC_PER_NODE (elasticPolicy.nProcPerNode only), PET_RDZV_ID,
    PET_RDZV_CONF and PET_STANDALONE when their fields are set (96-122).
    """
    spec = job["spec"]
    replicas = spec["pytorchReplicaSpecs"]
    assert "Master" not in replicas, (
        "this transcription covers Worker-only jobs: add envvar.go's Master branch"
    )
    env = {"PYTHONUNBUFFERED": "1"}
    policy = spec.get("elasticPolicy")
    if policy is None:
        env["PET_NNODES"] = str(sum(r["replicas"] for r in replicas.values()))
        return env
    host = policy.get("rdzvHost", f"{job['metadata']['name']}-worker-0")
    env["PET_RDZV_ENDPOINT"] = f"{host}:{policy.get('rdzvPort', OPERATOR_DEFAULT_PORT)}"
    env["PET_RDZV_BACKEND"] = policy.get("rdzvBackend", "c10d")
    low = policy.get("minReplicas", policy.get("maxReplicas", replicas["Worker"]["replicas"]))
    high = policy.get("maxReplicas", low)
    env["PET_NNODES"] = f"{low}:{high}"
    if "maxRestarts" in policy:
        env["PET_MAX_RESTARTS"] = str(policy["maxRestarts"])
    if "nProcPerNode" in policy:
        env["PET_NPROC_PER_NODE"] = str(policy["nProcPerNode"])
    if "rdzvId" in policy:
        env["PET_RDZV_ID"] = policy["rdzvId"]
    if "rdzvConf" in policy:
        env["PET_RDZV_CONF"] = ",".join(f"{c['key']}={c['value']}" for c in policy["rdzvConf"])
    if policy.get("standalone"):
        env["PET_STANDALONE"] = ""
    return env


@contextlib.contextmanager
def _rendezvous_store() -> Iterator[str]:
    """The c10d rendezvous endpoint of a two-"node" run, its store held by this process for the whole run.

    Each node's agent, given an endpoint on its own host, first tries to host the store there and joins as a
    client when the port is taken (torch 2.13, distributed/elastic/rendezvous/c10d_rendezvous_backend.py,
    _create_tcp_store). Left to the agents, the store lived as long as the node that hosted it: a CI run on
    2026-12-03 had node 0's agent fail on "Failed to recv, got 0 bytes" while its workers were running, both
    nodes exiting 1; why the other node ended first was not in the output (only node 0's was shown then; every
    node's is now, _tails). Bound on port 0 here, no port is freed and taken again in between either. The
    rank-0 agent still hosts the workers' own store (MASTER_PORT; dynamic_rendezvous.py), as on a cluster."""
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    try:
        yield f"127.0.0.1:{store.port}"
        # The agents' rendezvous state is here: neither hosted a store of its own.
        assert store.num_keys() > 1, "the nodes' agents did not rendezvous through this process's store"
    finally:
        del store


def _container(job: dict[str, Any]) -> dict[str, Any]:
    specs = job["spec"].get("pytorchReplicaSpecs") or {r["name"]: r for r in job["spec"]["replicaSpecs"]}
    (replica,) = specs.values()
    container: dict[str, Any] = replica["template"]["spec"]["containers"][0]
    return container


def _launcher(command: list[str]) -> list[str]:
    """The rendered command up to the training script: the launcher and its own flags."""
    return command[: command.index(TRAIN_SCRIPT)]


def _base_env() -> dict[str, str]:
    """Only what a process needs to start here: nothing of this machine's PET_* or rank variables leaks in."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(ROOT)}


@contextlib.contextmanager
def _nodes(
    commands: list[list[str]], envs: list[dict[str, str]], logs: Path
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """One launcher per "node", each in its own session so a hung run is killed whole."""
    procs = []
    try:
        for i, (command, env) in enumerate(zip(commands, envs, strict=True)):
            out = (logs / f"node{i}.txt").open("wb")
            procs.append(
                subprocess.Popen(
                    command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            )
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait(procs: list[subprocess.Popen[bytes]], logs: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    for i, proc in enumerate(procs):
        try:
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pytest.fail(f"node {i} still running after {timeout:.0f}s:\n{_tails(procs, logs)}")
        assert code == 0, f"node {i} exited {code}:\n{_tails(procs, logs)}"


def _tails(procs: list[subprocess.Popen[bytes]], logs: Path) -> str:
    """Every node's exit code and the end of its output: one node's failure is often the other's doing."""
    return "\n".join(
        f"--- node {i} (exit {proc.poll()}):\n{(logs / f'node{i}.txt').read_text(errors='replace')[-3000:]}"
        for i, proc in enumerate(procs)
    )


PROBE = """\
import json, os, sys
from pathlib import Path
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK")
Path(sys.argv[1], os.environ["RANK"] + ".json").write_text(json.dumps({k: os.environ[k] for k in keys}))
"""

# Any image pinned by digest: these tests read the job's command and rules, not its image.
ANY_IMAGE = "registry.example/train@sha256:" + "ab" * 32


@pytest.mark.thorough
def test_pytorchjob_under_the_pinned_operators_environment_runs_one_rank_per_gpu(
    dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    """Two "pods" on loopback, each: the rendered launcher command, the operator's variables, the container's
    env. Every worker must see WORLD_SIZE = nodes x GPUs per node (2 x 8 H100 on ml.p5.48xlarge: config/dev.yaml,
    EC2 P5 instance page) and the ranks must be all of 0..15. Before the fix torchrun's default of one process
    per node gave a world of 2."""
    region = dev_config.region_config("us-west-2")
    job = training_job(dev_config, region, kind="pytorchjob", image=ANY_IMAGE)
    container = _container(job)
    env = operator_env(job)
    assert "PET_NPROC_PER_NODE" not in env, "the operator at the pinned commit does not set it for this job"
    env.update({e["name"]: e["value"] for e in container["env"]})
    launcher = _launcher(container["command"])
    assert launcher[0] == "torchrun"
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    out = tmp_path / "ranks"
    out.mkdir()
    command = [TORCHRUN, *launcher[1:], str(probe), str(out)]
    # A Service name resolves to worker-0's pod in the cluster; here both "pods" are this machine.
    with _rendezvous_store() as endpoint:
        env["PET_RDZV_ENDPOINT"] = endpoint
        with _nodes([command, command], [{**_base_env(), **env}] * 2, tmp_path) as procs:
            _wait(procs, tmp_path)
    seen = [json.loads(p.read_text()) for p in sorted(out.iterdir())]
    assert {s["WORLD_SIZE"] for s in seen} == {"16"}, seen
    assert sorted(int(s["RANK"]) for s in seen) == list(range(16))
    assert {s["LOCAL_WORLD_SIZE"] for s in seen} == {"8"}


def _rules(settings: TrainingSettings, dev_config: HubSpokeConfig) -> list[dict[str, Any]]:
    job = training_job(
        dev_config, dev_config.region_config("us-west-2"), kind="hyperpod", settings=settings, image=ANY_IMAGE
    )
    rules: list[dict[str, Any]] = job["spec"]["runPolicy"]["logMonitoringConfiguration"]
    return rules


def _settle(agent: Any, timeout: float = 15, tick: float = 0.2) -> Any:
    """The agent's state for local rank 0 once it has read what is there (it polls its file every second)."""
    from hyperpod_elastic_agent.logagent.log_agent import LogState

    deadline = time.monotonic() + timeout
    while agent.log_state[0] == LogState.WAITING and time.monotonic() < deadline:
        time.sleep(tick)
    return agent.log_state[0]


def test_the_agent_accepts_train_pys_progress_line_and_flags_a_silent_stdout(
    dev_config: HubSpokeConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fast twin of the two-node run: the real LogAgent, the rendered rules (start cut-off shortened to 1 s),
    and what train.py's progress() prints as local rank 0's stdout.log. An empty stdout.log (the progress line
    on stderr, as before) is HANGING. The agent's module clock is a hand-moved one (log_agent.py reads
    `time.time()` for the cut-offs and sleeps `READ_INTERVAL` between reads): the test moves it 2 s, past the
    cut-off, instead of waiting 2 s; the agents' reads still run on their own threads."""
    # The agent's package imports torch.distributed (~2 s): here, not when every xdist worker collects this file.
    from hyperpod_elastic_agent.logagent import log_agent
    from hyperpod_elastic_agent.logagent.log_agent import LogAgent, LogState

    sys.path.insert(0, str(WORKLOAD))
    import train

    # Not 0: LogEvaluator takes a match timestamp of 0.0 for no match (`not self._log_pattern_match_timestamp`).
    clock = ManualClock(1_700_000_000.0)
    real_sleep = time.sleep
    reads: Counter[int] = Counter()  # each agent thread's read ticks

    def tick(_seconds: float) -> None:
        reads[threading.get_ident()] += 1
        real_sleep(0.005)

    monkeypatch.setattr(log_agent, "time", SimpleNamespace(time=clock, sleep=tick))
    rules = _rules(TrainingSettings(progress_start_cutoff_s=1, progress_hang_after_s=60), dev_config)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        train.progress(20, 3.25)
    agents = {}
    try:
        for name, text in (("prints", printed.getvalue()), ("silent", "")):
            attempt = tmp_path / name / "attempt_0"
            (attempt / "0").mkdir(parents=True)
            (attempt / "0" / "stdout.log").write_text(text)
            agents[name] = LogAgent(local_world_size=8)
            agents[name].start(str(attempt), {0}, rules)
        # Read before the cut-off: the printed line is matched, the silent file is still only WAITING.
        assert _settle(agents["prints"], tick=0.005) == LogState.HEALTHY
        deadline = time.monotonic() + 15
        while len(reads) < len(agents) and time.monotonic() < deadline:  # each agent's thread has read once
            real_sleep(0.005)
        assert agents["silent"].log_state[0] == LogState.WAITING
        clock.now += 2.0  # past the 1 s start cut-off, well inside the 60 s hang-after
        # Every agent thread reads (and evaluates) again at least once after the move before the verdict.
        moved, deadline = dict(reads), time.monotonic() + 15
        while any(reads[t] < n + 2 for t, n in moved.items()) and time.monotonic() < deadline:
            real_sleep(0.005)
        states = {name: agent.log_state[0] for name, agent in agents.items()}
    finally:
        for agent in agents.values():
            agent.stop()
    assert states == {"prints": LogState.HEALTHY, "silent": LogState.HANGING}


@pytest.mark.thorough
def test_every_node_passes_the_hyperpod_agents_log_monitoring_in_a_two_node_run(
    dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    """Two torchrun "nodes" x 2 gloo processes on loopback run train.py (tiny model) with the rendered
    HyperPodPyTorchJob's log flags (`--tee`), each writing its own log dir. As each node's first attempt
    directory appears, a real LogAgent starts on it with the rendered rules (default cut-offs), local rank 0
    only, as the elastic agent does. At the end every node's agent must have matched the progress line
    (HEALTHY) and never flagged HANGING or FAULTED. Before the fix node 1 printed nothing at all (progress on
    global rank 0 only) and node 0 printed it on stderr: both stayed WAITING, then HANGING after the cut-off."""
    from hyperpod_elastic_agent.logagent.log_agent import LogAgent, LogState

    ckpt = tmp_path / "ckpt"
    data = _dataset(tmp_path, [400, 400])  # a sealed version, as train.py requires (docs/datasets.md)
    launcher = _launcher(
        _container(
            training_job(dev_config, dev_config.region_config("us-west-2"), kind="hyperpod", image=ANY_IMAGE)
        )["command"]
    )
    tee = [a for a in launcher if a.startswith("--tee")]
    assert tee, "the rendered hyperpodrun command writes the workers' output to files"
    rules = _rules(TrainingSettings(), dev_config)
    with _rendezvous_store() as endpoint:
        commands, envs = [], []
        for node in range(2):
            commands.append(
                [
                    TORCHRUN,
                    "--nnodes=2",
                    "--nproc-per-node=2",
                    "--rdzv-backend=c10d",
                    f"--rdzv-endpoint={endpoint}",
                    *tee,
                    f"--log-dir={tmp_path / f'logs{node}'}",
                    str(WORKLOAD / "train.py"),
                    f"--data-dir={data}",
                    f"--checkpoint-dir={ckpt}",
                    "--model=tiny",
                    "--vocab-size=256",
                    "--seq-len=16",
                    "--batch-size=2",
                    "--num-workers=0",
                    "--backend=gloo",
                    "--max-steps=4",
                    "--log-every=2",
                    "--checkpoint-every=100",
                    "--metrics-seconds=3600",
                ]
            )
            envs.append(_base_env())
        agents: dict[int, Any] = {}
        seen: dict[int, set[Any]] = {0: set(), 1: set()}
        try:
            with _nodes(commands, envs, tmp_path) as procs:
                while any(p.poll() is None for p in procs) or len(agents) < 2:
                    for node in range(2):
                        attempts = list((tmp_path / f"logs{node}").glob("*/attempt_0"))
                        if node not in agents and attempts:
                            agents[node] = LogAgent(local_world_size=2)
                            agents[node].start(str(attempts[0]), {0}, rules)
                        if node in agents:
                            seen[node].add(agents[node].log_state[0])
                    if all(p.poll() is not None for p in procs) and len(agents) < 2:
                        break
                    time.sleep(0.2)
                _wait(procs, tmp_path)
            assert set(agents) == {0, 1}, "both nodes wrote an attempt directory"
            final = {node: _settle(agent) for node, agent in agents.items()}
        finally:
            for agent in agents.values():
                agent.stop()
    assert final == {0: LogState.HEALTHY, 1: LogState.HEALTHY}, (final, seen)
    for node in (0, 1):
        assert not seen[node] & {LogState.HANGING, LogState.FAULTED}, (node, seen[node])
