"""The training namespace and the Region's shared volumes (dataset, checkpoints) as Kubernetes manifests.

Both volumes are static NFS PersistentVolumes on the Region's own Cloud Native Qumulo cluster, each
bound to exactly one claim through claimRef/volumeName, so no default StorageClass can provision
something else in their place. The dataset volume is read-only in itself (a sealed version is never
written through it); the checkpoint volume is read-write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hubspoke.config.schema import RegionConfig
from hubspoke.k8s.names import (
    CHECKPOINT_CLAIM,
    DATASET_CLAIM,
    NAMESPACE,
    checkpoint_volume_name,
    dataset_volume_name,
)

Manifest = dict[str, Any]

PART_OF = {"app.kubernetes.io/part-of": "hubspoke"}

# Mount options for streaming shards and FSDP checkpoint bursts:
# - nfsvers=3: what CNQ's group opens (2049, rpcbind 111: cnq/infrastructure.py); stateless, so a floating
#   IP's move to another node is invisible to the client.
# - nconnect=16, Linux's maximum: one TCP flow between instances caps at 5 Gbit/s outside a placement group.
# - rsize/wsize=1 MiB, Linux's maximum: fewer RPCs; a server that caps lower negotiates down.
# - hard, timeo=600, retrans=2: soft returns EIO (a crashed job, a torn checkpoint); hard resumes once the IP
#   moves.
# - noatime: reads make no attribute writes (the spoke's portal is read-only).
MOUNT_OPTIONS: tuple[str, ...] = (
    "nfsvers=3",
    "proto=tcp",
    "nconnect=16",
    "rsize=1048576",
    "wsize=1048576",
    "hard",
    "timeo=600",
    "retrans=2",
    "noatime",
)


# nolock keeps NFSv3 locks on the client (nfs(5)): the groups leave NLM's ports closed
# (cnq/infrastructure.py), so a server lock would hang; nothing locks the read-only dataset.
DATASET_MOUNT_OPTIONS: tuple[str, ...] = (*MOUNT_OPTIONS, "nolock")


def namespace() -> Manifest:
    """The namespace every hubspoke workload runs in."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": dict(PART_OF)},
    }


def _server(floating_ips: Sequence[str], index: int) -> str:
    if not floating_ips:
        raise ValueError("the Region's CNQ has no floating IPs; the volumes have nothing to mount")
    # Floating IPs move to a surviving node on failure, so one address is not a single point of failure;
    # putting the two volumes on different addresses spreads reads and checkpoint writes over two nodes.
    return floating_ips[index % len(floating_ips)]


def _volume(
    *,
    name: str,
    claim: str,
    size: str,
    server: str,
    path: str,
    volume: str,
    region: RegionConfig,
    options: tuple[str, ...] = MOUNT_OPTIONS,
    read_only: bool = False,
) -> Manifest:
    nfs: dict[str, Any] = {"server": server, "path": path}
    if read_only:
        # readOnly makes the kubelet mount it ro for every pod (Kubernetes API reference, core/v1
        # NFSVolumeSource); access modes "do not enforce write protection" (Kubernetes docs, "Persistent
        # Volumes", Access Modes).
        nfs["readOnly"] = True
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "labels": {**PART_OF, "hubspoke/volume": volume, "hubspoke/region": region.region},
        },
        "spec": {
            "capacity": {"storage": size},
            "accessModes": _access_modes(read_only),
            # The data lives in CNQ; deleting a claim must never ask Kubernetes to scrub it.
            "persistentVolumeReclaimPolicy": "Retain",
            # Empty class: a static volume, never dynamically provisioned by a default StorageClass.
            "storageClassName": "",
            "volumeMode": "Filesystem",
            "mountOptions": list(options),
            "nfs": nfs,
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": NAMESPACE,
                "name": claim,
            },
        },
    }


def _access_modes(read_only: bool) -> list[str]:
    # ReadOnlyMany: "the volume can be mounted as read-only by many nodes" (Kubernetes docs, "Persistent Volumes",
    # Access Modes); a claim binds only to a volume offering every mode it asks for, so both say the same.
    return ["ReadOnlyMany"] if read_only else ["ReadWriteMany"]


def _claim(*, name: str, volume_name: str, size: str, volume: str, read_only: bool = False) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {**PART_OF, "hubspoke/volume": volume}},
        "spec": {
            "accessModes": _access_modes(read_only),
            "storageClassName": "",
            "volumeName": volume_name,
            "resources": {"requests": {"storage": size}},
        },
    }


def dataset_volume(region: RegionConfig, *, floating_ips: Sequence[str]) -> Manifest:
    """The PersistentVolume of the dataset as the Region's CNQ serves it (hub: the data; spoke: the cache)."""
    return _volume(
        name=dataset_volume_name(region),
        claim=DATASET_CLAIM,
        size=region.compute.dataset_volume_size,
        server=_server(floating_ips, 0),
        path=region.storage.dataset_path,
        volume="dataset",
        region=region,
        options=DATASET_MOUNT_OPTIONS,
        read_only=True,
    )


def dataset_claim(region: RegionConfig) -> Manifest:
    return _claim(
        name=DATASET_CLAIM,
        volume_name=dataset_volume_name(region),
        size=region.compute.dataset_volume_size,
        volume="dataset",
        read_only=True,
    )


def checkpoint_volume(region: RegionConfig, *, floating_ips: Sequence[str]) -> Manifest:
    """Region-local checkpoints: an export on the local CNQ outside the portal, so writes stay in the Region.

    Why not EBS or FSx: every FSDP rank on every node writes its shard into one directory, so the volume
    must be ReadWriteMany (EBS is single-node); the local CNQ is already in the accelerator AZ and paid
    for, while FSx for Lustre would add a filesystem, a CSI driver and a second bill.
    """
    return _volume(
        name=checkpoint_volume_name(region),
        claim=CHECKPOINT_CLAIM,
        size=region.compute.checkpoint_volume_size,
        server=_server(floating_ips, 1),
        path=region.storage.checkpoint_path,
        volume="checkpoints",
        region=region,
    )


def checkpoint_claim(region: RegionConfig) -> Manifest:
    return _claim(
        name=CHECKPOINT_CLAIM,
        volume_name=checkpoint_volume_name(region),
        size=region.compute.checkpoint_volume_size,
        volume="checkpoints",
    )


def storage_manifests(region: RegionConfig, *, floating_ips: Sequence[str]) -> list[Manifest]:
    """Everything the Compute stack applies before any job: namespace, both volumes and their claims."""
    return [
        namespace(),
        dataset_volume(region, floating_ips=floating_ips),
        dataset_claim(region),
        checkpoint_volume(region, floating_ips=floating_ips),
        checkpoint_claim(region),
    ]
