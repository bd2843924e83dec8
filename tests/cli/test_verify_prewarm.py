"""The rendered prewarm Job, run as its pod runs it, is what makes `hubspoke verify`'s "dataset cached" row pass.

The pod is played in the test world: `hubspoke render prewarm` gives the container; workload/prewarm.py runs with
that container's arguments and environment (its Secret's keys resolved to the fake spoke's credentials) against
the fake Qumulo spoke holding the pinned version (tests/fakes/qumulo); the container's mount path is a temporary
directory; the spoke's floating IP and REST port 8000 are the fake's node address and port. The cluster's DNS
is played for one name only: the CloudWatch observability add-on's agent Service, `cloudwatch-agent` in the
`amazon-cloudwatch` namespace (amazon-cloudwatch-agent-operator, EMF service ports), on its EMF port 25888
(CloudWatch User Guide, "Using the CloudWatch agent to send embedded metric format logs": tcp 25888 by
default), resolves to the fake agent (tests/fakes/emf_agent.py); any other name resolves as it would here.
The agent files each record in the log group its `_aws.LogGroupName` names and drops one without it (sources in
hubspoke/training_metrics.py), and CloudWatch Logs turns a filed EMF document into metrics (put_emf), in moto.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke import dataset_manifest
from hubspoke.cli.checks import session_clients
from hubspoke.cli.main import main
from hubspoke.cli.verify import run_verify
from hubspoke.config import load
from tests.cli.canary_feed import put_emf
from tests.cli.test_verify import CACHE, only_areas, rows, verify
from tests.cli.verify_fixtures import _DEPLOYED, DeployedState
from tests.cli.verify_world import DeployedWorld, MotoGaps
from tests.conftest import ROOT
from tests.fakes.emf_agent import FakeEmfAgent
from tests.fakes.qumulo import FakeQumulo

sys.path.insert(0, str(ROOT / "workload"))
import prewarm

SPOKE = "us-west-2"
AGENT_HOST, AGENT_PORT = "cloudwatch-agent.amazon-cloudwatch", 25888  # the sources in the module docstring
REST_ADDRESS = "10.20.64.10"  # one of the spoke CNQ's floating IPs: inside us-west-2's VPC, 10.20.0.0/16
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32
MIB = 1 << 20


@pytest.fixture
def cold(backend: str, deployed_config: Path, deployed_templates: dict[str, dict[str, Any]]) -> DeployedWorld:
    """verify_fixtures' deployed world, its canary reporting, before any prewarm has run (its `deployed` fixture
    publishes a cached fraction of 1; here only the Job may)."""
    config = load(deployed_config).config
    key = str(deployed_config)
    if backend == "in-process" and key in _DEPLOYED:
        world = _DEPLOYED[key].restore(MotoGaps(session_clients()), config, deployed_templates)
    else:
        world = DeployedWorld(MotoGaps(session_clients()), config, deployed_templates).deploy()
        if backend == "in-process":
            _DEPLOYED[key] = DeployedState.of(world)
    world.canary(SPOKE)
    return world


@pytest.fixture
def spoke() -> Any:
    """The spoke's CNQ holding the config's pinned version (TWO_SPOKES: c4-llama3/v1 under dataset_path /dataset),
    sealed by the MANIFEST.json `dataset load` writes, served over REST."""
    files = {"shard-000.bin": 3 * MIB, "shard-001.bin": MIB}
    with FakeQumulo(name="spoke") as fake:
        fake.password = "Spoke-Admin-1"
        for name, size in files.items():
            fake.add_file(f"/dataset/c4-llama3/v1/{name}", size)
        entries = [dataset_manifest.FileEntry(n, s, "0" * 64) for n, s in files.items()]
        sealed = dataset_manifest.validate(
            name="c4-llama3", version="v1", token_bytes=4, vocab_size=128256, files=entries
        )
        fake.add_file("/dataset/c4-llama3/v1/MANIFEST.json", 0, dataset_manifest.to_json(sealed))
        yield fake


def _rendered(config: Path) -> dict[str, Any]:
    """The one container of `hubspoke render prewarm` for the spoke."""
    argv = ["render", "prewarm", "--config", str(config), "--region", SPOKE, "--rest-address", REST_ADDRESS]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--image", IMAGE]) == 0
    (job,) = [d for d in yaml.safe_load_all(out.getvalue()) if d]
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return dict(container)


def _cluster_dns(agent: FakeEmfAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (host, port) == (AGENT_HOST, AGENT_PORT):
            return real("127.0.0.1", agent.port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _run_pod(container: dict[str, Any], spoke: FakeQumulo, volumes: Path) -> int:
    """workload/prewarm.py with the container's arguments and environment, as the pod would run it."""
    secrets = {"username": "admin", "password": str(spoke.password)}
    env = {
        e["name"]: e["value"] if "value" in e else secrets[e["valueFrom"]["secretKeyRef"]["key"]]
        for e in container["env"]
    }
    argv = [*container["command"], *container.get("args", [])]
    assert argv[:2] == ["python", "/opt/hubspoke/prewarm.py"], argv
    mounts = {m["mountPath"]: volumes / m["name"] for m in container["volumeMounts"]}
    args = []
    for arg in argv[2:]:
        arg = arg.replace(f"--host={REST_ADDRESS}", f"--host={spoke.node_ips[0]}")
        for path, local in mounts.items():
            arg = arg.replace(f"={path}/", f"={local}/")
        args.append(arg)
    return prewarm.main([*args, f"--port={spoke.port}"], env=env)


