"""The CNQ node's first-boot script, run by bash against stubs of the tools a stock Ubuntu node has.

Stubs record what the script asks of aws, snap, apt-get, apt-cache, systemctl, udevadm, apparmor_parser,
lsblk, curl (IMDSv2) and ip; the script writes under a scratch root (HUBSPOKE_ROOT) and its console into
a file (HUBSPOKE_CONSOLE). The node here has 21 EBS volumes (boot, 16 write cache, 4 DKV: Qumulo's layout
for i4i.8xlarge) and 2 instance-store disks; lsblk shows their NVMe models (EC2 User Guide, "Amazon EBS and
NVMe": "Amazon Elastic Block Store", "Amazon EC2 NVMe Instance Storage").
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from hubspoke.cnq_boot import render_boot_script

PACKAGE = "s3://staging/cnq/qumulo-core-install/7.10.2.1/qumulo-core.deb"
PUBLISHED = "10.10.0.0/16 8500"


@dataclass
class Node:
    """A scratch node: stub tools on PATH, a root directory, a console file and a log of every call."""

    tmp: Path

    @property
    def calls(self) -> list[str]:
        log = self.tmp / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    @property
    def console(self) -> str:
        path = self.tmp / "console"
        return path.read_text() if path.exists() else ""

    def stub(self, name: str, body: str = "") -> None:
        path = self.tmp / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> {self.tmp}/calls.log\n{body}\n')
        path.chmod(0o755)

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": f"{self.tmp / 'bin'}:/usr/bin:/bin",
            "HUBSPOKE_ROOT": str(self.tmp / "root"),
            "HUBSPOKE_CONSOLE": str(self.tmp / "console"),
            "HUBSPOKE_RETRY_DELAY": "0",
            "HUBSPOKE_DEVICE_WAIT": "0",
        }
        return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)


AWS = f"""
case "$1 $2" in
  "ssm get-parameter") echo "{PACKAGE} 7.10.2.1" ;;
  "ssm get-parameters-by-path") echo "{PUBLISHED}" ;;
  "s3 cp") touch "${{@: -1}}" ;;
esac
"""


EBS, INSTANCE_STORE = "Amazon Elastic Block Store", "Amazon EC2 NVMe Instance Storage"
KERNEL = "6.8.0-1021-aws"


def lsblk(ebs: int, instance_store: int = 2) -> str:
    models = [EBS] * ebs + [INSTANCE_STORE] * instance_store
    return (
        'if [ "$*" = "--nodeps --noheadings --output MODEL" ]; then printf "%s\\n" '
        + " ".join(f'"{m}"' for m in models)
        + "; fi"
    )


@pytest.fixture
def node(tmp_path: Path) -> Node:
    n = Node(tmp_path)
    n.stub("aws", AWS)
    n.stub(
        "apt-get",
        'if [ "$4" = "-y" ] && [[ "$5" == *.deb ]]; then echo "apt-get env $QUMULO_NETWORK_MANAGED_BY_HOST" >> '
        f"{tmp_path}/calls.log; fi",
    )
    n.stub("uname", f'echo "{KERNEL}"')
    n.stub("apt-cache")  # the archive still has every package asked about
    n.stub("lsblk", lsblk(21))
    for tool in ("systemctl", "udevadm", "snap", "apparmor_parser", "netplan", "networkctl"):
        n.stub(tool)
    n.stub(
        "curl",
        'case "$*" in *api/token*) echo token ;; *meta-data/mac*) echo 0a:1b:2c:3d:4e:5f ;; *) echo i-0123 ;; esac',
    )
    n.stub("ip", 'if [ "$1 $2 $3" = "-4 route show" ]; then echo "default via 10.20.0.1 dev ens5"; fi')
    _imds_node(n)
    return n


def script() -> str:
    return render_boot_script(region="us-west-2", install_parameter="/hubspoke/dev/cnq/dev-usw2/qumulo-core",
                              log_group="/hubspoke/dev/cnq/dev-usw2/install", peer_mtu_path="/hubspoke/dev/peer-mtu/",
                              ebs_volumes=21)  # fmt: skip


APT = "apt-get -o DPkg::Lock::Timeout=600"


def test_installs_the_staged_release_host_managed_after_pinning_the_mtu(node: Node) -> None:
    """Qumulo's node script: host packages, then `apt install ./qumulo-core.deb` with QUMULO_NETWORK_MANAGED_BY_HOST."""
    result = node.run(script())
    assert result.returncode == 0, result.stderr
    calls = node.calls
    deb = str(node.tmp / "root/var/lib/hubspoke/qumulo-core.deb")
    assert f"aws s3 cp --region us-west-2 --only-show-errors {PACKAGE} {deb}" in calls
    assert f"{APT} install -y {deb}" in calls and "apt-get env true" in calls
    pin = calls.index("ip route replace 10.10.0.0/16 via 10.20.0.1 dev ens5 mtu 8500")
    assert pin < calls.index(f"{APT} install -y {deb}"), "the route MTU is pinned before Qumulo Core runs"
    assert "systemctl enable --now hubspoke-peer-mtu.timer" in calls, (
        "kept pinned across reboots and new spokes"
    )
    link = (node.tmp / "root/etc/systemd/network/05-qumulo-frontend-link-altname.link").read_text()
    assert "MACAddress=0a:1b:2c:3d:4e:5f" in link and "AlternativeName=qumulo-frontend1" in link
    assert "HUBSPOKE-CNQ-INSTALLED: Qumulo Core 7.10.2.1" in node.console
    assert not any(c.startswith("snap ") for c in calls), "the AWS CLI was already there"


