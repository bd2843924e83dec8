"""Warm a spoke's portal cache before GPU time is billed: have the spoke fetch every dataset file from the hub.

Mechanism: Qumulo's fetch-data REST API, POST /v1/files/{ref}/fetch-data ("performs a server-side read of the
specified file region to populate cluster caches"; body {offset, length}, answer {bytes_fetched, next_offset},
next_offset empty at the end of the file; a preview API in Qumulo Core 7.x), called through the qumulo-api
SDK against the spoke cluster. The cluster reads from the hub over the portal; no file data crosses to this pod.

- Tree: GET /v1/files/{dir}/entries/ (paged) from --root down, files in sorted path order (the loader's order,
  so a partial warm-up covers the first shards first).
- Parallelism: --parallel workers, one file each at a time, each with its own REST session.
- Progress: every --progress-seconds a log line with files, bytes, rate and ETA.
- Resume: --state is an append-only JSON-lines journal (finished files with their size, and the offset reached
  inside large files every --journal-every-bytes). A re-run skips finished files whose size is unchanged
  and restarts large files from their last offset. A torn last line (pod killed mid-write) is ignored.
- Manifest (--version-manifest: <root>/MANIFEST.json read through the same REST API, so --root must be the
  pinned version's directory <dataset_path>/<name>/<version> and the manifest must name that name and version;
  or --manifest, a local copy; hubspoke/dataset_manifest.py): only the files it lists are warmed, and the spoke's listing must hold each at its manifest size, else nothing is warmed and the
  exit code is 1. --verify-sha256 with --dataset-dir (the version's directory on a read-only NFS mount)
  hashes every file after warming it: that reads the whole version once more, through the spoke's cache.
- Bandwidth cap: --max-bytes-per-second, a token bucket charged with the bytes each fetch-data call reports
  fetched from the hub (the server picks a call's length unless --chunk-bytes does, so single calls can burst
  above the cap; the average over the run does not exceed it by more than one bucket).
- Status: with every progress line and at the end, --status (JSON, workload/cache_status.py) gets the fraction
  of the version's bytes warmed, and the same fraction goes to CloudWatch as DatasetPrewarmedFraction
  (hubspoke/training_metrics.py) through the CloudWatch agent when AWS_EMF_AGENT_ENDPOINT is set.
- Residency: no Qumulo API reports what a spoke holds of one directory (the SDK's portal file-system info,
  qumulo.rest.portal Portal.get_filesystem, has one usage_bytes for a whole portal file system). So at the end of
  every run, a re-run included, --recheck-samples regions spread over the version are fetched again
  (cache_status.recheck): bytes the spoke reports fetching were no longer held (evicted since they were warmed).
  That rule is ASSUMED (a held but cold region might report bytes too), so the verdict is advisory by default:
  the status and the log carry the sample's estimate, the journal stays and the exit code is 0. With
  --rewarm-on-missing the journal is forgotten, the status's fraction is the estimate (below 1) and the exit code
  is 1, so the Job's next attempt warms the version again.
- Errors: connection errors, timeouts and Qumulo 5xx/429 answers are retried with backoff (--retries);
  anything else (a 4xx: bad path, the API missing on this version) is final for that file. A 401/403 stops
  the run at once. Exit 0 when every file is warm, 1 when any file failed, 2 on bad arguments.
Credentials: QUMULO_USERNAME (default admin) and QUMULO_PASSWORD from the environment (a Kubernetes Secret).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

DEFAULT_PORT = 8000
BACKOFF_CAP_S = 30.0
# 16 files at once, as the rendered Job (hubspoke/k8s/prewarm.py): over the 70 ms, 1 GB/s cross-Region path,
# 8 kept it 0.93 busy with 64 MiB per fetch-data call but 0.82 with 8 MiB; 16 kept it 0.97 and 0.93 busy
# (benchmarks/prewarm_path.py, benchmarks/results.md "Prewarm over the long path"). 1 MiB calls would need about 60.
DEFAULT_PARALLEL = 16


class TokenBucket:
    """At most `rate` bytes per second on average, `burst` bytes at once; charged after the bytes moved."""

    def __init__(
        self,
        rate: float,
        *,
        burst: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate <= 0:
            raise ValueError("a bandwidth cap must be positive")
        self.rate, self.burst = rate, burst if burst is not None else rate
        self._clock, self._sleep = clock, sleep
        self._tokens, self._at = self.burst, clock()
        self._lock = threading.Lock()

    def take(self, amount: float) -> float:
        """Charge `amount` bytes; sleep until the bucket is no longer in debt. Returns the seconds slept."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate) - amount
            self._at = now
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait


