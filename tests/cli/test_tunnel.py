"""The real Runner's tunnel process: how it is stopped and where its output goes, with a stand-in child process.

Stopping: session-manager-plugin handles SIGINT, SIGTSTP and SIGQUIT only (session-manager-plugin
src/sessionmanagerplugin/session/sessionutil/control_signals_unix.go, ControlSignals); its port session ends the
session on one of them (portsession/basicportforwarding.go, handleControlSignals). A Go program killed by SIGTERM
just exits (Go os/signal docs, "Default behavior of signals in Go programs"), leaving the session open.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

import hubspoke.cli.tunnel as tunnel
from hubspoke.cli.tunnel import Runner

# A stand-in for the plugin: says it started, records which signal ended it (or ignores the ones named).
CHILD = """
import signal, sys, time
from pathlib import Path
out, ignored = Path(sys.argv[1]), sys.argv[2:]
def ended(number, frame):
    out.write_text(signal.Signals(number).name)
    sys.exit(0)
for name in ("SIGINT", "SIGTERM"):
    signal.signal(getattr(signal, name), signal.SIG_IGN if name in ignored else ended)
print("Starting session with SessionId: stand-in", flush=True)
print("Port 18443 opened", file=sys.stderr, flush=True)
time.sleep(60)
"""


def _started(tmp_path: Path, *ignored: str) -> tuple[tunnel.Background, Path, Path]:
    ended, log = tmp_path / "ended", tmp_path / "tunnel.log"
    process = Runner().start([sys.executable, "-c", CHILD, str(ended), *ignored], log=log)
    for _ in range(1000):  # until its handlers are in place (it prints after setting them)
        if "Port 18443" in (log.read_text() if log.exists() else ""):
            break
        time.sleep(0.01)
    return process, ended, log


def test_stop_sends_sigint_which_the_plugin_handles(tmp_path: Path) -> None:
    process, ended, _ = _started(tmp_path)
    process.stop()
    assert not process.running()
    assert ended.read_text() == "SIGINT"


_KILLPG = os.killpg


def _graces(monkeypatch: pytest.MonkeyPatch, after: dict[signal.Signals, float]) -> None:
    """tunnel.STOP_SECONDS set, as stop() sends each signal, to the time this test gives the stand-in after it: a
    signal it ignores is waited out briefly, one it handles is given time to end it (the production 10 s)."""

    def sending(pid: int, number: signal.Signals) -> None:
        assert number in after, f"stop() sent {number.name}, which this case's stand-in must not need"
        monkeypatch.setattr(tunnel, "STOP_SECONDS", after[number])
        _KILLPG(pid, number)

    monkeypatch.setattr(tunnel.os, "killpg", sending)


def test_stop_falls_back_to_sigterm_then_sigkill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _graces(monkeypatch, {signal.SIGINT: 0.02, signal.SIGTERM: 10})
    process, ended, _ = _started(tmp_path, "SIGINT")
    process.stop()
    assert ended.read_text() == "SIGTERM"
    (stubborn := tmp_path / "stubborn").mkdir()
    _graces(monkeypatch, {signal.SIGINT: 0.02, signal.SIGTERM: 0.02, signal.SIGKILL: 10})
    process, ended, _ = _started(stubborn, "SIGINT", "SIGTERM")
    process.stop()
    assert not process.running() and not ended.exists()


def test_the_tunnels_output_goes_to_its_log_not_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    process, _, log = _started(tmp_path)
    process.stop()
    said = capfd.readouterr()
    assert "Starting session" not in said.out + said.err
    assert "Starting session with SessionId: stand-in" in log.read_text() and "Port 18443" in log.read_text()
