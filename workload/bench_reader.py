"""Cold/warm read benchmark: read one dataset version the way train.py's DataLoader does, recording every read.

What it replays (workload/train.py, workload/shards.py; torch 2.13 torch/utils/data):
- Samples: TokenShards' windows. Every `*.bin` under --root in sorted path order; a shard of n tokens holds
  (n - 1) // seq_len samples; sample i is one pread of (seq_len + 1) x token_bytes bytes at
  (i - first sample of its shard) x seq_len x token_bytes (16 KiB + 4 bytes at 4096 tokens x 4 bytes).
- Order: RankSampler gives rank r the samples r, r + W, r + 2W, ... (no shuffling; the tail that does not
  divide by the world size W is dropped), cut into batches of --batch-size (drop_last=True). DataLoader sends
  batch b to worker b mod --num-workers (dataloader.py _try_put_index cycles the workers), which reads its
  samples one after another (_utils/fetch.py _MapDatasetFetcher: `[dataset[i] for i in batch]`), keeping one
  open descriptor per shard. One thread stands in for each worker process (pread releases the GIL).
- Concurrency: DataLoader primes prefetch_factor x num_workers batches (_reset) and sends one more each time a
  batch is handed to training (_process_data), in order. Here batch b of a rank starts once batch
  b - prefetch x workers has been received by every rank this pod plays: training takes step k on all ranks
  together. --num-workers 0 reads in the rank's own thread, one batch at a time, as DataLoader does.
What it does not replay: the GPU step (batches are taken the moment they arrive, so this is the storage-bound
rate, an upper bound on what the loader can feed), tensor decoding, and ranks other than --ranks (the rendered
Job plays one training node's ranks; the other nodes read their own share through their own mounts).

Each phase in --phases replays the whole plan, so "cold,warm" measures a first pass against the cache and a
second one. Before and after a phase every shard's pages are dropped from this host's page cache
(posix_fadvise DONTNEED), so a warm phase measures the spoke's cache, not the pod's memory; within a phase the
page cache works as it does for training.

Results (--out), JSON lines, one object per line, `kind` first:
  {"kind": "meta", "version": 1, "phase", "root", "seq_len", "token_bytes", "read_bytes", "world_size",
   "ranks", "batch_size", "num_workers", "prefetch_factor", "shards", "samples", "bytes_planned",
   "started_at" (UTC ISO 8601), "host", "synthetic": false}
  {"kind": "read", "phase", "t" (s since the phase started, at the read's start), "latency_s", "bytes",
   "rank", "worker", "batch", "sample", "shard", "offset"}
  {"kind": "error", "phase", "t", "rank", "worker", "sample", "shard", "offset", "error"}
  {"kind": "end", "phase", "elapsed_s", "bytes", "reads", "errors"}
`hubspoke bench report RESULTS` reads this file. Exit status: 0, 1 when any read failed, 2 on bad arguments.
Imports only the standard library: it runs in the training image or any Python 3.11 image.
"""

from __future__ import annotations

import argparse
import bisect
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


@dataclass(frozen=True)
class Layout:
    """The samples TokenShards finds: which shard each global sample index is in, and its byte range."""

    shards: tuple[Shard, ...]
    starts: tuple[int, ...]  # first global sample of each shard, then the total
    seq_len: int
    token_bytes: int

    @property
    def samples(self) -> int:
        return self.starts[-1]

    @property
    def read_bytes(self) -> int:
        return (self.seq_len + 1) * self.token_bytes

    def locate(self, sample: int) -> tuple[Shard, int]:
        shard = bisect.bisect_right(self.starts, sample) - 1
        return self.shards[shard], (sample - self.starts[shard]) * self.seq_len * self.token_bytes


def parse_size(text: str) -> int:
    """'4KiB', '1MiB', '2g', '65536' -> bytes; K, M, G are binary (KiB, MiB, GiB) with or without 'iB'."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmg](?:i?b)?|b)?\s*", text, re.IGNORECASE)
    if not match or int(match[1]) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size; write it like 4KiB, 1MiB or 65536")
    unit = (match[2] or "b").lower()[0]
    return int(match[1]) * _UNITS[unit]


def parse_ranks(text: str) -> list[int]:
    """'0-7' or '0,2,5' or '3' -> rank numbers."""
    ranks: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise argparse.ArgumentTypeError(f"'{text}' is not a rank list; write it like 0-7 or 0,3")
        low, high = int(match[1]), int(match[2] or match[1])
        ranks.extend(range(low, high + 1))
    return sorted(set(ranks))


def discover_shards(root: Path, pattern: str = "*.bin") -> list[Shard]:
    """Files under root matching pattern, in TokenShards' order (sorted full path strings)."""
    paths = sorted(str(p) for p in root.rglob(pattern) if p.is_file())
    return [Shard(i, Path(p), os.path.getsize(p)) for i, p in enumerate(paths)]


