"""Raw text (JSONL or Parquet, local or s3://) to the token shards workload/shards.py reads, with your tokenizer.

    python tokenize_text.py --tokenizer tokenizer.json --token-bytes 4 \\
        --input s3://my-raw/c4/ --out s3://hubspoke-dev-datasets/c4-llama3/v1/

Documents stream in input order (each --input in the order given; a folder's or prefix's `*.jsonl` and
`*.parquet` files in sorted key order; rows in file order). Each is encoded with the tokenizer's own special
tokens (its post-processor, e.g. Llama 3's <|begin_of_text|>) and followed by the --eos token when one is named;
a tokenizer that adds no special token needs --eos, or documents would run together. The stream is cut into
shards of exactly --shard-tokens little-endian unsigned IDs (the last one shorter), named shard-000000.bin,
shard-000001.bin, ... so that sorted path order (the reader's) is stream order. Each shard is written whole
under a temporary name and renamed (local), or uploaded from a finished local file (botocore 1.44.8's S3 model:
PutObject "never adds partial objects", CompleteMultipartUpload creates the object from all parts): no
half-written shard ever has a final name.
Last come tokenizer.json (a copy) and tokenize.json (what was run: tokens, documents, vocab_size, token_bytes);
a folder without tokenize.json is unfinished. `hubspoke dataset load --source <out>` copies the folder into a
version and seals it (docs/datasets.md, "Text to shards").

Exit status: 0 done; 2 bad input (one line on stderr; what this run wrote is deleted); 1 an I/O failure.
tokenizers API (tokenizers 0.23.3, tokenizers/__init__.pyi): Tokenizer.from_buffer (from_file on bytes), encode_batch
(add_special_tokens defaults to True), get_vocab(with_added_tokens=True), token_to_id.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
SIDECAR = "tokenize.json"
TOKENIZER_COPY = "tokenizer.json"
SUFFIXES = (".jsonl", ".parquet")
# 256 Mi tokens: 1 GiB shards at 4 bytes, 512 MiB at 2; a shard wastes at most seq_len tokens at its end.
DEFAULT_SHARD_TOKENS = 256 * 1024 * 1024
# S3 bucket names (Amazon S3 User Guide, "General purpose bucket naming rules"); the same rule as dataset load.
_S3 = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(.*))?$")
_SHARD_NAME = "shard-{:06d}.bin"
# S3 error codes that mean a wrong URI or missing permission, not a failure (S3 API Reference, "Error codes";
# HeadObject, which download_file calls first, answers a bare "404"/"403").
_S3_BAD_INPUT = frozenset({"NoSuchBucket", "NoSuchKey", "AccessDenied", "404", "403"})


class BadInput(Exception):
    """Input the run cannot use: the message is one line naming the file or option and the fix."""


@dataclass(frozen=True)
class Location:
    """A local path, or an S3 bucket and key (a key ending in '/' or empty is a prefix)."""

    text: str
    bucket: str | None = None
    key: str = ""

    @property
    def is_s3(self) -> bool:
        return self.bucket is not None

    def child(self, name: str) -> Location:
        if self.bucket is None:
            return Location(str(Path(self.text) / name))
        return Location(f"s3://{self.bucket}/{self.key}{name}", self.bucket, f"{self.key}{name}")


def parse_location(text: str, option: str) -> Location:
    """A local path or an s3://bucket/key URI; any other scheme is refused."""
    if text.startswith("s3://"):
        match = _S3.match(text)
        if match is None:
            raise BadInput(f"{option} {text!r} is not an S3 URI; write it like s3://my-bucket/folder/")
        return Location(text, match.group(1), match.group(2) or "")
    if "://" in text:
        raise BadInput(f"{option} {text!r}: only local paths and s3:// URIs are read")
    return Location(text)


def _s3() -> Any:
    import boto3  # only for s3:// locations: a workstation run on local files needs no AWS SDK

    return boto3.client("s3")


def _s3_keys(loc: Location) -> list[str]:
    """Every key under an S3 prefix, in S3's listing order (UTF-8 binary order; S3 User Guide, ListObjectsV2)."""
    keys: list[str] = []
    for page in _s3().get_paginator("list_objects_v2").paginate(Bucket=loc.bucket, Prefix=loc.key):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return sorted(keys)


