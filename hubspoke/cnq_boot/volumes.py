"""The block devices of a CNQ node, from config: its boot volume and Qumulo's cache and DKV volumes.

One list feeds both the instances' BlockDeviceMappings and the node-shape guard, which compares it with
what the running nodes have (runtime/shape.py): a changed mapping replaces an AWS::EC2::Instance
(CloudFormation resource reference, BlockDeviceMappings "Update requires: Replacement").
"""

from __future__ import annotations

import itertools
import string
from dataclasses import asdict, dataclass
from typing import Any

from hubspoke.config.cnq_volumes import cache_volumes
from hubspoke.config.schema import StorageConfig, VolumeSetConfig

# Canonical's Ubuntu images boot from /dev/sda1. Qumulo's boot drive is 256 GiB gp3 (aws-terraform-cnq 6.3,
# q_boot_drive_size, q_boot_dkv_type): room for Qumulo Core, its logs and upgrade packages.
ROOT_DEVICE = "/dev/sda1"
ROOT_VOLUME_GIB = 256
# Qumulo names its extra EBS devices /dev/xvdb, /dev/xvdc, ... then /dev/xvdaa, ... (qcluster device_names).
_SUFFIXES = [
    *string.ascii_lowercase[1:],
    *("".join(p) for p in itertools.product("abcd", string.ascii_lowercase[:24])),
]


@dataclass(frozen=True)
class NodeVolume:
    """One EBS volume of every node; iops and throughput are None where EBS's own default applies."""

    device: str
    type: str
    size_gib: int
    iops: int | None = None
    throughput_mibps: int | None = None

    def shape(self) -> dict[str, Any]:
        """The fields the node-shape guard compares with DescribeVolumes (runtime/shape.py)."""
        return asdict(self)


def node_volumes(storage: StorageConfig) -> list[NodeVolume]:
    """The boot volume, then write cache, DKV and read cache volumes, on consecutive device names."""
    layout = cache_volumes(storage)
    sets: list[VolumeSetConfig] = [layout.write_cache, layout.dkv, layout.read_cache]
    extra = [s for s in sets for _ in range(s.count)]
    if len(extra) > len(_SUFFIXES):
        raise ValueError(f"{len(extra)} volumes per node: at most {len(_SUFFIXES)} device names")
    return [NodeVolume(ROOT_DEVICE, "gp3", ROOT_VOLUME_GIB)] + [
        NodeVolume(f"/dev/xvd{suffix}", s.type, s.size_gib, s.iops, s.throughput_mibps)
        for suffix, s in zip(_SUFFIXES, extra, strict=False)
    ]
