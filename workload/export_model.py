"""Copy a training run's final checkpoint and the benchmark results off the checkpoint volume to S3.

Run by the Job `hubspoke render export` prints, on the Region's cluster, with the checkpoint claim mounted
read-only; its S3 rights come from an EKS Pod Identity association (hubspoke/constructs/model_export.py).

- Which checkpoint: the newest complete `<checkpoints>/<run>/step_<8 digits>/`, or --step. Complete means
  DCP's `.metadata` exists: train.py writes `dataset.json` first and DCP writes `.metadata` last
  (workload/train.py, latest_checkpoint and save_checkpoint), so a directory without it is torn.
- Where: s3://<bucket>/<prefix>/step_<n>/<file> for the checkpoint, <prefix>/results/<dir>/<file> for the
  results files (--results, and every file in each --results-dir, e.g. the benchmark's), and
  <prefix>/export.json last: the export is complete once that object exists, as the checkpoint is once
  `.metadata` does (and `.metadata` is uploaded last within its step).
- Resume: an object already in the bucket with the same size and the same SHA-256 (kept in its user-defined
  metadata `x-amz-meta-sha256`, which HeadObject returns: Amazon S3 User Guide, "Working with object
  metadata") is skipped, so a re-run after a killed pod uploads only what is missing.
- Large files go in parts (boto3's managed transfer, TransferConfig): S3 takes 5 MiB to 5 GiB per part and
  at most 10,000 parts (Amazon S3 User Guide, "Amazon S3 multipart upload limits"), so the part size grows
  with the file to stay under 10,000 parts.
- Progress: one line per file and, inside a large file, every --progress-seconds.
- Exit 0 when everything is in S3, 1 on an S3 error a re-run may fix, 2 on bad input (one line saying the fix).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
# The names train.py writes (STEP_DIR, CHECKPOINT_DATASET) and DCP's completion marker.
STEP_DIR = re.compile(r"^step_(\d{8})$")
DCP_METADATA = ".metadata"
EXPORT_RECORD = "export.json"
MIB = 1024 * 1024
# Amazon S3 User Guide, "Amazon S3 multipart upload limits": parts of 5 MiB to 5 GiB, at most 10,000 per upload.
MIN_PART, MAX_PART, MAX_PARTS = 5 * MIB, 5 * 1024 * MIB, 10_000
DEFAULT_PART = 64 * MIB
SHA256_METADATA = "sha256"  # sent as x-amz-meta-sha256; boto3 returns it as Metadata["sha256"]


class BadInput(Exception):
    """Input that no retry fixes; the message is the one line the user reads."""


@dataclass(frozen=True)
class Upload:
    """One local file and the key it goes to."""

    path: Path
    key: str
    size: int


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoints", type=Path, required=True, help="the checkpoint volume's mount path")
    p.add_argument("--run", required=True, help="the training job's name: its checkpoint directory")
    p.add_argument("--step", type=int, help="export this step (default: the newest complete one)")
    p.add_argument("--bucket", required=True, help="the Region's model export bucket")
    p.add_argument("--prefix", required=True, help="key prefix, <environment>/<region>/<run>")
    p.add_argument(
        "--results",
        type=Path,
        action="append",
        default=[],
        help="a results file to copy too (repeatable), e.g. the benchmark's .jsonl files",
    )
    p.add_argument(
        "--results-dir",
        type=Path,
        action="append",
        default=[],
        help="copy every file directly in this directory too, when it exists (repeatable)",
    )
    p.add_argument("--part-size", type=int, default=DEFAULT_PART, help="bytes per part of large files")
    p.add_argument("--progress-seconds", type=float, default=30.0)
    return p.parse_args(argv)


def complete_steps(run_dir: Path) -> dict[int, Path]:
    """Every complete checkpoint of the run by step: a step_<n> directory holding DCP's `.metadata`."""
    found = {}
    for child in run_dir.iterdir():
        match = STEP_DIR.match(child.name)
        if match and child.is_dir() and (child / DCP_METADATA).is_file():
            found[int(match.group(1))] = child
    return found


