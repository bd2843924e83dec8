"""on_create.sh, rendered per Region and run against stub system commands in a scratch root."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.constructs.hyperpod.lifecycle import render_on_create, write_lifecycle_scripts
from hubspoke.mtu import INTER_REGION_PEERING_MTU, peer_mtu, peer_mtu_parameter_value

STUB = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$HUBSPOKE_CALLS"
case "$(basename "$0") $*" in
  "ip -4 route show default") [ -n "${STUB_NO_DEFAULT_ROUTE:-}" ] || echo "default via 10.9.0.1 dev ens5 proto dhcp";;
  "mountpoint -q"*) exit "${STUB_MOUNTPOINT_RC:-0}";;
  "systemctl is-active --quiet"*) exit 0;;
  "aws ssm get-parameters-by-path"*) printf '%s\n' "${STUB_PUBLISHED:-}";;
esac
exit 0
"""


def _config(**overrides: object) -> HubSpokeConfig:
    data: dict[str, object] = {
        "environment": "dev",
        "account": "123456789012",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16", "secondary_cidrs": ["100.64.0.0/20"]},
        "spokes": [
            {"region": "us-west-2", "cidr": "10.20.0.0/16"},
            {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
        ],
    }
    data.update(overrides)
    return HubSpokeConfig.model_validate(data)


def _run(tmp_path: Path, script: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for name in ("ip", "systemctl", "mountpoint", "mount", "modprobe", "sysctl", "udevadm", "aws"):
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    root = tmp_path / "root"
    (root / "opt" / "sagemaker").mkdir(parents=True, exist_ok=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "var" / "lib" / "containerd").mkdir(parents=True, exist_ok=True)
    (root / "var" / "lib" / "containerd" / "layer").write_text("image data")
    calls = tmp_path / "calls"
    path = tmp_path / "on_create.sh"
    path.write_text(script)
    full_env = {
        **os.environ,
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "HUBSPOKE_ROOT": str(root),
        "HUBSPOKE_CALLS": str(calls),
        **env,
    }
    done = subprocess.run(
        ["bash", str(path)], capture_output=True, text=True, env=full_env, timeout=60, check=False
    )
    return done, calls.read_text().splitlines() if calls.exists() else []


def _published(config: HubSpokeConfig) -> str:
    """What the spokes' Link stacks publish for the hub, as `aws ssm ... --output text` prints it."""
    return "\t".join(peer_mtu_parameter_value(c, peer_mtu(config)) for c in config.peer_cidrs(config.hub))


def _pinned(calls: list[str]) -> dict[str, int]:
    found = [re.fullmatch(r"ip route replace (\S+) via 10\.9\.0\.1 dev ens5 mtu (\d+)", c) for c in calls]
    return {m.group(1): int(m.group(2)) for m in found if m}


@pytest.mark.parametrize("code", ["us-east-2", "us-west-2", "eu-west-1"])
def test_rendered_script_is_valid_bash(tmp_path: Path, code: str) -> None:
    config = _config()
    script = write_lifecycle_scripts(tmp_path, config, config.region_config(code)) / "on_create.sh"
    assert os.access(script, os.X_OK)
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)


@pytest.mark.parametrize("code", ["us-east-2", "us-west-2", "eu-west-1"])
def test_pins_the_peering_mtu_on_every_peer_cidr_and_nothing_above(tmp_path: Path, code: str) -> None:
    config = _config()
    region = config.region_config(code)
    done, calls = _run(tmp_path, render_on_create(config, region), STUB_PUBLISHED=_published(config))
    assert done.returncode == 0, done.stderr
    pinned = _pinned(calls)
    assert set(pinned) == set(config.peer_cidrs(region))
    assert all(mtu == INTER_REGION_PEERING_MTU for mtu in pinned.values())
    assert not [
        c for c in calls if re.search(r"\bmtu (\d+)", c) and int(re.search(r"\bmtu (\d+)", c)[1]) > 8500
    ]  # type: ignore[index]


def test_lower_configured_mtu_is_what_gets_pinned(tmp_path: Path) -> None:
    config = _config(inter_region_mtu=1500)
    done, calls = _run(tmp_path, render_on_create(config, config.hub), STUB_PUBLISHED=_published(config))
    assert done.returncode == 0, done.stderr
    assert set(_pinned(calls).values()) == {1500}


def test_moves_container_data_to_the_secondary_volume_and_restarts_services(tmp_path: Path) -> None:
    config = _config()
    script = render_on_create(config, config.spoke("us-west-2"))
    done, calls = _run(tmp_path, script)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "root"
    assert (root / "opt/sagemaker/containerd/layer").read_text() == "image data"
    fstab = (root / "etc/fstab").read_text().splitlines()
    assert fstab == [
        "/opt/sagemaker/containerd /var/lib/containerd none bind 0 0",
        "/opt/sagemaker/kubelet /var/lib/kubelet none bind 0 0",
    ]
    stops = [c for c in calls if c.startswith("systemctl stop")]
    starts = [c for c in calls if c.startswith("systemctl start")]
    assert stops and calls.index(stops[-1]) < calls.index(
        next(c for c in calls if c.startswith("mount --bind"))
    )
    assert {c.split()[-1] for c in starts} == {c.split()[-1] for c in stops} == {"kubelet", "containerd"}
    # Second run: nothing moved twice.
    again, _ = _run(tmp_path, script)
    assert again.returncode == 0, again.stderr
    assert (root / "etc/fstab").read_text().splitlines() == fstab


def test_boot_unit_repins_the_same_routes(tmp_path: Path) -> None:
    config = _config()
    region = config.spoke("eu-west-1")
    done, _ = _run(tmp_path, render_on_create(config, region))
    assert done.returncode == 0, done.stderr
    root = tmp_path / "root"
    unit = (root / "etc/systemd/system/hubspoke-peer-mtu.service").read_text()
    assert "ExecStart=/usr/local/sbin/hubspoke-peer-mtu" in unit
    # Re-run periodically too: on the hub, spokes added after the node was created get pinned.
    timer = (root / "etc/systemd/system/hubspoke-peer-mtu.timer").read_text()
    assert "OnUnitActiveSec=5min" in timer
    rerun, calls = _run(tmp_path, (root / "usr/local/sbin/hubspoke-peer-mtu").read_text())
    assert rerun.returncode == 0, rerun.stderr
    assert set(_pinned(calls)) >= set(config.peer_cidrs(region))


def test_nfs_client_is_tuned(tmp_path: Path) -> None:
    config = _config()
    done, calls = _run(tmp_path, render_on_create(config, config.hub), STUB_PUBLISHED=_published(config))
    assert done.returncode == 0, done.stderr
    sysctl = (tmp_path / "root/etc/sysctl.d/90-hubspoke-nfs.conf").read_text()
    assert "sunrpc.tcp_max_slot_table_entries = 128" in sysctl
    assert "sysctl --system" in calls


def test_no_default_route_fails_with_a_clear_log(tmp_path: Path) -> None:
    config = _config()
    done, _ = _run(tmp_path, render_on_create(config, config.hub), STUB_NO_DEFAULT_ROUTE="1")
    assert done.returncode != 0
    assert "no default IPv4 route" in done.stderr
    assert "ERROR: pinning the peer route MTU failed" in done.stderr


def test_missing_secondary_volume_fails_before_touching_anything(tmp_path: Path) -> None:
    config = _config()
    done, calls = _run(tmp_path, render_on_create(config, config.hub), STUB_MOUNTPOINT_RC="1")
    assert done.returncode != 0
    assert "EBS volume" in done.stderr
    assert not [c for c in calls if c.startswith(("systemctl stop", "mount --bind", "ip route replace"))]
