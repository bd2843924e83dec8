"""Persistent storage (object-storage URIs) and the soft capacity limit of a running cluster.

Buckets first, then the limit, as Qumulo's provisioner does (Qumulo/qumulo-terraform-gcp @ a30b449c,
provision.py add_object_buckets -> update_capacity_limit; CNQ guide, "Increasing the Soft Capacity Limit",
"Adding S3 buckets"). Neither can be undone (qumulo.rest.object_storage has get_uris and add_uris only; a
lower clamp "has no effect": qumulo-api 7.10.2.1, qumulo/commands/capacity.py,
CapacityLimitSetCommand.SYNOPSIS), so a decrease is refused, except during UPDATE_ROLLBACK_IN_PROGRESS, where
it is a warned no-op rather than UPDATE_ROLLBACK_FAILED.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .session import Pending, ProvisioningError

log = logging.getLogger(__name__)


def current_uris(client: Any) -> list[str]:
    """GET /v1/object-storage/uris (qumulo.rest.object_storage.get_uris): an array of strings (REST guide)."""
    data = client.object_storage.get_uris()
    if not isinstance(data, list):
        raise ProvisioningError(f"GET /v1/object-storage/uris answered an unexpected shape: {data!r}"[:300])
    return [str(u) for u in data]


def add_missing_uris(client: Any, wanted: Sequence[str]) -> list[str]:
    """POST /v2/object-storage/add-uris with the wanted URIs the cluster does not have; return those."""
    have = current_uris(client)
    new = [u for u in wanted if u not in have]
    if new:
        client.object_storage.add_uris(new)
    return new


def ensure_uris(client: Any, wanted: Sequence[str], *, rolling_back: bool = False) -> None:
    """Add the buckets the stack created since formation (POST /v2/object-storage/add-uris); never remove.

    Custom::CnqPersistentStorage calls it as the Storage stack's last resource, so nothing after the add can
    fail the update and roll back the buckets (and the nodes' grants on them) while Qumulo writes to them."""
    have = current_uris(client)
    dropped = sorted(set(have) - set(wanted))
    if dropped and rolling_back:
        log.warning(
            "rollback: the cluster keeps storing data in %d bucket(s) the rolled-back properties no longer "
            "list (%s); Qumulo cannot remove persistent storage, the buckets are retained",
            len(dropped), ", ".join(dropped),
        )  # fmt: skip
    elif dropped:
        raise ProvisioningError(
            f"the cluster stores data in {len(dropped)} bucket(s) the stack does not list ({', '.join(dropped)}), "
            "and Qumulo cannot remove persistent storage: import each back into the stack as its "
            "PersistentStorage<N> bucket (docs/runbooks/qumulo-core.md, 'A bucket outside the stack')"
        )
    new = add_missing_uris(client, wanted)
    if new:
        raise Pending(f"persistent storage: {len(new)} bucket(s) added")


def refuse_shrinking(old: dict[str, Any], new: dict[str, Any], *, rolling_back: bool = False) -> None:
    """Fail an update that lowers the capacity limit or drops buckets, before anything is touched.

    While CloudFormation rolls back (`rolling_back`), the same request only logs a warning: the cluster
    keeps the capacity and the buckets the failed update gave it, and the rollback goes on.
    """
    old_bytes, new_bytes = int(old.get("UsableCapacityBytes") or 0), int(new.get("UsableCapacityBytes") or 0)
    dropped = [u for u in old.get("ObjectStorageUris") or [] if u not in (new.get("ObjectStorageUris") or [])]
    lower = bool(old_bytes and new_bytes < old_bytes)
    if rolling_back and (lower or dropped):
        log.warning(
            "rollback to %g TB and %d bucket(s): the cluster keeps its soft capacity limit (a lower clamp "
            "'has no effect', qq capacity_clamp_set) and the %d bucket(s) it stores data in (Qumulo cannot "
            "remove persistent storage); nothing is sent",
            new_bytes / 1e12, len(new.get("ObjectStorageUris") or []), len(dropped),
        )  # fmt: skip
        return
    if lower:
        raise ProvisioningError(
            f"soft capacity limit {old_bytes / 1e12:g} TB -> {new_bytes / 1e12:g} TB: Qumulo never shrinks "
            "provisioned capacity ('a value below the current provisioned capacity has no effect'); set "
            f"storage.soft_capacity_limit_tb back to {old_bytes // 10**12}"
        )
    if dropped:
        raise ProvisioningError(
            f"storage.bucket_count was lowered: {len(dropped)} bucket(s) would leave the cluster; Qumulo "
            "cannot remove persistent storage: set it back (the buckets are retained)"
        )


def current_clamp(client: Any) -> int:
    """GET /v1/capacity/clamp (qumulo.rest.capacity.get_capacity_clamp): the stored clamp, 0 if none."""
    return int(client.capacity.get_capacity_clamp() or 0)


def ensure_limit(client: Any, wanted: int, before: int | None, ledger: Any, request_id: str) -> None:
    """Converge the soft capacity limit to `wanted` bytes: PUT /v1/capacity/clamp at most once per request.

    `before` is on_event's reading, None when the limit is not raised. It runs with every node ACTIVE and
    every bucket in, as Qumulo's provisioner orders it (qumulo-terraform-gcp @ a30b449c, provision.py
    update_capacity_limit). Qumulo rounds down to whole pstores, ignores a value below provisioned capacity
    and applies a change in a new quorum (qumulo-api 7.10.2.1, qumulo/commands/capacity.py,
    CapacityLimitSetCommand.SYNOPSIS), so the PUT is recorded on the first node (`ledger`, the clamp-sent tag
    valued with the RequestId) and a later poll with the quorum ACTIVE reads the clamp, never resending:
    unchanged means the cluster holds the closest count. ASSUMED: the quorum is abandoned before the next
    poll.
    """
    if before is None:
        return
    current = current_clamp(client)
    if current != before or current >= wanted:
        return
    if ledger.sent() == request_id:
        log.warning(
            "soft capacity limit: the cluster keeps %d bytes for the %d requested (the closest whole pstore "
            "count without going over); nothing more to change", current, wanted,
        )  # fmt: skip
        return
    client.capacity.put_capacity_clamp(wanted)
    ledger.record(request_id)
    raise Pending(f"soft capacity limit {wanted / 1e12:g} TB requested; it appears in the next quorum")
