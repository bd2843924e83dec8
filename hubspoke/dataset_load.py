"""One dataset load on the hub: Qumulo Shift-From copies an S3 folder into `<dataset_path>/<name>/<version>`, then
the copy is checksummed through an NFS mount of the dataset and sealed with its MANIFEST.json.

Shift-From is Qumulo's own S3-to-directory copy (administrator guide, "Using Qumulo Shift-From to Copy Objects
from Amazon S3"; SDK qumulo.rest.object_replication, qumulo-api 7.10.2.1). The load creates the version's
directory, creates a COPY_FROM_OBJECT relationship into it (which starts a job at once, per the guide), polls its
status and prints progress, and when the job ends without error hashes every file the REST API lists by reading
it through the mount, then writes MANIFEST.json through the REST API (docs/datasets.md). Running it again for
the same version finds the relationship by its directory and carries on: it keeps polling a running job, or
starts a new one after a failed job (the guide: files a previous job copied are not copied again).

Runs in the training image (workload/load.py): the standard library, hubspoke.dataset_manifest, qumulo-api and
boto3 (workload/requirements.txt) only; no config, no CDK, no CLI.
"""

from __future__ import annotations

import hashlib
import io
import os
import time
from collections.abc import Callable
from typing import Any, TextIO

from hubspoke.dataset_manifest import (
    MANIFEST_NAME,
    FileEntry,
    Manifest,
    ManifestError,
    check_segment,
    parse,
    to_json,
    validate,
)
from hubspoke.shift_from import (
    EXIT_BAD_INPUT,
    KeySource,
    LoadError,
    Progress,
    ShiftKeys,
    Source,
    job_error,
)

DIRECTION = "COPY_FROM_OBJECT"
# One read() while checksumming: the mount's rsize is 1 MiB (hubspoke/k8s/storage.py), so this is 16 RPCs.
READ_CHUNK = 16 * 1024 * 1024
# Files hashed at once through the mount. ASSUMED: a few streams read faster than one from CNQ (the mount has
# nconnect=16); not measured on a cluster, so --hash-workers sets it.
DEFAULT_HASH_WORKERS = 4


# What lets the load put a legal hold on a file (Qumulo administrator guide, "Managing File Locks": both lock types
# "require the FS_FILE_LOCK_WRITE privilege"; REST guide /v1/auth/roles privilege enum).
HOLD_PRIVILEGE = "PRIVILEGE_FS_FILE_LOCK_WRITE"


def hold_version(client: Any, target: str, manifest: Manifest, out: TextIO) -> None:
    """Put a legal hold on every file of a sealed version and on its MANIFEST.json, so it is immutable in fact.

    PATCH /v1/files/{ref}/file-lock {"legal_hold": true} (SDK qumulo.rest.fs.modify_file_lock): "A removable
    lock under which files cannot be deleted or modified" (REST API guide, files_ref_file-lock). Removable, unlike
    a retention period ("can be extended but never shortened or removed"), so an old version can still be
    deleted on purpose once its holds are lifted (docs/datasets.md). Run before the load's cleanup, so a run
    stopped in between holds the version on the next run; setting a hold again is ASSUMED to be harmless (the
    guide calls the PATCH "apply"). The directory itself takes no lock (file locks are for regular files):
    a file added later is not in the manifest, and no job reads it."""
    from qumulo.lib.request import RequestError

    paths = [f"{target}/{entry.path}" for entry in manifest.files] + [f"{target}/{MANIFEST_NAME}"]
    for path in paths:
        try:
            client.fs.modify_file_lock(path=path, legal_hold=True)
        except RequestError as error:
            if error.status_code in (401, 403):
                raise LoadError(
                    f"the hub refused a legal hold on {path}: the load's Qumulo user needs {HOLD_PRIVILEGE}; "
                    "the version is sealed, run the load again once it has it"
                ) from None
            raise
    out.write(f"held {len(paths)} files of {target}: they cannot be modified or deleted\n")


