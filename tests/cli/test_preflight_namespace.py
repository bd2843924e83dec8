"""Preflight's row for the namespace the workloads left: the next Compute deploy deletes `training` and what it holds.

Sources: commit 95314a1 moved every workload from namespace `training` to `hyperpod-training`; aws_cdk.aws_eks
KubernetesManifestProps.prune (default true): a resource removed from a manifest is deleted by `kubectl apply
--prune`; Kubernetes docs, "Namespaces": deleting a namespace deletes everything in it. EKS DescribeCluster answers
ResourceNotFoundException for a cluster that does not exist (botocore eks 2017-11-01 model). The operator's way to
look is `kubectl get jobs,pods,secrets -n training`, written here as the runbook would give it.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from moto import mock_aws

from hubspoke.cli.checks import session_clients
from hubspoke.cli.preflight.namespace import check_old_namespace
from hubspoke.config import HubSpokeConfig
from tests.cli.preflight_world import Unsupported, World, isolate_from_real_aws, rows_of, run_checks
from tests.fakes.kube_api import FakeKubeApi, pinned_kubectl_dir
from tests.fakes.tls import loopback_certificate

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-west-2"
CLUSTER = "hubspoke-dev-us-west-2"  # docs/runbooks/compute.md names dev's spoke cluster so
LOOK = "kubectl get jobs,pods,secrets -n training"


@pytest.fixture
def eks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    isolate_from_real_aws(monkeypatch)
    with mock_aws():
        yield session_clients()("eks", REGION)


def _cluster(eks: Any) -> dict[str, Any]:
    eks.create_cluster(
        name=CLUSTER,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    return dict(eks.describe_cluster(name=CLUSTER)["cluster"])


@pytest.fixture(autouse=True)
def _pinned_kubectl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{pinned_kubectl_dir()}{os.pathsep}{os.environ.get('PATH', '')}")


def _kubeconfig(path: Path, *, arn: str, server: str, token: str) -> Path:
    # kubectl sends credentials to https servers only (client-go tools/clientcmd/client_config.go).
    ca = base64.b64encode(loopback_certificate("fake-kube-apiserver").cert_pem).decode()
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": arn, "cluster": {"server": server, "certificate-authority-data": ca}}],
                "users": [{"name": arn, "user": {"token": token}}],
                "contexts": [{"name": arn, "context": {"cluster": arn, "user": arn}}],
            }
        )
    )
    return path


def _object(kind: str, name: str, namespace: str) -> dict[str, Any]:
    api = "batch/v1" if kind == "Job" else "v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}}


def test_no_cluster_yet_passes(eks: Any, dev_config: HubSpokeConfig) -> None:
    row = check_old_namespace(eks, config=dev_config, region=dev_config.region_config(REGION), kubeconfig=[])
    assert row.status == "pass" and "no cluster" in row.detail


def test_a_cluster_it_cannot_read_is_a_warning_with_the_command_to_look(
    eks: Any, dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    _cluster(eks)
    row = check_old_namespace(
        eks, config=dev_config, region=dev_config.region_config(REGION), kubeconfig=[tmp_path / "none"]
    )
    assert row.status == "warn"
    assert "deletes namespace training" in row.detail and "no kubeconfig file" in row.detail
    assert LOOK in row.fix


def test_what_training_holds_is_named_and_an_empty_namespace_passes(
    eks: Any, dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    cluster = _cluster(eks)
    held = [
        _object("Job", "finetune", "training"),
        _object("Pod", "finetune-abc", "training"),
        _object("Secret", "hf-token", "training"),
        _object("Secret", "prewarm-login", "training"),
        _object("Pod", "worker-0", "hyperpod-training"),  # the new namespace: not counted
    ]
    region = dev_config.region_config(REGION)
    with FakeKubeApi(namespaced=held) as fake:
        path = _kubeconfig(tmp_path / "config", arn=cluster["arn"], server=fake.url, token=fake.token)
        row = check_old_namespace(eks, config=dev_config, region=region, kubeconfig=[path])
        assert row.status == "warn"
        assert row.detail.endswith("it holds 1 jobs, 1 pods, 2 secrets") and LOOK in row.fix
        fake.namespaced = [held[-1]]
        row = check_old_namespace(eks, config=dev_config, region=region, kubeconfig=[path])
        assert row.status == "pass" and "holds no jobs, pods or secrets" in row.detail


def test_preflight_runs_the_row_for_every_region_with_compute(world: World) -> None:
    """Declared like the other rows: one per Region with compute, in preflight's output; dev's spoke cluster
    exists and the test has no kubeconfig, so that Region's row is the plain warning."""
    world.deployed_dev()
    clusters = world.clients("eks", REGION)
    if CLUSTER not in clusters.list_clusters()["clusters"]:
        _cluster(clusters)
    results = run_checks(ROOT / "config" / "dev.yaml", Unsupported(world.clients))
    rows = {r.region: r for r in rows_of(results, "old training namespace")}
    assert set(rows) == {"us-east-2", "us-west-2"}  # config/dev.yaml: compute in both Regions
    assert rows[REGION].status == "warn" and LOOK in rows[REGION].fix
