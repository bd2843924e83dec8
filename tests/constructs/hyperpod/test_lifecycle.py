"""on_create.sh run against stub system commands (systemctl, mountpoint, sleep, ...) in a scratch root.

File tools (cp, mv, sed, ln, find) are the machine's own: Amazon Linux ships the same coreutils and sed.
What the script must do is AWS's HyperPod EKS lifecycle script's behaviour (awslabs/awsome-distributed-training
at 0edaf15, LifecycleScripts/base-config/on_create_main.sh): wait up to 12 x 5 s for /opt/sagemaker, point
containerd's root at /opt/sagemaker/containerd/data-root (Amazon Linux 2: the `root` line of
/etc/eks/containerd/containerd-config.toml; 2023: a config on the volume and a systemd override of
ExecStart), move /var/lib/kubelet and leave a symlink, remove stale copies first.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from hubspoke.constructs.hyperpod.lifecycle import ON_CREATE, write_lifecycle_scripts

STUB = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$HUBSPOKE_CALLS"
case "$(basename "$0") $*" in
  "mountpoint -q"*)
    polls=$(( $(cat "$HUBSPOKE_CALLS.polls" 2>/dev/null || echo 0) + 1 )); echo "$polls" > "$HUBSPOKE_CALLS.polls"
    [ "$polls" -gt "${STUB_UNMOUNTED_POLLS:-0}" ] || exit 1;;
  "systemctl is-active --quiet"*) exit "${STUB_INACTIVE:-0}";;
esac
exit 0
"""
DATA_ROOT = "opt/sagemaker/containerd/data-root"
AL2_CONFIG = "etc/eks/containerd/containerd-config.toml"
DROP_IN = "etc/systemd/system/containerd.service.d/10-hubspoke-data-root.conf"


def _node(tmp_path: Path, version: str) -> Path:
    """A scratch root shaped like a fresh HyperPod node of Amazon Linux `version`."""
    root = tmp_path / "root"
    (root / "opt/sagemaker").mkdir(parents=True)
    (root / "etc").mkdir(exist_ok=True)
    (root / "etc/os-release").write_text(f'NAME="Amazon Linux"\nVERSION_ID="{version}"\n')
    (root / AL2_CONFIG).parent.mkdir(parents=True)
    (root / AL2_CONFIG).write_text('version = 2\nroot = "/var/lib/containerd"\nstate = "/run/containerd"\n')
    (root / "var/lib/containerd/io.containerd.content.v1.content").mkdir(parents=True)
    (root / "var/lib/containerd/io.containerd.content.v1.content/blob").write_text("image layer")
    (root / "var/lib/kubelet/pods").mkdir(parents=True)
    (root / "var/lib/kubelet/pods/p1").write_text("pod")
    (root / "var/lib/kubelet/.kubelet-state").write_text("hidden")
    return root


def _run(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    for name in ("systemctl", "mountpoint", "sleep", "modprobe", "sysctl", "udevadm", "ip", "mount"):
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    script = write_lifecycle_scripts(tmp_path / "asset") / ON_CREATE
    calls = tmp_path / "calls"
    calls.unlink(missing_ok=True)
    Path(f"{calls}.polls").unlink(missing_ok=True)
    full_env = {
        **os.environ,
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "HUBSPOKE_ROOT": str(tmp_path / "root"),
        "HUBSPOKE_CALLS": str(calls),
        **env,
    }
    done = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env=full_env, timeout=60, check=False
    )
    return done, calls.read_text().splitlines() if calls.exists() else []


def test_the_asset_holds_one_executable_valid_bash_script(tmp_path: Path) -> None:
    asset = write_lifecycle_scripts(tmp_path)
    assert [p.name for p in asset.iterdir()] == [ON_CREATE]
    assert os.access(asset / ON_CREATE, os.X_OK)
    subprocess.run(["bash", "-n", str(asset / ON_CREATE)], check=True, timeout=30)


@pytest.fixture(scope="module")
def al2(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], list[str]]:
    """One run on a fresh Amazon Linux 2 node (its root, the run, the stubs' calls), shared by the tests that only
    read what that run did: each would otherwise make the same node and run the script again."""
    tmp_path = tmp_path_factory.mktemp("al2")
    root = _node(tmp_path, "2")
    return (root, *_run(tmp_path))


