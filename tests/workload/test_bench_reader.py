"""The benchmark reader replays train.py's loader: the same preads, from the same workers, in the same order.

The oracle is the loader itself, not the bench: train.py's TokenShards + RankSampler + DataLoader (same
arguments as workload/train.py builds them) run over the same files with `os.pread` recording, in each forked
worker, which file, offset and size it reads. The prefetch window is written out from torch's source
(torch 2.13, torch/utils/data/dataloader.py: _reset primes prefetch_factor x num_workers batches;
_try_put_index sends batch b to worker b mod num_workers; _process_data sends the next one when a batch is
handed over).
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hubspoke.bench import analysis

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import bench_reader

TOKEN_BYTES, SEQ_LEN = 4, 8


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Shards whose sizes leave tails and give uneven sample counts; one in a sub-folder, one not a shard."""
    root = tmp_path / "c4" / "v1"
    tokens = {"shard-10.bin": 100, "shard-02.bin": 41, "shard-01.bin": 7, "b/shard-99.bin": 60, "a.bin": 17}
    for rel, count in tokens.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(i % 251 for i in range(count * TOKEN_BYTES + 3)))  # +3: a ragged end
    (root / "MANIFEST.json").write_text("{}")
    return root


def _loader_reads(
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    log: Path,
    *,
    world: int,
    batch: int,
    workers: int,
    ranks: tuple[int, ...] | None = None,
) -> dict[tuple[int, int], list[tuple[str, int, int]]]:
    """(rank, worker) -> the (path, offset, size) preads train.py's loader makes, in each worker's order, for
    `ranks` of the world (all of them by default): each rank's loader is its own, as in train.py."""
    # Here, not at the top: every pytest-xdist worker imports this module at collection, torch takes ~2 s.
    import torch
    from shards import RankSampler, TokenShards
    from torch.utils.data import DataLoader

    real = os.pread
    current = {"rank": 0}

    def recording(fd: int, size: int, offset: int) -> bytes:
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else 0
        with open(log / f"{current['rank']}-{worker}.jsonl", "a") as f:
            f.write(json.dumps([os.readlink(f"/proc/self/fd/{fd}"), offset, size]) + "\n")
        return real(fd, size, offset)

    monkeypatch.setattr(os, "pread", recording)
    dataset = TokenShards(root, seq_len=SEQ_LEN, token_bytes=TOKEN_BYTES)
    for rank in range(world) if ranks is None else ranks:
        current["rank"] = rank
        sampler = RankSampler(len(dataset), rank=rank, world_size=world, batch_size=batch)
        loader = DataLoader(
            dataset,
            batch_size=batch,
            sampler=sampler,
            drop_last=True,
            num_workers=workers,
            prefetch_factor=2 if workers else None,
            multiprocessing_context="fork" if workers else None,
        )
        for _ in loader:
            pass
    monkeypatch.setattr(os, "pread", real)
    reads: dict[tuple[int, int], list[tuple[str, int, int]]] = {}
    for path in log.glob("*.jsonl"):
        rank, worker = map(int, path.stem.split("-"))
        reads[rank, worker] = [tuple(r) for r in map(json.loads, path.read_text().splitlines())]
    return reads


def _bench_reads(
    records: list[dict[str, Any]], root: Path
) -> dict[tuple[int, int], list[tuple[str, int, int]]]:
    shards = bench_reader.discover_shards(root)
    reads: dict[tuple[int, int], list[tuple[str, int, int]]] = defaultdict(list)
    for r in records:
        if r["kind"] == "read":
            reads[r["rank"], r["worker"]].append((str(shards[r["shard"]].path), r["offset"], r["bytes"]))
    return dict(reads)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(("world", "batch", "workers"), [(3, 2, 2), (2, 3, 0), (1, 4, 1)])
