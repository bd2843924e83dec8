"""How hubspoke's Python processes end: the exit handlers, without the interpreter's teardown (no CDK here)."""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


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
