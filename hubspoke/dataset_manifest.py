"""A dataset version's manifest: which files, their sizes and checksums, and the token format they hold.

A loaded version lives at `<mount>/<name>/<version>/` with `MANIFEST.json` beside its files; the manifest is
written last, so a version without one is still loading and nothing may read it. Versions are immutable: a
writer refuses an existing version directory and an existing manifest. Stdlib only: the training image copies
this file without the rest of hubspoke (workload/manifest.py is the name the workload imports it by).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

FORMAT = "hubspoke-dataset/1"
MANIFEST_NAME = "MANIFEST.json"
# Token widths workload/shards.py reads (little-endian unsigned IDs).
TOKEN_BYTES = (2, 4)
# A name or version is one path segment of the dataset mount (no separators, no dot-names, no spaces) and a
# valid Kubernetes label value, so rendered jobs can be selected by it (Kubernetes documentation, "Labels and
# Selectors": 63 characters at most, alphanumeric at both ends, '-', '_', '.' between).
SEGMENT_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"
_SEGMENT = re.compile(SEGMENT_PATTERN)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_FIELDS: dict[str, type] = {
    "format": str,
    "name": str,
    "version": str,
    "token_bytes": int,
    "vocab_size": int,
    "files": list,
    "total_bytes": int,
}
_FILE_FIELDS: dict[str, type] = {"path": str, "bytes": int, "sha256": str}
_HASH_CHUNK = 8 * 1024 * 1024


class ManifestError(ValueError):
    """A manifest that cannot be read, or one that would not be valid: the message is one line and says why."""


@dataclass(frozen=True)
class FileEntry:
    """One data file of a version: its path relative to the version directory, size and SHA-256."""

    path: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """What a dataset version holds and how its tokens are encoded."""

    name: str
    version: str
    token_bytes: int
    vocab_size: int
    files: tuple[FileEntry, ...]
    total_bytes: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "name": self.name,
            "version": self.version,
            "token_bytes": self.token_bytes,
            "vocab_size": self.vocab_size,
            "files": [{"path": f.path, "bytes": f.bytes, "sha256": f.sha256} for f in self.files],
            "total_bytes": self.total_bytes,
        }


def check_segment(what: str, value: str) -> str:
    """`value` if it can be one directory name of the dataset mount, else ManifestError saying why."""
    if not isinstance(value, str) or not _SEGMENT.match(value):
        raise ManifestError(
            f"{what} {value!r} must be 1-63 letters, digits, '.', '_', '-', starting and ending with a letter or digit"
        )
    return value


def dataset_root(mount: str | os.PathLike[str], name: str, version: str) -> Path:
    """The directory of one dataset version under the dataset mount (`<mount>/<name>/<version>`)."""
    return Path(mount) / check_segment("dataset name", name) / check_segment("dataset version", version)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _typed(where: str, record: Mapping[str, Any], fields: Mapping[str, type]) -> None:
    for key, kind in fields.items():
        if key not in record:
            raise ManifestError(f"{where}: missing field {key!r}")
        value = record[key]
        if not (_is_int(value) if kind is int else isinstance(value, kind)):
            raise ManifestError(f"{where}: field {key!r} must be {kind.__name__}, not {type(value).__name__}")
    unknown = sorted(set(record) - set(fields))
    if unknown:
        raise ManifestError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")


def _check_path(where: str, path: str) -> str:
    pure = PurePosixPath(path)
    if (
        not path
        or "\\" in path
        or pure.is_absolute()
        or any(part in ("", ".", "..") for part in path.split("/"))
        or path == MANIFEST_NAME
    ):
        raise ManifestError(
            f"{where}: path {path!r} must be relative, '/'-separated, without '.' or '..' parts, not {MANIFEST_NAME}"
        )
    return path


def validate(
    *,
    name: str,
    version: str,
    token_bytes: int,
    vocab_size: int,
    files: Iterable[FileEntry],
    where: str = "manifest",
) -> Manifest:
    """A Manifest from its parts, refusing what workload/shards.py could not read; total_bytes is computed."""
    check_segment(f"{where}: name", name)
    check_segment(f"{where}: version", version)
    if token_bytes not in TOKEN_BYTES:
        raise ManifestError(f"{where}: token_bytes must be 2 or 4, not {token_bytes}")
    if not 1 <= vocab_size <= 2 ** (8 * token_bytes):
        raise ManifestError(
            f"{where}: vocab_size {vocab_size} does not fit {token_bytes}-byte tokens (at most {2 ** (8 * token_bytes)})"
        )
    entries = tuple(sorted(files, key=lambda f: f.path))
    seen: set[str] = set()
    for entry in entries:
        _check_path(where, entry.path)
        if entry.path in seen:
            raise ManifestError(f"{where}: path {entry.path!r} is listed twice")
        seen.add(entry.path)
        if entry.bytes < 0:
            raise ManifestError(f"{where}: {entry.path!r} has negative bytes {entry.bytes}")
        if not _SHA256.match(entry.sha256):
            raise ManifestError(f"{where}: {entry.path!r} sha256 must be 64 lowercase hex digits")
    return Manifest(
        name=name,
        version=version,
        token_bytes=token_bytes,
        vocab_size=vocab_size,
        files=entries,
        total_bytes=sum(e.bytes for e in entries),
    )


def parse(text: str | bytes, *, source: str = "manifest") -> Manifest:
    """A Manifest from MANIFEST.json's text; ManifestError (one line, naming `source`) for anything else."""
    try:
        record = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{source}: not JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ManifestError(f"{source}: must be a JSON object")
    if record.get("format") != FORMAT:
        raise ManifestError(f"{source}: format {record.get('format')!r} is not {FORMAT!r}")
    _typed(source, record, _FIELDS)
    files = []
    for i, item in enumerate(record["files"]):
        if not isinstance(item, dict):
            raise ManifestError(f"{source}: files[{i}] must be an object")
        _typed(f"{source}: files[{i}]", item, _FILE_FIELDS)
        files.append(FileEntry(path=item["path"], bytes=item["bytes"], sha256=item["sha256"]))
    manifest = validate(
        name=record["name"],
        version=record["version"],
        token_bytes=record["token_bytes"],
        vocab_size=record["vocab_size"],
        files=files,
        where=source,
    )
    if record["total_bytes"] != manifest.total_bytes:
        raise ManifestError(
            f"{source}: total_bytes {record['total_bytes']} is not the sum of its files' bytes ({manifest.total_bytes})"
        )
    return manifest


