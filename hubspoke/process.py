"""How hubspoke's long Python processes collect garbage and end (no CDK here)."""

from __future__ import annotations

import atexit
import gc
import os
import sys
from typing import NoReturn

# Python's collection thresholds as mypy sets them for its own runs (mypy/build.py, gc.set_threshold(200 * 1000,
# 30, 30)), against CPython's (700, 10, 10).
FEWER_COLLECTIONS = (200_000, 30, 30)


def collect_less_often() -> None:
    """Collect cyclic garbage less often in a process whose millions of objects mostly live until it ends.

    Each collection of the oldest generation walks every object still alive: aws-cdk-lib's bindings in a synth
    (app.py: 0.1 to 0.2 s of one, benchmarks/synth_scaling.py), and botocore's models, moto's worlds and the
    synthesized templates in a test worker (tests/conftest.py: 13 to 19 s of collections in a 60 s run of the
    CLI tests in one process, 3 to 5 s with these thresholds, measured 2026-12-03).
    """
    gc.set_threshold(*FEWER_COLLECTIONS)


def exit_without_teardown() -> NoReturn:
    """End a process without tearing its interpreter down, once its work is written (app.py after its synth).

    Freeing aws-cdk-lib's bindings (hundreds of thousands of objects) took 0.6 to 0.8 s of every synth, more
    than a tenth of it (benchmarks/synth_scaling.py). Exit handlers still run, so the jsii kernel is stopped as
    jsii stops it (jsii/_kernel/providers/process.py registers its stop with atexit) and output is flushed;
    mypy ends its runs the same way (mypy/util.py, hard_exit). Never call it from a process that goes on
    (tests/conftest.py ends pytest-xdist workers with it).
    """
    atexit._run_exitfuncs()  # CPython's own exit path runs these, then tears down; the teardown is skipped
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