def pick_checkpoint(checkpoints: Path, run: str, step: int | None) -> tuple[int, Path]:
    """The checkpoint to export; BadInput naming what to pass instead when there is none."""
    if not checkpoints.is_dir():
        raise BadInput(f"--checkpoints {checkpoints} is not a directory: mount the checkpoint claim there")
    run_dir = checkpoints / run
    if not run_dir.is_dir():
        runs = sorted(p.name for p in checkpoints.iterdir() if p.is_dir() and not p.name.startswith("."))
        raise BadInput(
            f"--run {run}: no directory {run_dir}; runs on this volume: {', '.join(runs) or 'none'}"
        )
    steps = complete_steps(run_dir)
    if not steps:
        raise BadInput(
            f"--run {run}: no complete checkpoint in {run_dir} (a step_<n> directory with {DCP_METADATA}); "
            "let the job write one, or pick another run"
        )
    if step is None:
        latest = max(steps)
        return latest, steps[latest]
    if step not in steps:
        listed = ", ".join(str(s) for s in sorted(steps))
        raise BadInput(f"--step {step} is not a complete checkpoint of {run}; complete steps: {listed}")
    return step, steps[step]


def plan_uploads(step_dir: Path, prefix: str, results: Sequence[Path]) -> list[Upload]:
    """The checkpoint's files (`.metadata` last, as DCP writes it) and then the results files."""
    files = sorted(p for p in step_dir.rglob("*") if p.is_file())
    files.sort(key=lambda p: p.relative_to(step_dir).as_posix() == DCP_METADATA)  # stable: .metadata last
    uploads = [
        Upload(p, f"{prefix}/{step_dir.name}/{p.relative_to(step_dir).as_posix()}", p.stat().st_size)
        for p in files
    ]
    for path in results:
        if not path.is_file():
            raise BadInput(
                f"--results {path} is not a file: pass a file on the checkpoint volume, or leave it out"
            )
        uploads.append(Upload(path, f"{prefix}/results/{path.parent.name}/{path.name}", path.stat().st_size))
    return uploads


