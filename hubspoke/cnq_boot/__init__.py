"""The CNQ node's first-boot script (boot.sh beside this file) rendered from config; no CDK here.

The rendered text depends only on config-derived names, never on a release, an asset hash or another
stack's output: CloudFormation stops and starts an instance whose UserData changes, so a script that
changed with the Qumulo Core version would stop every node at once on an unrelated deploy. For the same
reason boot.sh's own comments still name this package's former path (hubspoke/constructs/cnq/node/).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from hubspoke.cnq_boot.volumes import node_volumes
from hubspoke.config.cnq_volumes import cache_volumes
from hubspoke.config.schema import StorageConfig
from hubspoke.mtu import render_peer_mtu_pin
from hubspoke.names import cnq_parameter_prefix

TEMPLATE = Path(__file__).with_name("boot.sh")
# The step that keeps the floating IPs out of the OS's network config (issue 22 item 7).
NETWORK = Path(__file__).with_name("network.sh")
# Qumulo's earlier CNQ-on-AWS node script installs Qumulo Core with this override, 1 TiB (its node user
# data: export QUMULO_ATLAS_OVERRIDES='{"read_cache_remote_disk_threshold_bytes":1099511627776}'), the size
# of the EBS read-cache volumes its layout gives types without instance store (m6i, config/cnq_volumes.py
# READ_CACHE). ASSUMED from the name and that match: EBS disks of at least this size serve as read cache.
# It is set only on layouts that have such volumes, where it can change anything.
READ_CACHE_OVERRIDE = (
    "export QUMULO_ATLAS_OVERRIDES='{\"read_cache_remote_disk_threshold_bytes\":1099511627776}'"
)
# Markers the boot script prints; the runbook and the provisioner's messages point at them.
INSTALLED_MARKER = "HUBSPOKE-CNQ-INSTALLED"
FAILED_MARKER = "HUBSPOKE-CNQ-INSTALL-FAILED"


def render_boot_script(
    *,
    region: str,
    install_parameter: str,
    log_group: str,
    peer_mtu_path: str,
    ebs_volumes: int,
    read_cache_volumes: int = 0,
) -> str:
    """boot.sh with the Region, the install parameter, the log group, the EBS volumes to wait for (boot
    volume included), the MTU pin, network.sh and the read-cache override (where there is EBS read cache)
    filled in."""
    values = {
        "@REGION@": shlex.quote(region),
        "@EBS_VOLUMES@": str(int(ebs_volumes)),
        "@INSTALL_PARAMETER@": shlex.quote(install_parameter),
        "@LOG_GROUP@": shlex.quote(log_group),
        "@PIN_SCRIPT@": render_peer_mtu_pin(peer_mtu_path, region).rstrip("\n"),
        "@NETWORK@": "\n" + NETWORK.read_text().rstrip("\n") + "\n",
        # The marker's whole line goes when there is nothing to set.
        "@ATLAS_OVERRIDES@\n": f"{READ_CACHE_OVERRIDE}\n" if read_cache_volumes else "",
    }
    text = TEMPLATE.read_text()
    for marker, value in values.items():
        if text.count(marker) != 1:
            raise ValueError(f"{TEMPLATE} must contain {marker} exactly once")
        text = text.replace(marker, value)
    return text


def install_names(environment: str, cluster: str) -> dict[str, str]:
    """The SSM parameter naming the release and the install log group, as literal names: the user data must
    not depend on anything but config."""
    prefix = cnq_parameter_prefix(environment, cluster)
    return {"install_parameter": f"{prefix}/qumulo-core", "log_group": f"{prefix}/install"}


def node_boot_script(
    storage: StorageConfig, *, region: str, environment: str, cluster: str, peer_mtu_path: str
) -> str:
    """The user data of every node of `cluster`, from config alone: what the Storage template gives the nodes
    and what `hubspoke preflight` compares with the running ones."""
    return render_boot_script(
        region=region,
        peer_mtu_path=peer_mtu_path,
        ebs_volumes=len(node_volumes(storage)),
        read_cache_volumes=cache_volumes(storage).read_cache.count,
        **install_names(environment, cluster),
    )
