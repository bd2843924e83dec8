"""The namespace, dataset and checkpoint volumes: schema-valid, bound one-to-one, sized and mounted as configured."""

from __future__ import annotations

import re

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s import CHECKPOINT_CLAIM, DATASET_CLAIM, NAMESPACE, claim_names
from hubspoke.k8s.storage import storage_manifests
from tests.k8s.crd_schemas import k8s_validate

HUB_IPS = ("10.10.64.10", "10.10.64.11", "10.10.64.12")
SPOKE_IPS = ("10.20.64.10", "10.20.64.11")
TI = 2**40


def _qty(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(Gi|Ti)", value).groups()  # type: ignore[union-attr]
    return int(number) * (2**30 if unit == "Gi" else TI)


def _by_kind(manifests: list[dict], kind: str) -> list[dict]:
    return [m for m in manifests if m["kind"] == kind]


@pytest.mark.parametrize(("code", "ips"), [("us-east-2", HUB_IPS), ("us-west-2", SPOKE_IPS)])
def test_every_manifest_is_valid_kubernetes(
    dev_config: HubSpokeConfig, code: str, ips: tuple[str, ...]
) -> None:
    region = dev_config.region_config(code)
    for manifest in storage_manifests(region, floating_ips=ips):
        k8s_validate(manifest, region.compute.kubernetes_version)


def test_dataset_volume_is_50ti_read_only_retain_and_bound_to_its_claim(dev_config: HubSpokeConfig) -> None:
    region = dev_config.region_config("us-west-2")
    manifests = storage_manifests(region, floating_ips=SPOKE_IPS)
    volumes = {pv["spec"]["claimRef"]["name"]: pv for pv in _by_kind(manifests, "PersistentVolume")}
    claims = {pvc["metadata"]["name"]: pvc for pvc in _by_kind(manifests, "PersistentVolumeClaim")}
    assert set(volumes) == set(claims) == {DATASET_CLAIM, CHECKPOINT_CLAIM}

    dataset = volumes[DATASET_CLAIM]
    assert _qty(dataset["spec"]["capacity"]["storage"]) == 50 * TI
    # Read-only in the volume itself (issue 40 item 4): NFSVolumeSource.readOnly "will force the NFS export to be
    # mounted with read-only permissions" (Kubernetes API reference, core/v1), and ReadOnlyMany on both sides,
    # since a claim binds only to a volume offering the modes it asks for ("Persistent Volumes", Access Modes).
    assert dataset["spec"]["nfs"]["readOnly"] is True
    assert dataset["spec"]["accessModes"] == claims[DATASET_CLAIM]["spec"]["accessModes"] == ["ReadOnlyMany"]
    checkpoints = volumes[CHECKPOINT_CLAIM]
    assert checkpoints["spec"]["accessModes"] == ["ReadWriteMany"], "every rank writes its checkpoint shard"
    assert not checkpoints["spec"]["nfs"].get("readOnly")
    for name, pv in volumes.items():
        pvc = claims[name]
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        # Bound both ways, in the training namespace, with no StorageClass that could provision instead.
        assert pv["spec"]["claimRef"]["namespace"] == pvc["metadata"]["namespace"] == NAMESPACE
        assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
        assert pv["spec"]["storageClassName"] == pvc["spec"]["storageClassName"] == ""
        assert _qty(pvc["spec"]["resources"]["requests"]["storage"]) <= _qty(
            pv["spec"]["capacity"]["storage"]
        )
        assert set(pvc["spec"]["accessModes"]) <= set(pv["spec"]["accessModes"])


@pytest.mark.parametrize(("code", "ips"), [("us-east-2", HUB_IPS), ("us-west-2", SPOKE_IPS)])
def test_volumes_mount_the_regions_own_cnq(
    dev_config: HubSpokeConfig, code: str, ips: tuple[str, ...]
) -> None:
    region = dev_config.region_config(code)
    volumes = _by_kind(storage_manifests(region, floating_ips=ips), "PersistentVolume")
    paths = {pv["spec"]["claimRef"]["name"]: pv["spec"]["nfs"]["path"] for pv in volumes}
    assert paths == {
        DATASET_CLAIM: region.storage.dataset_path,
        CHECKPOINT_CLAIM: region.storage.checkpoint_path,
    }
    servers = [pv["spec"]["nfs"]["server"] for pv in volumes]
    assert all(server in ips for server in servers)
    assert len(set(servers)) == 2, "dataset reads and checkpoint writes should land on different CNQ nodes"


def test_single_floating_ip_serves_both_volumes(dev_config: HubSpokeConfig) -> None:
    region = dev_config.hub
    volumes = _by_kind(storage_manifests(region, floating_ips=["10.10.64.10"]), "PersistentVolume")
    assert {pv["spec"]["nfs"]["server"] for pv in volumes} == {"10.10.64.10"}
    with pytest.raises(ValueError, match="no floating IPs"):
        storage_manifests(region, floating_ips=[])


def test_mount_options_are_tuned_for_throughput(dev_config: HubSpokeConfig) -> None:
    pv = _by_kind(storage_manifests(dev_config.hub, floating_ips=HUB_IPS), "PersistentVolume")[0]
    options = dict(o.split("=", 1) if "=" in o else (o, "") for o in pv["spec"]["mountOptions"])
    assert options["nfsvers"] in {"3", "4.1"}
    assert 1 < int(options["nconnect"]) <= 16  # Linux caps nconnect at 16
    assert int(options["rsize"]) == int(options["wsize"]) == 1048576
    assert "hard" in options and "soft" not in options
    assert "noatime" in options


def test_only_the_read_only_dataset_mount_skips_nfs_locking(dev_config: HubSpokeConfig) -> None:
    """nolock keeps locks client-local (nfs(5)); the lock manager's ports are not open (hubspoke/ports.py)."""
    volumes = _by_kind(storage_manifests(dev_config.hub, floating_ips=HUB_IPS), "PersistentVolume")
    options = {pv["metadata"]["labels"]["hubspoke/volume"]: pv["spec"]["mountOptions"] for pv in volumes}
    assert "nolock" in options["dataset"]
    assert set(options["dataset"]) - set(options["checkpoints"]) == {"nolock"}, "otherwise the same tuning"


def test_checkpoint_volume_follows_config(dev_config: HubSpokeConfig) -> None:
    custom = dev_config.model_copy(
        update={
            "hub": dev_config.hub.model_copy(
                update={
                    "compute": dev_config.hub.compute.model_copy(update={"checkpoint_volume_size": "8Ti"}),
                    "storage": dev_config.hub.storage.model_copy(update={"checkpoint_path": "/ckpt"}),
                }
            )
        }
    )
    volumes = _by_kind(storage_manifests(custom.hub, floating_ips=HUB_IPS), "PersistentVolume")
    checkpoint = next(pv for pv in volumes if pv["spec"]["claimRef"]["name"] == claim_names().checkpoints)
    assert _qty(checkpoint["spec"]["capacity"]["storage"]) == 8 * TI
    assert checkpoint["spec"]["nfs"]["path"] == "/ckpt"
