"""Dataset manifests (hubspoke/dataset_manifest.py, imported by the workload as `manifest`).

The shape is the one agreed in issue 24 for `/dataset/<name>/<version>/MANIFEST.json`, written out literally
here; checksums are checked against hashlib on the same bytes and one published SHA-256 test vector (FIPS
180-2, appendix B.1: "abc").
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

WORKLOAD = Path(__file__).resolve().parents[2] / "workload"
sys.path.insert(0, str(WORKLOAD))
import manifest  # noqa: E402

SHA_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2 B.1
SHA_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _record(**overrides: object) -> dict[str, object]:
    record: dict[str, object] = {
        "format": "hubspoke-dataset/1",
        "name": "c4-llama3",
        "version": "2026-12-01",
        "token_bytes": 4,
        "vocab_size": 128256,
        "files": [
            {"path": "train/part-001.bin", "bytes": 3, "sha256": SHA_ABC},
            {"path": "train/part-000.bin", "bytes": 0, "sha256": SHA_EMPTY},
        ],
        "total_bytes": 3,
    }
    record.update(overrides)
    return record


def test_parse_reads_the_agreed_shape_and_sorts_files() -> None:
    m = manifest.parse(json.dumps(_record()))
    assert (m.name, m.version, m.token_bytes, m.vocab_size, m.total_bytes) == (
        "c4-llama3",
        "2026-12-01",
        4,
        128256,
        3,
    )
    assert [f.path for f in m.files] == ["train/part-000.bin", "train/part-001.bin"]
    # Round trip: the bytes written parse back to the same manifest, with the format tag.
    again = json.loads(manifest.to_json(m))
    assert again["format"] == "hubspoke-dataset/1" and manifest.parse(manifest.to_json(m)) == m


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"format": "hubspoke-dataset/2"}, "format 'hubspoke-dataset/2'"),
        ({"vocab_size": None}, "missing field 'vocab_size'"),
        ({"vocab_size": "128256"}, "field 'vocab_size' must be int"),
        ({"token_bytes": True}, "field 'token_bytes' must be int"),
        ({"token_bytes": 3}, "token_bytes must be 2 or 4"),
        ({"token_bytes": 2}, "vocab_size 128256 does not fit 2-byte tokens"),
        ({"total_bytes": 4}, "total_bytes 4 is not the sum"),
        ({"name": "../etc"}, "name '../etc'"),
        ({"version": "a/b"}, "version 'a/b'"),
        ({"extra": 1}, "unknown field(s) 'extra'"),
        (
            {"files": [{"path": "../x.bin", "bytes": 0, "sha256": SHA_EMPTY}], "total_bytes": 0},
            "path '../x.bin'",
        ),
        ({"files": [{"path": "/x.bin", "bytes": 0, "sha256": SHA_EMPTY}], "total_bytes": 0}, "path '/x.bin'"),
        ({"files": [{"path": "x.bin", "bytes": 0, "sha256": "ABC"}], "total_bytes": 0}, "sha256 must be 64"),
        ({"files": [{"path": "x.bin", "bytes": 0}], "total_bytes": 0}, "files[0]: missing field 'sha256'"),
        (
            {"files": [{"path": "x.bin", "bytes": 0, "sha256": SHA_EMPTY}] * 2, "total_bytes": 0},
            "listed twice",
        ),
    ],
)
def test_parse_refuses_with_one_line_reason(overrides: dict[str, object], reason: str) -> None:
    record = _record(**overrides)
    record = {k: v for k, v in record.items() if v is not None}
    with pytest.raises(manifest.ManifestError) as info:
        manifest.parse(json.dumps(record), source="/dataset/c4/v1/MANIFEST.json")
    message = str(info.value)
    assert reason in message and "\n" not in message
    assert message.startswith("/dataset/c4/v1/MANIFEST.json")


def test_dataset_root_is_mount_name_version(tmp_path: Path) -> None:
    assert manifest.dataset_root("/dataset", "c4", "v1") == Path("/dataset/c4/v1")
    with pytest.raises(manifest.ManifestError):
        manifest.dataset_root("/dataset", "..", "v1")


def test_version_written_once_scanned_and_sealed(tmp_path: Path) -> None:
    root = manifest.create_version(tmp_path, "c4", "v1")
    assert root == tmp_path / "c4" / "v1" and root.is_dir()
    (root / "train").mkdir()
    (root / "train" / "a.bin").write_bytes(b"abc")
    (root / "b.bin").write_bytes(b"")
    m = manifest.scan(root, name="c4", version="v1", token_bytes=2, vocab_size=32000)
    assert [(f.path, f.bytes, f.sha256) for f in m.files] == [
        ("b.bin", 0, SHA_EMPTY),
        ("train/a.bin", 3, SHA_ABC),
    ]
    target = manifest.write(root, m)
    assert target == root / "MANIFEST.json"
    assert manifest.load(root) == m == manifest.load(target)
    assert [p.name for p in root.iterdir() if p.name.startswith(".")] == []  # no temporary left behind
    # Immutable: no second directory, no second seal, and a rescan does not list the manifest itself.
    with pytest.raises(manifest.ManifestError, match="already exists"):
        manifest.create_version(tmp_path, "c4", "v1")
    with pytest.raises(manifest.ManifestError, match="already sealed"):
        manifest.write(root, m)
    assert manifest.scan(root, name="c4", version="v1", token_bytes=2, vocab_size=32000) == m


def test_write_refuses_a_directory_of_another_version(tmp_path: Path) -> None:
    root = manifest.create_version(tmp_path, "c4", "v2")
    m = manifest.validate(name="c4", version="v1", token_bytes=2, vocab_size=10, files=[])
    with pytest.raises(manifest.ManifestError, match="c4/v1"):
        manifest.write(root, m)
    assert not (root / "MANIFEST.json").exists()


def test_load_of_an_unsealed_version_says_it_is_still_loading(tmp_path: Path) -> None:
    root = manifest.create_version(tmp_path, "c4", "v1")
    with pytest.raises(manifest.ManifestError, match="still loading"):
        manifest.load(root)


def test_check_files_catches_missing_resized_and_unlisted_shards(tmp_path: Path) -> None:
    root = manifest.create_version(tmp_path, "c4", "v1")
    (root / "a.bin").write_bytes(b"abc")
    m = manifest.scan(root, name="c4", version="v1", token_bytes=2, vocab_size=10)
    manifest.check_files(m, root)
    (root / "z.bin").write_bytes(b"")
    with pytest.raises(manifest.ManifestError, match=r"not in the manifest, first z\.bin"):
        manifest.check_files(m, root)
    os.unlink(root / "z.bin")
    (root / "a.bin").write_bytes(b"ab")
    with pytest.raises(manifest.ManifestError, match=r"a\.bin is 2 bytes, the manifest says 3"):
        manifest.check_files(m, root)
    os.unlink(root / "a.bin")
    with pytest.raises(manifest.ManifestError, match="missing"):
        manifest.check_files(m, root)


def test_check_files_refuses_an_unlisted_shard_in_a_sub_folder(tmp_path: Path) -> None:
    """The reader takes every `*.bin` under the version, sub-folders included (workload/shards.py, TokenShards:
    Path.rglob), so a shard the manifest does not list is refused there too, not only beside MANIFEST.json."""
    root = manifest.create_version(tmp_path, "c4", "v1")
    (root / "part").mkdir()
    (root / "part" / "a.bin").write_bytes(b"abcd")
    m = manifest.scan(root, name="c4", version="v1", token_bytes=2, vocab_size=10)
    assert [f.path for f in m.files] == ["part/a.bin"]
    manifest.check_files(m, root)
    (root / "part" / "deeper").mkdir()
    (root / "part" / "deeper" / "z.bin").write_bytes(b"")
    with pytest.raises(
        manifest.ManifestError, match=r"1 shard\(s\) not in the manifest, first part/deeper/z\.bin"
    ):
        manifest.check_files(m, root)
