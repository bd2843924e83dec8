"""The node-shape guard: refuse an update that CloudFormation would apply to every CNQ node at once.

CloudFormation replaces an AWS::EC2::Instance whose ImageId or BlockDeviceMappings change, and an
AWS::EC2::NetworkInterface (and so its instance) whose SubnetId changes; it stops and starts an instance
whose InstanceType or UserData changes (CloudFormation resource reference, "Update requires"). Every node
shares these properties, so CloudFormation would do it to all of them in parallel: an outage, the i4i
instance-store cache lost, and for UserData not even the new script run (cloud-init runs user scripts once
per instance). Comparing with what the nodes run, not with the previous properties, lets a rollback through.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .contract import cluster_tag
from .session import ProvisioningError

_LIVE = ["pending", "running", "stopping", "stopped"]


@dataclass(frozen=True)
class NodeShape:
    """What the template asks of every node (the guard's properties)."""

    image_id: str
    instance_type: str
    user_data_sha256: str
    subnet_id: str
    block_devices: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> NodeShape:
        missing = [k for k in ("ImageId", "InstanceType", "UserDataSha256", "SubnetId", "BlockDevices")
                   if not props.get(k)]  # fmt: skip
        if missing:
            raise ProvisioningError(f"missing resource properties: {', '.join(missing)}")
        return cls(str(props["ImageId"]), str(props["InstanceType"]), str(props["UserDataSha256"]),
                   str(props["SubnetId"]), tuple(json.loads(str(props["BlockDevices"]))))  # fmt: skip


def _user_data_sha256(ec2: Any, instance_id: str) -> str:
    """sha256 of the user data the instance was launched with (DescribeInstanceAttribute userData, base64)."""
    answer = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    encoded = (answer.get("UserData") or {}).get("Value") or ""
    return hashlib.sha256(base64.b64decode(encoded)).hexdigest()


def _volumes(ec2: Any, instance: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The instance's EBS volumes by device name (DescribeInstances mappings, then DescribeVolumes)."""
    by_id = {
        m["Ebs"]["VolumeId"]: m["DeviceName"] for m in instance.get("BlockDeviceMappings") or [] if "Ebs" in m
    }
    if not by_id:
        return {}
    pages = ec2.get_paginator("describe_volumes").paginate(VolumeIds=list(by_id))
    return {by_id[v["VolumeId"]]: v for page in pages for v in page["Volumes"]}


def _volume_differences(
    wanted: tuple[Mapping[str, Any], ...], have: dict[str, Mapping[str, Any]]
) -> list[str]:
    found = []
    for device in sorted({str(w["device"]) for w in wanted} ^ set(have)):
        found.append(f"{device} {'missing' if device not in have else 'not in the template'}")
    for w in wanted:
        volume = have.get(str(w["device"]))
        if volume is None:
            continue
        pairs = [("type", w["type"], volume.get("VolumeType")), ("GiB", w["size_gib"], volume.get("Size"))]
        # EBS reports Iops and Throughput for the volume types that have them; a value the API does not
        # report, or the template leaves to EBS's default, is not compared.
        pairs += [(k, w[f], volume.get(api)) for k, f, api in (("IOPS", "iops", "Iops"),
                  ("MiB/s", "throughput_mibps", "Throughput")) if w[f] is not None and volume.get(api) is not None]  # fmt: skip
        found += [f"{w['device']} {label} {got} -> {want}" for label, want, got in pairs if got != want]
    return found


def differences(ec2: Any, instance: Mapping[str, Any], wanted: NodeShape) -> list[str]:
    """What the template would change on one running node, as '<what> <running> -> <template>'."""
    found = [
        f"{what} {have} -> {want}"
        for what, have, want in (
            ("image", instance.get("ImageId"), wanted.image_id),
            ("instance type", instance.get("InstanceType"), wanted.instance_type),
            ("subnet", instance.get("SubnetId"), wanted.subnet_id),
        )
        if have != want
    ]
    user_data = _user_data_sha256(ec2, str(instance["InstanceId"]))
    if user_data != wanted.user_data_sha256:
        found.append(f"user data sha256 {user_data[:12]} -> {wanted.user_data_sha256[:12]}")
    found += _volume_differences(wanted.block_devices, _volumes(ec2, instance))
    return found


def check_node_shape(ec2: Any, *, cluster: str, wanted: NodeShape) -> None:
    """Refuse when any running node of `cluster` differs from `wanted` in a property CloudFormation would
    apply by replacing or stopping every node."""
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:{cluster_tag()}", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": _LIVE},
        ]
    )
    running = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
    changed = {str(i["InstanceId"]): differences(ec2, i, wanted) for i in running}
    changed = {k: v for k, v in changed.items() if v}
    if changed:
        first = next(iter(changed.values()))
        raise ProvisioningError(
            f"cluster {cluster}: this update would replace or stop every node at once ({len(changed)} of "
            f"{len(running)} differ; {', '.join(sorted(changed))}): {'; '.join(first[:6])}. CloudFormation would "
            "do it to all nodes in parallel (an outage; the instance-store cache is lost; a new node script "
            "would not even run, cloud-init runs it once per instance). Set storage.ami_id, instance_type and "
            "cache_volumes back, or deploy this Region's Storage stack from the hubspoke release that built "
            "the nodes (docs/runbooks/qumulo-core.md, 'When the node-shape guard refuses')"
        )