def _row_later(world: DeployedWorld, config: Path) -> Any:
    """The spoke's "dataset cached" row of `hubspoke verify --region us-west-2` run a minute after the Job ended, as
    an operator would (moto, like CloudWatch, need not show a datapoint in the same second it was put); the row's
    area alone (only_areas)."""
    later = datetime.now(UTC) + timedelta(minutes=1)
    with only_areas(CACHE):
        results = run_verify(
            world.config, world.clients, config_path=str(config), only={SPOKE}, now=later, kubeconfig=()
        )
    (row,) = rows(results, "dataset cached", SPOKE)
    return row


def _deliver(world: DeployedWorld, lines: list[str]) -> list[dict[str, Any]]:
    """The agent's `lines`, filed as the agent and CloudWatch Logs file them; the records filed."""
    filed = [doc for doc in map(json.loads, lines) if doc.get("_aws", {}).get("LogGroupName")]
    for doc in filed:
        put_emf(world.clients("cloudwatch", SPOKE), doc)
    return filed


def _whole(agent: FakeEmfAgent, timeout_s: float = 10) -> list[str]:
    """The agent's lines once a record of the whole version is among them (prewarm has sent its last record when it
    returns, but the agent's threads may still be reading it), or after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(json.loads(line).get("DatasetPrewarmedFraction") == 1 for line in agent.lines):
            break
        time.sleep(0.05)
    return list(agent.lines)


def test_a_finished_prewarm_job_passes_the_dataset_cached_row(
    cold: DeployedWorld,
    deployed_config: Path,
    spoke: FakeQumulo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = rows(verify(cold, deployed_config, only={SPOKE}, areas=CACHE), "dataset cached", SPOKE)
    assert [r.status for r in before] == ["warn"] and "prewarm has not run" in before[0].detail
    container = _rendered(deployed_config)
    agent_env = {e["name"]: e.get("value") for e in container["env"]}.get("AWS_EMF_AGENT_ENDPOINT")
    assert agent_env == f"tcp://{AGENT_HOST}:{AGENT_PORT}"
    with FakeEmfAgent() as agent:
        _cluster_dns(agent, monkeypatch)
        assert _run_pod(container, spoke, tmp_path) == 0
        filed = _deliver(cold, _whole(agent))
    assert filed and filed[-1]["DatasetPrewarmedFraction"] == 1.0
    row = _row_later(cold, deployed_config)
    assert row.status == "pass" and "c4-llama3/v1 whole" in row.detail


def test_without_the_agent_endpoint_the_row_says_prewarm_never_ran(
    cold: DeployedWorld,
    deployed_config: Path,
    spoke: FakeQumulo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Job as rendered before issue 40: it warms every byte, and nothing reaches CloudWatch."""
    container = _rendered(deployed_config)
    container["env"] = [e for e in container["env"] if e["name"] != "AWS_EMF_AGENT_ENDPOINT"]
    with FakeEmfAgent() as agent:
        _cluster_dns(agent, monkeypatch)
        assert _run_pod(container, spoke, tmp_path) == 0
        # Every connection the finished Job made has been read to its end (a Job that sent nothing made none).
        assert _deliver(cold, agent.settle()) == []
    assert sum(spoke.fetched_bytes.values()) == 4 * MIB
    row = _row_later(cold, deployed_config)
    assert row.status == "warn" and "prewarm has not run" in row.detail