def test_a_second_run_does_nothing(node: Node) -> None:
    assert node.run(script()).returncode == 0
    before = len(node.calls)
    result = node.run(script())
    assert result.returncode == 0 and "already installed" in result.stdout
    assert len(node.calls) == before


def test_a_missing_package_fails_after_bounded_retries_on_console_and_in_cloudwatch(node: Node) -> None:
    node.stub("aws", AWS.replace('touch "${@: -1}"', "exit 1"))
    result = node.run(script())
    assert result.returncode == 1
    downloads = [c for c in node.calls if c.startswith("aws s3 cp")]
    assert len(downloads) == 5, "5 attempts, as Qumulo's node script retries"
    line = f"HUBSPOKE-CNQ-INSTALL-FAILED: cannot download {PACKAGE}"
    assert line in node.console
    (put,) = [c for c in node.calls if c.startswith("aws logs put-log-events")]
    assert (
        "--log-group-name /hubspoke/dev/cnq/dev-usw2/install --log-stream-name i-0123" in put and line in put
    )
    assert not any(".deb" in c and c.startswith("apt-get install") for c in node.calls)


def test_the_cli_comes_from_the_snap_when_the_image_has_none(node: Node) -> None:
    (node.tmp / "bin" / "aws").rename(node.tmp / "aws.later")
    node.stub("snap", f"mv {node.tmp}/aws.later {node.tmp}/bin/aws")
    assert node.run(script()).returncode == 0
    assert "snap install aws-cli --classic" in node.calls


def test_an_image_without_snap_or_cli_fails_with_the_fix(node: Node) -> None:
    for tool in ("aws", "snap"):
        (node.tmp / "bin" / tool).unlink()
    result = node.run(script())
    assert result.returncode == 1
    assert "stock Canonical Ubuntu 24.04 image" in node.console


def test_the_script_names_only_config_derived_things() -> None:
    """CloudFormation stops and starts an instance whose UserData changes: the script must not follow a release."""
    text = script()
    assert "7.10.2.1" not in text and "qumulo-core.deb" in text
    assert text == script(), "rendering is deterministic"


def test_every_apt_call_waits_for_the_dpkg_lock(node: Node) -> None:
    """unattended-upgrades may hold dpkg's lock on a first boot: apt waits for it (DPkg::Lock::Timeout)."""
    assert node.run(script()).returncode == 0
    apt = [c for c in node.calls if c.startswith("apt-get ") and c != "apt-get env true"]
    assert len(apt) == 5 and all(c.startswith(APT + " ") for c in apt)


def test_qumulos_host_packages_with_the_running_kernels_tools(node: Node) -> None:
    """Qumulo's DebianNodeInitializer: jq, unzip, linux-tools-common, linux-tools-$(uname -r), systemd-container;
    chrony and ubuntu-advantage-tools removed; the host chronyd AppArmor profile disabled."""
    assert node.run(script()).returncode == 0
    calls = node.calls
    assert f"{APT} install -y jq unzip linux-tools-common systemd-container" in calls
    assert f"{APT} install -y linux-tools-{KERNEL}" in calls
    assert f"{APT} remove -y chrony ubuntu-advantage-tools" in calls
    profile = node.tmp / "root/etc/apparmor.d/usr.sbin.chronyd"
    assert (node.tmp / "root/etc/apparmor.d/disable/usr.sbin.chronyd").readlink() == profile
    assert f"apparmor_parser -R {profile}" in calls


