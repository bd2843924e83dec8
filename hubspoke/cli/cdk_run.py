"""How `hubspoke deploy` runs the CDK CLI and follows it: a replaceable line runner, and per-stack progress read
from the lines the pinned CLI prints.

The lines followed are the CDK CLI's own (aws-cdk 2.1148.1, node_modules/aws-cdk/lib/index.js, CdkToolkit's
deploy): `<display name>: deploying... [i/n]` when a stack starts, `✅  <display name>` or `✅  <display name> (no
changes)` when it ends, and `❌  <stack name> failed to deploy` when it fails. A Stage stack's display name is
`<stage>/<id> (<stack name>)`: its hierarchical ID, then its CloudFormation name when that differs from the
artifact ID (same file, CloudFormationStackArtifact's displayName).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TextIO


class Runner(Protocol):
    """Runs one command, hands each line of its output (stdout and stderr merged) to `on_line`, returns its exit
    code (tests replace it with a recording runner)."""

    def __call__(self, argv: Sequence[str], on_line: Callable[[str], None]) -> int: ...


def subprocess_runner(argv: Sequence[str], on_line: Callable[[str], None]) -> int:
    """The real runner: the command as a child process, its merged output read line by line as it comes."""
    try:
        # UTF-8 whatever the locale: the CLI prints ✅/❌ (aws-cdk 2.1148.1 lib/index.js, CdkToolkit's deploy); a
        # stray undecodable byte becomes U+FFFD instead of ending the deploy's output with a traceback.
        child = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8", errors="replace",
            bufsize=1,
        )  # fmt: skip
    except FileNotFoundError:
        on_line(f"{argv[0]}: not found; run `make setup`, then `export PATH=$PWD/node_modules/.bin:$PATH`")
        return 127
    assert child.stdout is not None
    for line in child.stdout:
        on_line(line.rstrip("\n"))
    return child.wait()


# chalk colours the names when the CLI writes to a terminal; the markers are read without them.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STARTED = re.compile(r"^(?P<id>\S+)(?: \((?P<name>[^)]+)\))?: deploying\.\.\. \[\d+/\d+\]")
_FINISHED = re.compile(
    r"^\u2705\s+(?P<id>\S+)(?: \((?P<name>(?!no changes\))[^)]+)\))?(?P<noop> \(no changes\))?\s*$"
)
_FAILED = re.compile(r"^\u274c\s+(?P<name>\S+) failed to deploy")


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


@dataclass
class Progress:
    """Per-stack progress of one `cdk deploy`: which stacks started, finished (changed or not) and failed, and
    how long each took against the plan's expected minutes for it (`expected`, keyed by the stack selector)."""

    expected: Mapping[str, float]
    total_expected: float
    out: TextIO = field(default_factory=lambda: sys.stdout)
    clock: Callable[[], float] = time.monotonic
    started: dict[str, float] = field(default_factory=dict)
    finished: dict[str, bool] = field(default_factory=dict)  # selector -> changed
    failed: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # CloudFormation name -> selector
    begun: float | None = None

    def line(self, raw: str) -> None:
        """Echo one line of the CLI's output, and report a stack's start or end when the line marks one."""
        text = _ANSI.sub("", raw).strip()
        self.out.write(raw + "\n")
        now = self.clock()
        if self.begun is None:
            self.begun = now
        if match := _STARTED.match(text):
            selector = match["id"]
            self.names[match["name"] or selector] = selector
            self.started[selector] = now
            self._say(f"started {selector} (expected {self.expected.get(selector, 0):g} min)", now)
        elif match := _FINISHED.match(text):
            selector = match["id"]
            if selector not in self.expected:
                return  # the bootstrap's "✅  Environment ..." line, or a stack outside this plan
            self.finished[selector] = not match["noop"]
            took = now - self.started.get(selector, now)
            what = "unchanged" if match["noop"] else "finished"
            self._say(
                f"{what} {selector} in {_minutes(took)} (expected {self.expected[selector]:g} min)", now
            )
        elif match := _FAILED.match(text):
            selector = self.names.get(match["name"], match["name"])
            self.failed.append(selector)
            self._say(f"failed {selector}", now)

    def _say(self, message: str, now: float) -> None:
        elapsed = now - (self.begun if self.begun is not None else now)
        done = len(self.finished)
        self.out.write(
            f"hubspoke deploy: {message}; {done}/{len(self.expected)} stacks done, "
            f"{_minutes(elapsed)} elapsed of {self.total_expected:g} min expected\n"
        )
        self.out.flush()

    def left(self) -> list[str]:
        """Selectors of the plan's stacks not finished, in plan order."""
        return [s for s in self.expected if s not in self.finished]