def input_files(locations: Sequence[Location]) -> list[Location]:
    """The files to read, in order: each location as given; a folder's or prefix's *.jsonl/*.parquet sorted."""
    found: list[Location] = []
    for loc in locations:
        if loc.is_s3 and (loc.key == "" or loc.key.endswith("/")):
            keys = [k for k in _s3_keys(loc) if k.endswith(SUFFIXES)]
            found.extend(Location(f"s3://{loc.bucket}/{k}", loc.bucket, k) for k in keys)
            if not keys:
                raise BadInput(f"--input {loc.text}: no *.jsonl or *.parquet object under this prefix")
        elif not loc.is_s3 and Path(loc.text).is_dir():
            root = Path(loc.text)
            paths = sorted(
                (p for p in root.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES)),
                key=lambda p: p.relative_to(root).as_posix(),
            )
            if not paths:
                raise BadInput(f"--input {loc.text}: no *.jsonl or *.parquet file in this folder")
            found.extend(Location(str(p)) for p in paths)
        elif not loc.text.endswith(SUFFIXES):
            raise BadInput(f"--input {loc.text}: name a .jsonl or .parquet file, or a folder of them")
        elif not loc.is_s3 and not Path(loc.text).is_file():
            raise BadInput(f"--input {loc.text}: no such file")
        else:
            found.append(loc)
    return found


def _local_copy(loc: Location, scratch: Path) -> Path:
    """The file itself, or an S3 object downloaded into scratch (Parquet needs random access)."""
    if not loc.is_s3:
        return Path(loc.text)
    target = scratch / hashlib.sha256(loc.text.encode()).hexdigest()
    _s3().download_file(loc.bucket, loc.key, str(target))
    return target


def _jsonl_lines(loc: Location) -> Iterator[bytes]:
    if not loc.is_s3:
        with open(loc.text, "rb") as f:
            yield from f
        return
    # botocore StreamingBody.iter_lines (botocore/response.py): the object streams, never held whole.
    yield from _s3().get_object(Bucket=loc.bucket, Key=loc.key)["Body"].iter_lines()


