"""`hubspoke dataset load`: copy an S3 prefix into a new dataset version on the hub with Qumulo Shift-From.

Shift-From is Qumulo's own S3-to-directory copy (administrator guide, "Using Qumulo Shift-From to Copy
Objects from Amazon S3"; SDK qumulo.rest.object_replication, qumulo-api 7.10.2.1). The command creates
`<dataset_path>/<name>/<version>` on the hub, creates a COPY_FROM_OBJECT relationship into it (which starts a
job at once, per the guide), polls the relationship's status and prints progress, and when the job ends
without error reads every file back through the REST API to checksum it and seals the version with its
MANIFEST.json (docs/datasets.md). Running it again for the same version finds the relationship by its
directory and carries on: it keeps polling a running job, or starts a new one after a failed job (the guide:
files a previous job copied are not copied again).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TextIO

from hubspoke.cli.commands import COMMANDS
from hubspoke.config import HubSpokeConfig, format_problem, load
from hubspoke.config.sections import Problem
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
from hubspoke.ports import QUMULO_REST

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
DIRECTION = "COPY_FROM_OBJECT"
# One read per request while checksumming: bounded so a slow link never holds one request for long.
READ_CHUNK = 64 * 1024 * 1024
# Files hashed at once, each over its own REST connection (SDK RestClient.clone, qumulo-api 7.10.2.1
# qumulo/rest_client.py). ASSUMED: a few streams read faster than one from CNQ; not measured on a cluster,
# so --hash-workers sets it.
DEFAULT_HASH_WORKERS = 4
_SOURCE = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(.*))?$")


class LoadError(Exception):
    """A load that cannot go on: one line saying why and what to do; `code` is the exit status."""

    def __init__(self, message: str, *, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Source:
    """An S3 folder: its bucket and the key prefix (a folder, "" for the bucket's root)."""

    bucket: str
    folder: str

    @classmethod
    def parse(cls, text: str) -> Source:
        match = _SOURCE.match(text)
        if match is None:
            raise LoadError(
                f"--source {text!r} is not an S3 folder; write it like s3://my-bucket/c4/tokenized/",
                code=EXIT_BAD_INPUT,
            )
        folder = (match.group(2) or "").strip("/")
        # Shift-From fails a job on keys with '//', '.' or '..' parts (guide, "Restrictions"): a folder like
        # that could never load, so it is refused before anything is created.
        if "//" in (match.group(2) or "") or any(p in (".", "..") for p in folder.split("/") if folder):
            raise LoadError(f"--source {text!r}: no '//', '.' or '..' in the folder", code=EXIT_BAD_INPUT)
        return cls(match.group(1), folder + "/" if folder else "")

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.folder}"


@dataclass(frozen=True)
class ShiftKeys:
    """The access key Shift-From uses: the guide requires an access key ID and secret (no role, no anonymous)."""

    access_key_id: str
    secret_access_key: str


class KeySource(Protocol):
    """Where a load gets the Shift user's access key, and returns it once the load no longer needs it."""

    def create(self) -> ShiftKeys: ...

    def delete(self, access_key_id: str) -> None: ...


