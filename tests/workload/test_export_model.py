"""workload/export_model.py against moto's S3, with a temp directory standing in for the checkpoint volume.

The checkpoint layout is train.py's (workload/train.py save_checkpoint): <run>/step_<8 digits>/ holding
dataset.json, the ranks' DCP shard files and DCP's `.metadata`, which DCP writes last; a directory without it
is torn.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import export_model

REGION = "us-west-2"
BUCKET = "model-export-test"
PREFIX = "dev/us-west-2/hubspoke-reference"
MiB = 1024 * 1024


def _checkpoint(root: Path, step: int, *, complete: bool, shard_bytes: int = 1000) -> Path:
    target = root / "hubspoke-reference" / f"step_{step:08d}"
    target.mkdir(parents=True)
    (target / "dataset.json").write_text(json.dumps({"name": "c4", "version": "v1"}) + "\n")
    for rank in range(2):
        (target / f"__{rank}_0.distcp").write_bytes(bytes([rank + step % 7]) * shard_bytes)
    if complete:
        (target / ".metadata").write_bytes(b"dcp-metadata")
    return target


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    root = tmp_path / "checkpoints"
    _checkpoint(root, 500, complete=True)
    _checkpoint(root, 999, complete=False)  # the job died while writing its last checkpoint
    bench = root / ".hubspoke" / "bench"
    bench.mkdir(parents=True)
    (bench / "cold1.jsonl").write_text('{"phase": "cold"}\n')
    return root


class Recording:
    """The boto3 S3 client, recording the keys it uploads in order."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.uploaded: list[str] = []

    def upload_file(self, filename: str, bucket: str, key: str, **kwargs: Any) -> None:
        self.uploaded.append(key)
        self.client.upload_file(filename, bucket, key, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name=REGION)
        client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield client


def _run(volume: Path, s3: Any, *extra: str) -> tuple[int, Recording]:
    recording = Recording(s3)
    argv = [f"--checkpoints={volume}", "--run=hubspoke-reference", f"--bucket={BUCKET}", f"--prefix={PREFIX}"]
    return export_model.main([*argv, *extra], s3=recording), recording


def _keys(s3: Any) -> set[str]:
    return {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


def test_exports_the_newest_complete_checkpoint_never_a_torn_one(volume: Path, s3: Any) -> None:
    code, recording = _run(
        volume, s3, f"--results-dir={volume}/.hubspoke/bench", f"--results-dir={volume}/none"
    )
    assert code == 0
    step = f"{PREFIX}/step_00000500"
    assert _keys(s3) == {
        f"{step}/dataset.json",
        f"{step}/__0_0.distcp",
        f"{step}/__1_0.distcp",
        f"{step}/.metadata",
        f"{PREFIX}/results/bench/cold1.jsonl",
        f"{PREFIX}/export.json",
    }
    # Like DCP on the volume, `.metadata` comes last: an S3 copy without it is recognisably unfinished.
    assert [k for k in recording.uploaded if k.startswith(step)][-1] == f"{step}/.metadata"
    record = json.loads(s3.get_object(Bucket=BUCKET, Key=f"{PREFIX}/export.json")["Body"].read())
    assert record["step"] == 500 and record["dataset"] == {"name": "c4", "version": "v1"}
    shard = volume / "hubspoke-reference/step_00000500/__0_0.distcp"
    by_key = {f["key"]: f for f in record["files"]}
    assert by_key[f"{step}/__0_0.distcp"]["sha256"] == hashlib.sha256(shard.read_bytes()).hexdigest()
    body = s3.get_object(Bucket=BUCKET, Key=f"{step}/__0_0.distcp")["Body"].read()
    assert body == shard.read_bytes()


def test_a_rerun_uploads_only_what_is_missing_or_changed(volume: Path, s3: Any) -> None:
    assert _run(volume, s3)[0] == 0
    code, again = _run(volume, s3)
    assert code == 0 and again.uploaded == []
    code, one = _run(volume, s3, f"--results={volume}/.hubspoke/bench/cold1.jsonl")
    assert code == 0 and one.uploaded == [f"{PREFIX}/results/bench/cold1.jsonl"]
    s3.delete_object(Bucket=BUCKET, Key=f"{PREFIX}/step_00000500/__1_0.distcp")
    # Same size, other bytes: the checksum, not only the size, decides.
    (volume / "hubspoke-reference/step_00000500/__0_0.distcp").write_bytes(b"\x09" * 1000)
    code, third = _run(volume, s3)
    assert code == 0
    assert sorted(third.uploaded) == [
        f"{PREFIX}/step_00000500/__0_0.distcp",
        f"{PREFIX}/step_00000500/__1_0.distcp",
    ]


def test_large_files_go_in_parts(tmp_path: Path, s3: Any) -> None:
    _checkpoint(tmp_path, 7, complete=True, shard_bytes=11 * MiB)
    assert _run(tmp_path, s3, f"--part-size={5 * MiB}")[0] == 0
    head = s3.head_object(Bucket=BUCKET, Key=f"{PREFIX}/step_00000007/__0_0.distcp")
    # A multipart object's ETag ends in -<number of parts> (Amazon S3 API Reference, Object: ETag; "Checking
    # object integrity"): 11 MiB in 5 MiB parts is 3 parts.
    assert head["ETag"].strip('"').endswith("-3")
    assert head["ContentLength"] == 11 * MiB


def test_part_size_keeps_within_s3_limits() -> None:
    # Amazon S3 User Guide, "Amazon S3 multipart upload limits": 5 MiB to 5 GiB per part, at most 10,000 parts.
    assert export_model.part_size(1, 1) == 5 * MiB
    assert export_model.part_size(1, 64 * MiB) == 64 * MiB
    one_tib = 1024**4
    assert export_model.part_size(one_tib, 64 * MiB) * 10_000 >= one_tib
    assert export_model.part_size(100 * one_tib, 64 * MiB) == 5 * 1024**3


@pytest.mark.parametrize(
    ("extra", "run", "message"),
    [
        (["--step=999"], "hubspoke-reference", "--step 999 is not a complete checkpoint"),
        ([], "other-run", "--run other-run: no directory"),
        (["--prefix=/abs"], "hubspoke-reference", "--prefix '/abs'"),
        (
            ["--results=/nonexistent.jsonl"],
            "hubspoke-reference",
            "--results /nonexistent.jsonl is not a file",
        ),
        ([f"--part-size={MiB}"], "hubspoke-reference", "--part-size"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    volume: Path, s3: Any, capsys: pytest.CaptureFixture[str], extra: list[str], run: str, message: str
) -> None:
    argv = [f"--checkpoints={volume}", f"--run={run}", f"--bucket={BUCKET}", f"--prefix={PREFIX}", *extra]
    assert export_model.main(argv, s3=s3) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert _keys(s3) == set()


def test_a_run_without_a_complete_checkpoint_is_refused(tmp_path: Path, s3: Any, capsys: Any) -> None:
    _checkpoint(tmp_path, 3, complete=False)
    assert _run(tmp_path, s3)[0] == 2
    assert "no complete checkpoint" in capsys.readouterr().err
    assert _keys(s3) == set()


def test_a_missing_bucket_is_refused_with_the_output_to_use(volume: Path, s3: Any, capsys: Any) -> None:
    argv = [f"--checkpoints={volume}", "--run=hubspoke-reference", "--bucket=no-such", f"--prefix={PREFIX}"]
    assert export_model.main(argv, s3=s3) == 2
    assert "ModelExportBucket" in capsys.readouterr().err