def layout(shards: Sequence[Shard], *, seq_len: int, token_bytes: int) -> Layout:
    starts = [0]
    for shard in shards:
        starts.append(starts[-1] + max(0, (shard.size // token_bytes - 1) // seq_len))
    return Layout(tuple(shards), tuple(starts), seq_len, token_bytes)


def rank_batches(samples: int, *, rank: int, world_size: int, batch_size: int) -> list[range]:
    """RankSampler's indices for `rank`, cut into full batches (DataLoader's drop_last=True)."""
    indices = range(rank, samples // world_size * world_size, world_size)
    return [indices[k * batch_size : (k + 1) * batch_size] for k in range(len(indices) // batch_size)]


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


class Steps:
    """When batch b may start: once every played rank has received batch b - window (in-order hand-over)."""

    def __init__(self, ranks: Sequence[int], window: int, stop: threading.Event) -> None:
        self._cond = threading.Condition()
        self._received: dict[int, set[int]] = {r: set() for r in ranks}
        self._prefix = dict.fromkeys(ranks, 0)  # batches received in order, per rank
        self._window, self._stop = window, stop

    def wait_turn(self, batch: int) -> bool:
        with self._cond:
            while batch >= min(self._prefix.values()) + self._window and not self._stop.is_set():
                self._cond.wait(0.1)
        return not self._stop.is_set()

    def received(self, rank: int, batch: int) -> None:
        with self._cond:
            self._received[rank].add(batch)
            while self._prefix[rank] in self._received[rank]:
                self._received[rank].discard(self._prefix[rank])
                self._prefix[rank] += 1
            self._cond.notify_all()


def _pread(fd: int, buffer: memoryview, offset: int) -> int:
    return os.preadv(fd, [buffer], offset)


def _drop_cached_pages(shards: Sequence[Shard]) -> None:
    if not hasattr(os, "posix_fadvise"):
        return
    for shard in shards:
        try:
            fd = os.open(shard.path, os.O_RDONLY)
        except OSError:
            continue  # the read itself reports it
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Run:
    """What every reader thread of one phase shares."""

    phase: str
    plan: Layout
    steps: Steps
    recorder: Recorder
    started: float
    stop: threading.Event
    budget: Callable[[int], bool]


def read_worker(run: Run, rank: int, worker: int, batches: Sequence[range], mine: Sequence[int]) -> None:
    """One DataLoader worker of one rank: its batches in order, each sample one pread, one descriptor per shard."""
    size = run.plan.read_bytes
    view = memoryview(bytearray(size))
    files: dict[int, int] = {}
    try:
        for batch in mine:
            if not run.steps.wait_turn(batch):
                return
            for sample in batches[batch]:
                shard, offset = run.plan.locate(sample)
                where = dict(rank=rank, worker=worker, sample=sample, shard=shard.index, offset=offset)
                t0 = time.perf_counter()
                try:
                    fd = files.get(shard.index)
                    if fd is None:
                        fd = files[shard.index] = os.open(shard.path, os.O_RDONLY)
                    n = _pread(fd, view, offset)
                    if n != size:
                        raise OSError(f"short read: {n} of {size} bytes")
                except OSError as exc:
                    error = f"{shard.path}: {exc.strerror or exc}"
                    run.recorder.write(
                        dict(
                            kind="error", phase=run.phase, t=round(t0 - run.started, 6), **where, error=error
                        )
                    )
                    continue
                latency = round(time.perf_counter() - t0, 7)
                t = round(t0 - run.started, 6)
                run.recorder.write(
                    dict(kind="read", phase=run.phase, t=t, latency_s=latency, bytes=n, batch=batch, **where)
                )
                if not run.budget(n):
                    run.stop.set()
                if run.stop.is_set():
                    return
            run.steps.received(rank, batch)
    finally:
        for fd in files.values():
            os.close(fd)


@dataclass(frozen=True)
class Loader:
    """The training run's loader settings the replay needs (train.py's options of the same names)."""

    world_size: int = 1
    ranks: tuple[int, ...] = (0,)
    batch_size: int = 24
    num_workers: int = 4
    prefetch_factor: int = 4


def run_phase(
    phase: str,
    plan: Layout,
    loader: Loader,
    *,
    out: IO[str],
    max_bytes: int | None = None,
    max_seconds: float | None = None,
    drop_cache: bool = True,
    root: Path | None = None,
    progress_every_s: float = 10.0,
    log: IO[str] = sys.stderr,
) -> Recorder:
    """One replay of the played ranks' whole epoch; returns the totals."""
    batches = {
        r: rank_batches(plan.samples, rank=r, world_size=loader.world_size, batch_size=loader.batch_size)
        for r in loader.ranks
    }
    samples = sum(len(b) * loader.batch_size for b in batches.values())
    recorder = Recorder(out)
    recorder.write(
        {
            "kind": "meta",
            "version": FORMAT_VERSION,
            "phase": phase,
            "root": str(root) if root else None,
            "seq_len": plan.seq_len,
            "token_bytes": plan.token_bytes,
            "read_bytes": plan.read_bytes,
            "world_size": loader.world_size,
            "ranks": list(loader.ranks),
            "batch_size": loader.batch_size,
            "num_workers": loader.num_workers,
            "prefetch_factor": loader.prefetch_factor,
            "shards": len(plan.shards),
            "samples": samples,
            "bytes_planned": samples * plan.read_bytes,
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "host": socket.gethostname(),
            "synthetic": False,
        }
    )
    if drop_cache:
        _drop_cached_pages(plan.shards)
    stop = threading.Event()
    budget_lock = threading.Lock()
    remaining = [max_bytes]

    def budget(n: int) -> bool:
        if remaining[0] is None:
            return True
        with budget_lock:
            remaining[0] -= n
            return remaining[0] > 0

    # Without workers DataLoader reads in the rank's own process, one batch at a time.
    workers = max(1, loader.num_workers)
    window = loader.prefetch_factor * loader.num_workers if loader.num_workers else 1
    started = time.perf_counter()
    run = Run(phase, plan, Steps(loader.ranks, window, stop), recorder, started, stop, budget)
    threads = [
        threading.Thread(
            target=read_worker,
            name=f"rank-{r}-worker-{w}",
            args=(run, r, w, batches[r], range(w, len(batches[r]), workers)),
            daemon=True,
        )
        for r in loader.ranks
        for w in range(workers)
    ]
    for t in threads:
        t.start()
    planned = samples * plan.read_bytes if max_bytes is None else min(max_bytes, samples * plan.read_bytes)
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
    elapsed = time.perf_counter() - started
    if drop_cache:
        _drop_cached_pages(plan.shards)
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
        description="Replay train.py's dataset reads (windows, order, workers, prefetch) and record each one.",
        epilog="Example: python bench_reader.py --root /mnt/dataset/c4-llama3/v1 --token-bytes 4 "
        "--world-size 16 --ranks 0-7 --out /mnt/checkpoints/.hubspoke/bench/run.jsonl",
    )
    parser.add_argument("--root", type=Path, required=True, help="one dataset version's directory")
    parser.add_argument(
        "--out", type=Path, required=True, help="results file (JSON lines), created or appended"
    )
    parser.add_argument("--token-bytes", type=int, choices=(2, 4), required=True, help="as the manifest says")
    # Defaults: train.py's.
    parser.add_argument("--seq-len", type=int, default=4096, help="tokens per sample (train.py --seq-len)")
    parser.add_argument("--batch-size", type=int, default=24, help="per rank (train.py --batch-size)")
    parser.add_argument("--num-workers", type=int, default=4, help="loader workers per rank")
    parser.add_argument("--prefetch-factor", type=int, default=4, help="batches in flight per worker")
    parser.add_argument("--world-size", type=int, default=1, help="ranks in the training job (nodes x GPUs)")
    parser.add_argument("--ranks", type=parse_ranks, help="ranks this run plays, e.g. 0-7 (default: all)")
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
    ranks = args.ranks if args.ranks is not None else list(range(args.world_size))
    if min(args.seq_len, args.batch_size, args.prefetch_factor, args.world_size) < 1 or args.num_workers < 0:
        parser.error("--seq-len, --batch-size, --prefetch-factor and --world-size must be 1 or more")
    if not ranks or ranks[-1] >= args.world_size:
        parser.error(f"--ranks must name ranks below --world-size {args.world_size}")
    if not phases:
        parser.error("--phases needs at least one name, e.g. cold,warm")
    if not args.root.is_dir():
        print(
            f"bench_reader: --root {args.root} is not a directory; mount the dataset there", file=sys.stderr
        )
        return 2
    plan = layout(discover_shards(args.root), seq_len=args.seq_len, token_bytes=args.token_bytes)
    loader = Loader(args.world_size, tuple(ranks), args.batch_size, args.num_workers, args.prefetch_factor)
    if not rank_batches(plan.samples, rank=ranks[0], world_size=args.world_size, batch_size=args.batch_size):
        print(
            f"bench_reader: {args.root} has {plan.samples} samples of {args.seq_len} tokens in "
            f"{len(plan.shards)} *.bin files: not one batch of {args.batch_size} per rank at world size "
            f"{args.world_size}; is this a dataset version's directory?",
            file=sys.stderr,
        )
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    errors = 0
    with args.out.open("a", encoding="utf-8") as out:
        for phase in phases:
            rec = run_phase(
                phase,
                plan,
                loader,
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
