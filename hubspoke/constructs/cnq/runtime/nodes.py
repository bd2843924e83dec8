"""The CNQ nodes' EC2 termination protection, switched on once the whole stack is done.

Not in the template, or a failed first create ends in ROLLBACK_FAILED (EC2 User Guide, "Enable termination
protection"); Qumulo protects its nodes (qumulo-terraform-aws, deletion_protection), so the Storage stack's
last resource, Custom::CnqNodeProtection, turns it on, and off when a rollback or delete removes it.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .contract import create_sent_tag
from .session import ProvisioningError

log = logging.getLogger(__name__)
# Statuses in which CloudFormation still awaits our Create or Update (CloudFormation User Guide, "Stack status
# codes"), the rollback's own Updates included; in any other the waiter would work on nodes being terminated.
AWAITED_STATUSES = frozenset({"CREATE_IN_PROGRESS", "UPDATE_IN_PROGRESS", "UPDATE_ROLLBACK_IN_PROGRESS"})
# The status while a stack's first create rolls back (same page); a later rollback is UPDATE_ROLLBACK_*.
FIRST_CREATE_ROLLING_BACK = "ROLLBACK_IN_PROGRESS"


# CloudFormation User Guide, "Stack status codes": the status while CloudFormation rolls an update back;
# the Update requests it sends then carry the previous properties as ResourceProperties.
ROLLING_BACK = "UPDATE_ROLLBACK_IN_PROGRESS"


def stack_status(cfn: Any, stack_id: str) -> str:
    """The stack's StackStatus (DescribeStacks)."""
    return str(cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackStatus"])


def require_awaited(cfn: Any, stack_id: str) -> str:
    """Raise unless CloudFormation still waits for the stack's Create or Update; return the status."""
    status = stack_status(cfn, stack_id)
    if status not in AWAITED_STATUSES:
        raise ProvisioningError(
            f"the stack is {status}: CloudFormation no longer waits for this request, so nothing more is done"
        )
    return status


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


def set_delete_on_termination(ec2: Any, instance_ids: Iterable[str], on: bool) -> list[str]:
    """Set DeleteOnTermination to `on` on every EBS volume of the nodes where it differs; the instances changed.

    ModifyInstanceAttribute BlockDeviceMappings (botocore ec2 2016-11-15 model,
    InstanceBlockDeviceMappingSpecification, EbsInstanceBlockDeviceSpecification), read from
    DescribeInstances. Off once formed, as the volumes keep Qumulo's cache and metadata; on until then, so a
    failed first create leaves no volumes."""
    ids = list(instance_ids)
    if not ids:
        return []
    changed = []
    for reservation in ec2.describe_instances(InstanceIds=ids)["Reservations"]:
        for instance in reservation["Instances"]:
            devices = [
                str(m["DeviceName"]) for m in instance.get("BlockDeviceMappings") or []
                if "Ebs" in m and bool(m["Ebs"].get("DeleteOnTermination")) != on
            ]  # fmt: skip
            if devices:
                ec2.modify_instance_attribute(
                    InstanceId=instance["InstanceId"],
                    BlockDeviceMappings=[
                        {"DeviceName": d, "Ebs": {"DeleteOnTermination": on}} for d in devices
                    ],
                )
                changed.append(str(instance["InstanceId"]))
    if changed:
        log.info("node volumes: DeleteOnTermination %s on %s", on, ", ".join(changed))
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


def apply_protection(
    ec2: Any, cfn: Any, *, stack_id: str, instance_ids: list[str], previous: list[str]
) -> None:
    """Protect the stack's nodes, while the stack is still being created or updated; lift it from nodes an
    update dropped, which CloudFormation terminates in its clean-up phase."""
    require_awaited(cfn, stack_id)
    set_protection(ec2, [i for i in previous if i not in instance_ids], False)
    set_delete_on_termination(ec2, instance_ids, False)
    protect_all_or_none(ec2, instance_ids)


def lift_protection(ec2: Any, instance_ids: Iterable[str], *, first_create_failed: bool = False) -> None:
    """Termination protection off on every node that still exists, so CloudFormation can terminate them; when
    the stack's first create rolls back (ROLLBACK_IN_PROGRESS), their volumes go with them."""
    for instance_id in instance_ids:
        try:
            set_protection(ec2, [instance_id], False)
            if first_create_failed:
                set_delete_on_termination(ec2, [instance_id], True)
        except ec2.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") != "InvalidInstanceID.NotFound":
                raise
            log.info("%s no longer exists", instance_id)


@dataclass(frozen=True)
class CreateTag:
    """The cluster-create ledger (cluster.CreateLedger) as a tag on the first node's instance: it lives as
    long as that node, so a rebuilt first node (a failed first create rolled back) starts with none. Qumulo's
    own provisioners keep such state outside the cluster too (qumulo-terraform-gcp @ a30b449c, provision.py
    FirestoreManager: "new-cluster", "last-run-status")."""

    ec2: Any
    instance_id: str
    # The same record under the clamp-sent tag says a capacity clamp was sent in one request (capacity.ensure_limit).
    key: str = field(default_factory=create_sent_tag)

    def sent(self) -> str | None:
        reservations = self.ec2.describe_instances(InstanceIds=[self.instance_id])["Reservations"]
        tags = [t for r in reservations for i in r["Instances"] for t in i.get("Tags") or []]
        return next((str(t["Value"]) for t in tags if t["Key"] == self.key), None)

    def record(self, value: str | None = None) -> None:
        """Write the tag (the time, or `value`), retrying a throttled CreateTags: what it records has happened,
        so failing here would fail the resource for nothing (and re-send what the record prevents)."""
        now = value or datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for attempt in range(TAG_ATTEMPTS):
            try:
                self.ec2.create_tags(Resources=[self.instance_id], Tags=[{"Key": self.key, "Value": now}])
                break
            except Exception as error:
                code = str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))
                if code not in THROTTLED or attempt == TAG_ATTEMPTS - 1:
                    raise
                time.sleep(min(TAG_BACKOFF_SECONDS * 2**attempt, 8.0))
        log.info("recorded on %s: tag %s=%s", self.instance_id, self.key, now)


# The throttling error codes botocore's standard retry mode retries (botocore 1.44.18, retries/standard.py,
# ThrottledRetryableChecker._THROTTLED_ERROR_CODES), those EC2 answers with included.
THROTTLED = frozenset({"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
                       "TooManyRequestsException", "RequestLimitExceeded", "RequestThrottled", "EC2ThrottledException",
                       "SlowDown", "PriorRequestNotComplete"})  # fmt: skip
TAG_ATTEMPTS = 8
TAG_BACKOFF_SECONDS = 0.5
