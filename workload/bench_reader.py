"""Cold/warm read benchmark: read the dataset the way the training loader does and record every read.

Order: the dataset's shards (regular files under --root matching --pattern, sorted by relative path) are dealt
to --readers threads as a sharded IterableDataset deals them to DataLoader workers (reader k takes shards
k, k+N, k+2N, ...), and each reader reads its shards front to back in --block-size reads. Every phase named in
--phases repeats the whole read, so "cold,warm" measures a first pass against the cache and a second one.

Before and after each shard the reader drops the shard's pages from this host's page cache
(posix_fadvise DONTNEED), so a warm phase measures the spoke's cache, not the pod's memory.

Results (--out), JSON lines, one object per line, `kind` first:
  {"kind": "meta", "version": 1, "phase", "root", "readers", "block_size", "shards", "bytes_planned",
   "started_at" (UTC ISO 8601), "host", "synthetic": false}
  {"kind": "read", "phase", "t" (s since the phase started, at the read's start), "latency_s", "bytes",
   "reader", "shard", "offset"}
  {"kind": "error", "phase", "t", "reader", "shard", "offset", "error"}
  {"kind": "end", "phase", "elapsed_s", "bytes", "reads", "errors"}
`hubspoke bench report RESULTS` reads this file. Exit status: 0, 1 when any read failed, 2 on bad arguments.
Imports only the standard library: it runs in the training image or any Python 3.11 image.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

FORMAT_VERSION = 1
_UNITS = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


@dataclass(frozen=True)
class Shard:
    index: int
    path: Path
    size: int


def parse_size(text: str) -> int:
    """'4KiB', '1MiB', '2g', '65536' -> bytes; K, M, G are binary (KiB, MiB, GiB) with or without 'iB'."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmg](?:i?b)?|b)?\s*", text, re.IGNORECASE)
    if not match or int(match[1]) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size; write it like 4KiB, 1MiB or 65536")
    unit = (match[2] or "b").lower()[0]
    return int(match[1]) * _UNITS[unit]


def discover_shards(root: Path, pattern: str) -> list[Shard]:
    """Regular files under root whose name matches pattern, in sorted relative-path order."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        found.extend(Path(dirpath) / f for f in filenames if fnmatch.fnmatch(f, pattern))
    found.sort(key=lambda p: p.relative_to(root).as_posix())
    return [Shard(i, p, p.stat().st_size) for i, p in enumerate(found) if p.is_file()]


def assign(shards: Sequence[Shard], readers: int) -> list[list[Shard]]:
    """Reader k gets shards k, k+readers, ...: the DataLoader worker split of a sharded IterableDataset."""
    return [list(shards[k::readers]) for k in range(readers)]


class Recorder:
    """Thread-safe JSON-lines writer with running totals for the progress log."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.bytes = 0
        self.reads = 0
        self.errors = 0

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"))
        with self._lock:
            self._stream.write(line + "\n")
            if record["kind"] == "read":
                self.bytes += int(record["bytes"])
                self.reads += 1
            elif record["kind"] == "error":
                self.errors += 1


def _drop_cached_pages(fd: int) -> None:
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def read_shards(
    phase: str,
    reader: int,
    shards: Sequence[Shard],
    *,
    block_size: int,
    recorder: Recorder,
    started: float,
    stop: threading.Event,
    budget: Callable[[int], bool],
    drop_cache: bool,
) -> None:
    """Read each shard front to back in block_size reads, recording each; stop when told to."""
    buffer = bytearray(block_size)
    view = memoryview(buffer)
    for shard in shards:
        offset = 0
        try:
            fd = os.open(shard.path, os.O_RDONLY)
        except OSError as exc:
            recorder.write(_error(phase, started, reader, shard, 0, exc))
            continue
        try:
            if drop_cache:
                _drop_cached_pages(fd)
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    n = os.preadv(fd, [view], offset)
                except OSError as exc:
                    recorder.write(_error(phase, started, reader, shard, offset, exc))
                    break
                t1 = time.perf_counter()
                if n == 0:
                    break
                recorder.write(
                    {
                        "kind": "read",
                        "phase": phase,
                        "t": round(t0 - started, 6),
                        "latency_s": round(t1 - t0, 7),
                        "bytes": n,
                        "reader": reader,
                        "shard": shard.index,
                        "offset": offset,
                    }
                )
                offset += n
                if not budget(n):
                    stop.set()
            if drop_cache:
                _drop_cached_pages(fd)
        finally:
            os.close(fd)
        if stop.is_set():
            return


def _error(
    phase: str, started: float, reader: int, shard: Shard, offset: int, exc: OSError
) -> dict[str, Any]:
    return {
        "kind": "error",
        "phase": phase,
        "t": round(time.perf_counter() - started, 6),
        "reader": reader,
        "shard": shard.index,
        "offset": offset,
        "error": f"{shard.path}: {exc.strerror or exc}",
    }


