"""kubectl on a Region's private EKS endpoint from inside one command: the Session Manager tunnel and a private
kubeconfig that `hubspoke connect`'s commands set up, opened for the command and closed when it ends.

connect.py says what the commands are and why (its module docstring); this module runs them. Two changes to what
connect prints for a person: the kubeconfig is a temporary file (`aws eks update-kubeconfig --kubeconfig`, AWS CLI
reference), so the person's own ~/.kube/config is never touched, and `--profile` goes to every aws command (once, as connect
prints it with --profile): with a profile, update-kubeconfig writes it into the user entry's exec `env` as AWS_PROFILE, so kubectl's tokens are
signed as that profile too (awscli customizations/eks/update_kubeconfig.py, EKSClient.get_user_entry). Every
program goes through a Runner, which tests replace with a recording one.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from hubspoke.cli.connect import Steps

# How long the tunnel may take to accept connections: the plugin starts a session, then listens. ASSUMED (no AWS
# page gives a start-up time); a slow start fails with the plugin's own output, and a rerun continues.
OPEN_SECONDS = 60
# How long each stop signal is given before the next: ASSUMED (no source gives the plugin's shutdown time; it sends
# TerminateSession and exits).
STOP_SECONDS = 10
# How much of the tunnel's log a failure shows.
LOG_TAIL_LINES = 20


class StepFailed(Exception):
    """A program exited non-zero or the tunnel would not open; the message says what ran and what to do."""


class Background(Protocol):
    """A program left running (the tunnel)."""

    def running(self) -> bool: ...

    def stop(self) -> None: ...


class Runner:
    """Runs programs for real: the one place `hubspoke train` starts a process."""

    def run(
        self, argv: Sequence[str], *, stdin: str | None = None, capture: bool = True
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(list(argv), input=stdin, text=True, capture_output=capture, check=False)
        except FileNotFoundError:
            raise StepFailed(f"{argv[0]} is not on PATH: install it (docs/getting-started.md)") from None

    def start(self, argv: Sequence[str], *, log: Path) -> Background:
        """`argv` left running, its output (stdout and stderr) written to `log`, never the terminal."""
        try:
            with log.open("ab") as out:
                # Its own process group: `aws ssm start-session` runs session-manager-plugin as a child, and stop()
                # signals both.
                process = subprocess.Popen(
                    list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
        except FileNotFoundError:
            raise StepFailed(f"{argv[0]} is not on PATH: install it (docs/getting-started.md)") from None
        return _Process(process)

    def free_port(self) -> int:
        """A local port nobody listens on now (the OS picks it), so a tunnel `hubspoke connect` left open is no
        clash."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])

    def port_open(self, port: int) -> bool:
        with socket.socket() as probe:
            probe.settimeout(1)
            return probe.connect_ex(("127.0.0.1", port)) == 0

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _Process:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """SIGINT first: it is what the plugin handles, ending the session (session-manager-plugin
        sessionutil/control_signals_unix.go ControlSignals = SIGINT, SIGTSTP, SIGQUIT, handled by
        portsession/basicportforwarding.go handleControlSignals); SIGTERM is not among them, so it is only the
        fallback, and SIGKILL the last."""
        for sent in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                return
            try:
                os.killpg(self.process.pid, sent)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=STOP_SECONDS)
                return
            except subprocess.TimeoutExpired:
                continue
        self.process.wait()


def show(argv: Sequence[str]) -> None:
    """What runs, before it runs (a Secret's contents go on stdin, never here)."""
    print("+ " + shlex.join(argv), flush=True)


def checked(done: subprocess.CompletedProcess[str], argv: Sequence[str]) -> str:
    if done.returncode != 0:
        said = (done.stderr or done.stdout or "").strip().splitlines()
        raise StepFailed(f"{shlex.join(argv)} exited {done.returncode}: {said[-1] if said else 'no output'}")
    return done.stdout or ""


def with_profile(argv: Sequence[str], profile: str | None) -> list[str]:
    """`argv` with `--profile profile`, unless it names a profile already (`hubspoke connect --profile` writes it)."""
    return [*argv, *(["--profile", profile] if profile and "--profile" not in argv else [])]


class Tunnel:
    """The Session Manager port forward to the endpoint, reopened when it has dropped."""

    def __init__(self, runner: Runner, argv: list[str], port: int, *, log: Path) -> None:
        self.runner, self.argv, self.port, self.log = runner, argv, port, log
        self.process: Background | None = None

    def open(self) -> None:
        show(self.argv)
        self.process = self.runner.start(self.argv, log=self.log)
        for _ in range(OPEN_SECONDS):
            if not self.process.running():
                raise StepFailed(
                    f"the tunnel ended before it listened on port {self.port}: it needs the AWS CLI's Session "
                    f"Manager plugin and ssm:StartSession on the access host; its output:{self.tail()}"
                )
            if self.runner.port_open(self.port):
                return
            self.runner.sleep(1)
        self.close()
        raise StepFailed(
            f"the tunnel did not listen on port {self.port} within {OPEN_SECONDS} s; run again; its output:"
            f"{self.tail()}"
        )

    def tail(self) -> str:
        """The last lines the tunnel wrote, indented below a failure's message."""
        try:
            lines = self.log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        except FileNotFoundError:
            lines = []
        return "".join(f"\n    {line}" for line in lines) or " (none)"

    def up(self) -> bool:
        return self.process is not None and self.process.running()

    def close(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


class Cluster:
    """kubectl on one Region's cluster, through the tunnel this command holds open."""

    def __init__(self, runner: Runner, tunnel: Tunnel, kubeconfig: Path, context: str) -> None:
        self.runner, self.tunnel = runner, tunnel
        self.prefix = ["kubectl", "--kubeconfig", str(kubeconfig), "--context", context]

    def kubectl(
        self, *args: str, stdin: str | None = None, capture: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [*self.prefix, *args]
        for attempt in range(2):
            if not self.tunnel.up():
                print("the tunnel has dropped: opening it again", flush=True)
                self.tunnel.open()
            show(argv)
            done = self.runner.run(argv, stdin=stdin, capture=capture)
            # A failure with the tunnel gone is the tunnel's: once more through a new one.
            if done.returncode == 0 or self.tunnel.up() or attempt:
                return done
        raise AssertionError("unreachable")

    def checked(self, *args: str, stdin: str | None = None) -> str:
        return checked(self.kubectl(*args, stdin=stdin), [*self.prefix, *args])


@contextmanager
def open_cluster(steps: Steps, *, runner: Runner, profile: str | None) -> Iterator[Cluster]:
    """A private kubeconfig for `steps`' cluster and the tunnel it talks through; both gone on exit, whatever
    happened inside."""
    with tempfile.TemporaryDirectory(prefix="hubspoke-kube-") as home:
        kubeconfig = Path(home) / "config"
        for argv in (
            with_profile([*shlex.split(steps.kubeconfig), "--kubeconfig", str(kubeconfig)], profile),
            [*shlex.split(steps.through_tunnel), "--kubeconfig", str(kubeconfig)],
        ):
            show(argv)
            checked(runner.run(argv), argv)
        # Its output goes to a file beside the kubeconfig, so it never mixes into the followed logs.
        tunnel = Tunnel(
            runner,
            with_profile(shlex.split(steps.tunnel), profile),
            steps.local_port,
            log=Path(home) / "tunnel.log",
        )
        try:
            tunnel.open()
            yield Cluster(runner, tunnel, kubeconfig, steps.context)
        finally:
            tunnel.close()
            print(f"closed the tunnel to {steps.cluster}", file=sys.stderr, flush=True)
