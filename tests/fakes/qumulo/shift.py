"""Qumulo Shift-From (object relationships copying S3 objects into a directory) in the contract fake.

Shapes follow the SDK (qumulo.rest.object_replication, qumulo-api 7.10.2.1: routes under
/v3/replication/object-relationships/) and Qumulo's administrator guide, "Using Qumulo Shift-From to Copy
Objects from Amazon S3" (Qumulo/docs@4087c2c, _includes/content-reuse/admin-guides/replicating-data/
shift-from-s3.md), which shows the relationship and status bodies. From that page, creation verifies that
the directory exists and that the bucket exists, is readable with the given keys and holds objects; a
directory may not overlap another relationship's; the relationship starts a job at once; objects land at
<directory>/<key relative to the folder>; counts are strings; percent_complete and estimated_end_time stay
empty until the listing that estimates the work is done; a finished job moves to `last_job` with an `error`
when it failed; a new job skips objects already copied. Error statuses and classes are ASSUMED (the guide
shows no error bodies), and so is the exact shape of `last_job` beyond `error`.

The guide's current page (Qumulo/docs@b6ddb9ae, "Prerequisites") lists the permissions the keys need:
s3:GetObject, s3:GetObjectTagging and s3:ListBucket. Creation refuses keys lacking any of them on the bucket
(ListBucket) or on the folder's objects (the other two): the guide's creation step checks that the bucket "is
accessible by using the specified credentials, and contains downloadable objects"; that a missing
s3:GetObjectTagging fails there rather than in the job is ASSUMED, and so is the refusal's status and class.

The fake cannot see S3 or IAM: a test puts objects in `s3_objects[bucket][key]`, gives a key the statements of
an IAM policy with `grant(key_id, statements)` (tests/fakes/qumulo/grants.py reads them from the policy the
stack ships), and names in `s3_open_buckets` the buckets any key may read (a bucket policy that allows the
whole account). A running job copies `shift_objects_per_poll` objects each time its status is read.
"""

from __future__ import annotations

import fnmatch
import threading
import uuid
from typing import Any

from tests.fakes.qumulo.server import QumuloFault, Reply

_PREFIX = r"/v3/replication/object-relationships"
DIRECTIONS = ("COPY_TO_OBJECT", "COPY_FROM_OBJECT")


# The guide's list ("Prerequisites", Qumulo/docs@b6ddb9ae): (action, on the bucket rather than its objects).
SHIFT_FROM_PERMISSIONS = (("s3:GetObject", False), ("s3:GetObjectTagging", False), ("s3:ListBucket", True))