def run_phase(
    phase: str,
    shards: Sequence[Shard],
    *,
    readers: int,
    block_size: int,
    out: IO[str],
    max_bytes: int | None = None,
    max_seconds: float | None = None,
    drop_cache: bool = True,
    root: Path | None = None,
    progress_every_s: float = 10.0,
    log: IO[str] = sys.stderr,
) -> Recorder:
    """One full pass over the shards by `readers` threads; returns the totals."""
    recorder = Recorder(out)
    recorder.write(
        {
            "kind": "meta",
            "version": FORMAT_VERSION,
            "phase": phase,
            "root": str(root) if root else None,
            "readers": readers,
            "block_size": block_size,
            "shards": len(shards),
            "bytes_planned": sum(s.size for s in shards),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
            "synthetic": False,
        }
    )
    stop = threading.Event()
    budget_lock = threading.Lock()
    remaining = [max_bytes]

    def budget(n: int) -> bool:
        if remaining[0] is None:
            return True
        with budget_lock:
            remaining[0] -= n
            return remaining[0] > 0

    started = time.perf_counter()
    threads = [
        threading.Thread(
            target=read_shards,
            name=f"reader-{k}",
            args=(phase, k, mine),
            kwargs={
                "block_size": block_size,
                "recorder": recorder,
                "started": started,
                "stop": stop,
                "budget": budget,
                "drop_cache": drop_cache,
            },
            daemon=True,
        )
        for k, mine in enumerate(assign(shards, readers))
    ]
    for t in threads:
        t.start()
    planned = (
        sum(s.size for s in shards) if max_bytes is None else min(max_bytes, sum(s.size for s in shards))
    )
    deadline = started + max_seconds if max_seconds is not None else None
    next_report = started + progress_every_s
    while alive := [t for t in threads if t.is_alive()]:
        alive[0].join(timeout=0.1)
        now = time.perf_counter()
        if deadline is not None and now >= deadline:
            stop.set()
        if now >= next_report:
            _progress(log, phase, recorder, now - started, planned)
            next_report += progress_every_s
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    recorder.write(
        {
            "kind": "end",
            "phase": phase,
            "elapsed_s": round(elapsed, 6),
            "bytes": recorder.bytes,
            "reads": recorder.reads,
            "errors": recorder.errors,
        }
    )
    _progress(log, phase, recorder, elapsed, planned)
    return recorder


def _progress(log: IO[str], phase: str, rec: Recorder, elapsed: float, planned: int) -> None:
    rate = rec.bytes / elapsed if elapsed > 0 else 0.0
    pct = 100.0 * rec.bytes / planned if planned else 100.0
    print(
        f"{phase}: {elapsed:7.1f} s  {rec.bytes / 1e9:8.2f} GB ({pct:5.1f} %)  {rate / 1e6:8.1f} MB/s  "
        f"{rec.reads} reads  {rec.errors} errors",
        file=log,
        flush=True,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench_reader",
        description="Read the dataset in the training loader's order and record every read (JSON lines).",
        epilog="Example: python bench_reader.py --root /mnt/dataset --out /mnt/checkpoints/bench/run.jsonl",
    )
    parser.add_argument("--root", type=Path, required=True, help="dataset directory (the mounted PVC)")
    parser.add_argument(
        "--out", type=Path, required=True, help="results file (JSON lines), created or appended"
    )
    parser.add_argument("--pattern", default="*", help="shard file-name glob (default: every file)")
    parser.add_argument("--readers", type=int, default=8, help="parallel readers, like DataLoader workers")
    parser.add_argument(
        "--block-size", type=parse_size, default=parse_size("1MiB"), help="bytes per read (default 1MiB)"
    )
    parser.add_argument("--phases", default="cold,warm", help="comma-separated phase names, one pass each")
    parser.add_argument("--max-bytes", type=parse_size, default=None, help="stop each phase after this much")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop each phase after this long")
    parser.add_argument(
        "--keep-page-cache", action="store_true", help="do not drop this host's cached pages (measures RAM)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    if args.readers < 1:
        parser.error("--readers must be 1 or more")
    if not phases:
        parser.error("--phases needs at least one name, e.g. cold,warm")
    if not args.root.is_dir():
        print(
            f"bench_reader: --root {args.root} is not a directory; mount the dataset there", file=sys.stderr
        )
        return 2
    shards = discover_shards(args.root, args.pattern)
    if not shards:
        print(f"bench_reader: no file under {args.root} matches '{args.pattern}'", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    errors = 0
    with args.out.open("a", encoding="utf-8") as out:
        for phase in phases:
            rec = run_phase(
                phase,
                shards,
                readers=args.readers,
                block_size=args.block_size,
                out=out,
                max_bytes=args.max_bytes,
                max_seconds=args.max_seconds,
                drop_cache=not args.keep_page_cache,
                root=args.root,
            )
            out.flush()
            errors += rec.errors
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
