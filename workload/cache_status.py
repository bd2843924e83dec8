"""How much of a dataset version prewarm has warmed in a spoke's cache: the status file prewarm writes, and waiting on it.

prewarm.py rewrites the file (atomically: a temporary file renamed over it) with every progress line and at its
end; train.py reads it to republish the fraction with its throughput records (the cache alarms judge a version
only once it is whole) and, with --wait-for-cached-fraction, to wait before it starts. The file lives beside
prewarm's resume journal on the Region's checkpoint volume, which both Jobs mount. Stdlib only.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

FORMAT = "hubspoke-prewarm-status/1"


class StatusError(ValueError):
    """The status file is missing fields or is not this format: names the file and what is wrong."""


@dataclass(frozen=True)
class CacheStatus:
    """What prewarm knows: the dataset root it warms, the version (when a manifest pinned one), bytes warmed."""

    root: str
    name: str | None
    version: str | None
    total_bytes: int
    warm_bytes: int
    complete: bool
    updated: float  # seconds since the epoch

    @property
    def fraction(self) -> float:
        """Warmed bytes of the version's bytes, 0..1 (an empty version is whole once prewarm has listed it)."""
        if self.total_bytes <= 0:
            return 1.0 if self.complete else 0.0
        return min(1.0, self.warm_bytes / self.total_bytes)


def write(path: Path, status: CacheStatus) -> None:
    """Replace the file at once: a reader sees the old status or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": FORMAT, **asdict(status), "fraction": status.fraction}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            json.dump(record, stream, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: Path) -> CacheStatus | None:
    """The status prewarm last wrote, or None when it has written none yet."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise StatusError(f"{path}: not JSON ({exc.msg}); delete it and re-run prewarm") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise StatusError(f"{path}: not a {FORMAT} file; delete it and re-run prewarm")
    try:
        return CacheStatus(
            root=str(record["root"]),
            name=record.get("name"),
            version=record.get("version"),
            total_bytes=int(record["total_bytes"]),
            warm_bytes=int(record["warm_bytes"]),
            complete=bool(record["complete"]),
            updated=float(record["updated"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StatusError(
            f"{path}: field {exc} missing or not a number; delete it and re-run prewarm"
        ) from None


def describes(
    status: CacheStatus, data_dir: Path, *, name: str | None = None, version: str | None = None
) -> bool:
    """Whether `status` is about the dataset a job reads. A job that pins a version (`name`, `version`) counts
    only a status naming that same version: a status without one (prewarm of a whole tree, or one written
    before prewarm pinned versions) says nothing about which bytes are warm, so it does not count. A job that
    pins nothing (--data-dir alone) counts a status whose version is the directory's last two parts,
    <name>/<version> (the layout of hubspoke/dataset_manifest.py), or one without a version."""
    if name is not None or version is not None:
        return (status.name, status.version) == (name, version)
    if status.name is None or status.version is None:
        return True
    return Path(data_dir).parts[-2:] == (status.name, status.version)


def wait_for_fraction(
    path: Path,
    minimum: float,
    *,
    timeout_s: float,
    poll_s: float = 30.0,
    log: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    describes: Callable[[CacheStatus], bool] = lambda status: True,
) -> CacheStatus:
    """Block until prewarm reports at least `minimum` of the dataset warmed; TimeoutError after `timeout_s`.

    `describes`: whether a status is about the job's dataset; one about another version does not count (it is
    a different set of bytes)."""
    deadline = clock() + timeout_s
    while True:
        status = read(path)
        if status is not None and describes(status):
            if status.fraction >= minimum:
                log(f"cache: prewarm reports {status.fraction:.3f} of the dataset warm (>= {minimum:g})")
                return status
            seen = f"{status.fraction:.3f} warm"
        elif status is not None:
            seen = f"a status for {status.name}/{status.version}, not this job's dataset"
        else:
            seen = "no status yet"
        if clock() >= deadline:
            raise TimeoutError(
                f"{path}: {seen} after {timeout_s:g} s, waiting for {minimum:g}; run or resume the prewarm Job "
                "(hubspoke render prewarm), or start without --wait-for-cached-fraction"
            )
        log(f"cache: {seen}; waiting for {minimum:g} (prewarm status {path})")
        sleep(poll_s)
