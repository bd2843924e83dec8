"""How much of a dataset version prewarm has warmed in a spoke's cache: the status file prewarm writes, and waiting on it.

prewarm.py rewrites the file (atomically: a temporary file renamed over it) with every progress line and at its
end; train.py reads it to republish the fraction with its throughput records (the cache alarms judge a version
only once it is whole). Run as a program (`python cache_status.py --status FILE --wait-for-cached-fraction F
...`), it is the training pods' init container that waits for it before the monitored training process starts,
printing a progress line every poll. The file lives beside prewarm's resume journal on the Region's checkpoint
volume, which both Jobs mount. Stdlib only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

FORMAT = "hubspoke-prewarm-status/1"


class StatusError(ValueError):
    """The status file is missing fields or is not this format: names the file and what is wrong."""


@dataclass(frozen=True)
class CacheStatus:
    """What prewarm knows: the dataset root it warms, the version (when a manifest pinned one), bytes warmed."""

    root: str
    name: str | None
    version: str | None
    total_bytes: int
    warm_bytes: int
    complete: bool
    updated: float  # seconds since the epoch
    # The residency check at the end of prewarm's run (see `recheck`): "held", "missing" (the sample found bytes
    # the cache no longer holds; held_estimate, and warm_bytes too when prewarm re-warms on it), "unverifiable" (the cluster's
    # fetch-data does not say what it held) or "none" (not checked).
    check: str = "none"
    checked_bytes: int = 0
    missing_bytes: int = 0
    # The version's bytes the sample estimates held (None: not checked); advisory unless prewarm re-warms on it.
    held_estimate: int | None = None

    @property
    def fraction(self) -> float:
        """Warmed bytes of the version's bytes, 0..1 (an empty version is whole once prewarm has listed it)."""
        if self.total_bytes <= 0:
            return 1.0 if self.complete else 0.0
        return min(1.0, self.warm_bytes / self.total_bytes)