@dataclass(frozen=True)
class FileEntry:
    path: str
    size: int


class FatalError(Exception):
    """Stops the whole run: retrying other files cannot succeed (credentials, permissions)."""


class FileFailed(Exception):
    """One file cannot be warmed; the others go on."""


def _status(error: BaseException) -> int | None:
    return getattr(error, "status_code", None) if type(error).__name__ == "RequestError" else None


def describe(error: BaseException) -> str:
    """Qumulo's own error class and text when it answered; the transport error otherwise."""
    status = _status(error)
    if status is not None:
        return f"Qumulo {status} {getattr(error, 'error_class', '')}: {getattr(error, 'description', '')}".strip()
    return (str(error).strip() or type(error).__name__).splitlines()[0][:300]


def retryable(error: BaseException) -> bool:
    status = _status(error)
    if status is None:
        return isinstance(error, OSError | TimeoutError | ConnectionError) or type(
            error
        ).__module__.startswith("http.client")
    return status >= 500 or status == 429


def with_retries(
    what: str,
    call: Callable[[], Any],
    *,
    retries: int,
    base_delay_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """Run `call`; retry transient failures up to `retries` times with doubling delays."""
    for attempt in range(retries + 1):
        try:
            return call()
        except Exception as exc:
            status = _status(exc)
            if status in (401, 403):
                raise FatalError(f"{what}: {describe(exc)}; check QUMULO_USERNAME/QUMULO_PASSWORD") from None
            if not retryable(exc):
                raise FileFailed(f"{what}: {describe(exc)}") from None
            if attempt == retries:
                raise FileFailed(f"{what}: {describe(exc)} (gave up after {retries + 1} attempts)") from None
            sleep(min(BACKOFF_CAP_S, base_delay_s * 2**attempt))
    raise AssertionError("unreachable")


class Journal:
    """The resume state: which files are warm (and at which size), and how far large files got."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[str, int] = {}
        self.offsets: dict[str, int] = {}
        self._lock = threading.Lock()
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn line from a killed pod: that file is simply redone
                if "forget" in record:  # the cache lost what the lines above say is warm
                    self.done.clear()
                    self.offsets.clear()
                elif "done" in record:
                    self.done[record["done"]] = int(record["size"])
                    self.offsets.pop(record["done"], None)
                elif "at" in record:
                    self.offsets[record["at"]] = int(record["offset"])
        path.parent.mkdir(parents=True, exist_ok=True)
        self._stream: IO[str] = path.open("a", encoding="utf-8")

    def is_done(self, entry: FileEntry) -> bool:
        return self.done.get(entry.path) == entry.size

    def resume_offset(self, entry: FileEntry) -> int:
        offset = self.offsets.get(entry.path, 0)
        return offset if 0 <= offset <= entry.size else 0

    def _append(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._stream.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._stream.flush()
            os.fsync(self._stream.fileno())

    def mark_offset(self, entry: FileEntry, offset: int) -> None:
        self._append({"at": entry.path, "offset": offset})

    def mark_done(self, entry: FileEntry) -> None:
        self._append({"done": entry.path, "size": entry.size})

    def forget(self) -> None:
        """The cache no longer holds what this journal says is warm: the next run starts afresh."""
        self._append({"forget": True})

    def close(self) -> None:
        self._stream.close()


@dataclass
class Progress:
    """Totals shared by the workers, and the log line that reports them."""

    files_total: int
    bytes_total: int
    files_done: int = 0
    bytes_done: int = 0
    bytes_fetched: int = 0
    failed: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    _bytes_at_start: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def advance(self, covered: int, fetched: int) -> None:
        with self._lock:
            self.bytes_done += covered
            self.bytes_fetched += fetched

    def finish(self, error: str | None = None) -> None:
        with self._lock:
            if error:
                self.failed.append(error)
            else:
                self.files_done += 1

    def line(self) -> str:
        with self._lock:
            elapsed = max(time.monotonic() - self.started, 1e-9)
            rate = (self.bytes_done - self._bytes_at_start) / elapsed
            left = self.bytes_total - self.bytes_done
            eta = _duration(left / rate) if rate > 0 else "unknown"
            pct = 100.0 * self.bytes_done / self.bytes_total if self.bytes_total else 100.0
            return (
                f"prewarm: {self.files_done}/{self.files_total} files, "
                f"{self.bytes_done / 1e9:.2f}/{self.bytes_total / 1e9:.2f} GB ({pct:.1f} %), "
                f"{rate / 1e6:.1f} MB/s, ETA {eta}, {self.bytes_fetched / 1e9:.2f} GB fetched from the hub, "
                f"{len(self.failed)} failed"
            )


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


ClientFactory = Callable[[], Any]


def sdk_client_factory(host: str, port: int, username: str, password: str, timeout_s: int) -> ClientFactory:
    """Logged-in qumulo-api RestClients, one per worker (an SDK connection is not shared across threads)."""

    def make() -> Any:
        from qumulo.rest_client import RestClient

        client = RestClient(host, port, timeout=timeout_s)
        client.login(username, password)
        return client

    return make


def walk(client: Any, root: str) -> Iterator[FileEntry]:
    """Every regular file under root in sorted path order, the order the loader reads shards in.

    Depth first, one directory listed at a time, so warming starts before the tree is known. Siblings sort by
    name with "/" appended to directories: then visiting them in that order yields the full paths in plain
    string order (a directory's files sort where its "name/" prefix does).
    """

    def listing(directory: str) -> Iterator[dict[str, Any]]:
        entries = list(client.fs.enumerate_entire_directory(path=directory))
        return iter(sorted(entries, key=lambda e: e["name"] + ("/" if _is_directory(e) else "")))

    stack = [listing(root)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif _is_directory(entry):
            stack.append(listing(entry["path"]))
        elif entry["type"] == "FS_FILE_TYPE_FILE":
            yield FileEntry(entry["path"], int(entry["size"]))


def _is_directory(entry: dict[str, Any]) -> bool:
    return bool(entry["type"] == "FS_FILE_TYPE_DIRECTORY")


def warm_file(
    client: Any,
    entry: FileEntry,
    *,
    start: int,
    chunk_bytes: int | None,
    journal: Journal,
    journal_every_bytes: int,
    progress: Progress,
    retries: int,
    base_delay_s: float,
    stop: threading.Event,
    bucket: TokenBucket | None = None,
) -> bool:
    """fetch-data from `start` to the end of the file; True when the file is complete."""
    offset: int | None = start
    since_journal = 0
    while offset is not None and not stop.is_set():
        at = offset

        def call(at: int = at) -> Any:
            return client.fs.fetch_data(offset=at, path=entry.path, length=chunk_bytes)

        answer = with_retries(f"{entry.path} at {at}", call, retries=retries, base_delay_s=base_delay_s)
        fetched = int(answer.get("bytes_fetched") or 0)
        next_offset = answer.get("next_offset")
        offset = int(next_offset) if next_offset not in (None, "") else None
        if offset is None and chunk_bytes is not None and at + chunk_bytes < entry.size:
            # An empty next_offset after a region we bounded may mean "that region is done", not "the file
            # is": go on after it. The SDK's own loop (qumulo-api 7.10.2.1, qumulo/commands/fs.py,
            # fetch_data_loop) bounds `length` and follows next_offset; nothing documented says which of
            # the two an empty next_offset means for a bounded call, so both readings warm the whole file.
            offset = at + chunk_bytes
        if offset is not None and offset <= at:
            raise FileFailed(f"{entry.path}: fetch-data did not advance past offset {at}")
        covered = (offset if offset is not None else max(entry.size, at)) - at
        progress.advance(covered, fetched)
        if bucket is not None and fetched:
            bucket.take(fetched)
        since_journal += covered
        if offset is not None and since_journal >= journal_every_bytes:
            journal.mark_offset(entry, offset)
            since_journal = 0
    return offset is None


@dataclass(frozen=True)
class Options:
    root: str
    parallel: int = DEFAULT_PARALLEL
    chunk_bytes: int | None = None
    journal_every_bytes: int = 1 << 30
    retries: int = 5
    base_delay_s: float = 1.0
    progress_every_s: float = 30.0
    max_bytes_per_second: float | None = None
    manifest: Any = None  # a dataset_manifest.Manifest: warm exactly its files, at its sizes
    # Read <root>/MANIFEST.json through the REST API instead (the rendered Job: it mounts no dataset).
    version_manifest: bool = False
    status: Path | None = None
    publish: Callable[[float], None] | None = None  # the cached fraction, to CloudWatch
    # The residency check at the end of a run (0 regions: none); see cache_status.recheck.
    recheck_samples: int = 64
    recheck_bytes: int = 1 << 20
    # Act on a "missing" verdict (forget the journal, report the estimate as the fraction, exit 1); else advisory.
    rewarm_on_missing: bool = False


def manifest_files(
    manifest: Any, root: str, listed: Sequence[FileEntry]
) -> tuple[list[FileEntry], list[str]]:
    """The manifest's files as the spoke lists them under `root`, and what disagrees (missing, other size)."""
    sizes = {f.path: f.size for f in listed}
    files, problems = [], []
    for entry in manifest.files:
        path = root.rstrip("/") + "/" + entry.path
        if path not in sizes:
            problems.append(f"{path} is in the manifest but the spoke does not list it")
        elif sizes[path] != entry.bytes:
            problems.append(f"{path} is {sizes[path]} bytes on the spoke, the manifest says {entry.bytes}")
        else:
            files.append(FileEntry(path, entry.bytes))
    return sorted(files, key=lambda f: f.path), problems


def read_version_manifest(client: Any, options: Options) -> Any:
    """<root>/MANIFEST.json through the REST API (SDK fs.read_file), checked to name the version <root> is.

    ValueError (one line) when the version is not sealed (no manifest: a load still copying, or no such
    version on the hub) or its manifest names another name/version."""
    import io

    import manifest as dataset_manifest

    where = options.root.rstrip("/") + "/" + dataset_manifest.MANIFEST_NAME

    def read() -> bytes:
        sink = io.BytesIO()
        client.fs.read_file(sink, path=where)
        return sink.getvalue()

    try:
        text = with_retries(f"read {where}", read, retries=options.retries, base_delay_s=options.base_delay_s)
    except FileFailed as exc:
        raise ValueError(f"{exc} (is the version loaded and sealed? docs/datasets.md)") from None
    found = dataset_manifest.parse(text, source=where)
    expected = tuple(options.root.rstrip("/").split("/")[-2:])
    if (found.name, found.version) != expected:
        raise ValueError(
            f"{where} names {found.name}/{found.version}, not {'/'.join(expected)}: the directory is not the "
            "version it claims; load the version again"
        )
    return found


def _report(progress: Progress, options: Options, *, complete: bool, residency: Any = None) -> None:
    """The cached fraction to the status file and CloudWatch; never fails the warm-up. With a residency check,
    the status carries its estimate; the warm bytes become it only with options.rewarm_on_missing."""
    import cache_status

    warm = progress.bytes_done
    estimate = None if residency is None else residency.held_estimate(progress.bytes_total)
    if estimate is not None and options.rewarm_on_missing:
        warm = min(warm, estimate)
    status = cache_status.CacheStatus(
        root=options.root,
        name=getattr(options.manifest, "name", None),
        version=getattr(options.manifest, "version", None),
        total_bytes=progress.bytes_total,
        warm_bytes=warm,
        complete=complete,
        updated=time.time(),
        **(
            {}
            if residency is None
            else {
                "check": residency.check,
                "checked_bytes": residency.checked_bytes,
                "missing_bytes": residency.missing_bytes,
                "held_estimate": estimate,
            }
        ),
    )
    if options.status is not None:
        try:
            cache_status.write(options.status, status)
        except OSError as exc:
            print(f"prewarm: cannot write the status file {options.status}: {exc}", file=sys.stderr)
    if options.publish is not None:
        options.publish(status.fraction)


def _recheck(client: Any, files: Sequence[FileEntry], options: Options, log: IO[str]) -> Any:
    """Fetch a sample of the version again and report what the spoke no longer held (cache_status.recheck)."""
    import random

    import cache_status

    def fetch(path: str, offset: int, length: int) -> int:
        answer = with_retries(
            f"re-check {path} at {offset}",
            lambda: client.fs.fetch_data(offset=offset, path=path, length=length),
            retries=options.retries,
            base_delay_s=options.base_delay_s,
        )
        return int(answer.get("bytes_fetched") or 0)

    regions = cache_status.sample_regions(
        [(f.path, f.size) for f in sorted(files, key=lambda f: f.path)],
        samples=options.recheck_samples,
        sample_bytes=options.recheck_bytes,
        phase=random.random(),
    )
    try:
        residency = cache_status.recheck(fetch, regions)
    except (FatalError, FileFailed) as exc:
        print(f"prewarm: residency not checked: {exc}", file=log, flush=True)
        return None
    if residency.check == "unverifiable":
        print(
            "prewarm: residency not checked: this cluster's fetch-data reports bytes for a region it has just "
            "fetched, so its answer does not say what it held (the status says what prewarm warmed)",
            file=log,
            flush=True,
        )
    else:
        print(
            f"prewarm: residency: {residency.missing_bytes} of {residency.checked_bytes} sampled bytes were no "
            "longer held",
            file=log,
            flush=True,
        )
    return residency


def verify_sha256(manifest: Any, directory: Path, log: IO[str]) -> list[str]:
    """Every manifest file under `directory` hashed and compared; the mismatches."""
    import manifest as dataset_manifest

    bad = []
    for entry in manifest.files:
        try:
            digest = dataset_manifest.sha256_file(directory / entry.path)
        except OSError as exc:
            bad.append(f"{entry.path}: {exc.strerror or exc}")
            continue
        if digest != entry.sha256:
            bad.append(f"{entry.path}: sha256 {digest}, the manifest says {entry.sha256}")
    print(f"prewarm: sha256 of {len(manifest.files)} files checked, {len(bad)} differ", file=log, flush=True)
    return bad


def prewarm(
    make_client: ClientFactory,
    journal: Journal,
    options: Options,
    *,
    log: IO[str] | None = None,
    list_files: Callable[[Any, str], Iterator[FileEntry]] = walk,
) -> int:
    """Warm every file under options.root not yet in the journal; returns the exit code. `log`: stderr."""
    log = sys.stderr if log is None else log  # looked up per call, so a redirected stderr is honoured
    try:
        lister = with_retries(
            "log in", make_client, retries=options.retries, base_delay_s=options.base_delay_s
        )
        files: list[FileEntry] = with_retries(
            f"list {options.root}",
            lambda: list(list_files(lister, options.root)),
            retries=options.retries,
            base_delay_s=options.base_delay_s,
        )
    except (FatalError, FileFailed) as exc:
        print(f"prewarm: cannot list the dataset: {exc}", file=log)
        return 1
    if options.version_manifest:
        try:
            options = replace(options, manifest=read_version_manifest(lister, options))
        except (FatalError, FileFailed, ValueError) as exc:
            print(f"prewarm: {exc}; nothing warmed", file=log, flush=True)
            return 1
    if options.manifest is not None:
        files, problems = manifest_files(options.manifest, options.root, files)
        if problems:
            for problem in problems[:20]:
                print(f"prewarm: {problem}", file=log)
            print(
                f"prewarm: the spoke's {options.root} is not the version its manifest describes "
                f"({len(problems)} files differ); nothing warmed. Load the version again or pin another.",
                file=log,
                flush=True,
            )
            return 1
    todo = [f for f in files if not journal.is_done(f)]
    progress = Progress(files_total=len(files), bytes_total=sum(f.size for f in files))
    progress.files_done = len(files) - len(todo)
    progress.bytes_done = sum(f.size for f in files if journal.is_done(f)) + sum(
        journal.resume_offset(f) for f in todo
    )
    progress._bytes_at_start = progress.bytes_done
    print(
        f"prewarm: {len(files)} files under {options.root}, {len(files) - len(todo)} already warm "
        f"(journal {journal.path}); {options.parallel} workers",
        file=log,
        flush=True,
    )
    bucket = TokenBucket(options.max_bytes_per_second) if options.max_bytes_per_second else None
    queue = iter(todo)
    queue_lock = threading.Lock()
    stop = threading.Event()
    fatal: list[str] = []

    def worker() -> None:
        try:
            client = make_client()
        except Exception as exc:
            fatal.append(f"cannot open a REST session: {describe(exc)}")
            stop.set()
            return
        while not stop.is_set():
            with queue_lock:
                entry = next(queue, None)
            if entry is None:
                return
            try:
                complete = warm_file(
                    client,
                    entry,
                    start=journal.resume_offset(entry),
                    chunk_bytes=options.chunk_bytes,
                    journal=journal,
                    journal_every_bytes=options.journal_every_bytes,
                    progress=progress,
                    retries=options.retries,
                    base_delay_s=options.base_delay_s,
                    stop=stop,
                    bucket=bucket,
                )
            except FatalError as exc:
                fatal.append(str(exc))
                stop.set()
                return
            except FileFailed as exc:
                progress.finish(str(exc))
                print(f"prewarm: FAILED {exc}", file=log, flush=True)
                continue
            if complete:
                journal.mark_done(entry)
                progress.finish()

    threads = [
        threading.Thread(target=worker, name=f"prewarm-{i}", daemon=True) for i in range(options.parallel)
    ]
    for t in threads:
        t.start()
    next_report = time.monotonic() + options.progress_every_s
    while alive := [t for t in threads if t.is_alive()]:
        alive[0].join(timeout=0.2)
        if time.monotonic() >= next_report:
            print(progress.line(), file=log, flush=True)
            _report(progress, options, complete=False)
            next_report += options.progress_every_s
    print(progress.line(), file=log, flush=True)
    complete = not fatal and not progress.failed
    residency = _recheck(lister, files, options, log) if complete and options.recheck_samples else None
    lost = residency is not None and residency.check == "missing"
    if lost and not options.rewarm_on_missing:
        print(
            f"prewarm: advisory: the sample estimates {residency.held_estimate(progress.bytes_total)} of "
            f"{progress.bytes_total} bytes held; the rule behind it is ASSUMED (a held but cold region may report "
            "bytes), so the journal stays; --rewarm-on-missing re-warms instead",
            file=log,
            flush=True,
        )
        lost = False
    if lost:
        journal.forget()
    _report(progress, options, complete=complete and not lost, residency=residency)
    if residency is not None and lost:
        print(
            f"prewarm: the spoke no longer holds {residency.missing_bytes} of {residency.checked_bytes} sampled "
            "bytes (evicted since they were warmed); the journal is forgotten: run prewarm again to re-warm "
            "the version (a Job retries by itself)",
            file=log,
            flush=True,
        )
        return 1
    if fatal:
        print(f"prewarm: stopped: {fatal[0]}", file=log, flush=True)
        return 1
    if progress.failed:
        print(f"prewarm: {len(progress.failed)} files could not be warmed; re-run to retry them", file=log)
        return 1
    print("prewarm: every file is warm", file=log, flush=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prewarm",
        description="Warm a Qumulo spoke's portal cache over a dataset tree with fetch-data (resumable).",
        epilog="Example: QUMULO_PASSWORD=... python prewarm.py --host 10.20.4.10 --root /dataset "
        "--state /mnt/checkpoints/.hubspoke/prewarm/us-west-2.jsonl",
    )
    parser.add_argument("--host", required=True, help="the spoke cluster's REST address (a floating IP)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="REST port (default 8000)")
    parser.add_argument("--root", required=True, help="dataset directory on the spoke, e.g. /dataset")
    parser.add_argument("--state", type=Path, required=True, help="resume journal (JSON lines)")
    parser.add_argument(
        "--parallel",
        type=int,
        default=DEFAULT_PARALLEL,
        help=f"files warmed at once (default {DEFAULT_PARALLEL})",
    )
    parser.add_argument(
        "--chunk-bytes", type=int, default=None, help="bytes per fetch-data call (default: server)"
    )
    parser.add_argument("--retries", type=int, default=5, help="retries of a transient failure (default 5)")
    parser.add_argument("--progress-seconds", type=float, default=30.0, help="seconds between progress lines")
    parser.add_argument(
        "--request-timeout", type=int, default=60, help="seconds per REST request (default 60)"
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        help="the pinned version's MANIFEST.json (local path): warm exactly its files, refuse other sizes",
    )
    parser.add_argument(
        "--verify-sha256",
        action="store_true",
        help="after warming, hash every file under --dataset-dir against the manifest (reads it all)",
    )
    parser.add_argument(
        "--version-manifest",
        action="store_true",
        help="read <root>/MANIFEST.json through the REST API (--root is <dataset_path>/<name>/<version>)",
    )
    parser.add_argument(
        "--dataset-dir", type=Path, help="the version's directory on an NFS mount of the spoke"
    )
    parser.add_argument(
        "--max-bytes-per-second",
        type=float,
        default=None,
        help="cap on the bytes fetched from the hub per second, averaged (default: no cap)",
    )
    parser.add_argument(
        "--recheck-samples",
        type=int,
        default=64,
        help="regions of the version fetched again at the end to find evicted bytes (0: no check; default 64)",
    )
    parser.add_argument(
        "--recheck-bytes", type=int, default=1 << 20, help="bytes per re-checked region (default 1 MiB)"
    )
    parser.add_argument(
        "--rewarm-on-missing",
        action="store_true",
        help="when the re-check finds bytes not held: forget the journal, report the estimate and exit 1 so the "
        "Job warms again (default: report it only; the rule is ASSUMED)",
    )
    parser.add_argument(
        "--status", type=Path, help="status file for train.py (default: the journal's path + .status.json)"
    )
    parser.add_argument("--environment", default=os.environ.get("HUBSPOKE_ENVIRONMENT", "unknown"))
    parser.add_argument("--region", default=os.environ.get("AWS_REGION", "unknown"))
    return parser


def status_path(state: Path) -> Path:
    """Where the status file goes unless --status says: beside the journal, which every Job can mount."""
    return state.with_name(state.name + ".status.json")


def _emf_publisher(
    args: argparse.Namespace, manifest: Any, env: dict[str, str]
) -> Callable[[float], None] | None:
    """DatasetPrewarmedFraction to the CloudWatch agent (hubspoke/training_metrics.py), when the endpoint is set."""
    from emf_sink import EmfSink

    from hubspoke.training_metrics import AGENT_ENDPOINT_ENV, DATASET_PREWARMED_FRACTION, emf_line

    if not env.get(AGENT_ENDPOINT_ENV):
        return None
    sink = EmfSink(env[AGENT_ENDPOINT_ENV], warn=lambda m: print(f"prewarm: {m}", file=sys.stderr))
    if manifest is not None:
        labels = {"Dataset": manifest.name, "Version": manifest.version}
    elif args.version_manifest:
        # Checked against the manifest read from the spoke before any fraction is published.
        name, version = args.root.rstrip("/").split("/")[-2:]
        labels = {"Dataset": name, "Version": version}
    else:
        labels = {}

    def publish(fraction: float) -> None:
        sink.send(
            emf_line(
                {DATASET_PREWARMED_FRACTION: fraction},
                environment=args.environment,
                region=args.region,
                **labels,
            )
        )

    return publish


def main(argv: Sequence[str] | None = None, env: dict[str, str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    env = dict(os.environ) if env is None else env
    problems = []
    if not 1 <= args.parallel <= 256:
        problems.append("--parallel must be between 1 and 256")
    if not args.root.startswith("/"):
        problems.append(f"--root {args.root} must be an absolute path on the spoke, e.g. /dataset")
    if args.chunk_bytes is not None and args.chunk_bytes <= 0:
        problems.append("--chunk-bytes must be positive")
    if args.retries < 0 or args.request_timeout < 1:
        problems.append("--retries must be >= 0 and --request-timeout >= 1")
    if not env.get("QUMULO_PASSWORD"):
        problems.append("QUMULO_PASSWORD is not set; mount it from the Kubernetes Secret (see the runbook)")
    if args.recheck_samples < 0 or args.recheck_bytes < 1:
        problems.append("--recheck-samples must be >= 0 and --recheck-bytes >= 1")
    if args.max_bytes_per_second is not None and args.max_bytes_per_second <= 0:
        problems.append("--max-bytes-per-second must be positive (leave it out for no cap)")
    if args.version_manifest and args.manifest is not None:
        problems.append("--version-manifest and --manifest: give one (the first reads it from the spoke)")
    if args.version_manifest and len(args.root.strip("/").split("/")) < 2:
        problems.append(f"--version-manifest needs --root <dataset_path>/<name>/<version>, not {args.root}")
    if args.verify_sha256 and (args.manifest is None or args.dataset_dir is None):
        problems.append("--verify-sha256 needs --manifest and --dataset-dir (the version on an NFS mount)")
    manifest = None
    if args.manifest is not None:
        import manifest as dataset_manifest

        try:
            manifest = dataset_manifest.load(args.manifest)
        except (OSError, dataset_manifest.ManifestError) as exc:
            problems.append(f"--manifest {args.manifest}: {exc}")
    if problems:
        for p in problems:
            print(f"prewarm: {p}", file=sys.stderr)
        return 2
    journal = Journal(args.state)
    try:
        code = prewarm(
            sdk_client_factory(
                args.host,
                args.port,
                env.get("QUMULO_USERNAME", "admin"),
                env["QUMULO_PASSWORD"],
                args.request_timeout,
            ),
            journal,
            Options(
                root=args.root.rstrip("/") + "/",
                parallel=args.parallel,
                chunk_bytes=args.chunk_bytes,
                retries=args.retries,
                progress_every_s=args.progress_seconds,
                max_bytes_per_second=args.max_bytes_per_second,
                manifest=manifest,
                version_manifest=args.version_manifest,
                status=args.status or status_path(args.state),
                recheck_samples=args.recheck_samples,
                recheck_bytes=args.recheck_bytes,
                rewarm_on_missing=args.rewarm_on_missing,
                publish=_emf_publisher(args, manifest, env),
            ),
        )
    finally:
        journal.close()
    if code == 0 and args.verify_sha256:
        bad = verify_sha256(manifest, args.dataset_dir, sys.stderr)
        for line in bad[:20]:
            print(f"prewarm: {line}", file=sys.stderr)
        code = 1 if bad else 0
    return code


if __name__ == "__main__":
    sys.exit(main())