def _jsonl(loc: Location, field: str) -> Iterator[str]:
    for number, line in enumerate(_jsonl_lines(loc), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise BadInput(f"{loc.text}: line {number} is not JSON") from None
        if not isinstance(record, dict) or field not in record:
            raise BadInput(
                f"{loc.text}: line {number} has no field {field!r}; name the text field with --field"
            )
        if not isinstance(record[field], str):
            raise BadInput(f"{loc.text}: line {number}: field {field!r} is not a string")
        yield record[field]


def _parquet(loc: Location, field: str, scratch: Path) -> Iterator[str]:
    try:
        import pyarrow.parquet as pq  # only for Parquet input
    except ImportError:
        raise BadInput(f"{loc.text}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    path = _local_copy(loc, scratch)
    try:
        # pyarrow.parquet.ParquetFile.schema_arrow and iter_batches (pyarrow 26.0.1, parquet/core.py).
        table = pq.ParquetFile(path)
        if field not in table.schema_arrow.names:
            raise BadInput(f"{loc.text}: no column {field!r}; name the text column with --field")
        row = 0
        for batch in table.iter_batches(batch_size=1024, columns=[field]):
            for value in batch.column(0).to_pylist():
                row += 1
                if not isinstance(value, str):
                    raise BadInput(f"{loc.text}: row {row}: column {field!r} is not a string")
                yield value
    finally:
        if loc.is_s3:
            path.unlink(missing_ok=True)


def documents(files: Iterable[Location], field: str, scratch: Path) -> Iterator[str]:
    for loc in files:
        if loc.text.endswith(".jsonl"):
            yield from _jsonl(loc, field)
        else:
            yield from _parquet(loc, field, scratch)


@dataclass(frozen=True)
class Encoder:
    """The user's tokenizer, the separator appended after every document, and the vocabulary it needs."""

    tokenizer: Any
    eos_id: int | None
    vocab_size: int
    raw: bytes

    def encode(self, texts: list[str]) -> list[list[int]]:
        tail = [] if self.eos_id is None else [self.eos_id]
        return [enc.ids + tail for enc in self.tokenizer.encode_batch(texts)]


def load_encoder(loc: Location, *, token_bytes: int, eos: str | None) -> Encoder:
    """Load tokenizer.json; refuse one whose IDs do not fit token_bytes, an unknown --eos, or no separator."""
    from tokenizers import Tokenizer

    if loc.is_s3:
        raw = _s3().get_object(Bucket=loc.bucket, Key=loc.key)["Body"].read()
    else:
        try:
            raw = Path(loc.text).read_bytes()
        except OSError as exc:
            raise BadInput(f"--tokenizer {loc.text}: {exc.strerror}") from None
    try:
        tokenizer = Tokenizer.from_buffer(raw)
    except Exception as exc:  # the Rust side raises a plain Exception for a malformed file
        raise BadInput(f"--tokenizer {loc.text}: not a tokenizers tokenizer.json ({exc})") from None
    # IDs run from 0 to the largest in the vocabulary, added tokens included: the model's embedding needs them all.
    vocab_size = max(tokenizer.get_vocab(with_added_tokens=True).values()) + 1
    limit = 2 ** (8 * token_bytes)
    if vocab_size > limit:
        raise BadInput(
            f"--tokenizer {loc.text} has {vocab_size} token IDs; {token_bytes}-byte tokens hold {limit}: use --token-bytes 4"
        )
    eos_id = None
    if eos is not None:
        eos_id = tokenizer.token_to_id(eos)
        if eos_id is None:
            raise BadInput(f"--eos {eos!r} is not a token of {loc.text}; name one of its special tokens")
    elif tokenizer.encode("a").ids == tokenizer.encode("a", add_special_tokens=False).ids:
        raise BadInput(
            f"--tokenizer {loc.text} adds no special token to a document; name the separator with --eos TOKEN"
        )
    return Encoder(tokenizer, eos_id, vocab_size, raw)


class ShardWriter:
    """Streams the tokens into fixed-size shards; each gets its final name only once complete and synced."""

    def __init__(self, out: Location, *, token_bytes: int, shard_tokens: int, scratch: Path):
        self.out, self.shard_tokens = out, shard_tokens
        # Local shards are renamed within the output folder; S3 ones are uploaded from scratch.
        self.staging = scratch if out.is_s3 else Path(out.text)
        # array typecodes are at least this wide; pick the one exactly token_bytes wide on this platform.
        self.typecode = next(t for t in "HILQ" if array(t).itemsize == token_bytes)
        self.file: IO[bytes] | None = None
        self.tmp = ""
        self.filled = 0  # tokens in the open shard
        self.written: list[Location] = []
        self.tokens = 0

    def add(self, ids: list[int]) -> None:
        data = array(self.typecode, ids)
        if sys.byteorder == "big":  # the format is little-endian whatever the host
            data.byteswap()
        start = 0
        while start < len(data):
            if self.file is None:
                fd, self.tmp = tempfile.mkstemp(prefix=".partial-", dir=self.staging)
                self.file = os.fdopen(fd, "wb")
            take = min(len(data) - start, self.shard_tokens - self.filled)
            data[start : start + take].tofile(self.file)
            self.filled, start = self.filled + take, start + take
            if self.filled == self.shard_tokens:
                self._finish()

    def close(self) -> None:
        if self.file is not None:
            self._finish()

    def _finish(self) -> None:
        assert self.file is not None
        self.file.close()
        self.file = None
        self.tokens, self.filled = self.tokens + self.filled, 0
        self._place(self.tmp, self.out.child(_SHARD_NAME.format(len(self.written))))

    def put(self, target: Location, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=self.staging)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        self._place(tmp, target)

    def _place(self, tmp: str, target: Location) -> None:
        try:
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())  # on disk before it has a final name
            self.written.append(target)
            if target.is_s3:
                _s3().upload_file(tmp, target.bucket, target.key)
            else:
                os.replace(tmp, target.text)
        finally:
            Path(tmp).unlink(missing_ok=True)

    def abort(self) -> None:
        """Delete everything this run wrote: the open shard and every finished one."""
        if self.file is not None:
            self.file.close()
            Path(self.tmp).unlink(missing_ok=True)
        for target in self.written:
            if target.is_s3:
                _s3().delete_object(Bucket=target.bucket, Key=target.key)
            else:
                Path(target.text).unlink(missing_ok=True)


def check_output(out: Location) -> Location:
    """The output folder, which must be empty (a rerun after a failure starts over in an emptied folder)."""
    if out.is_s3:
        parts = out.key.rstrip("/").split("/")
        if not out.key.strip("/") or any(part in ("", ".", "..") for part in parts):
            # dataset load refuses such folders too: Shift-From fails on '//', '.' and '..' key parts.
            raise BadInput(
                f"--out {out.text}: name a folder without '//', '.' or '..', like s3://my-bucket/c4/v1/"
            )
        out = Location(out.text.rstrip("/") + "/", out.bucket, out.key.rstrip("/") + "/")
        listing = _s3().list_objects_v2(Bucket=out.bucket, Prefix=out.key, MaxKeys=1)
        if listing.get("KeyCount", 0):
            raise BadInput(f"--out {out.text} already holds objects; delete them or choose a new folder")
        return out
    path = Path(out.text)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise BadInput(f"--out {out.text} is not an empty folder; delete its files or choose a new folder")
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Tokenize every input into shards under --out; returns what tokenize.json records."""
    out = check_output(parse_location(args.out, "--out"))
    inputs = input_files([parse_location(text, "--input") for text in args.input])
    encoder = load_encoder(
        parse_location(args.tokenizer, "--tokenizer"), token_bytes=args.token_bytes, eos=args.eos
    )
    with tempfile.TemporaryDirectory(prefix="tokenize-") as scratch_dir:
        scratch = Path(scratch_dir)
        created = not out.is_s3 and not Path(out.text).exists()
        if not out.is_s3:
            Path(out.text).mkdir(parents=True, exist_ok=True)
        writer = ShardWriter(
            out, token_bytes=args.token_bytes, shard_tokens=args.shard_tokens, scratch=scratch
        )
        count, batch = 0, []
        try:
            for text in documents(inputs, args.field, scratch):
                batch.append(text)
                if len(batch) == args.batch_documents:
                    for ids in encoder.encode(batch):
                        writer.add(ids)
                    count, batch = count + len(batch), []
            for ids in encoder.encode(batch):
                writer.add(ids)
            count += len(batch)
            writer.close()
            if not writer.tokens:
                raise BadInput(f"--input {', '.join(args.input)}: no documents")
            summary = {
                "format": "hubspoke-tokenize/1",
                "tokenizer_sha256": hashlib.sha256(encoder.raw).hexdigest(),
                "vocab_size": encoder.vocab_size,
                "token_bytes": args.token_bytes,
                "eos": args.eos,
                "shard_tokens": args.shard_tokens,
                "shards": len(writer.written),
                "tokens": writer.tokens,
                "documents": count,
                "inputs": [loc.text for loc in inputs],
            }
            writer.put(out.child(TOKENIZER_COPY), encoder.raw)
            writer.put(out.child(SIDECAR), (json.dumps(summary, indent=1) + "\n").encode())
        except BaseException:
            writer.abort()  # nothing half-done stays behind: a rerun starts from an empty folder
            if created:
                Path(out.text).rmdir()
            raise
    summary["out"] = out.text
    return summary


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tokenize_text.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer.json (path or s3:// URI)")
    p.add_argument(
        "--input",
        required=True,
        action="append",
        help="a .jsonl/.parquet file or a folder of them (repeatable)",
    )
    p.add_argument(
        "--out", required=True, help="an empty folder (path or s3://bucket/folder/) for the shards"
    )
    p.add_argument("--token-bytes", type=int, choices=(2, 4), required=True, help="bytes per token ID")
    p.add_argument("--field", default="text", help="the JSONL field or Parquet column holding the text")
    p.add_argument("--eos", help="token appended after every document, e.g. '<|end_of_text|>'")
    p.add_argument("--shard-tokens", type=int, default=DEFAULT_SHARD_TOKENS, help="tokens per shard")
    p.add_argument("--batch-documents", type=int, default=1000, help="documents per encode_batch call")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.shard_tokens < 2 or args.batch_documents < 1:
        parser.error("--shard-tokens must be 2 or more and --batch-documents 1 or more")
    try:
        summary = run(args)
    except BadInput as exc:
        print(f"tokenize_text: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # botocore errors, a full disk: one line, not a traceback
        # botocore ClientError carries S3's error code (botocore/exceptions.py ClientError.response).
        code = getattr(exc, "response", {}).get("Error", {}).get("Code")
        if code in _S3_BAD_INPUT:
            print(
                f"tokenize_text: {exc}; check the s3:// URIs and this identity's S3 permissions",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        print(f"tokenize_text: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    source = summary["out"] if summary["out"].startswith("s3://") else "s3://<bucket>/<folder>/"
    print(
        f"{summary['documents']} documents, {summary['tokens']} tokens in {summary['shards']} shards under "
        f"{summary['out']}; {'' if source == summary['out'] else f'copy them to {source}, then '}load them "
        f"with: hubspoke dataset load --config <config-file> --name <name> --version <version> "
        f"--source {source} --token-bytes {summary['token_bytes']} --vocab-size {summary['vocab_size']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
