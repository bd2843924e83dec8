"""`make test` on a fresh clone, as CI runs it: clone, `make synth` (not timed), then `make test` (timed).

The clone lives in a new directory in the user's home that only its owner can enter (mode 0700): the Lambda
sandbox's unprivileged user must not need to read the checkout. The user's caches (XDG_CACHE_HOME: Control Tower
verdicts, the Lambda sandbox's trees) start empty inside it, so nothing an earlier run left on this machine
helps; `make synth` fills them as it does in CI. Not under /tmp: the Lambda sandbox hides /tmp.
    .venv/bin/python benchmarks/test_time.py [--target test|test-thorough] [--keep] [--quick]
`--quick` (the thorough tier's check that it still runs): the same clone and yardstick, one synth each side, and
`make -n TARGET` (what make would run) instead of `make synth` and the target; its figures mean nothing.
Prints the wall seconds of each step and, for `make test`, the pytest summary line, its CPU seconds, and its time
as a multiple of an empty CDK app's synth in the same run (benchmarks/synth_scaling.py's empty app, median of
three before and three after, wall and CPU): these machines' pace varies more than twofold from hour to hour, and
the empty app tells roughly which hour a run had (its own synths vary by a fifth within one run).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The clone's steps get the user's environment as it was; this process imports aws-cdk-lib (synth_scaling), whose
# jsii kernel runs `node` from PATH: the pinned Node 22, as in synth.
USER_ENVIRONMENT = dict(os.environ)
os.environ["PATH"] = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"

from synth_scaling import EMPTY_APP, children_cpu_seconds, run_synth  # noqa: E402

# Empty-app synths timed before `make test`, and as many after.
YARDSTICK_REPEATS = 3
# `make -n`: make prints what it would run and runs nothing (no set-up, no synth, no test).
QUICK_MAKE = ["make", "-n"]


def run(
    step: str, args: list[str], cwd: Path, env: dict[str, str], *, check: bool = True
) -> tuple[float, float, str, int]:
    """(wall seconds, CPU seconds of the step and every process it waited for, standard output, exit code).

    Without `check`, a failing step is timed and reported like a passing one (its output's tail on stderr)."""
    before = children_cpu_seconds()
    start = time.perf_counter()
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    cpu = children_cpu_seconds() - before
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        if check:
            raise SystemExit(f"{step} failed with exit {result.returncode} after {elapsed:.0f} s")
    return elapsed, cpu, result.stdout, result.returncode


def empty_app_seconds(workdir: Path, repeats: int = YARDSTICK_REPEATS) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of an empty CDK app's synths, each in its own process (synth_scaling's yardstick)."""
    return [run_synth(EMPTY_APP, workdir)[:2] for _ in range(repeats)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="test", choices=["test", "test-thorough"])
    parser.add_argument("--keep", action="store_true", help="leave the clone in place")
    parser.add_argument("--quick", action="store_true", help="check it still runs: `make -n`, no figures")
    args = parser.parse_args()
    make = QUICK_MAKE if args.quick else ["make"]
    repeats = 1 if args.quick else YARDSTICK_REPEATS
    scratch = Path(tempfile.mkdtemp(prefix="hubspoke-fresh-", dir=Path.home()))  # mode 0700
    clone = scratch / "hubspoke"
    env = {
        k: v
        for k, v in USER_ENVIRONMENT.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTEST_", "HUBSPOKE_")) and k != "XDG_CACHE_HOME"
    }
    env["XDG_CACHE_HOME"] = str(scratch / "cache")
    try:
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        setup, _, _, _ = run("make synth", [*make, "synth"], clone, env)
        yardstick = scratch / "empty-app"
        yardstick.mkdir()
        empty = empty_app_seconds(yardstick, repeats)
        elapsed, cpu, out, code = run(f"make {args.target}", [*make, args.target], clone, env, check=False)
        empty += empty_app_seconds(yardstick, repeats)
        summary = [line for line in out.splitlines() if " passed" in line or " failed" in line]
        print(
            f"clone under a directory only its owner can enter: {scratch} (mode {scratch.stat().st_mode & 0o777:o})"
        )
        print(f"make synth (set-up included, not counted): {setup:.0f} s")
        print(
            f"make {args.target}{f' FAILED (exit {code})' if code else ''}: {elapsed:.0f} s wall, {cpu:.0f} CPU-s; {summary[-1] if summary else 'no pytest summary'}"
        )
        pace = statistics.median(wall for wall, _ in empty)
        pace_cpu = statistics.median(c for _, c in empty)
        print(
            f"empty CDK app synth, {repeats} before and {repeats} after: {' '.join(f'{w:.1f}' for w, _ in empty)} s"
            f" (median {pace:.1f} s, {pace_cpu:.1f} CPU-s); make {args.target} = {elapsed / pace:.0f} x the median"
            f" ({cpu / pace_cpu:.0f} x in CPU time)"
        )
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    return 1 if code else 0


if __name__ == "__main__":
    sys.exit(main())
