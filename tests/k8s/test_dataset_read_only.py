"""No rendered pod can write the dataset: every manifest `hubspoke` renders or the Compute stack applies, walked.

Issue 40 item 4 ("Versions immutable in fact"). Two independent locks, both checked on every manifest:
- the dataset PersistentVolume is read-only in itself: `spec.nfs.readOnly: true` ("readOnly here will force the
  NFS export to be mounted with read-only permissions", Kubernetes API reference, core/v1 NFSVolumeSource);
- every pod volume naming the dataset claim says `persistentVolumeClaim.readOnly: true` ("Will force the ReadOnly
  setting in VolumeMounts", core/v1 PersistentVolumeClaimVolumeSource) and every container mounting it,
  init containers included, says `readOnly: true` (core/v1 VolumeMount: "Mounted read-only if true").
The render kinds are taken from the CLI's own registry, so a kind added later fails here until it is listed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke.cli.main import main
from hubspoke.cli.render import RENDERERS
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s import DATASET_CLAIM
from hubspoke.k8s.storage import storage_manifests

DEV = Path(__file__).resolve().parents[2] / "config" / "dev.yaml"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32
# Every render kind with the Regions it renders for and the arguments it needs beyond --config/--region/--image
# (docs/cli.md, "hubspoke render"); prewarm and the cache wait exist only in a spoke (the hub caches nothing).
BOTH, SPOKE = ("us-east-2", "us-west-2"), ("us-west-2",)
KIND_ARGS: dict[str, list[tuple[tuple[str, ...], list[str]]]] = {
    "job": [
        (BOTH, ["--kind", "pytorchjob"]),
        (BOTH, ["--kind", "hyperpod"]),
        (SPOKE, ["--kind", "hyperpod", "--wait-for-cached-fraction", "1"]),
        (SPOKE, ["--kind", "pytorchjob", "--wait-for-cached-fraction", "1"]),
    ],
    "prewarm": [(SPOKE, ["--rest-address", "10.20.64.10"])],
    "bench": [(BOTH, ["--run", "walk"])],
    "results": [(BOTH, [])],
    "export": [(BOTH, ["--bucket", "hubspoke-dev-export-example"])],
}


def _rendered(capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for kind, variants in KIND_ARGS.items():
        for regions, extra in variants:
            for region in regions:
                argv = ["render", kind, "--config", str(DEV), "--region", region, "--image", IMAGE, *extra]
                code = main(argv)
                out, err = capsys.readouterr()
                assert code == 0, err
                for doc in yaml.safe_load_all(out):
                    if doc:
                        yield " ".join(argv), doc


def _pod_specs(node: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec inside a manifest (Job, PyTorchJob, HyperPodPyTorchJob templates, a bare Pod)."""
    if isinstance(node, dict):
        if "containers" in node:
            yield node
        for value in node.values():
            yield from _pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _pod_specs(value)


def _dataset_writers(doc: dict[str, Any]) -> list[str]:
    problems = []
    for spec in _pod_specs(doc):
        names = set()
        for volume in spec.get("volumes", []):
            claim = volume.get("persistentVolumeClaim") or {}
            if claim.get("claimName") == DATASET_CLAIM:
                names.add(volume["name"])
                if claim.get("readOnly") is not True:
                    problems.append(f"volume {volume['name']} is not readOnly")
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            for mount in container.get("volumeMounts", []):
                if mount["name"] in names and mount.get("readOnly") is not True:
                    problems.append(f"container {container['name']} mounts {mount['name']} writable")
    return problems


def test_every_rendered_kind_is_walked() -> None:
    assert set(KIND_ARGS) == set(RENDERERS), "list the new render kind's arguments in KIND_ARGS"


def test_no_rendered_pod_mounts_the_dataset_writable(capsys: pytest.CaptureFixture[str]) -> None:
    walked = mounting = 0
    for where, doc in _rendered(capsys):
        walked += 1
        assert _dataset_writers(doc) == [], where
        mounting += any(
            (v.get("persistentVolumeClaim") or {}).get("claimName") == DATASET_CLAIM
            for spec in _pod_specs(doc)
            for v in spec.get("volumes", [])
        )
    # The walk saw what it claims to: the training jobs and the benchmark read the dataset claim.
    assert walked >= 10 and mounting >= 6


def test_the_walk_catches_a_writable_mount() -> None:
    """The checker itself: a pod that mounts the claim without readOnly anywhere is reported (a test that cannot
    fail is a defect)."""
    pod = {
        "kind": "Pod",
        "spec": {
            "initContainers": [{"name": "wait", "volumeMounts": [{"name": "data", "mountPath": "/d"}]}],
            "containers": [
                {"name": "main", "volumeMounts": [{"name": "data", "mountPath": "/d", "readOnly": True}]}
            ],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": DATASET_CLAIM}}],
        },
    }
    assert _dataset_writers(pod) == ["volume data is not readOnly", "container wait mounts data writable"]


@pytest.mark.parametrize("code", ["us-east-2", "us-west-2"])
def test_the_dataset_volume_the_compute_stack_applies_is_read_only(
    dev_config: HubSpokeConfig, code: str
) -> None:
    region = dev_config.region_config(code)
    (pv,) = [
        m
        for m in storage_manifests(region, floating_ips=["10.0.0.1", "10.0.0.2"])
        if m["kind"] == "PersistentVolume" and m["spec"]["claimRef"]["name"] == DATASET_CLAIM
    ]
    assert pv["spec"]["nfs"]["readOnly"] is True
    assert pv["spec"]["accessModes"] == ["ReadOnlyMany"]
