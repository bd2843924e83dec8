"""The benchmark reader on a local temp directory: order, coverage, limits, and its results format."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import bench_reader


def _dataset(root: Path, sizes: dict[str, int]) -> None:
    for rel, size in sizes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(i % 251 for i in range(size)))


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "dataset"
    # Names sort differently by string and by number, and one sits in a subdirectory.
    _dataset(
        root,
        {"shard-10.bin": 5000, "shard-02.bin": 4096, "shard-01.bin": 10, "b/shard-00.bin": 3, "x.idx": 7},
    )
    return root


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_shards_are_sorted_by_relative_path_and_filtered(dataset: Path) -> None:
    shards = bench_reader.discover_shards(dataset, "*.bin")
    assert [s.path.relative_to(dataset).as_posix() for s in shards] == [
        "b/shard-00.bin",
        "shard-01.bin",
        "shard-02.bin",
        "shard-10.bin",
    ]
    assert [s.index for s in shards] == [0, 1, 2, 3]


def test_readers_get_interleaved_shards_like_dataloader_workers(dataset: Path) -> None:
    shards = bench_reader.discover_shards(dataset, "*")
    split = bench_reader.assign(shards, 2)
    assert [s.index for s in split[0]] == [0, 2, 4]
    assert [s.index for s in split[1]] == [1, 3]
    # More readers than shards: the extra readers idle, nothing is read twice.
    assert sum(len(part) for part in bench_reader.assign(shards, 9)) == len(shards)


def test_every_byte_is_read_once_in_block_order(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "results" / "run.jsonl"
    code = bench_reader.main(
        [
            "--root",
            str(dataset),
            "--out",
            str(out),
            "--readers",
            "3",
            "--block-size",
            "1KiB",
            "--phases",
            "cold,warm",
        ]
    )
    assert code == 0
    records = _records(out)
    shards = bench_reader.discover_shards(dataset, "*")
    for phase in ("cold", "warm"):
        meta = [r for r in records if r["kind"] == "meta" and r["phase"] == phase]
        reads = [r for r in records if r["kind"] == "read" and r["phase"] == phase]
        end = [r for r in records if r["kind"] == "end" and r["phase"] == phase]
        assert len(meta) == 1 and len(end) == 1
        assert meta[0]["block_size"] == 1024 and meta[0]["readers"] == 3 and meta[0]["synthetic"] is False
        for shard in shards:
            mine = [r for r in reads if r["shard"] == shard.index]
            # One reader per shard, offsets contiguous from 0, sizes adding up to the file.
            assert len({r["reader"] for r in mine}) == 1
            offsets = [r["offset"] for r in mine]
            assert offsets == sorted(offsets) and offsets[0] == 0
            assert sum(r["bytes"] for r in mine) == shard.size
            assert all(r["bytes"] <= 1024 for r in mine)
            assert mine[0]["reader"] == shard.index % 3
        assert end[0]["bytes"] == sum(s.size for s in shards) and end[0]["errors"] == 0
        assert all(r["latency_s"] >= 0 and r["t"] >= 0 for r in reads)


def test_max_bytes_stops_the_phase_early(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    total = sum(s.size for s in bench_reader.discover_shards(dataset, "*"))
    code = bench_reader.main(
        [
            "--root",
            str(dataset),
            "--out",
            str(out),
            "--readers",
            "1",
            "--block-size",
            "512",
            "--phases",
            "p",
            "--max-bytes",
            "2000",
        ]
    )
    assert code == 0
    read_bytes = sum(r["bytes"] for r in _records(out) if r["kind"] == "read")
    assert 2000 <= read_bytes < total


def test_unreadable_shard_is_recorded_and_fails_the_run(dataset: Path, tmp_path: Path) -> None:
    shards = bench_reader.discover_shards(dataset, "*")
    shards[1].path.unlink()  # vanished between listing and reading, as on a live filesystem
    buf = io.StringIO()
    rec = bench_reader.run_phase("cold", shards, readers=2, block_size=4096, out=buf, log=io.StringIO())
    assert rec.errors == 1
    errors = [json.loads(line) for line in buf.getvalue().splitlines() if '"error"' in line]
    assert str(shards[1].path) in errors[0]["error"]


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


def test_missing_root_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = bench_reader.main(["--root", str(tmp_path / "nope"), "--out", str(tmp_path / "o.jsonl")])
    assert code == 2
    assert "is not a directory" in capsys.readouterr().err