class IamKeys:
    """Access keys of the hub stack's Shift user (hubspoke/constructs/shift.py), one per load, through IAM."""

    def __init__(self, iam: Any, user_name: str):
        self.iam, self.user_name = iam, user_name

    def create(self) -> ShiftKeys:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            key = self.iam.create_access_key(UserName=self.user_name)["AccessKey"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "LimitExceeded":
                # IAM allows two access keys per user (IAM User Guide, "IAM and AWS STS quotas").
                raise LoadError(
                    f"IAM user {self.user_name} has two access keys already (IAM's limit), one per load in "
                    "progress: finish one of those loads, or delete a key no relationship uses"
                ) from None
            raise LoadError(f"cannot create an access key for IAM user {self.user_name}: {exc}") from None
        except BotoCoreError as exc:
            raise LoadError(f"cannot create an access key for IAM user {self.user_name}: {exc}") from None
        return ShiftKeys(key["AccessKeyId"], key["SecretAccessKey"])

    def delete(self, access_key_id: str) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.iam.delete_access_key(UserName=self.user_name, AccessKeyId=access_key_id)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "NoSuchEntity":
                raise LoadError(
                    f"the load is done but access key {access_key_id} of {self.user_name} could not be deleted "
                    f"({exc}); delete it with the IAM console or CLI"
                ) from None
        except BotoCoreError as exc:
            raise LoadError(
                f"could not delete access key {access_key_id}: {exc}; delete it yourself"
            ) from None


@dataclass(frozen=True)
class Progress:
    """One status read of a running job, as the guide's `job_progress` reports it."""

    bytes_done: int
    bytes_total: int
    files_done: int
    files_total: int
    percent: float | None

    @classmethod
    def of(cls, job: dict[str, Any]) -> Progress:
        p = job.get("job_progress") or {}

        def number(key: str) -> int:
            try:
                return int(p.get(key) or 0)
            except (TypeError, ValueError):
                return 0

        try:
            percent: float | None = float(p["percent_complete"])
        except (KeyError, TypeError, ValueError):
            # The guide: "None" until the listing that estimates the work is done.
            percent = None
        return cls(
            bytes_done=number("bytes_transferred") + number("bytes_unchanged"),
            bytes_total=number("bytes_total"),
            files_done=number("files_transferred") + number("files_unchanged"),
            files_total=number("files_total"),
            percent=percent,
        )

    def line(self) -> str:
        if self.percent is None:
            return f"estimating the work (listing the source); {self.files_done} files copied so far"
        return (
            f"{self.percent:5.1f} %  {self.bytes_done / 1e9:.2f} of {self.bytes_total / 1e9:.2f} GB, "
            f"{self.files_done} of {self.files_total} files"
        )


class _Sha256Sink(io.RawIOBase):
    """A write-only file object that hashes what the SDK streams into it (fs.read_file's response_file)."""

    def __init__(self) -> None:
        super().__init__()
        self.digest, self.size = hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self.digest.update(chunk)
        self.size += len(chunk)
        return len(chunk)


class HubLoad:
    """One load of an S3 folder into `<dataset_path>/<name>/<version>` through a logged-in Qumulo RestClient."""

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
                    raise LoadError(
                        f"{self.target} exists and no load is copying into it; versions are never written "
                        "twice: choose a new --version",
                        code=EXIT_BAD_INPUT,
                    )
                status = self._create()
            else:
                self._check_same_source(status)
                self.out.write(f"resuming the load into {self.target} (relationship {status['id']})\n")
                if status.get("state") != "REPLICATION_RUNNING" and _job_error(status) is not None:
                    self.out.write(f"the last job failed ({_job_error(status)}); starting a new one\n")
                    self.client.object_replication.replicate_object_relationship(status["id"])
                    status = self._status(status["id"])
            status = self._wait(status)
            manifest = self._seal()
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
        error = _job_error(status)
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

    def _sha256(self, relative: str, size: int, client: Any = None) -> str:
        client = self.client if client is None else client
        sink = _Sha256Sink()
        for offset in range(0, max(size, 1), READ_CHUNK):
            client.fs.read_file(
                sink, path=f"{self.target}/{relative}", offset=offset, length=min(READ_CHUNK, size - offset)
            )
        if sink.size != size:
            raise LoadError(f"{self.target}/{relative}: read {sink.size} bytes of {size}; run again to retry")
        return sink.digest.hexdigest()

    def _hash_all(self, files: list[tuple[str, int]]) -> list[FileEntry]:
        """Every file's SHA-256, `hash_workers` files at once, each worker on its own REST connection (an SDK
        connection is one HTTP connection, not to be shared between threads); in the walk's order."""
        if self.hash_workers <= 1 or len(files) <= 1:
            return [FileEntry(path, size, self._sha256(path, size)) for path, size in files]
        from concurrent.futures import ThreadPoolExecutor

        local = threading.local()

        def one(item: tuple[str, int]) -> FileEntry:
            if not hasattr(local, "client"):
                local.client = self.client.clone()
            path, size = item
            return FileEntry(path, size, self._sha256(path, size, local.client))

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
        self.out.write(f"checksumming {len(files)} files ({total / 1e9:.2f} GB) through the hub's REST API\n")
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


def _job_error(status: dict[str, Any]) -> str | None:
    last = status.get("last_job")
    if isinstance(last, dict) and last.get("error"):
        return str(last["error"])
    return None


# ----- the command
def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "dataset",
        help=COMMANDS["dataset"].summary,
        description="Load dataset versions into the hub.",
    )
    actions = parser.add_subparsers(dest="dataset_action", required=True, metavar="ACTION")
    loader = actions.add_parser(
        "load",
        help="copy an S3 folder into a new hub version with Qumulo Shift-From, then seal it with its manifest",
        description=(
            "Copy an S3 folder into <dataset_path>/<name>/<version> on the hub with Qumulo Shift-From, show "
            "progress, and seal the version with MANIFEST.json (docs/datasets.md). Run the same command again "
            "to resume."
        ),
        epilog=(
            "Example: hubspoke dataset load --config config/dev.yaml --name c4-llama3 --version v2 "
            "--source s3://my-datasets/c4/llama3/"
        ),
    )
    loader.add_argument("--config", required=True, type=Path, metavar="PATH")
    loader.add_argument(
        "--name", required=True, help="the dataset's name (jobs read the one in dataset.name)"
    )
    loader.add_argument("--version", required=True, help="a new version; an existing one is refused")
    loader.add_argument(
        "--source", required=True, help="s3://bucket/folder/ in one of dataset.source_buckets"
    )
    loader.add_argument("--bucket-region", help="the bucket's Region (default: the hub's)")
    loader.add_argument(
        "--token-bytes",
        type=int,
        choices=(2, 4),
        help="token width of the shards (default: dataset.token_bytes)",
    )
    loader.add_argument(
        "--vocab-size", type=int, help="vocabulary of the shards (default: dataset.vocab_size)"
    )
    loader.add_argument(
        "--rest-address",
        metavar="ADDRESS[:PORT]",
        help=f"the hub's REST API (default: the hub Storage stack's RestAddress output, port {QUMULO_REST})",
    )
    loader.add_argument("--poll-seconds", type=float, default=30.0, help="seconds between status reads (30)")
    loader.add_argument(
        "--hash-workers",
        type=int,
        default=DEFAULT_HASH_WORKERS,
        help=f"files checksummed at once when sealing, one REST connection each (default {DEFAULT_HASH_WORKERS})",
    )
    loader.set_defaults(run=run)


