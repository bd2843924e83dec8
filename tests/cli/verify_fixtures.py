"""Fixtures of the verify tests: the deployed two-spoke world in moto, and Kubernetes stand-ins for its clusters."""

from __future__ import annotations

import base64
import copy
import json
import shlex
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke.cli.checks import session_clients
from hubspoke.config import HubSpokeConfig, load
from tests.cli.verify_world import ACCOUNT, DeployedWorld, MotoGaps
from tests.conftest import ROOT, synth, with_pins, write_config
from tests.fakes.kube_api import FakeKubeApi, claim, node, volume
from tests.fakes.moto_state import MotoState
from tests.fakes.tls import loopback_certificate

# moto's default credentials as AWS would name them (verify_world._iam_user_arn).
CALLER = f"arn:aws:iam::{ACCOUNT}:user/moto"
_DEV = yaml.safe_load((ROOT / "config" / "dev.yaml").read_text())
# config/dev.yaml plus a second spoke that only peers: two spokes make "no route between spokes" testable,
# and a spoke without CNQ shows what verify says where there is no canary. Its CNQ pins are dev's, so its
# Storage templates are dev's and share their Control Tower verdicts (the thorough tier judges them once; the
# fast tier leaves a test-only config's verdicts to it: tests/conftest.py judged_stacks).
TWO_SPOKES: dict[str, Any] = with_pins(
    {
        "environment": "dev",
        "account": ACCOUNT,
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16", "storage": _DEV["hub"]["storage"]},
        # The caller of every verify test (moto's default credentials, an IAM user) administers the clusters.
        "access": {"administrators": [CALLER]},
        # The version the "dataset cached" row names as the one it judged.
        "dataset": {"name": "c4-llama3", "version": "v1"},
        "spokes": [
            {"region": "us-west-2", "cidr": "10.20.0.0/16", "storage": _DEV["spokes"][0]["storage"]},
            {
                "region": "eu-west-1",
                "cidr": "10.30.0.0/16",
                "storage": {"enabled": False},
                "compute": {"enabled": False},
            },
        ],
    }
)

# The account of the second spoke where a test moves it out of the hub's (tests/cli/test_verify_accounts.py).
SPOKE_ACCOUNT = "111111111111"


def two_spokes_across_accounts() -> dict[str, Any]:
    """TWO_SPOKES with its network-only spoke (eu-west-1) in SPOKE_ACCOUNT: the cross-account world, one config
    (so one synth) for every test that needs it."""
    data: dict[str, Any] = json.loads(json.dumps(TWO_SPOKES))
    data["spokes"][1]["account"] = SPOKE_ACCOUNT
    return data


@pytest.fixture(scope="session")
def deployed_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("verify"), TWO_SPOKES, "dev.yaml")


@pytest.fixture(scope="session")
def deployed_templates(deployed_config: Path) -> dict[str, dict[str, Any]]:
    return synth(load(deployed_config).config)


@pytest.fixture
def deployed(
    backend: str, deployed_config: Path, deployed_templates: dict[str, dict[str, Any]]
) -> DeployedWorld:
    """The two-spoke environment as deployed, its canary reporting a healthy hub and an ACTIVE portal, and
    prewarm the whole dataset warm in the training spoke.

    In-process, the world is deployed once per test process and restored for every later test from a copy of
    moto's state (MotoState); the server twin deploys it afresh through HTTP each time. The canary's datapoints
    are always published now, after the restore: their age is what the canary tests judge.
    """
    return deployed_world(backend, deployed_config, deployed_templates)


def deployed_world(backend: str, config_path: Path, templates: dict[str, dict[str, Any]]) -> DeployedWorld:
    """The environment of the config at `config_path` as deployed (see `deployed`): in-process, deployed once per
    test process and config, then restored from its copy."""
    config = load(config_path).config
    key = str(config_path)
    if backend == "in-process" and key in _DEPLOYED:
        world = _DEPLOYED[key].restore(MotoGaps(session_clients()), config, templates)
    else:
        world = DeployedWorld(MotoGaps(session_clients()), config, templates).deploy()
        if backend == "in-process":
            _DEPLOYED[key] = DeployedState.of(world)
    world.canary("us-west-2")
    world.prewarm("us-west-2", 1.0)
    return world