class HubLoad:
    """One load of an S3 folder into `<dataset_path>/<name>/<version>` through a logged-in Qumulo RestClient,
    hashed through `mount`, where the hub's `dataset_path` is mounted (read-only is enough)."""

    def __init__(
        self,
        client: Any,
        *,
        dataset_path: str,
        name: str,
        version: str,
        source: Source,
        bucket_region: str,
        token_bytes: int,
        vocab_size: int,
        keys: KeySource,
        mount: str,
        out: TextIO,
        poll_seconds: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        key_attempts: int = 6,
        hash_workers: int = DEFAULT_HASH_WORKERS,
    ):
        self.client, self.source, self.keys, self.out = client, source, keys, out
        self.name, self.version = check_segment("--name", name), check_segment("--version", version)
        self.parent = dataset_path.rstrip("/") + "/" + name
        self.target = self.parent + "/" + version
        self.bucket_region, self.token_bytes, self.vocab_size = bucket_region, token_bytes, vocab_size
        self.poll_seconds, self.sleep, self.key_attempts = poll_seconds, sleep, key_attempts
        self.hash_workers = hash_workers
        # The same directory as `target`, as the dataset's NFS export presents it (the mount is dataset_path).
        self.mount_target = os.path.join(mount, name, version)

    # ----- the cluster, through the SDK
    def _exists(self, path: str) -> bool:
        from qumulo.lib.request import RequestError

        try:
            self.client.fs.get_file_attr(path=path)
        except RequestError as error:
            if error.status_code == 404:
                return False
            raise
        return True

    def _empty(self, path: str) -> bool:
        """Whether the directory has no entries (SDK fs.enumerate_entire_directory)."""
        return next(iter(self.client.fs.enumerate_entire_directory(path=path + "/")), None) is None

    def _relationship(self) -> dict[str, Any] | None:
        """The Shift-From relationship into this version's directory, with its status, if one exists."""
        statuses = self.client.object_replication.list_object_relationship_statuses()
        for status in statuses:
            if (
                status.get("direction") == DIRECTION
                and status.get("local_directory_path", "").rstrip("/") == self.target
            ):
                return dict(status)
        return None

    def _status(self, relationship_id: str) -> dict[str, Any]:
        return dict(self.client.object_replication.get_object_relationship_status(relationship_id))

    def _create_relationship(self, keys: ShiftKeys) -> dict[str, Any]:
        """Create the relationship; Qumulo checks the bucket with the key at once (guide, "How Shift-From
        Relationships Work"). A new IAM key can take a while to work everywhere (IAM User Guide, "Changes that
        I make are not always immediately visible"), so a refusal other than 401/403 is retried a few times,
        `poll_seconds` apart. ASSUMED: which refusal Qumulo gives for a key not yet visible; none is documented.
        """
        from qumulo.lib.request import RequestError

        for attempt in range(1, self.key_attempts + 1):
            try:
                created: dict[str, Any] = self.client.object_replication.create_object_relationship(
                    direction=DIRECTION,
                    # The SDK's own CLI defaults to this address for Amazon S3 (qumulo/commands/object_replication.py).
                    object_store_address=f"s3.{self.bucket_region}.amazonaws.com",
                    bucket=self.source.bucket,
                    object_folder=self.source.folder,
                    region=self.bucket_region,
                    access_key_id=keys.access_key_id,
                    secret_access_key=keys.secret_access_key,
                    local_directory_path=self.target,
                )
                return created
            except RequestError as error:
                if (
                    error.status_code in (401, 403)
                    or error.status_code >= 500
                    or attempt == self.key_attempts
                ):
                    raise
                self.out.write(
                    f"Qumulo refused the new key ({error.error_class}); retrying, attempt {attempt}\n"
                )
                self.sleep(self.poll_seconds)
        raise AssertionError("unreachable")

    def _create(self) -> dict[str, Any]:
        """Create the version directory, a key and the relationship; on any failure, including Ctrl-C
        (KeyboardInterrupt is a BaseException), undo what this call made, so the same command works again
        instead of finding an orphan version directory or a stray key (IAM allows two per user)."""
        made_parent = made_target = False
        keys: ShiftKeys | None = None
        try:
            if not self._exists(self.parent):
                parent, _, leaf = self.parent.rpartition("/")
                self.client.fs.create_directory(name=leaf, dir_path=parent or "/")
                made_parent = True
            # An existing one is the empty directory of a stopped run that `run` takes over (not made here).
            if made_parent or not self._exists(self.target):
                self.client.fs.create_directory(name=self.version, dir_path=self.parent)
                made_target = True
            keys = self.keys.create()
            created = self._create_relationship(keys)
        except BaseException:
            self._undo(keys, made_target=made_target, made_parent=made_parent)
            raise
        self.out.write(f"created Shift-From relationship {created['id']}: {self.source} -> {self.target}\n")
        return self._status(str(created["id"]))

    def _undo(self, keys: ShiftKeys | None, *, made_target: bool, made_parent: bool) -> None:
        """Best effort: each step runs even when an earlier one fails (a failed directory delete must not keep
        the key alive); what could not be undone is printed with how to do it by hand."""
        steps: list[tuple[str, Callable[[], None]]] = []
        if keys is not None:
            steps.append((f"access key {keys.access_key_id}", lambda: self.keys.delete(keys.access_key_id)))
        if made_target:
            steps.append((self.target, lambda: self.client.fs.delete(path=self.target)))
        if made_parent:
            steps.append((self.parent, lambda: self.client.fs.delete(path=self.parent)))
        for what, step in steps:
            try:
                step()
            except Exception as exc:  # reported, and the other steps still run
                self.out.write(f"could not remove {what} ({exc}); remove it by hand\n")

    def _finish_cleanup(self, status: dict[str, Any]) -> None:
        """A sealed version needs its relationship no more (the guide: delete those you will not reuse), nor
        the key it holds. Also run on a sealed version whose earlier run was stopped before this step."""
        self.client.object_replication.delete_object_relationship(status["id"])
        self.keys.delete(str(status["access_key_id"]))

    # ----- the load
    def run(self) -> Manifest:
        from qumulo.lib.request import RequestError

        try:
            if self._exists(f"{self.target}/{MANIFEST_NAME}"):
                leftover = self._relationship()
                if leftover is not None:
                    # An earlier run sealed the version and was stopped before its cleanup: finish it, so no
                    # relationship and no key outlive the load.
                    hold_version(self.client, self.target, self._sealed_manifest(), self.out)
                    self._finish_cleanup(leftover)
                    self.out.write(
                        f"{self.target} was sealed; removed its leftover relationship {leftover['id']} and "
                        f"access key {leftover.get('access_key_id')}\n"
                    )
                    return self._sealed_manifest()
                raise LoadError(
                    f"{self.target} is already loaded and sealed; versions are immutable, load a new --version",
                    code=EXIT_BAD_INPUT,
                )
            status = self._relationship()
            if status is None:
                if self._exists(self.target):
                    if not self._empty(self.target):
                        raise LoadError(
                            f"{self.target} exists and no load is copying into it; versions are never written "
                            "twice: choose a new --version",
                            code=EXIT_BAD_INPUT,
                        )
                    # A run killed between making the directory and its relationship (SIGKILL after the grace
                    # period) leaves it empty: nothing was copied, so this run takes it over.
                    self.out.write(f"taking over {self.target}: empty, and no load is copying into it\n")
                status = self._create()
            else:
                self._check_same_source(status)
                self.out.write(f"resuming the load into {self.target} (relationship {status['id']})\n")
                if status.get("state") != "REPLICATION_RUNNING" and job_error(status) is not None:
                    self.out.write(f"the last job failed ({job_error(status)}); starting a new one\n")
                    self.client.object_replication.replicate_object_relationship(status["id"])
                    status = self._status(status["id"])
            status = self._wait(status)
            manifest = self._seal()
            hold_version(self.client, self.target, manifest, self.out)
            # The guide: delete a relationship you will not reuse, to free its ~100 bytes per object. A sealed
            # version never takes another copy. A run stopped here is finished by the next run (above).
            self._finish_cleanup(status)
            return manifest
        except RequestError as error:
            raise LoadError(
                f"the hub refused: Qumulo {error.status_code} {error.error_class}: {error.description}"
            ) from None

    def _check_same_source(self, status: dict[str, Any]) -> None:
        theirs = Source(str(status.get("bucket")), str(status.get("object_folder") or ""))
        if (theirs.bucket, theirs.folder.strip("/")) != (self.source.bucket, self.source.folder.strip("/")):
            raise LoadError(
                f"{self.target} is being loaded from {theirs}, not {self.source}; finish that load or choose "
                "a new --version",
                code=EXIT_BAD_INPUT,
            )

    def _wait(self, status: dict[str, Any]) -> dict[str, Any]:
        last = ""
        while status.get("state") == "REPLICATION_RUNNING":
            line = Progress.of(status.get("current_job") or {}).line()
            if line != last:
                self.out.write(line + "\n")
                self.out.flush()
                last = line
            self.sleep(self.poll_seconds)
            status = self._status(status["id"])
        error = job_error(status)
        if error is not None:
            raise LoadError(
                f"the Shift-From job into {self.target} failed: {error}; fix the cause (the bucket's access, "
                "objects outside the S3 Standard class, keys Qumulo cannot map) and run the same command again "
                "to resume"
            )
        if status.get("last_job") is None:
            raise LoadError(f"relationship {status['id']} is not running and has no finished job; run again")
        done = Progress.of(status["last_job"])
        self.out.write(f"copied: {done.files_done} files, {done.bytes_done / 1e9:.2f} GB\n")
        return status

    def _files(self) -> list[tuple[str, int]]:
        """Every regular file under the version directory: (relative path, size), by a REST tree walk."""
        found = []
        prefix = self.target + "/"
        for entry in self.client.fs.tree_walk_preorder(path=self.target):
            if entry.get("type") == "FS_FILE_TYPE_FILE":
                path = str(entry["path"])
                found.append((path[len(prefix) :] if path.startswith(prefix) else path, int(entry["size"])))
        return found

    def _sha256(self, relative: str, size: int) -> str:
        """The file's SHA-256 as read through the mount; its size must be what the REST API listed (a short
        read means the mount does not show the cluster's file yet, or another file: run again)."""
        digest, read = hashlib.sha256(), 0
        path = os.path.join(self.mount_target, relative)
        try:
            with open(path, "rb") as handle:
                while chunk := handle.read(READ_CHUNK):
                    digest.update(chunk)
                    read += len(chunk)
        except OSError as exc:
            raise LoadError(
                f"cannot read {path} through the dataset mount ({exc}); run again to retry"
            ) from None
        if read != size:
            raise LoadError(f"{path}: read {read} bytes of {size} through the mount; run again to retry")
        return digest.hexdigest()

    def _hash_all(self, files: list[tuple[str, int]]) -> list[FileEntry]:
        """Every file's SHA-256, `hash_workers` files at once; in the walk's order."""
        if self.hash_workers <= 1 or len(files) <= 1:
            return [FileEntry(path, size, self._sha256(path, size)) for path, size in files]
        from concurrent.futures import ThreadPoolExecutor

        def one(item: tuple[str, int]) -> FileEntry:
            return FileEntry(item[0], item[1], self._sha256(*item))

        with ThreadPoolExecutor(max_workers=self.hash_workers, thread_name_prefix="sha256") as pool:
            return list(pool.map(one, files))

    def _sealed_manifest(self) -> Manifest:
        """The version's MANIFEST.json, read back through the REST API."""
        sink = io.BytesIO()
        self.client.fs.read_file(sink, path=f"{self.target}/{MANIFEST_NAME}")
        try:
            return parse(sink.getvalue(), source=f"{self.target}/{MANIFEST_NAME}")
        except ManifestError as exc:
            raise LoadError(str(exc)) from None

    def _seal(self) -> Manifest:
        # A run stopped while sealing leaves the temporary manifest: delete it before the walk, or the
        # manifest would list it and every job would then refuse the version (its file is gone by then).
        temporary = f".{MANIFEST_NAME}.partial"
        if self._exists(f"{self.target}/{temporary}"):
            self.client.fs.delete(path=f"{self.target}/{temporary}")
        files = self._files()
        total = sum(size for _, size in files)
        self.out.write(f"checksumming {len(files)} files ({total / 1e9:.2f} GB) through the dataset mount\n")
        entries = self._hash_all(files)
        try:
            manifest = validate(
                name=self.name,
                version=self.version,
                token_bytes=self.token_bytes,
                vocab_size=self.vocab_size,
                files=entries,
                where=f"{self.target}/{MANIFEST_NAME}",
            )
        except ManifestError as exc:
            raise LoadError(str(exc)) from None
        # Temporary file, then a rename that refuses an existing target (clobber=False): a reader never sees
        # half a manifest, and two loads cannot both seal the version.
        self.client.fs.create_file(name=temporary, dir_path=self.target)
        self.client.fs.write_file(data_file=io.BytesIO(to_json(manifest)), path=f"{self.target}/{temporary}")
        self.client.fs.rename(
            name=MANIFEST_NAME, source=f"{self.target}/{temporary}", dir_path=self.target, clobber=False
        )
        self.out.write(
            f"sealed {self.name}/{self.version}: {len(entries)} files, {manifest.total_bytes} bytes, "
            f"{self.target}/{MANIFEST_NAME}\n"
        )
        return manifest