def to_json(manifest: Manifest) -> bytes:
    """MANIFEST.json's bytes: the same manifest always gives the same bytes (files sorted by path)."""
    return (json.dumps(manifest.as_dict(), indent=1) + "\n").encode()


def load(path: str | os.PathLike[str]) -> Manifest:
    """The manifest at `path` (MANIFEST.json, or a version directory holding one)."""
    target = Path(path)
    if target.is_dir():
        target = target / MANIFEST_NAME
    try:
        text = target.read_bytes()
    except FileNotFoundError:
        raise ManifestError(
            f"{target}: no manifest (a version without one is still loading, or this is not a dataset version)"
        ) from None
    except OSError as exc:
        raise ManifestError(f"{target}: cannot read ({exc.strerror})") from None
    return parse(text, source=str(target))


def create_version(mount: str | os.PathLike[str], name: str, version: str) -> Path:
    """Make a new, empty version directory; refuses one that exists (versions are never written twice)."""
    root = dataset_root(mount, name, version)
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        root.mkdir()
    except FileExistsError:
        raise ManifestError(
            f"{root}: version {version!r} of {name!r} already exists; versions are immutable, load a new one"
        ) from None
    return root


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def scan(
    directory: str | os.PathLike[str], *, name: str, version: str, token_bytes: int, vocab_size: int
) -> Manifest:
    """The manifest of every file under `directory` (reading each once for its SHA-256), MANIFEST.json excluded."""
    root = Path(directory)
    files = [
        FileEntry(path=p.relative_to(root).as_posix(), bytes=p.stat().st_size, sha256=sha256_file(p))
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() != MANIFEST_NAME
    ]
    return validate(name=name, version=version, token_bytes=token_bytes, vocab_size=vocab_size, files=files)


def write(directory: str | os.PathLike[str], manifest: Manifest) -> Path:
    """Seal a version: write MANIFEST.json into its directory atomically (temporary file, then rename).

    Refuses a directory that already has a manifest (a sealed version never changes) and a directory whose
    name is not the manifest's `<name>/<version>`.
    """
    root = Path(directory)
    if (root.parent.name, root.name) != (manifest.name, manifest.version):
        raise ManifestError(
            f"{root}: manifest of {manifest.name}/{manifest.version} belongs in a directory named <mount>/{manifest.name}/{manifest.version}"
        )
    target = root / MANIFEST_NAME
    if target.exists():
        raise ManifestError(f"{target}: version is already sealed; versions are immutable, load a new one")
    fd, tmp = tempfile.mkstemp(prefix=f".{MANIFEST_NAME}.", dir=root)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(to_json(manifest))
            f.flush()
            os.fsync(f.fileno())
        # link() then unlink(): unlike rename(), link refuses an existing target, so two writers cannot both seal.
        os.link(tmp, target)
    except FileExistsError:
        raise ManifestError(
            f"{target}: version is already sealed; versions are immutable, load a new one"
        ) from None
    finally:
        os.unlink(tmp)
    return target


def check_files(manifest: Manifest, directory: str | os.PathLike[str]) -> None:
    """Cheap start-up check (one stat per file): every listed file exists with its size, no `*.bin` is unlisted."""
    root = Path(directory)
    listed = {f.path for f in manifest.files}
    for entry in manifest.files:
        try:
            size = (root / entry.path).stat().st_size
        except FileNotFoundError:
            raise ManifestError(f"{root}: {entry.path} is in the manifest but missing") from None
        if size != entry.bytes:
            raise ManifestError(f"{root}: {entry.path} is {size} bytes, the manifest says {entry.bytes}")
    extra = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.bin")
        if p.relative_to(root).as_posix() not in listed
    )
    if extra:
        raise ManifestError(f"{root}: {len(extra)} shard(s) not in the manifest, first {extra[0]}")