@dataclass(frozen=True)
class DeployedState:
    """A deployed world as moto holds it and as the test holds it (physical IDs, outputs, the EKS add-ons and
    composite alarms moto lacks), copied so each restore is fresh."""

    moto: MotoState
    world: dict[str, Any]

    @classmethod
    def of(cls, world: DeployedWorld) -> DeployedState:
        gaps = {ACCOUNT: world.clients, **world.others}
        state = {
            "physical": world.physical,
            "outputs": world.outputs,
            "environments": world.environments,
            "gaps": {
                account: (g.addons, g.composites, g.access_entries, g.agents) for account, g in gaps.items()
            },
        }
        return cls(MotoState.of(), copy.deepcopy(state))

    def restore(
        self, clients: MotoGaps, config: HubSpokeConfig, templates: dict[str, dict[str, Any]]
    ) -> DeployedWorld:
        """Fill the fresh mock_aws backends with a copy of the deployed state; a world around it."""
        self.moto.restore()
        world_state = copy.deepcopy(self.world)
        world = DeployedWorld(clients, config, templates)
        world.physical, world.outputs = world_state["physical"], world_state["outputs"]
        world.environments = world_state["environments"]
        for account, (addons, composites, entries, agents) in world_state["gaps"].items():
            gaps = clients if account == ACCOUNT else world.clients_for(account)
            gaps.addons, gaps.composites, gaps.access_entries, gaps.agents = (
                addons,
                composites,
                entries,
                agents,
            )
        return world


# config path -> the world deployed there, once per test process (in-process moto only).
_DEPLOYED: dict[str, DeployedState] = {}


@dataclass
class Kube:
    """One Kubernetes API stand-in per EKS cluster, and a kubeconfig whose contexts point at them."""

    servers: dict[str, FakeKubeApi]
    kubeconfig: Path


@pytest.fixture
def kube(deployed: DeployedWorld, tmp_path: Path) -> Iterator[Kube]:
    """Every compute Region's cluster: 2 Ready nodes (the HyperPod group's count), both claims Bound, and both
    volumes on the Region's CNQ floating IPs as its Storage stack outputs them (the Compute stack applied them).

    The kubeconfig is what `aws eks update-kubeconfig` writes (cluster and context named by the cluster's
    ARN), with the stand-in's URL as server, its certificate as certificate-authority-data, and an exec
    credential plugin printing an ExecCredential, as `aws eks get-token` does.
    """
    from hubspoke.k8s.storage import checkpoint_claim, checkpoint_volume, dataset_claim, dataset_volume

    servers: dict[str, FakeKubeApi] = {}
    clusters, users, contexts = [], [], []
    with ExitStack() as stack:
        for region in deployed.config.regions():
            if not region.compute.enabled:
                continue
            (storage,) = deployed.clients("cloudformation", region.region).describe_stacks(
                StackName=f"hubspoke-dev-storage-{region.region}"
            )["Stacks"]
            ips = next(o["OutputValue"] for o in storage["Outputs"] if o["OutputKey"] == "FloatingIps").split(
                ","
            )
            fake = FakeKubeApi(
                nodes=[node(f"hyperpod-i-0{n}{region.region}") for n in range(2)],
                claims=[claim(dataset_claim(region)), claim(checkpoint_claim(region))],
                volumes=[
                    volume(dataset_volume(region, floating_ips=ips)),
                    volume(checkpoint_volume(region, floating_ips=ips)),
                ],
            )
            servers[region.region] = stack.enter_context(fake)
            arn = deployed.clients("eks", region.region).describe_cluster(
                name=f"hubspoke-dev-{region.region}"
            )["cluster"]["arn"]
            clusters.append(
                {
                    "name": arn,
                    "cluster": {
                        "server": fake.url,
                        "certificate-authority-data": base64.b64encode(
                            loopback_certificate("fake-kube-apiserver").cert_pem
                        ).decode(),
                    },
                }
            )
            users.append({"name": arn, "user": {"exec": exec_plugin(fake.token)}})
            contexts.append({"name": arn, "context": {"cluster": arn, "user": arn}})
        path = tmp_path / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": clusters,
                    "users": users,
                    "contexts": contexts,
                }
            )
        )
        yield Kube(servers, path)


def exec_plugin(token: str, *, profile: str | None = None) -> dict[str, Any]:
    """A client.authentication.k8s.io/v1beta1 exec entry whose command prints an ExecCredential with `token`.

    With `profile`, the token is `token` only when the plugin runs with AWS_PROFILE=`profile`, as
    `aws eks get-token` signs for the profile's identity and the API server maps only that one.

    The command is a POSIX shell's printf, not a Python script: kubectl runs the plugin each time verify runs
    kubectl, and a shell starts in a fraction of a Python interpreter's time.
    """
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": token, "expirationTimestamp": "2099-01-01T00:00:00Z"},
    }
    printed = shlex.quote(json.dumps(credential))
    script = f"printf '%s\\n' {printed}"
    if profile:
        other = shlex.quote(json.dumps(credential).replace(token, "another-identity"))
        script = (
            f"if [ \"${{AWS_PROFILE:-}}\" = {shlex.quote(profile)} ]; then printf '%s\\n' {printed}; "
            f"else printf '%s\\n' {other}; fi"
        )
    return {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "/bin/sh",
        "args": ["-c", script],
        "interactiveMode": "Never",
    }
