"""The CNQ nodes as EC2 sees them: termination protection after formation, and the guard on node shape.

The template never sets DisableApiTermination (a protected instance cannot be terminated, so a failed
first create would end in ROLLBACK_FAILED; EC2 User Guide, "Enable termination protection"). Qumulo's
own deployments protect their nodes (qumulo-terraform-aws, deletion_protection: "Enables EC2 Termination
protection"), so the provisioner switches protection on once the cluster is formed and converged, and
off for nodes an update removes from the cluster, so that CloudFormation can then terminate them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from .session import ProvisioningError

log = logging.getLogger(__name__)

# Every node carries this tag with its cluster's name; the provisioner's EC2 permissions are scoped to it.
CLUSTER_TAG = "hubspoke:cnq-cluster"
_LIVE = ["pending", "running", "stopping", "stopped"]


def set_protection(ec2: Any, instance_ids: Iterable[str], on: bool) -> list[str]:
    """Switch DisableApiTermination to `on` where it differs; return the instances changed."""
    changed = []
    for instance_id in instance_ids:
        current = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="disableApiTermination")
        if bool(current["DisableApiTermination"]["Value"]) != on:
            ec2.modify_instance_attribute(InstanceId=instance_id, DisableApiTermination={"Value": on})
            changed.append(instance_id)
    if changed:
        log.info("termination protection %s on %s", "on" if on else "off", ", ".join(changed))
    return changed


def protect_all_or_none(ec2: Any, instance_ids: list[str]) -> None:
    """Protect every node; if that fails half-way, unprotect the ones done so a rollback can delete them."""
    done: list[str] = []
    try:
        for instance_id in instance_ids:
            done += set_protection(ec2, [instance_id], True)
    except Exception:
        set_protection(ec2, done, False)
        raise


def check_node_shape(ec2: Any, *, cluster: str, image_id: str, instance_type: str) -> None:
    """Refuse a change of image or instance type while the cluster's nodes run another one.

    A new ImageId replaces an AWS::EC2::Instance and a new InstanceType stops it (CloudFormation resource
    reference, "Update requires"); CloudFormation would do either to every node at once. Qumulo's CNQ guide
    changes instance types with its cluster-replacement procedure instead ("Scaling Your Existing CNQ on
    AWS Cluster"). Comparing with what runs, not with the previous properties, lets a rollback through.
    """
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:{CLUSTER_TAG}", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": _LIVE},
        ]
    )
    running = [i for page in pages for r in page["Reservations"] for i in r["Instances"]]
    images = sorted({i["ImageId"] for i in running} - {image_id})
    types = sorted({i["InstanceType"] for i in running} - {instance_type})
    if images or types:
        was = ", ".join([*(f"image {x}" for x in images), *(f"type {x}" for x in types)])
        raise ProvisioningError(
            f"cluster {cluster}: its nodes run {was}; the new image {image_id} / type {instance_type} would "
            "replace or stop every node at once. Keep storage.ami_id and storage.instance_type, or move to new "
            "nodes with Qumulo's cluster-replacement procedure (docs/runbooks/qumulo-core.md)"
        )