def test_reads_are_the_loaders_reads(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: int, batch: int, workers: int
) -> None:
    log = tmp_path / "log"
    log.mkdir()
    expected = _loader_reads(dataset, monkeypatch, log, world=world, batch=batch, workers=workers)
    out = tmp_path / "run.jsonl"
    argv = [f"--root={dataset}", f"--out={out}", f"--token-bytes={TOKEN_BYTES}", f"--seq-len={SEQ_LEN}"]
    argv += [f"--world-size={world}", f"--batch-size={batch}", f"--num-workers={workers}", "--phases=cold"]
    assert bench_reader.main(argv) == 0
    records = _records(out)
    assert _bench_reads(records, dataset) == expected
    # Each window is (seq_len + 1) tokens: 36 bytes here, 16,388 at train.py's 4096 x 4 bytes.
    assert all(r["bytes"] == (SEQ_LEN + 1) * TOKEN_BYTES for r in records if r["kind"] == "read")
    meta = records[0]
    assert meta["kind"] == "meta" and meta["read_bytes"] == 36 and meta["ranks"] == list(range(world))


def test_played_ranks_are_a_subset(dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    log.mkdir()
    # Only the played ranks' loaders: the others' reads are not compared.
    expected = _loader_reads(dataset, monkeypatch, log, world=4, batch=2, workers=2, ranks=(1, 3))
    out = tmp_path / "run.jsonl"
    argv = [f"--root={dataset}", f"--out={out}", "--token-bytes=4", "--seq-len=8", "--world-size=4"]
    assert bench_reader.main([*argv, "--ranks=1,3", "--batch-size=2", "--num-workers=2", "--phases=p"]) == 0
    assert _bench_reads(_records(out), dataset) == {k: v for k, v in expected.items() if k[0] in (1, 3)}


@pytest.mark.parametrize(("workers", "prefetch", "in_flight"), [(2, 2, {1, 3}), (2, 1, {1}), (0, 4, set())])
def test_prefetch_bounds_what_is_read_ahead(
    dataset: Path, monkeypatch: pytest.MonkeyPatch, workers: int, prefetch: int, in_flight: set[int]
) -> None:
    # Batch 0's first read hangs. DataLoader has sent batches 0 .. prefetch x workers - 1, batch b to worker
    # b mod workers; worker 0 is stuck in batch 0, so only the other workers' sent batches can be read.
    # What was read early is taken once every other worker has either ended or is waiting for its turn (it
    # waits on the phase's Steps condition only when it may not start its next batch): no fixed sleep.
    release, seen = threading.Event(), list[str]()
    real = bench_reader._pread
    settled, settled_lock = set[str](), threading.Lock()

    def slow(fd: int, buffer: memoryview, offset: int) -> int:
        if threading.current_thread().name == "rank-0-worker-0" and offset == 0 and not seen:
            seen.append("held")
            release.wait(5)
        return real(fd, buffer, offset)

    class Turns(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            with settled_lock:
                settled.add(threading.current_thread().name)
            return super().wait(timeout)

    class WatchedSteps(bench_reader.Steps):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._cond = Turns()

    real_worker = bench_reader.read_worker

    def worker(*args: Any) -> None:
        try:
            real_worker(*args)
        finally:
            with settled_lock:
                settled.add(threading.current_thread().name)

    monkeypatch.setattr(bench_reader, "_pread", slow)
    monkeypatch.setattr(bench_reader, "Steps", WatchedSteps)
    monkeypatch.setattr(bench_reader, "read_worker", worker)
    plan = bench_reader.layout(
        bench_reader.discover_shards(dataset), seq_len=SEQ_LEN, token_bytes=TOKEN_BYTES
    )
    loader = bench_reader.Loader(
        world_size=1, ranks=(0,), batch_size=1, num_workers=workers, prefetch_factor=prefetch
    )
    out = io.StringIO()
    runner = threading.Thread(
        target=bench_reader.run_phase, args=("p", plan, loader), kwargs={"out": out, "log": io.StringIO()}
    )
    others = {f"rank-0-worker-{w}" for w in range(1, max(1, workers))}
    runner.start()
    deadline = time.monotonic() + 10
    while not (seen and others <= settled) and time.monotonic() < deadline:
        time.sleep(0.002)
    early = {json.loads(line)["batch"] for line in out.getvalue().splitlines() if '"kind":"read"' in line}
    release.set()
    runner.join(10)
    assert seen and others <= settled, "worker 0 held batch 0 and every other worker settled"
    assert early == in_flight
    reads = [json.loads(line) for line in out.getvalue().splitlines() if '"kind":"read"' in line]
    assert len(reads) == plan.samples  # then everything is read


def test_results_feed_bench_report(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    argv = [f"--root={dataset}", f"--out={out}", "--token-bytes=4", "--seq-len=8", "--batch-size=2"]
    assert bench_reader.main([*argv, "--phases=cold,warm"]) == 0
    phases = analysis.load([out])
    assert list(phases) == ["cold", "warm"]
    for name in phases:
        summary = analysis.summarize(phases[name])
        # a.bin, b/shard-99, shard-01, -02, -10: 2 + 7 + 0 + 5 + 12 samples of 8 tokens ((n - 1) // 8 of n
        # tokens), 13 batches of 2 on one rank, 36 bytes each.
        assert summary.reads == 26 and summary.bytes == 26 * 36 and summary.errors == 0


def test_max_bytes_stops_the_phase_early(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    argv = [f"--root={dataset}", f"--out={out}", "--token-bytes=4", "--seq-len=8", "--batch-size=1"]
    assert bench_reader.main([*argv, "--num-workers=1", "--phases=p", "--max-bytes=100"]) == 0
    read_bytes = sum(r["bytes"] for r in _records(out) if r["kind"] == "read")
    assert 100 <= read_bytes < 26 * 36


def test_unreadable_shard_is_recorded_and_fails_the_run(dataset: Path) -> None:
    plan = bench_reader.layout(
        bench_reader.discover_shards(dataset), seq_len=SEQ_LEN, token_bytes=TOKEN_BYTES
    )
    plan.shards[1].path.unlink()  # vanished between listing and reading, as on a live filesystem
    buf = io.StringIO()
    loader = bench_reader.Loader(batch_size=1, num_workers=2)
    rec = bench_reader.run_phase("cold", plan, loader, out=buf, log=io.StringIO())
    missing = plan.starts[2] - plan.starts[1]
    assert rec.errors == missing and rec.reads == plan.samples - missing
    errors = [json.loads(line) for line in buf.getvalue().splitlines() if '"kind":"error"' in line]
    assert str(plan.shards[1].path) in errors[0]["error"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4KiB", 4096), ("1MiB", 1 << 20), ("1m", 1 << 20), ("65536", 65536), ("2G", 2 << 30)],
)
def test_sizes(text: str, expected: int) -> None:
    assert bench_reader.parse_size(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "1.5MiB", "1TiB", "lots"])
def test_bad_sizes_are_rejected(text: str) -> None:
    with pytest.raises(Exception, match="is not a size"):
        bench_reader.parse_size(text)


def test_rank_lists() -> None:
    assert bench_reader.parse_ranks("0-3,6") == [0, 1, 2, 3, 6]
    with pytest.raises(Exception, match="not a rank list"):
        bench_reader.parse_ranks("a-b")


def test_missing_root_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = bench_reader.main(
        ["--root", str(tmp_path / "nope"), "--out", str(tmp_path / "o.jsonl"), "--token-bytes=4"]
    )
    assert code == 2
    assert "is not a directory" in capsys.readouterr().err


def test_a_folder_without_a_batch_is_bad_input(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The whole mount instead of one version still finds shards; a root with too few samples is refused.
    code = bench_reader.main([f"--root={dataset / 'b'}", f"--out={tmp_path / 'o.jsonl'}", "--token-bytes=4"])
    assert code == 2
    assert "not one batch of 24" in capsys.readouterr().err