def _problem(path: Path, field: str, message: str) -> int:
    print(format_problem(path, Problem(field, message)), file=sys.stderr)
    return EXIT_BAD_INPUT


def run(args: argparse.Namespace) -> int:
    path: Path = args.config
    config = load(path).config
    try:
        source = Source.parse(args.source)
        check_segment("--name", args.name)
        check_segment("--version", args.version)
    except LoadError as exc:
        return _problem(path, "--source", str(exc).removeprefix("--source "))
    except ManifestError as exc:
        return _problem(path, str(exc).split(" ", 1)[0], str(exc).split(" ", 1)[1])
    if source.bucket not in config.dataset.source_buckets:
        listed = ", ".join(config.dataset.source_buckets) or "none"
        return _problem(
            path,
            "dataset.source_buckets",
            f"bucket {source.bucket} is not listed (listed: {listed}); add it and deploy the hub Storage stack, "
            "which grants the Shift user read on exactly these buckets",
        )
    if not config.hub.storage.enabled:
        return _problem(path, "hub.storage.enabled", "the hub has no CNQ cluster to load into")
    token_bytes = args.token_bytes or config.dataset.token_bytes
    vocab_size = args.vocab_size or config.dataset.vocab_size
    try:
        validate(
            name=args.name, version=args.version, token_bytes=token_bytes, vocab_size=vocab_size, files=[]
        )
    except ManifestError as exc:
        return _problem(path, "--vocab-size", str(exc).split(": ", 1)[1])
    if not 1 <= args.hash_workers <= 32:
        return _problem(path, "--hash-workers", f"{args.hash_workers}: give 1 to 32 files at once")
    try:
        client, keys = connect(config, args)
        HubLoad(
            client,
            dataset_path=config.hub.storage.dataset_path,
            name=args.name,
            version=args.version,
            source=source,
            bucket_region=args.bucket_region or config.hub.region,
            token_bytes=token_bytes,
            vocab_size=vocab_size,
            keys=keys,
            out=sys.stdout,
            poll_seconds=args.poll_seconds,
            hash_workers=args.hash_workers,
        ).run()
    except LoadError as exc:
        print(f"hubspoke dataset load: {exc}", file=sys.stderr)
        return exc.code
    return 0


def connect(config: HubSpokeConfig, args: argparse.Namespace) -> tuple[Any, KeySource]:
    """A RestClient logged in to the hub as admin, and the Shift user's keys, from the hub stack's outputs."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError
    from qumulo.lib.request import RequestError
    from qumulo.rest_client import RestClient

    from hubspoke.outputs import ADMIN_SECRET, REST_ADDRESS, SHIFT_USER
    from hubspoke.topology import stack_name

    hub = config.hub.region
    stack = stack_name(config, "storage", hub)
    try:
        described = boto3.client("cloudformation", region_name=hub).describe_stacks(StackName=stack)
        outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Stacks"][0].get("Outputs", [])}
        secrets = boto3.client("secretsmanager", region_name=hub)
        password = secrets.get_secret_value(SecretId=outputs[ADMIN_SECRET.key()])["SecretString"]
        user = outputs.get(SHIFT_USER.key())
        if not user:
            raise LoadError(
                f"stack {stack} has no {SHIFT_USER.key()} output: list the bucket in dataset.source_buckets and "
                "deploy the hub Storage stack, which creates the Shift user",
                code=EXIT_BAD_INPUT,
            )
        address, _, port = (args.rest_address or outputs[REST_ADDRESS.key()]).partition(":")
    except (BotoCoreError, ClientError, KeyError, ValueError) as exc:
        raise LoadError(f"cannot read the hub's address and secrets from stack {stack}: {exc}") from None
    try:
        client = RestClient(address, int(port or QUMULO_REST), timeout=60)
        client.login("admin", password)
    except (RequestError, OSError) as exc:
        raise LoadError(
            f"cannot log in to the hub's REST API at {address}:{port or QUMULO_REST} ({exc}); run this where that "
            "address is reachable (inside the hub VPC, or from storage.admin_cidr)"
        ) from None
    return client, IamKeys(boto3.client("iam"), user)