def write(path: Path, status: CacheStatus) -> None:
    """Replace the file at once: a reader sees the old status or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": FORMAT, **asdict(status), "fraction": status.fraction}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            json.dump(record, stream, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: Path) -> CacheStatus | None:
    """The status prewarm last wrote, or None when it has written none yet."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise StatusError(f"{path}: not JSON ({exc.msg}); delete it and re-run prewarm") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise StatusError(f"{path}: not a {FORMAT} file; delete it and re-run prewarm")
    try:
        return CacheStatus(
            root=str(record["root"]),
            name=record.get("name"),
            version=record.get("version"),
            total_bytes=int(record["total_bytes"]),
            warm_bytes=int(record["warm_bytes"]),
            complete=bool(record["complete"]),
            updated=float(record["updated"]),
            # Absent from a status written before prewarm checked residency.
            check=str(record.get("check", "none")),
            checked_bytes=int(record.get("checked_bytes", 0)),
            missing_bytes=int(record.get("missing_bytes", 0)),
            held_estimate=None if record.get("held_estimate") is None else int(record["held_estimate"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StatusError(
            f"{path}: field {exc} missing or not a number; delete it and re-run prewarm"
        ) from None


def describes(
    status: CacheStatus, data_dir: Path, *, name: str | None = None, version: str | None = None
) -> bool:
    """Whether `status` is about the dataset a job reads. A job that pins a version (`name`, `version`) counts
    only a status naming that same version: a status without one (prewarm of a whole tree, or one written
    before prewarm pinned versions) says nothing about which bytes are warm, so it does not count. A job that
    pins nothing (--data-dir alone) counts a status whose version is the directory's last two parts,
    <name>/<version> (the layout of hubspoke/dataset_manifest.py), or one without a version."""
    if name is not None or version is not None:
        return (status.name, status.version) == (name, version)
    if status.name is None or status.version is None:
        return True
    return Path(data_dir).parts[-2:] == (status.name, status.version)


def wait_for_fraction(
    path: Path,
    minimum: float,
    *,
    timeout_s: float,
    poll_s: float = 30.0,
    log: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    describes: Callable[[CacheStatus], bool] = lambda status: True,
    max_age_s: float | None = None,
    wall: Callable[[], float] = time.time,
) -> CacheStatus:
    """Block until prewarm reports at least `minimum` of the dataset warmed; TimeoutError after `timeout_s`.

    `describes`: whether a status is about the job's dataset; one about another version does not count (it is
    a different set of bytes). `max_age_s`: a status whose `updated` (wall clock, `wall`) is older does not count
    either: the cache may have evicted since, and only a fresh prewarm run (its residency re-check) says."""
    deadline = clock() + timeout_s
    while True:
        try:
            status = read(path)
        except StatusError as exc:  # prewarm's next write replaces it: wait on, as for no status
            log(f"cache: {exc}")
            status = None
        age = wall() - status.updated if status is not None else 0.0
        if status is not None and describes(status) and max_age_s is not None and age > max_age_s:
            seen = (
                f"a status {age:.0f} s old (over {max_age_s:g} s: it may predate an eviction), waiting for a fresh "
                "prewarm run"
            )
        elif status is not None and describes(status):
            if status.fraction >= minimum:
                log(f"cache: prewarm reports {status.fraction:.3f} of the dataset warm (>= {minimum:g})")
                return status
            seen = f"{status.fraction:.3f} warm"
        elif status is not None:
            seen = f"a status for {status.name}/{status.version}, not this job's dataset"
        else:
            seen = "no status yet"
        if clock() >= deadline:
            raise TimeoutError(
                f"{path}: {seen} after {timeout_s:g} s, waiting for {minimum:g}; run or resume the prewarm Job "
                "(hubspoke render prewarm), or start without --wait-for-cached-fraction"
            )
        log(f"cache: {seen}; waiting for {minimum:g} (prewarm status {path})")
        sleep(poll_s)


@dataclass(frozen=True)
class Residency:
    """What a sample of a version's bytes says about the spoke cache: bytes checked, bytes it no longer held."""

    check: str  # "held", "missing" or "unverifiable"
    checked_bytes: int
    missing_bytes: int

    def held_estimate(self, total_bytes: int) -> int:
        """The version's bytes the cache holds, estimated from the sample (all of them when nothing was missing)."""
        if self.check != "missing" or self.checked_bytes <= 0:
            return total_bytes
        return int(total_bytes * (self.checked_bytes - self.missing_bytes) / self.checked_bytes)


def sample_regions(
    files: Sequence[tuple[str, int]], *, samples: int, sample_bytes: int, phase: float
) -> list[tuple[str, int, int]]:
    """`samples` regions (path, offset, length) evenly spread over the files' bytes taken end to end, shifted by
    `phase` (0..1) of one stride, so every part of the version is looked at and repeated checks look elsewhere."""
    total = sum(size for _, size in files)
    if total <= 0 or samples <= 0:
        return []
    stride = total / samples
    regions, starts, at = [], [], 0
    for _, size in files:
        starts.append(at)
        at += size
    index = 0
    for i in range(samples):
        point = int((i + phase) * stride)
        while index + 1 < len(files) and starts[index + 1] <= point:
            index += 1
        path, size = files[index]
        offset = min(point - starts[index], max(size - 1, 0))
        regions.append((path, offset, min(sample_bytes, size - offset)))
    return [r for r in dict.fromkeys(regions) if r[2] > 0]


def recheck(fetch: Callable[[str, int, int], int], regions: Sequence[tuple[str, int, int]]) -> Residency:
    """Ask the spoke to fetch each sampled region; what it reports fetched was not held.

    `fetch(path, offset, length)` is one fetch-data call's `bytes_fetched` ("The number of bytes fetched into the
    cache", REST API guide, files_ref_fetch-data; SDK qumulo.rest.fs.fetch_data). ASSUMED: a region the cache
    holds reports 0. The SDK's fetch_data_loop reads the number as bytes covered instead, so the first region is
    fetched a second time: if the repeat, which must now be held, still reports bytes, this cluster does not say
    what it held and the answer is "unverifiable", never "held"."""
    if not regions:
        return Residency("held", 0, 0)
    checked = missing = 0
    for path, offset, length in regions:
        checked += length
        missing += min(length, max(0, fetch(path, offset, length)))
    path, offset, length = regions[0]
    if fetch(path, offset, length) > 0:
        return Residency("unverifiable", checked, 0)
    return Residency("missing" if missing else "held", checked, missing)


DEADLINE_FORMAT = "hubspoke-cache-wait/1"
# A prewarm run rewrites its status every progress line and at its end, and a re-run on a warm version costs a
# listing and its residency re-check (minutes), so an hour-old status is cheap to refresh while an older one may
# predate an eviction. ASSUMED (no source gives an eviction rate); `hubspoke render job --max-cache-status-age`.
DEFAULT_MAX_STATUS_AGE_S = 3600.0


def anchored_deadline(path: Path, timeout_s: float, *, now: Callable[[], float] = time.time) -> float:
    """The wall-clock deadline of a job's wait, fixed by its first attempt: every later attempt (a recreated pod,
    a resubmitted job of the same name) reads the same file instead of waiting `timeout_s` again.

    Created with a hard link of a finished temporary file, which fails if the name exists, so when the pods of
    one job start together exactly one deadline wins and none reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            json.dump({"format": DEADLINE_FORMAT, "deadline": now() + timeout_s}, stream)
        # link(2) refuses an existing name (EEXIST), over NFSv3 too (RFC 1813, LINK): the first writer wins.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record.get("format") != DEADLINE_FORMAT:
            raise ValueError(record.get("format"))
        return float(record["deadline"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise StatusError(f"{path}: not a {DEADLINE_FORMAT} file; delete it to wait afresh") from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cache_status.py",
        description="Wait until prewarm reports a fraction of a dataset version warm in the spoke cache "
        "(the training pods' init container).",
    )
    p.add_argument(
        "--status", type=Path, required=True, help="prewarm's status file (--status of prewarm.py)"
    )
    p.add_argument(
        "--wait-for-cached-fraction", type=float, required=True, help="the fraction (0..1] to wait for"
    )
    p.add_argument("--dataset-name", required=True, help="the dataset the job reads")
    p.add_argument("--dataset-version", required=True, help="the version the job reads")
    p.add_argument(
        "--deadline-file",
        type=Path,
        required=True,
        help="where the first attempt's deadline is kept (the job's checkpoint directory): a restart waits only "
        "what is left of it",
    )
    p.add_argument("--timeout-seconds", type=float, default=6 * 3600.0, help="the first attempt's whole wait")
    p.add_argument(
        "--max-status-age",
        type=float,
        default=DEFAULT_MAX_STATUS_AGE_S,
        help="seconds after which prewarm's status no longer counts (it may predate an eviction)",
    )
    p.add_argument(
        "--at-deadline",
        choices=("start", "fail"),
        default="start",
        help="start: warn and let training start on a cold cache; fail: write --refusal-file, which train.py "
        "refuses to start on (either way this container exits 0: a failed init container is restarted)",
    )
    p.add_argument("--refusal-file", type=Path, help="with --at-deadline fail: where the refusal is written")
    p.add_argument(
        "--poll-seconds", type=float, default=30.0, help="seconds between checks and progress lines"
    )
    return p


def main(
    argv: Sequence[str] | None = None,
    *,
    now: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Exit 0 once the fraction is reached or the deadline passes (see --at-deadline), 1 on an unreadable status
    or deadline file, 2 on bad arguments.

    Never 1 at the deadline: Kubernetes restarts a failed init container unless the pod's restartPolicy is Never
    (Kubernetes docs, "Init Containers"), and the training pods use OnFailure (PyTorchJob) or Always (HyperPod), so
    a failing wait would hold the GPUs idle forever."""
    args = _parser().parse_args(argv)
    if (
        not 0 < args.wait_for_cached_fraction <= 1
        or args.timeout_seconds < 0
        or args.poll_seconds <= 0
        or args.max_status_age <= 0
        or (args.at_deadline == "fail" and args.refusal_file is None)
    ):
        print(
            "cache_status.py: --wait-for-cached-fraction must be in (0, 1], --timeout-seconds >= 0, "
            "--poll-seconds > 0, --max-status-age > 0, and --at-deadline fail needs --refusal-file",
            file=sys.stderr,
        )
        return 2

    def log(line: str) -> None:
        print(line, flush=True)

    try:
        deadline = anchored_deadline(args.deadline_file, args.timeout_seconds, now=now)
        left = deadline - now()
        log(
            f"cache: waiting up to {max(left, 0):.0f} s more for {args.wait_for_cached_fraction:g} of "
            f"{args.dataset_name}/{args.dataset_version} (deadline fixed by the job's first attempt in "
            f"{args.deadline_file})"
        )
        wait_for_fraction(
            args.status,
            args.wait_for_cached_fraction,
            timeout_s=max(left, 0.0),
            poll_s=args.poll_seconds,
            log=log,
            clock=now,
            sleep=sleep,
            describes=lambda status: (
                status.name == args.dataset_name and status.version == args.dataset_version
            ),
            max_age_s=args.max_status_age,
            wall=now,
        )
    except TimeoutError as exc:
        if args.at_deadline == "fail":
            reason = f"the cache wait's deadline passed: {exc}"
            args.refusal_file.parent.mkdir(parents=True, exist_ok=True)
            args.refusal_file.write_text(reason + "\n", encoding="utf-8")
            print(
                f"cache_status.py: {reason}; train.py will refuse to start (--at-deadline fail)", flush=True
            )
            return 0
        # One loud line: bounded idle GPU time beats a wait restarted forever; the cold reads are slower only.
        print(
            f"cache_status.py: WARNING: {exc}; STARTING TRAINING ON A COLD CACHE", file=sys.stderr, flush=True
        )
        return 0
    except StatusError as exc:
        print(f"cache_status.py: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