def test_amazon_linux_2_points_containerd_at_the_volume_and_links_kubelet(
    al2: tuple[Path, subprocess.CompletedProcess[str], list[str]],
) -> None:
    root, done, calls = al2
    assert done.returncode == 0, done.stderr
    assert f'root = "/{DATA_ROOT}"' in (root / AL2_CONFIG).read_text().splitlines()
    assert (root / DATA_ROOT / "io.containerd.content.v1.content/blob").read_text() == "image layer"
    assert os.readlink(root / "var/lib/kubelet") == "/opt/sagemaker/kubelet"
    assert (root / "opt/sagemaker/kubelet/pods/p1").read_text() == "pod"
    assert (root / "opt/sagemaker/kubelet/.kubelet-state").exists(), "dot files move too"
    assert not (root / "etc/fstab").exists(), "no bind mounts in /etc/fstab: a failed one stops a reboot"
    stops = [c for c in calls if c.startswith("systemctl stop")]
    starts = [c for c in calls if c.startswith("systemctl start")]
    assert {c.split()[-1] for c in stops} == {c.split()[-1] for c in starts} == {"kubelet", "containerd"}
    assert calls.index(stops[-1]) < calls.index("systemctl daemon-reload") < calls.index(starts[0])


def test_amazon_linux_2023_gets_a_config_on_the_volume_and_an_execstart_override(tmp_path: Path) -> None:
    root = _node(tmp_path, "2023")
    done, _ = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    config = (root / "opt/sagemaker/containerd/config.toml").read_text()
    assert f'root = "/{DATA_ROOT}"' in config.splitlines()
    assert 'default_runtime_name = "nvidia"' in config, "GPU pods need the NVIDIA runtime as the default"
    drop_in = (root / DROP_IN).read_text().splitlines()
    assert drop_in[1:] == [
        "ExecStart=",
        "ExecStart=/usr/bin/containerd --config /opt/sagemaker/containerd/config.toml",
    ]
    assert (root / DATA_ROOT / "io.containerd.content.v1.content/blob").exists()


def test_stale_copies_on_the_volume_are_removed_first(tmp_path: Path) -> None:
    root = _node(tmp_path, "2")
    (root / DATA_ROOT / "stale").mkdir(parents=True)
    (root / "opt/sagemaker/kubelet/stale").mkdir(parents=True)
    done, _ = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (root / DATA_ROOT / "stale").exists()
    assert not (root / "opt/sagemaker/kubelet/stale").exists()


def test_a_second_run_moves_nothing(tmp_path: Path) -> None:
    root = _node(tmp_path, "2")
    assert _run(tmp_path)[0].returncode == 0
    (root / DATA_ROOT / "pulled-after-boot").write_text("new image")
    again, _ = _run(tmp_path)
    assert again.returncode == 0, again.stderr
    assert (root / DATA_ROOT / "pulled-after-boot").exists(), "the live data root was not replaced"
    assert "already" in again.stdout


def test_waits_for_the_volume_a_bounded_time(tmp_path: Path) -> None:
    _node(tmp_path, "2")
    done, calls = _run(tmp_path, STUB_UNMOUNTED_POLLS="2")
    assert done.returncode == 0, done.stderr
    assert calls.count("sleep 5") == 2


def test_a_volume_that_never_comes_fails_after_a_minute_touching_nothing(tmp_path: Path) -> None:
    root = _node(tmp_path, "2")
    done, calls = _run(tmp_path, STUB_UNMOUNTED_POLLS="100")
    assert done.returncode != 0
    assert "not mounted after 60 s" in done.stderr and "InstanceStorageConfigs" in done.stderr
    assert calls.count("sleep 5") == 12
    assert not [c for c in calls if c.startswith("systemctl stop")]
    assert (root / "var/lib/kubelet").is_dir() and not (root / "var/lib/kubelet").is_symlink()


def test_an_unknown_os_fails_with_a_clear_log(tmp_path: Path) -> None:
    _node(tmp_path, "22.04")
    done, _ = _run(tmp_path)
    assert done.returncode != 0
    assert "unsupported OS version '22.04'" in done.stderr