def test_an_image_whose_kernel_tools_left_the_archive_still_installs(node: Node) -> None:
    """Ubuntu keeps only the current kernel ABI's packages in -updates/-security: a node added later on an
    older pinned image finds no linux-tools for its kernel and takes the AWS kernel's current ones."""
    node.stub("apt-cache", f'[ "$2" != "linux-tools-{KERNEL}" ]')
    result = node.run(script())
    assert result.returncode == 0, result.stderr
    assert f"{APT} install -y linux-tools-aws" in node.calls
    assert not any(c.endswith(f"install -y linux-tools-{KERNEL}") for c in node.calls)
    assert f"linux-tools-{KERNEL} is no longer in the Ubuntu archive" in result.stdout


def test_the_install_waits_for_every_ebs_volume_not_instance_store(node: Node) -> None:
    """Qumulo's node script waits for its disks before installing (user-data.py wait_for_block_devices):
    20 EBS volumes and 2 instance-store disks make 22 disks, but not the 21 EBS volumes of the mapping."""
    node.stub("lsblk", lsblk(20))
    result = node.run(script())
    assert result.returncode == 1
    assert "HUBSPOKE-CNQ-INSTALL-FAILED: only 20 of the 21 EBS volumes of this node appeared" in node.console
    assert not any(c.endswith(".deb") and " install " in c for c in node.calls)
    assert any(c.startswith("aws s3 cp") for c in node.calls), "downloaded first, as Qumulo's script does"


MAC = "0a:1b:2c:3d:4e:5f"
PRIMARY, FLOATING = "10.20.0.10", ("10.20.0.11", "10.20.0.12", "10.20.0.13")
# What cloud-init's EC2 datasource writes at first boot with apply_full_imds_network_config (default true):
# DHCP for the primary address and "all additional values (secondary addresses) ... added to the interface"
# (canonical/cloud-init @ 1dcf6d87, doc/rtd/reference/datasources/ec2.rst).
CLOUD_INIT_NETPLAN = f"""network:
  version: 2
  ethernets:
    ens5:
      match:
        macaddress: {MAC}
      set-name: ens5
      dhcp4: true
      addresses: [{", ".join(f"{a}/18" for a in FLOATING)}]
"""


def _imds_node(node: Node) -> Path:
    """The node with IMDS answering the interface's addresses, its device in sysfs and cloud-init's netplan."""
    node.stub(
        "curl",
        f'case "$*" in *api/token*) echo token ;; *local-ipv4s*) printf "%s\\n" {PRIMARY} {" ".join(FLOATING)} ;; '
        f"*subnet-ipv4-cidr-block*) echo 10.20.0.0/18 ;; *meta-data/local-ipv4*) echo {PRIMARY} ;; "
        f"*meta-data/mac*) echo {MAC} ;; *) echo i-0123 ;; esac",
    )
    root = node.tmp / "root"
    for device, mac in (("lo", "00:00:00:00:00:00"), ("ens5", MAC)):
        (root / "sys/class/net" / device).mkdir(parents=True)
        (root / "sys/class/net" / device / "address").write_text(mac + "\n")
    (root / "etc/netplan").mkdir(parents=True)
    (root / "etc/netplan/50-cloud-init.yaml").write_text(CLOUD_INIT_NETPLAN)
    return root


def test_the_os_never_owns_the_floating_ips(node: Node) -> None:
    """Issue 22 item 7. cloud-init's documented switch, in system config: "network: config: disabled" and
    "disable_network_activation: true" (canonical/cloud-init @ 0167c1b9, doc/rtd/reference/network-config.rst,
    the keys Qumulo's AWS node script writes to 99-disable-network-config.cfg), since "User data cannot change
    an instance's network configuration" (same page). Netplan keeps the primary address by DHCP on the
    interface matched by MAC (netplan YAML `match: macaddress`, `dhcp4`); the floating IPs leave the OS's
    config and the interface, before Qumulo Core installs and starts serving them."""
    root = node.tmp / "root"
    result = node.run(script())
    assert result.returncode == 0, result.stderr
    cfg = yaml.safe_load((root / "etc/cloud/cloud.cfg.d/99-hubspoke-network.cfg").read_text())
    assert cfg == {"network": {"config": "disabled"}, "disable_network_activation": True}
    assert sorted(p.name for p in (root / "etc/netplan").iterdir()) == ["50-hubspoke-primary.yaml"]
    netplan = yaml.safe_load((root / "etc/netplan/50-hubspoke-primary.yaml").read_text())
    assert netplan == {
        "network": {"version": 2, "ethernets": {"primary": {"match": {"macaddress": MAC}, "dhcp4": True}}}
    }
    rendered = "".join(p.read_text() for p in (root / "etc").rglob("*") if p.is_file())
    assert not any(a in rendered for a in FLOATING), "no floating IP in any config the OS reads at boot"
    calls = node.calls
    deleted = [c for c in calls if c.startswith("ip -4 address del")]
    assert deleted == [f"ip -4 address del {a}/18 dev ens5" for a in FLOATING], "the primary stays"
    # netplan generate(8): it "does not apply the generated configuration"; networkctl(1) reload makes
    # networkd re-read it. Both before the deletes, or a networkd restart re-adds the addresses.
    generate, reload = calls.index("netplan generate"), calls.index("networkctl reload")
    assert generate < reload < calls.index(deleted[0])
    deb = str(root / "var/lib/hubspoke/qumulo-core.deb")
    assert calls.index(deleted[-1]) < calls.index(f"{APT} install -y {deb}")


