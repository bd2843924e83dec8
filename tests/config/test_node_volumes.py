"""`storage.cache_volumes`: Qumulo's own per-type EBS layout by default, explicit config for any other type.

Expected numbers are Qumulo's, written here with their source: aws-terraform-cnq 6.3, modules/qcluster
variables.tf `ec2_map` (i4i.8xlarge: wcacheSlots 16, wcacheSize 16, wcacheIOPSgp3 3000, wcacheTput 125;
m6i.8xlarge: wcacheSlots 14, wcacheIOPSgp3 3571, wcacheTput 149, rcacheSlots 4; every type: dkvSlots 4,
dkvSize 4) and main.tf locals (DKV 3000 IOPS / 125 MB/s; read cache 1024 GiB, 12500 IOPS, 525 MB/s).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hubspoke.cnq_boot.volumes import node_volumes
from hubspoke.config import ConfigError, load
from tests.conftest import minimal, write_config


def _load(tmp_path: Path, storage: dict[str, Any]) -> Any:
    data = minimal()
    data["hub"]["storage"].update(storage)
    return load(write_config(tmp_path, data)).config.hub.storage


def _errors(tmp_path: Path, storage: dict[str, Any]) -> list[str]:
    data = minimal()
    data["hub"]["storage"].update(storage)
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    return [line.removeprefix(f"{path}: ") for line in str(caught.value).splitlines()]


def _sets(volumes: list[Any]) -> list[tuple[str, int, int | None, int | None]]:
    return [(v.type, v.size_gib, v.iops, v.throughput_mibps) for v in volumes]


def test_i4i_8xlarge_gets_qumulos_write_cache_and_dkv_volumes_and_no_read_cache(tmp_path: Path) -> None:
    volumes = node_volumes(_load(tmp_path, {"instance_type": "i4i.8xlarge"}))
    assert _sets(volumes[:1]) == [("gp3", 256, None, None)], "Qumulo's 256 GiB gp3 boot drive"
    assert _sets(volumes[1:17]) == [("gp3", 16, 3000, 125)] * 16
    assert _sets(volumes[17:]) == [("gp3", 4, 3000, 125)] * 4
    assert [v.device for v in volumes][:3] == ["/dev/sda1", "/dev/xvdb", "/dev/xvdc"]
    assert volumes[-1].device == "/dev/xvdu"


def test_a_type_without_instance_store_also_gets_read_cache_volumes(tmp_path: Path) -> None:
    volumes = node_volumes(_load(tmp_path, {"instance_type": "m6i.8xlarge"}))
    assert (
        _sets(volumes[1:])
        == [("gp3", 16, 3571, 149)] * 14 + [("gp3", 4, 3000, 125)] * 4 + [("gp3", 1024, 12500, 525)] * 4
    )


def test_a_type_qumulo_lists_no_layout_for_needs_explicit_volumes(tmp_path: Path) -> None:
    found = _errors(tmp_path, {"instance_type": "m7i.8xlarge"})
    assert len(found) == 1 and found[0].startswith("hub.storage.cache_volumes: required for m7i.8xlarge")
    storage = _load(tmp_path, {"instance_type": "m7i.8xlarge",
                               "cache_volumes": {"write_cache": {"count": 14, "size_gib": 16, "type": "io2", "iops": 600}}})  # fmt: skip
    assert _sets(node_volumes(storage)[1:]) == [("io2", 16, 600, None)] * 14 + [("gp3", 4, 3000, 125)] * 4


@pytest.mark.parametrize(
    ("write_cache", "words"),
    [
        ({"count": 4, "size_gib": 16, "type": "gp2", "iops": 3000}, "gp2 takes neither iops nor throughput"),
        ({"count": 4, "size_gib": 16, "type": "io2"}, "io2 needs iops"),
        ({"count": 4, "size_gib": 16, "type": "gp3", "iops": 2000}, "gp3 takes 3000 to 16000 iops"),
        ({"count": 4, "size_gib": 16, "throughput_mibps": 1001}, "less than or equal to 1000"),
    ],
)
def test_volume_performance_must_fit_its_type(
    tmp_path: Path, write_cache: dict[str, Any], words: str
) -> None:
    """EBS volume types: gp3 3000-16000 IOPS and 125-1000 MiB/s; io2 provisioned IOPS; gp2 neither."""
    found = _errors(tmp_path, {"cache_volumes": {"write_cache": write_cache}})
    assert any(f.startswith("hub.storage.cache_volumes.write_cache") and words in f for f in found), found