def test_no_route_mtu_is_touched_on_hyperpod_nodes(
    al2: tuple[Path, subprocess.CompletedProcess[str], list[str]],
) -> None:
    _, done, calls = al2
    assert done.returncode == 0, done.stderr
    assert not [c for c in calls if c.startswith(("ip ", "mount "))]


def test_nfs_client_is_tuned(al2: tuple[Path, subprocess.CompletedProcess[str], list[str]]) -> None:
    root, done, calls = al2
    assert done.returncode == 0, done.stderr
    sysctl = (root / "etc/sysctl.d/90-hubspoke-nfs.conf").read_text()
    assert "sunrpc.tcp_max_slot_table_entries = 128" in sysctl
    assert "sysctl --system" in calls


@pytest.mark.parametrize("missing", ["etc/os-release", AL2_CONFIG])
def test_missing_os_facts_fail_clearly(tmp_path: Path, missing: str) -> None:
    root = _node(tmp_path, "2")
    (root / missing).unlink()
    done, _ = _run(tmp_path)
    assert done.returncode != 0 and "ERROR" in done.stderr


def test_services_that_were_not_running_are_not_started(tmp_path: Path) -> None:
    _node(tmp_path, "2")
    done, calls = _run(tmp_path, STUB_INACTIVE="3")  # systemctl is-active: 3 = inactive
    assert done.returncode == 0, done.stderr
    assert not [c for c in calls if c.startswith(("systemctl stop", "systemctl start"))]


# bash CHANGES, bash-4.4-rc2 (changes since bash-4.4-beta2), item a: "Using ${a[@]} or ${a[*]} with an array
# without any assigned elements when the nounset option is enabled no longer throws an unbound variable
# error." Amazon Linux 2, which HyperPod EKS nodes may run, ships bash 4.2.46 (package bash-4.2.46-*.amzn2).
# No bash older than 4.4 is installable here (Debian bookworm has only 5.2, and no package registry ships
# one), so this is a static check of the rendered script, not a run on bash 4.2: under `set -u`, every
# expansion of a whole array must be one bash 4.2 accepts for an empty array: its length ${#a[@]}, or a
# form that only expands it when it has elements: ${a[@]+...} / ${a[@]:+...} (or a default, ${a[@]-...}).
_SAFE_ARRAY_OPERATORS = ("+", ":+", "-", ":-")


def unguarded_array_expansions(script: str) -> list[str]:
    """Each `${name[@]...}` / `${name[*]...}` outside comments that fails on an empty array under bash 4.2's -u."""
    found = []
    for line in script.splitlines():
        if line.lstrip().startswith("#"):
            continue
        i = 0
        while (start := line.find("${", i)) != -1:
            depth, end = 0, start
            for end in range(start + 1, len(line)):  # the matching brace, nested expansions included
                depth += {"{": 1, "}": -1}.get(line[end], 0)
                if depth == 0:
                    break
            body = line[start + 2 : end]
            match = re.match(r"(#?)([A-Za-z_]\w*)\[[@*]\](.*)", body, re.S)
            if match and not match.group(1) and not match.group(3).startswith(_SAFE_ARRAY_OPERATORS):
                found.append(line[start : end + 1])
            # A guarded form's inner expansion runs only when the array has elements: skip over it whole.
            i = end + 1 if match else start + 2
    return found


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ('restart=("$service" "${restart[@]}")', True),
        ('for s in "${restart[*]}"; do', True),
        ('echo "${restart[@]/x/y}"', True),
        ('restart=("$service" ${restart[@]+"${restart[@]}"})', False),
        ("n=${#restart[@]}", False),
        ('v="${BASH_SOURCE[0]}"', False),
        ('  # a comment: "${restart[@]}"', False),
    ],
)
def test_the_array_checker_knows_bash_42s_unsafe_forms(line: str, flagged: bool) -> None:
    assert bool(unguarded_array_expansions(line)) is flagged


def test_no_array_expansion_fails_on_amazon_linux_2s_bash(tmp_path: Path) -> None:
    """Static: the rendered script expands no possibly-empty array in a form bash 4.2 refuses under `set -u`."""
    script = (write_lifecycle_scripts(tmp_path) / ON_CREATE).read_text()
    assert re.search(r"^set -\w*u", script, re.M), "the check matters because the script runs with set -u"
    assert unguarded_array_expansions(script) == []
