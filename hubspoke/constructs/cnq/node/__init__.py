"""The CNQ node's first-boot script (boot.sh beside this file) rendered from config; no CDK here.

The rendered text depends only on config-derived names, never on a release, an asset hash or another
stack's output: CloudFormation stops and starts an instance whose UserData changes, so a script that
changed with the Qumulo Core version would stop every node at once on an unrelated deploy.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from hubspoke.mtu import render_peer_mtu_pin

TEMPLATE = Path(__file__).with_name("boot.sh")
# Markers the boot script prints; the runbook and the provisioner's messages point at them.
INSTALLED_MARKER = "HUBSPOKE-CNQ-INSTALLED"
FAILED_MARKER = "HUBSPOKE-CNQ-INSTALL-FAILED"


def render_boot_script(
    *, region: str, install_parameter: str, log_group: str, peer_mtu_path: str, ebs_volumes: int
) -> str:
    """boot.sh with the Region, the install parameter, the log group, the EBS volumes to wait for (boot
    volume included) and the MTU pin filled in."""
    values = {
        "@REGION@": shlex.quote(region),
        "@EBS_VOLUMES@": str(int(ebs_volumes)),
        "@INSTALL_PARAMETER@": shlex.quote(install_parameter),
        "@LOG_GROUP@": shlex.quote(log_group),
        "@PIN_SCRIPT@": render_peer_mtu_pin(peer_mtu_path, region).rstrip("\n"),
    }
    text = TEMPLATE.read_text()
    for marker, value in values.items():
        if text.count(marker) != 1:
            raise ValueError(f"{TEMPLATE} must contain {marker} exactly once")
        text = text.replace(marker, value)
    return text