IP_WITH_STUCK_ADDRESS = f"""
case "$*" in
  "-4 route show"*) echo "default via 10.20.0.1 dev ens5" ;;
  "-4 address del {FLOATING[1]}/18 dev ens5") exit 2 ;;
  "-4 -o address show dev ens5") echo "2: ens5    inet {PRIMARY}/18 brd 10.20.63.255 scope global dynamic ens5" ;;
esac
"""


def test_a_floating_ip_already_gone_is_logged_not_fatal(node: Node) -> None:
    """`ip address del` fails on an address the reload already dropped (not in `ip -o address show`)."""
    node.stub("ip", IP_WITH_STUCK_ADDRESS)
    result = node.run(script())
    assert result.returncode == 0, result.stderr
    assert f"HUBSPOKE-CNQ: {FLOATING[1]} was not on ens5" in result.stdout
    assert "INSTALL-FAILED" not in node.console


def test_a_floating_ip_the_os_keeps_stops_the_install(node: Node) -> None:
    """A delete that fails with the address still on the interface would leave the OS answering for an
    address Qumulo moves to another node: the install stops with the reason, before Qumulo Core installs."""
    node.stub("ip", IP_WITH_STUCK_ADDRESS.replace(
        f'echo "2: ens5    inet {PRIMARY}/18', f'printf "%s\\n" "2: ens5    inet {FLOATING[1]}/18 scope global secondary ens5" "2: ens5    inet {PRIMARY}/18'))  # fmt: skip
    result = node.run(script())
    assert result.returncode == 1
    assert f"HUBSPOKE-CNQ-INSTALL-FAILED: cannot remove floating IP {FLOATING[1]} from ens5" in node.console
    assert not any(c.startswith(f"{APT} install -y") and c.endswith(".deb") for c in node.calls)


def test_a_failed_networkd_reload_stops_the_install(node: Node) -> None:
    node.stub("networkctl", "exit 1")
    result = node.run(script())
    assert result.returncode == 1
    assert "HUBSPOKE-CNQ-INSTALL-FAILED: networkctl reload failed" in node.console
    assert not [c for c in node.calls if c.startswith("ip -4 address del")]


def test_a_node_without_its_interface_fails_with_the_reason(node: Node) -> None:
    root = node.tmp / "root"
    (root / "sys/class/net/ens5/address").write_text("02:00:00:00:00:01\n")
    result = node.run(script())
    assert result.returncode == 1
    assert (
        f"HUBSPOKE-CNQ-INSTALL-FAILED: no network device has the primary interface's MAC {MAC}"
        in node.console
    )


def test_the_read_cache_override_only_where_ebs_read_cache_is() -> None:
    """Qumulo's earlier AWS node script installs with QUMULO_ATLAS_OVERRIDES=
    {"read_cache_remote_disk_threshold_bytes":1099511627776} (1 TiB); hubspoke sets it where the layout has
    EBS read-cache volumes (Qumulo's ec2_map: m6i only) and before the package install."""
    kwargs = {"region": "us-west-2", "install_parameter": "/p", "log_group": "/l", "peer_mtu_path": "/m/",
              "ebs_volumes": 21}  # fmt: skip
    line = "export QUMULO_ATLAS_OVERRIDES='{\"read_cache_remote_disk_threshold_bytes\":1099511627776}'"
    with_cache = render_boot_script(**kwargs, read_cache_volumes=4)
    assert with_cache.count(line) == 1
    assert with_cache.index(line) < with_cache.index('retry "${APT[@]}" install -y "$STATE/qumulo-core.deb"')
    assert line not in render_boot_script(**kwargs)
