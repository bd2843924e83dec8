"""workload/tokenize_text.py: raw text to the shards train.py reads, checked by reading them back as train.py does.

Oracles, none of them the code under test: a tiny byte-level BPE trained here with the tokenizers library
(tokenizers 0.23.3, tokenizers/__init__.pyi: Tokenizer.train_from_iterator, encode, decode), whose encodings of
the documents joined by the separator are the stream the shards must hold; workload/shards.py TokenShards, the
reader train.py uses, for reading them; docs/datasets.md's shard format (little-endian unsigned IDs, 2-byte
tokens for vocabularies up to 65,536); moto for S3.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

WORKLOAD = Path(__file__).resolve().parents[2] / "workload"
sys.path.insert(0, str(WORKLOAD))
import manifest  # noqa: E402
import tokenize_text  # noqa: E402

EOS = "<eos>"
DOCS = [
    "The hub holds the dataset once.",
    "Spokes cache it next to the GPUs; ünïcödé and emoji 🚀 survive byte-level BPE.",
    "",
    "A third line\nwith a newline inside.",
] + [f"document number {i} about caches and shards" for i in range(40)]


@pytest.fixture(scope="module")
def tokenizer_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE trained on the documents (offline), with <eos> as its one special token."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(DOCS, trainer)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


def _stream(tokenizer_file: Path, docs: list[str]) -> list[int]:
    tok = Tokenizer.from_file(str(tokenizer_file))
    eos = tok.token_to_id(EOS)
    assert eos is not None
    return [i for d in docs for i in [*tok.encode(d).ids, eos]]


def _write_jsonl(path: Path, docs: list[str], field: str = "text") -> Path:
    path.write_text("".join(json.dumps({field: d, "id": n}) + "\n" for n, d in enumerate(docs)))
    return path


def _write_parquet(path: Path, docs: list[str], column: str = "text") -> Path:
    # pyarrow (and torch for shards, below) are imported where used: every xdist worker collects this file.
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({column: docs, "n": list(range(len(docs)))}), path)
    return path


def _run(tokenizer: Path | str, inputs: list[str], out: Path | str, *extra: str) -> int:
    argv = ["--tokenizer", str(tokenizer), "--out", str(out), "--token-bytes", "2", "--eos", EOS]
    for item in inputs:
        argv += ["--input", item]
    return tokenize_text.main([*argv, *extra])


def _as_version(out: Path, mount: Path, vocab_size: int, token_bytes: int) -> Path:
    """What `hubspoke dataset load` makes of the folder: a copy at <mount>/<name>/<version>, sealed."""
    root = manifest.create_version(mount, "tiny", "v1")
    shutil.copytree(out, root, dirs_exist_ok=True)
    sealed = manifest.scan(root, name="tiny", version="v1", token_bytes=token_bytes, vocab_size=vocab_size)
    manifest.write(root, sealed)
    return root


def _read_like_train(root: Path, seq_len: int, token_bytes: int) -> list[list[int]]:
    """Each shard's tokens as TokenShards' windows cover them: inputs of every sample, then the last label."""
    from shards import TokenShards

    found = manifest.load(root)
    manifest.check_files(found, root)  # train.py's start-up check
    data = TokenShards(root, seq_len=seq_len, token_bytes=found.token_bytes)
    shards: list[list[int]] = []
    for shard in range(len(data.paths)):
        tokens: list[int] = []
        for i in range(data.starts[shard], data.starts[shard + 1]):
            inputs, labels = data[i]
            tokens += inputs.tolist()
            assert labels.tolist() == [*tokens[len(tokens) - seq_len + 1 :], labels[-1].item()]
        tokens.append(int(labels[-1]))
        shards.append(tokens)
    return shards


def test_jsonl_and_parquet_round_trip_through_the_reader(tokenizer_file: Path, tmp_path: Path) -> None:
    half = len(DOCS) // 2
    jsonl = _write_jsonl(tmp_path / "a.jsonl", DOCS[:half])
    parquet = _write_parquet(tmp_path / "b.parquet", DOCS[half:])
    out = tmp_path / "out"
    # 4 windows of 8 tokens plus the one shifted label: every token of a full shard is read.
    assert _run(tokenizer_file, [str(jsonl), str(parquet)], out, "--shard-tokens", "33") == 0
    stream = _stream(tokenizer_file, DOCS)
    names = sorted(p.name for p in out.iterdir())
    shard_names = [n for n in names if n.endswith(".bin")]
    assert shard_names == [f"shard-{i:06d}.bin" for i in range(-(-len(stream) // 33))]
    assert names == sorted([*shard_names, "tokenize.json", "tokenizer.json"])
    summary = json.loads((out / "tokenize.json").read_text())
    tok = Tokenizer.from_file(str(tokenizer_file))
    assert summary["tokens"] == len(stream) and summary["documents"] == len(DOCS)
    assert summary["vocab_size"] == tok.get_vocab_size() and summary["token_bytes"] == 2

    root = _as_version(out, tmp_path / "mount", summary["vocab_size"], 2)
    read = _read_like_train(root, seq_len=8, token_bytes=2)
    full = [t for shard in read[:-1] for t in shard]
    assert all(len(shard) == 33 for shard in read[:-1])
    assert full == stream[: len(full)]
    # The last, shorter shard: windows cover it up to its last multiple of seq_len (plus one).
    last = stream[len(full) :]
    assert read[-1] == last[: (len(last) - 1) // 8 * 8 + 1]
    # Decoded, the stream is the documents, each followed by the separator (seq_len 1 reads every token).
    every = [t for shard in _read_like_train(root, seq_len=1, token_bytes=2) for t in shard]
    assert tok.decode(every, skip_special_tokens=False) == "".join(d + EOS for d in DOCS)


def test_ids_are_little_endian_unsigned(tmp_path: Path) -> None:
    # IDs above 32,767 must not turn negative: a 40,000-word vocabulary at 2 bytes.
    vocab = {f"w{i}": i for i in range(40_000)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(tmp_path / "tokenizer.json"))
    jsonl = _write_jsonl(tmp_path / "a.jsonl", ["w39999 w1 w258"])
    code = tokenize_text.main(
        [
            "--tokenizer",
            str(tmp_path / "tokenizer.json"),
            "--input",
            str(jsonl),
            "--out",
            str(tmp_path / "o"),
            "--token-bytes",
            "2",
            "--eos",
            "w7",
        ]
    )
    assert code == 0
    assert (tmp_path / "o" / "shard-000000.bin").read_bytes() == bytes.fromhex("3f9c 0100 0201 0700")


def _word_level(tmp_path: Path, size: int) -> Path:
    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(size)}, unk_token="w0"))
    path = tmp_path / f"tok{size}.json"
    tok.save(str(path))
    return path


def test_vocabulary_must_fit_token_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jsonl = _write_jsonl(tmp_path / "a.jsonl", ["w1 w2"])
    # docs/datasets.md: 2 bytes hold vocabularies up to 65,536.
    ok = ["--input", str(jsonl), "--token-bytes", "2", "--eos", "w1"]
    assert (
        tokenize_text.main(
            ["--tokenizer", str(_word_level(tmp_path, 65_536)), "--out", str(tmp_path / "a"), *ok]
        )
        == 0
    )
    capsys.readouterr()
    big = _word_level(tmp_path, 65_537)
    assert tokenize_text.main(["--tokenizer", str(big), "--out", str(tmp_path / "b"), *ok]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "65537" in err and "--token-bytes 4" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("lines", "field", "expected"),
    [
        ('{"body": "x"}\n', "text", "line 1 has no field 'text'"),
        ('{"text": "x"}\nnot json\n', "text", "line 2 is not JSON"),
        ('{"text": 3}\n', "text", "field 'text' is not a string"),
    ],
)
def test_bad_records_refused_and_nothing_left(
    tokenizer_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    lines: str,
    field: str,
    expected: str,
) -> None:
    good = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    bad = tmp_path / "b.jsonl"
    bad.write_text(lines)
    out = tmp_path / "out"
    # The good file fills shards first: the refusal must take them back.
    argv = ["--shard-tokens", "16", "--batch-documents", "4", "--field", field]
    assert _run(tokenizer_file, [str(good), str(bad)], out, *argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and str(bad) in err
    assert not out.exists()


def test_parquet_without_the_column(
    tokenizer_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parquet = _write_parquet(tmp_path / "a.parquet", DOCS, column="content")
    assert _run(tokenizer_file, [str(parquet)], tmp_path / "out") == 2
    assert "no column 'text'" in capsys.readouterr().err
    # Named with --field, the same file works.
    assert _run(tokenizer_file, [str(parquet)], tmp_path / "out", "--field", "content") == 0


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--input", "gs://bucket/a.jsonl", "only local paths and s3:// URIs"),
        ("--input", "s3://", "is not an S3 URI"),
        ("--input", "s3://Bad_Bucket/a.jsonl", "is not an S3 URI"),
        ("--out", "s3://bucket", "name a folder"),
        ("--out", "s3://bucket/a/../b/", "name a folder"),
        ("--input", "notes.txt", "name a .jsonl or .parquet file"),
    ],
)
def test_bad_locations(
    tokenizer_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
    expected: str,
) -> None:
    jsonl = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    argv = {"--input": str(jsonl), "--out": str(tmp_path / "out"), option: value}
    code = tokenize_text.main(
        ["--tokenizer", str(tokenizer_file), "--token-bytes", "2", "--eos", EOS]
        + [w for k, v in argv.items() for w in (k, v)]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and expected in err


def test_unknown_eos_and_missing_separator(
    tokenizer_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    base = ["--tokenizer", str(tokenizer_file), "--input", str(jsonl), "--token-bytes", "2"]
    assert tokenize_text.main([*base, "--out", str(tmp_path / "a"), "--eos", "</s>"]) == 2
    assert "'</s>' is not a token" in capsys.readouterr().err
    # This BPE has no post-processor: without --eos, documents would run together.
    assert tokenize_text.main([*base, "--out", str(tmp_path / "b")]) == 2
    assert "--eos" in capsys.readouterr().err


def test_output_folder_must_be_empty(
    tokenizer_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    out = tmp_path / "out"
    out.mkdir()
    (out / "shard-000000.bin").write_bytes(b"old")
    assert _run(tokenizer_file, [str(jsonl)], out) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert (out / "shard-000000.bin").read_bytes() == b"old"


@mock_aws
def test_s3_in_and_out_match_the_local_run(
    tokenizer_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    s3 = boto3.client("s3", region_name="us-east-2")
    for bucket in ("raw", "datasets"):
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
    half = len(DOCS) // 2
    s3.upload_file(str(_write_jsonl(tmp_path / "a.jsonl", DOCS[:half])), "raw", "c4/part-0.jsonl")
    s3.upload_file(str(_write_parquet(tmp_path / "b.parquet", DOCS[half:])), "raw", "c4/part-1.parquet")
    s3.put_object(Bucket="raw", Key="c4/README.md", Body=b"not text input")
    s3.upload_file(str(tokenizer_file), "raw", "tok/tokenizer.json")

    code = _run(
        "s3://raw/tok/tokenizer.json", ["s3://raw/c4/"], "s3://datasets/tiny/v1/", "--shard-tokens", "33"
    )
    assert code == 0
    local = tmp_path / "local"
    assert (
        _run(
            tokenizer_file,
            [str(tmp_path / "a.jsonl"), str(tmp_path / "b.parquet")],
            local,
            "--shard-tokens",
            "33",
        )
        == 0
    )
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="datasets", Prefix="tiny/v1/")["Contents"])
    assert keys == [f"tiny/v1/{p.name}" for p in sorted(local.iterdir())]
    for path in local.glob("*.bin"):
        assert (
            s3.get_object(Bucket="datasets", Key=f"tiny/v1/{path.name}")["Body"].read() == path.read_bytes()
        )

    # A bad record in the second input takes back what the first one wrote.
    s3.put_object(Bucket="raw", Key="bad/a.jsonl", Body=(tmp_path / "a.jsonl").read_bytes())
    s3.put_object(Bucket="raw", Key="bad/b.jsonl", Body=b'{"body": "no text"}\n')
    bad = _run(
        "s3://raw/tok/tokenizer.json",
        ["s3://raw/bad/"],
        "s3://datasets/tiny/v3/",
        "--shard-tokens",
        "16",
        "--batch-documents",
        "4",
    )
    assert bad == 2 and "Contents" not in s3.list_objects_v2(Bucket="datasets", Prefix="tiny/v3/")
    # A second run into the same folder is refused; a missing object is bad input, one line.
    assert _run("s3://raw/tok/tokenizer.json", ["s3://raw/c4/"], "s3://datasets/tiny/v1/") == 2
    assert _run("s3://raw/tok/tokenizer.json", ["s3://raw/c4/missing.jsonl"], "s3://datasets/tiny/v2/") == 2
    assert "Contents" not in s3.list_objects_v2(Bucket="datasets", Prefix="tiny/v2/")


def test_the_tokenizers_own_separator_when_no_eos_is_named(tokenizer_file: Path, tmp_path: Path) -> None:
    # A post-processor that ends every document with <eos> (tokenizers/processors TemplateProcessing).
    tok = Tokenizer.from_file(str(tokenizer_file))
    eos = tok.token_to_id(EOS)
    tok.post_processor = processors.TemplateProcessing(single=f"$A {EOS}", special_tokens=[(EOS, eos)])
    tok.save(str(tmp_path / "tokenizer.json"))
    jsonl = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    argv = [
        "--tokenizer",
        str(tmp_path / "tokenizer.json"),
        "--input",
        str(jsonl),
        "--out",
        str(tmp_path / "o"),
    ]
    assert tokenize_text.main([*argv, "--token-bytes", "2"]) == 0
    data = (tmp_path / "o" / "shard-000000.bin").read_bytes()
    ids = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    assert ids == _stream(tokenizer_file, DOCS)


def test_a_failed_write_leaves_nothing(
    tokenizer_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = _write_jsonl(tmp_path / "a.jsonl", DOCS)
    real, calls = os.fsync, []

    def failing(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 3:  # the third shard: two are already in place
            raise OSError(28, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)
    out = tmp_path / "out"
    assert _run(tokenizer_file, [str(jsonl)], out, "--shard-tokens", "16") == 1
    assert "No space left on device" in capsys.readouterr().err
    assert not out.exists()
