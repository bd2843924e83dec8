"""Deleting one retained resource, so that deleting it again (a rerun after a failure) is not an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import Clients, error_code
from hubspoke.cli.teardown.retained import Retained
from hubspoke.cli.teardown.stacks import TeardownStopped

# KMS ScheduleKeyDeletion: a key cannot be deleted at once; PendingWindowInDays is 7 to 30, default 30 (KMS API
# reference, ScheduleKeyDeletion). The longest window: `aws kms cancel-key-deletion` undoes it until then.
KEY_WINDOW_DAYS = 30
# S3 DeleteObjects takes at most 1,000 keys per request (S3 API reference, DeleteObjects).
DELETE_BATCH = 1000


def _empty_bucket(s3: Any, bucket: str) -> None:
    """Delete every object version and delete marker: S3 deletes only an empty bucket, versions included
    (S3 API reference, DeleteBucket: "All objects (including all object versions and delete markers) in the
    bucket must be deleted before the bucket itself can be deleted")."""
    batch: list[dict[str, str]] = []

    def flush() -> None:
        if not batch:
            return  # DeleteObjects refuses an empty list (MalformedXML)
        answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": list(batch), "Quiet": True})
        if answer.get("Errors"):
            first = answer["Errors"][0]
            raise ClientError(
                {"Error": {"Code": first.get("Code", ""), "Message": first.get("Message", "")}},
                "DeleteObjects",
            )
        batch.clear()

    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
        for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
            batch.append({"Key": item["Key"], "VersionId": item["VersionId"]})
            if len(batch) == DELETE_BATCH:
                flush()
    flush()


def _bucket(s3: Any, r: Retained) -> None:
    _empty_bucket(s3, r.id)
    s3.delete_bucket(Bucket=r.id)


# Per kind: (service, delete, the error codes that mean it is already gone).
_DELETE: dict[str, tuple[str, Callable[[Any, Retained], object], tuple[str, ...]]] = {
    "volume": ("ec2", lambda c, r: c.delete_volume(VolumeId=r.id), ("InvalidVolume.NotFound",)),
    "bucket": ("s3", _bucket, ("NoSuchBucket",)),
    # ECR DeleteRepository force=true deletes the images with the repository (ECR API reference).
    "repository": (
        "ecr",
        lambda c, r: c.delete_repository(repositoryName=r.id, force=True),
        ("RepositoryNotFoundException",),
    ),
    # Without a recovery window: the secret is the admin password of a cluster that no longer exists, and a
    # secret in its recovery window keeps its name taken; forcing the delete of a secret already gone is not an
    # error (Secrets Manager API reference, DeleteSecret, ForceDeleteWithoutRecovery).
    "secret": (
        "secretsmanager",
        lambda c, r: c.delete_secret(SecretId=r.id, ForceDeleteWithoutRecovery=True),
        ("ResourceNotFoundException",),
    ),
    "log group": ("logs", lambda c, r: c.delete_log_group(logGroupName=r.id), ("ResourceNotFoundException",)),
    "key": (
        "kms",
        lambda c, r: c.schedule_key_deletion(KeyId=r.id, PendingWindowInDays=KEY_WINDOW_DAYS),
        ("NotFoundException",),
    ),
}


def remove(clients: Clients, r: Retained) -> str:
    """Delete `r` (a key: schedule its deletion); what was done, for the log. TeardownStopped when AWS refuses."""
    service, delete, gone = _DELETE[r.kind]
    try:
        delete(clients(service, r.region), r)
    except ClientError as exc:
        if error_code(exc) in gone:
            return f"{r.kind} {r.id}: already gone"
        raise TeardownStopped(
            f"{r.kind} {r.id} ({r.region}) was not deleted: {exc}",
            "fix what it names, then run the same command again: what was deleted stays deleted, and it "
            "continues with this one",
        ) from None
    if r.kind == "key":
        return f"key {r.id}: deletion scheduled in {KEY_WINDOW_DAYS} days (`aws kms cancel-key-deletion --key-id {r.id} --region {r.region}` undoes it until then)"
    return f"{r.kind} {r.id}: deleted"
