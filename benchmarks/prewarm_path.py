"""How busy prewarm keeps the hub-to-spoke path: achieved / available throughput over a long, fat loopback path.

`workload/prewarm.py` runs unchanged (real qumulo-api SDK, HTTPS, its default parallelism) against the Qumulo
contract fake (tests/fakes/qumulo), whose fetch-data answers here are held back the way the cross-Region path
would hold them: a call that fetches n bytes from the hub answers after one round trip plus n / bandwidth, the
bandwidth shared by every call in flight (one link, first come first served, so concurrent calls queue for it).

The path (us-east-2 hub, us-west-2 spoke):
- round trip 70 ms: issue 24's figure for the path; the seed reads "~60 ms RTT" between Ohio and Oregon
  (docs/design.md, /work/shared/DESIGN.md §1), so 70 ms is the slower end and a harder test.
- bandwidth 1.0 GB/s: the seed's measured storage throughput, "> 1.0 GBps (1.0-1.3 for 16 GPUs)", the rate the
  cold path sustained in the reference run; the peering link itself has no published per-flow figure.
- bytes per fetch-data call: the server decides unless prewarm's --chunk-bytes does; Qumulo documents no
  maximum, and the fake's 64 MiB (tests/fakes/qumulo/files.py) is ASSUMED. The smaller chunks below show what
  the default would give if the real server answers in smaller pieces.

Usage: .venv/bin/python benchmarks/prewarm_path.py [--files 32 --file-mib 64 --rtt-ms 70 --gbps 1.0]
       [--parallel 8 16 32] [--chunk-mib 0 8 1]
Prints one row per (parallelism, chunk) with achieved GB/s and achieved / available; the goal is >= 0.9.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "workload")]

import prewarm  # noqa: E402

from hubspoke.k8s.prewarm import DEFAULT_PARALLEL as JOB_PARALLEL  # noqa: E402
from tests.fakes.qumulo import FakeQumulo  # noqa: E402

MIB = 1 << 20


class LongPath:
    """One link: a call's bytes cross it after half a round trip, one call after another, then half a round trip
    back; the answer is due when its last byte is back."""

    def __init__(self, rtt_s: float, bytes_per_s: float) -> None:
        self.rtt_s, self.bytes_per_s = rtt_s, bytes_per_s
        self._free_at = 0.0
        self._lock = threading.Lock()

    def due(self, fetched: int) -> float:
        with self._lock:
            start = max(time.monotonic() + self.rtt_s / 2, self._free_at)
            self._free_at = start + fetched / self.bytes_per_s
            return self._free_at + self.rtt_s / 2


class SlowSpoke(FakeQumulo):
    """The contract fake whose fetch-data answers wait for the long path (outside the fake's lock)."""

    path: LongPath

    def handle(self, node_ip: str, method: str, raw_path: str, headers: Any, body: Any) -> Any:
        reply = super().handle(node_ip, method, raw_path, headers, body)
        if method == "POST" and "/fetch-data" in raw_path and reply[0] == 200:
            time.sleep(max(0.0, self.path.due(int(reply[1]["bytes_fetched"])) - time.monotonic()))
        return reply


def run(*, parallel: int, chunk_bytes: int | None, files: int, file_bytes: int, path: LongPath) -> float:
    """Seconds prewarm takes, from its first REST call to its exit, over a fresh spoke and journal."""
    with SlowSpoke(name="spoke") as spoke, tempfile.TemporaryDirectory() as scratch:
        spoke.password = "secret"
        spoke.path = path
        for i in range(files):
            spoke.add_file(f"/dataset/shard-{i:05d}.bin", file_bytes)
        journal = prewarm.Journal(Path(scratch) / "state.jsonl")
        log = io.StringIO()
        started = time.monotonic()
        try:
            code = prewarm.prewarm(
                # The fake's nodes are on 127.0.0.2 and up (tests/fakes/qumulo/cluster.py: 127.0.0.1 is the SDK's root).
                prewarm.sdk_client_factory(spoke.node_ips[0], spoke.port, "admin", "secret", 60),
                journal,
                prewarm.Options(
                    root="/dataset/",
                    parallel=parallel,
                    chunk_bytes=chunk_bytes,
                    progress_every_s=3600,
                    # The warm-up path alone: the end-of-run residency sample is a fixed ~65 round trips.
                    recheck_samples=0,
                ),
                log=log,
            )
        finally:
            journal.close()
        elapsed = time.monotonic() - started
        if code != 0 or sum(spoke.fetched_bytes.values()) != files * file_bytes:
            raise SystemExit(f"prewarm failed (exit {code}):\n{log.getvalue()}")
        return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=32)
    parser.add_argument("--file-mib", type=int, default=64)
    parser.add_argument("--rtt-ms", type=float, default=70.0)
    parser.add_argument("--gbps", type=float, default=1.0, help="available bandwidth, GB/s (1e9 bytes)")
    parser.add_argument("--chunk-mib", type=int, nargs="*", default=[0, 8, 1], help="0: the server decides")
    parser.add_argument(
        "--parallel",
        type=int,
        nargs="*",
        default=list(dict.fromkeys((prewarm.DEFAULT_PARALLEL, JOB_PARALLEL))),
        help="worker counts to run (default: prewarm.py's default and the rendered Job's)",
    )
    args = parser.parse_args()
    available = args.gbps * 1e9
    total = args.files * args.file_mib * MIB
    print(
        f"path: {args.rtt_ms:g} ms round trip, {args.gbps:g} GB/s; dataset {args.files} files x {args.file_mib} MiB "
        f"= {total / 1e9:.2f} GB; goal achieved/available >= 0.9"
    )
    print("| parallel | bytes per call | time | achieved | achieved / available |")
    print("|---|---|---|---|---|")
    for parallel in args.parallel:
        for chunk in args.chunk_mib:
            elapsed = run(
                parallel=parallel,
                chunk_bytes=chunk * MIB or None,
                files=args.files,
                file_bytes=args.file_mib * MIB,
                path=LongPath(args.rtt_ms / 1000, available),
            )
            achieved = total / elapsed
            label = f"{chunk} MiB" if chunk else "server's (fake: 64 MiB, ASSUMED)"
            print(
                f"| {parallel} | {label} | {elapsed:.1f} s | {achieved / 1e9:.2f} GB/s | **{achieved / available:.2f}** |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