def part_size(size: int, wanted: int) -> int:
    """`wanted`, raised so `size` fits in 10,000 parts and kept within S3's 5 MiB..5 GiB."""
    needed = -(-size // MAX_PARTS)
    return min(MAX_PART, max(MIN_PART, wanted, needed))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(8 * MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def already_there(s3: Any, bucket: str, upload: Upload, sha256: Callable[[], str]) -> bool:
    """True when the key holds an object of this size whose recorded SHA-256 is the file's."""
    from botocore.exceptions import ClientError

    try:
        head = s3.head_object(Bucket=bucket, Key=upload.key)
    except ClientError as exc:
        # HeadObject answers a missing key with a bare 404 (Amazon S3 API Reference, HeadObject).
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    if head.get("ContentLength") != upload.size:
        return False
    return bool(head.get("Metadata", {}).get(SHA256_METADATA) == sha256())


class Progress:
    """Prints bytes sent for one file at most every `every` seconds (boto3 calls it from its threads)."""

    def __init__(self, label: str, size: int, every: float, clock: Callable[[], float] = time.monotonic):
        self.label, self.size, self.every, self.clock = label, size, every, clock
        self.sent, self.last = 0, clock()
        self.lock = threading.Lock()

    def __call__(self, amount: int) -> None:
        with self.lock:
            self.sent += amount
            now = self.clock()
            if now - self.last >= self.every and self.sent < self.size:
                self.last = now
                print(f"  {self.label}: {self.sent / MIB:.0f}/{self.size / MIB:.0f} MiB", flush=True)


def export(options: argparse.Namespace, s3: Any) -> int:
    """Upload what is missing, then the export record; returns the exit code."""
    from boto3.s3.transfer import TransferConfig
    from botocore.exceptions import BotoCoreError, ClientError

    step, step_dir = pick_checkpoint(options.checkpoints, options.run, options.step)
    found = [p for d in options.results_dir if d.is_dir() for p in sorted(d.iterdir()) if p.is_file()]
    uploads = plan_uploads(step_dir, options.prefix, [*options.results, *found])
    total = sum(u.size for u in uploads)
    where = f"s3://{options.bucket}/{options.prefix}"
    print(f"exporting {step_dir} (step {step}): {len(uploads)} files, {total / MIB:.1f} MiB to {where}/")
    try:
        s3.head_bucket(Bucket=options.bucket)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in ("404", "NoSuchBucket", "NotFound"):
            raise BadInput(
                f"--bucket {options.bucket} does not exist: use the compute stack's ModelExportBucket output"
            ) from None
        if code in ("403", "AccessDenied"):
            raise BadInput(
                f"--bucket {options.bucket}: access denied; run as the service account the Compute stack's Pod "
                "Identity association names (hubspoke render export renders it) and use that Region's bucket"
            ) from None
        raise
    skipped = sent = 0
    digests: dict[str, str] = {}
    try:
        for index, upload in enumerate(uploads, 1):
            label = f"[{index}/{len(uploads)}] {upload.key}"

            def digest(u: Upload = upload) -> str:
                if u.key not in digests:
                    digests[u.key] = sha256_of(u.path)
                return digests[u.key]

            if already_there(s3, options.bucket, upload, digest):
                skipped += 1
                print(f"{label}: already uploaded, skipped", flush=True)
                continue
            chunk = part_size(upload.size, options.part_size)
            config = TransferConfig(multipart_threshold=chunk, multipart_chunksize=chunk)
            s3.upload_file(
                str(upload.path),
                options.bucket,
                upload.key,
                ExtraArgs={"Metadata": {SHA256_METADATA: digest()}},
                Config=config,
                Callback=Progress(label, upload.size, options.progress_seconds),
            )
            sent += 1
            print(f"{label}: {upload.size / MIB:.1f} MiB uploaded", flush=True)
        record = {
            "run": options.run,
            "step": step,
            "checkpoint": f"{where}/{step_dir.name}/",
            "dataset": _dataset_record(step_dir),
            "files": [{"key": u.key, "size": u.size, "sha256": digests[u.key]} for u in uploads],
        }
        s3.put_object(
            Bucket=options.bucket,
            Key=f"{options.prefix}/{EXPORT_RECORD}",
            Body=(json.dumps(record, indent=1) + "\n").encode(),
            ContentType="application/json",
        )
    except (BotoCoreError, ClientError, OSError) as exc:
        print(f"error: {exc}; run the Job again: it skips what is already uploaded", file=sys.stderr)
        return EXIT_FAILED
    print(f"done: step {step} in {where}/ ({sent} uploaded, {skipped} already there); record {EXPORT_RECORD}")
    return EXIT_OK


def _dataset_record(step_dir: Path) -> Any:
    """The dataset train.py recorded beside the checkpoint (dataset.json), or None for an older checkpoint."""
    path = step_dir / "dataset.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def main(argv: Sequence[str] | None = None, s3: Any = None) -> int:
    options = parse_args(argv)
    try:
        if not re.fullmatch(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*", options.prefix):
            raise BadInput(
                f"--prefix {options.prefix!r}: write it as <environment>/<region>/<run>, no leading '/'"
            )
        if not MIN_PART <= options.part_size <= MAX_PART:
            raise BadInput(f"--part-size {options.part_size}: give bytes between {MIN_PART} and {MAX_PART}")
        if options.step is not None and options.step < 0:
            raise BadInput(f"--step {options.step}: a step is 0 or more")
        if s3 is None:
            import boto3

            s3 = boto3.client("s3")
        return export(options, s3)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
