"""Qumulo's per-instance-type EBS layout for CNQ nodes on AWS, the default of `storage.cache_volumes`.

Every public Qumulo deployment gives each node dedicated block volumes besides its boot disk, and its
node script waits for them before installing (qumulo-terraform-gcp @ a30b449c: qcluster main.tf
total_disk_count, user-data.py wait_for_block_devices). On AWS, Qumulo's CNQ Terraform 6.3
(aws-terraform-cnq, "Version 6.3": modules/qcluster variables.tf `ec2_map`, main.tf locals
wcache_ebs_block_devices, dkv_ebs_block_devices, rcache_ebs_block_devices) attaches to every node:
- `wcacheSlots` write-cache volumes of `wcacheSize` GiB, gp3 by default at `wcacheIOPSgp3` / `wcacheTput`;
- `dkvSlots` (4) DKV volumes of `dkvSize` (4) GiB, gp3 at 3000 IOPS and 125 MB/s;
- `rcacheSlots` read-cache volumes of 1024 GiB at 12500 IOPS and 525 MB/s, only for types without instance
  store (m6i): on i4i, i7i, i7ie, i3en and m6idn the read cache is the instance-store NVMe (rcacheSlots 0).
The numbers below are that map's, for the families it lists; any other type needs explicit config.
"""

from __future__ import annotations

from hubspoke.config.cnq import CacheVolumesConfig, StorageConfig, VolumeSetConfig

# instance type: (wcacheSlots, wcacheSize GiB, wcacheIOPSgp3, wcacheTput MB/s, rcacheSlots)
QUMULO_EC2_MAP: dict[str, tuple[int, int, int, int, int]] = {
    "m6idn.xlarge": (6, 16, 3000, 125, 0), "m6idn.2xlarge": (10, 16, 3000, 125, 0),
    "m6idn.4xlarge": (18, 16, 3472, 145, 0), "m6idn.8xlarge": (18, 16, 6944, 289, 0),
    "m6idn.12xlarge": (18, 24, 10417, 434, 0), "m6idn.16xlarge": (18, 32, 13889, 579, 0),
    "m6idn.24xlarge": (18, 32, 16000, 868, 0), "m6idn.32xlarge": (18, 32, 16000, 1000, 0),
    "i4i.xlarge": (3, 16, 3000, 125, 0), "i4i.2xlarge": (4, 16, 3000, 125, 0),
    "i4i.4xlarge": (8, 16, 3000, 125, 0), "i4i.8xlarge": (16, 16, 3000, 125, 0),
    "i4i.12xlarge": (18, 16, 4167, 174, 0), "i4i.16xlarge": (18, 16, 5556, 231, 0),
    "i4i.24xlarge": (16, 24, 9375, 391, 0), "i4i.32xlarge": (14, 32, 14286, 596, 0),
    "i3en.xlarge": (3, 16, 3000, 125, 0), "i3en.2xlarge": (4, 16, 3000, 125, 0),
    "i3en.3xlarge": (6, 16, 3000, 125, 0), "i3en.6xlarge": (8, 16, 3000, 125, 0),
    "i3en.12xlarge": (16, 16, 3000, 125, 0), "i3en.24xlarge": (18, 16, 5728, 220, 0),
    "i7ie.xlarge": (3, 16, 3000, 125, 0), "i7ie.2xlarge": (4, 16, 3000, 125, 0),
    "i7ie.3xlarge": (6, 16, 3000, 125, 0), "i7ie.6xlarge": (12, 16, 3000, 125, 0),
    "i7ie.12xlarge": (24, 16, 3000, 125, 0), "i7ie.18xlarge": (36, 16, 3000, 125, 0),
    "i7ie.24xlarge": (48, 16, 3000, 125, 0), "i7ie.48xlarge": (96, 16, 3000, 125, 0),
    "m6i.xlarge": (3, 16, 3000, 125, 1), "m6i.2xlarge": (5, 16, 3000, 125, 1),
    "m6i.4xlarge": (9, 16, 3000, 125, 2), "m6i.8xlarge": (14, 16, 3571, 149, 4),
    "m6i.12xlarge": (12, 24, 6250, 260, 6), "m6i.16xlarge": (10, 32, 10000, 417, 8),
    "i7i.xlarge": (3, 16, 3000, 125, 0), "i7i.2xlarge": (4, 16, 3000, 125, 0),
    "i7i.4xlarge": (8, 16, 3000, 125, 0), "i7i.8xlarge": (16, 16, 3000, 125, 0),
    "i7i.12xlarge": (18, 16, 4167, 174, 0), "i7i.16xlarge": (18, 16, 5556, 231, 0),
    "i7i.24xlarge": (16, 24, 9375, 391, 0),
}  # fmt: skip
# Qumulo's read-cache volumes: 1024 GiB, 12500 IOPS, 525 MB/s (rcache_ebs_block_devices, read_cache_*).
READ_CACHE = (1024, 12500, 525)


def qumulo_layout(instance_type: str) -> CacheVolumesConfig | None:
    """Qumulo's own volumes for `instance_type`, or None when its map has no entry for it."""
    entry = QUMULO_EC2_MAP.get(instance_type)
    if entry is None:
        return None
    slots, size, iops, throughput, read_slots = entry
    size_r, iops_r, throughput_r = READ_CACHE
    return CacheVolumesConfig(
        write_cache=VolumeSetConfig(count=slots, size_gib=size, iops=iops, throughput_mibps=throughput),
        read_cache=VolumeSetConfig(
            count=read_slots, size_gib=size_r, iops=iops_r, throughput_mibps=throughput_r
        ),
    )


def cache_volumes(storage: StorageConfig) -> CacheVolumesConfig:
    """The node volumes the config asks for: explicit, else Qumulo's layout (validation refused neither)."""
    layout = storage.cache_volumes or qumulo_layout(storage.instance_type)
    if layout is None:
        raise ValueError(
            f"storage.cache_volumes is required for {storage.instance_type} (hubspoke.config.schema, RegionConfig)"
        )
    return layout