def _listed(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def _allows(statements: list[dict[str, Any]], action: str, arn: str) -> bool:
    """IAM's evaluation, reduced to what the Shift policy uses: an Allow whose Action and Resource match, no Deny.

    IAM User Guide, "IAM JSON policy elements: Action" (action names are case-insensitive, `*` and `?`
    wildcards) and "Resource" (ARNs case-sensitive, same wildcards); an explicit Deny wins ("Policy
    evaluation logic"). Conditions and NotAction/NotResource are not modelled: a statement with them is refused.
    """

    def matches(statement: dict[str, Any]) -> bool:
        if {"Condition", "NotAction", "NotResource", "NotPrincipal"} & set(statement):
            raise ValueError(f"the fake's IAM evaluation does not model {sorted(statement)}")
        actions = _listed(statement.get("Action", []))
        resources = _listed(statement.get("Resource", []))
        return any(fnmatch.fnmatch(action.lower(), a.lower()) for a in actions) and any(
            fnmatch.fnmatchcase(arn, r) for r in resources
        )

    hits = [s["Effect"] for s in statements if matches(s)]
    return "Allow" in hits and "Deny" not in hits


def _folder(value: str) -> str:
    """The guide's example turns `/my-folder/` into `my-folder/`; "" and "/" mean the bucket's root."""
    stripped = value.strip("/")
    return stripped + "/" if stripped else ""


def _disallowed(key: str, data: bytes) -> bool:
    """Paths the guide says fail a copy job: trailing '/' with content, '//', '.' or '..', '.snapshot'."""
    parts = key.split("/")
    return (
        (key.endswith("/") and len(data) > 0)
        or "//" in key
        or any(p in (".", "..", ".snapshot") for p in parts)
    )


def _public(relationship: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in relationship.items() if not k.startswith("_")}


class ShiftMixin:
    """Object relationships, their jobs, and the fake's view of S3."""

    files: dict[str, dict[str, Any]]
    _lock: threading.RLock

    def _file(self, ref: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def add_file(self, path: str, size: int, data: bytes | None = None) -> str:
        raise NotImplementedError

    def _init_shift(self) -> None:
        self.s3_objects: dict[str, dict[str, bytes]] = {}
        self.s3_policies: dict[str, list[dict[str, Any]]] = {}  # access key id -> IAM statements it holds
        self.s3_open_buckets: set[str] = set()
        self.relationships: dict[str, dict[str, Any]] = {}
        self.shift_objects_per_poll = 1
        self._jobs: dict[str, dict[str, Any]] = {}  # relationship id -> running job
        self._copied: dict[str, dict[str, int]] = {}  # relationship id -> key -> size copied

    def _shift_routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("POST", _PREFIX + "/", self._create_relationship),
            ("GET", _PREFIX + "/", lambda **_: (200, [_public(r) for r in self.relationships.values()])),
            ("GET", _PREFIX + "/status/", lambda **_: (200, [self._status(i) for i in self.relationships])),
            ("GET", _PREFIX + r"/([0-9a-f-]+)", lambda i, **_: (200, _public(self._relationship(i)))),
            ("GET", _PREFIX + r"/([0-9a-f-]+)/status", lambda i, **_: (200, self._status(i))),
            ("POST", _PREFIX + r"/([0-9a-f-]+)/replicate", self._replicate),
            ("POST", _PREFIX + r"/([0-9a-f-]+)/abort-replication", self._abort),
            ("DELETE", _PREFIX + r"/([0-9a-f-]+)", self._delete_relationship),
        ]

    # ----- S3 as the fake sees it
    def grant(self, key_id: str, statements: list[dict[str, Any]]) -> None:
        """Give an access key an IAM policy's statements (ARNs resolved, partition `aws`); [] revokes them."""
        self.s3_policies[key_id] = [dict(s) for s in statements]

    def _missing(self, key_id: str, relationship: dict[str, Any]) -> list[str]:
        """The guide's permissions the key lacks for the relationship's bucket and folder objects."""
        bucket = relationship["bucket"]
        if bucket in self.s3_open_buckets:
            return []
        statements = self.s3_policies.get(key_id, [])
        keys = [relationship["object_folder"] + k for k, _ in self._objects(relationship)]
        missing = []
        for action, on_bucket in SHIFT_FROM_PERMISSIONS:
            arns = [f"arn:aws:s3:::{bucket}"] if on_bucket else [f"arn:aws:s3:::{bucket}/{k}" for k in keys]
            if not all(_allows(statements, action, arn) for arn in arns):
                missing.append(action)
        return missing

    def _objects(self, relationship: dict[str, Any]) -> list[tuple[str, bytes]]:
        folder = relationship["object_folder"]
        bucket = self.s3_objects.get(relationship["bucket"], {})
        return sorted(
            (k[len(folder) :], v) for k, v in bucket.items() if k.startswith(folder) and k != folder
        )

    # ----- relationships
    def _relationship(self, relationship_id: str) -> dict[str, Any]:
        if relationship_id not in self.relationships:
            # ASSUMED class and status.
            raise QumuloFault(404, "replication_relationship_not_found_error", f"{relationship_id} not found")
        return self.relationships[relationship_id]

    def _create_relationship(self, body: dict[str, Any], **_: Any) -> Reply:
        if body.get("direction") not in DIRECTIONS:
            raise QumuloFault(400, "http_bad_request_error", f"direction must be one of {DIRECTIONS}")
        if body["direction"] != "COPY_FROM_OBJECT":
            raise QumuloFault(400, "http_bad_request_error", "the fake models COPY_FROM_OBJECT only")
        for key in ("bucket", "region", "access_key_id", "secret_access_key", "object_store_address"):
            if not body.get(key):
                raise QumuloFault(400, "http_bad_request_error", f"{key} is required")
        ref = body.get("local_directory_path") or body.get("local_directory_id")
        if not ref:
            raise QumuloFault(400, "http_bad_request_error", "local_directory_path or local_directory_id")
        path, info = self._file(str(ref).rstrip("/") or "/")  # guide: the directory must exist (404 ASSUMED)
        if info["type"] != "FS_FILE_TYPE_DIRECTORY":
            raise QumuloFault(400, "fs_not_a_directory_error", f"{ref} is not a directory")
        for other in self.relationships.values():
            mine, theirs = path.rstrip("/") + "/", other["local_directory_path"]
            if mine.startswith(theirs) or theirs.startswith(mine):
                raise QumuloFault(
                    409,
                    "replication_relationship_conflict_error",
                    f"{path} overlaps the directory of object relationship {other['id']}",
                )
        bucket, key_id = body["bucket"], body["access_key_id"]
        if bucket not in self.s3_objects:
            raise QumuloFault(400, "object_store_access_error", f"bucket {bucket} does not exist")
        relationship = {
            "direction": body["direction"],
            "access_key_id": key_id,
            "bucket": bucket,
            "object_store_address": body["object_store_address"],
            "id": str(uuid.uuid4()),
            "object_folder": _folder(body.get("object_folder", "")),
            "port": body.get("port", 443),
            "ca_certificate": body.get("ca_certificate"),
            "bucket_style": body.get("bucket_style", "BUCKET_STYLE_VIRTUAL_HOSTED"),
            "region": body["region"],
            "local_directory_id": info["id"],
            "local_directory_path": path.rstrip("/") + "/",
        }
        missing = self._missing(key_id, relationship)
        if missing:
            raise QumuloFault(
                400,
                "object_store_access_error",
                f"access key {key_id} is not allowed {', '.join(missing)} on s3://{bucket}",
            )
        if not self._objects(relationship):
            raise QumuloFault(
                400,
                "object_store_access_error",
                f"no downloadable objects under s3://{bucket}/{relationship['object_folder']}",
            )
        self.relationships[relationship["id"]] = relationship
        self._copied[relationship["id"]] = {}
        self._start_job(relationship["id"])
        return 200, _public(relationship)

    def _start_job(self, relationship_id: str) -> None:
        self._jobs[relationship_id] = {
            "start_time": "2026-12-01T18:00:00.000000000Z",
            "estimated": False,
            "done": [],
        }

    def _replicate(self, relationship_id: str, **_: Any) -> Reply:
        self._relationship(relationship_id)
        if relationship_id in self._jobs:
            raise QumuloFault(409, "replication_job_running_error", "a job is already running")  # ASSUMED
        self._start_job(relationship_id)
        return 202, {"monitor_uri": f"{_PREFIX}/{relationship_id}/status"}

    def _abort(self, relationship_id: str, **_: Any) -> Reply:
        self._relationship(relationship_id)
        if relationship_id in self._jobs:
            self._finish(relationship_id, "the job was aborted")  # ASSUMED text
        return 200, None

    def _delete_relationship(self, relationship_id: str, **_: Any) -> Reply:
        self._relationship(relationship_id)
        if relationship_id in self._jobs:  # SDK: "which must not be running a job"; class ASSUMED
            raise QumuloFault(409, "replication_job_running_error", "abort the running job first")
        del self.relationships[relationship_id]
        return 200, None

    # ----- jobs
    def _progress(self, relationship_id: str, job: dict[str, Any]) -> dict[str, Any]:
        sizes = dict(self._objects(self.relationships[relationship_id]))
        estimated = job["estimated"]
        unchanged = [k for k in job.get("unchanged", []) if k in sizes]
        done = [k for k in job["done"] if k in sizes]
        remaining = [k for k in sizes if k not in done and k not in unchanged]
        total = sum(len(v) for v in sizes.values())

        def size(keys: list[str]) -> int:
            return sum(len(sizes[k]) for k in keys)

        return {
            "bytes_transferred": str(size(done)),
            "bytes_unchanged": str(size(unchanged)),
            "bytes_remaining": str(size(remaining)) if estimated else "0",
            "bytes_total": str(total) if estimated else "0",
            "files_transferred": str(len(done)),
            "files_unchanged": str(len(unchanged)),
            "files_remaining": str(len(remaining)) if estimated else "0",
            "files_total": str(len(sizes)) if estimated else "0",
            "percent_complete": (100.0 * size(done + unchanged) / total if total else 100.0)
            if estimated
            else None,
            "throughput_current": "1000000",
            "throughput_overall": "1000000",
        }

    def _advance(self, relationship_id: str) -> None:
        job = self._jobs.get(relationship_id)
        if job is None:
            return
        relationship = self.relationships[relationship_id]
        if not job["estimated"]:
            # The first status read of a job sees the estimate still running, the next one its result.
            job["estimated"] = job.get("listing", False)
            job["listing"] = True
            if not job["estimated"]:
                return
            copied = self._copied[relationship_id]
            job["unchanged"] = [k for k, v in self._objects(relationship) if copied.get(k) == len(v)]
            return
        if self._missing(relationship["access_key_id"], relationship):
            self._finish(
                relationship_id, f"Access Denied reading bucket {relationship['bucket']}"
            )  # ASSUMED text
            return
        pending = [
            (k, v)
            for k, v in self._objects(relationship)
            if k not in job["done"] and k not in job["unchanged"]
        ]
        for key, data in pending[: self.shift_objects_per_poll]:
            if _disallowed(key, data):
                self._finish(relationship_id, f"object {key} cannot be mapped to a file")  # ASSUMED text
                return
            target = relationship["local_directory_path"] + key
            self.files.pop(target, None)
            self.add_file(target, len(data), data)
            self._copied[relationship_id][key] = len(data)
            job["done"].append(key)
        if len(pending) <= self.shift_objects_per_poll:
            self._finish(relationship_id, None)

    def _finish(self, relationship_id: str, error: str | None) -> None:
        job = self._jobs.pop(relationship_id)
        self.relationships[relationship_id]["_last_job"] = {
            "start_time": job["start_time"],
            "end_time": "2026-12-01T18:05:00.000000000Z",
            "job_progress": self._progress(relationship_id, job),
            "error": error,
        }

    def _status(self, relationship_id: str) -> dict[str, Any]:
        relationship = self._relationship(relationship_id)
        self._advance(relationship_id)
        job = self._jobs.get(relationship_id)
        current = None
        if job is not None:
            current = {
                "start_time": job["start_time"],
                "estimated_end_time": "2026-12-01T18:05:00.000000000Z" if job["estimated"] else "",
                "job_progress": self._progress(relationship_id, job),
            }
        return {
            **_public(relationship),
            "state": "REPLICATION_RUNNING" if job is not None else "REPLICATION_NOT_RUNNING",
            "current_job": current,
            "last_job": relationship.get("_last_job"),
        }
