"""Every benchmark in benchmarks/ still runs (issue 45 item 5): each in its quick mode, its figures not asserted.

A benchmark that stopped running goes unseen until someone re-measures (benchmarks/synth_scaling.py's configs were
refused once alarms had to name a recipient). Thorough tier only: each is a subprocess of several seconds to a
minute (synths, a clone, a fake FSDP step).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each benchmark's quick run; every .py in benchmarks/ must have one (test_every_benchmark_has_a_quick_run).
QUICK = {
    "synth_scaling.py": ["--quick"],
    "train_memory.py": ["--quick"],
    # A short, fast path: 2 files of 1 MiB over a 1 ms round trip, 2 workers, the server's chunk.
    "prewarm_path.py": [
        "--files",
        "2",
        "--file-mib",
        "1",
        "--rtt-ms",
        "1",
        "--parallel",
        "2",
        "--chunk-mib",
        "0",
    ],
    "test_time.py": ["--quick"],
}


def test_every_benchmark_has_a_quick_run() -> None:
    assert sorted(QUICK) == sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))


@pytest.mark.thorough
@pytest.mark.long
@pytest.mark.parametrize("script", sorted(QUICK))
def test_the_benchmark_still_runs(script: str) -> None:
    # jsii (synths) runs `node` from PATH: the pinned Node 22, as the Makefile puts it first.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTHESIS_", "PYTEST_"))}
    env["PATH"] = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *QUICK[script]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, (
        f"{script} exit {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
