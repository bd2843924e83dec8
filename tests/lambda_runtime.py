"""Run a Lambda handler the way the Lambda Python runtime runs it, on this machine, so tests see what Lambda sees.

What Lambda gives a function, and where each fact comes from (AWS Lambda developer guide):
- its environment is the runtime's, nothing inherited: "Defined runtime environment variables" lists PATH
  `/usr/local/bin:/usr/bin/:/bin:/opt/bin`, LD_LIBRARY_PATH, LAMBDA_TASK_ROOT `/var/task`, LAMBDA_RUNTIME_DIR
  `/var/runtime`, LANG, TZ, AWS_REGION and the execution role's credentials; HOME is not among them;
- the code is unpacked in LAMBDA_TASK_ROOT, which is the working directory and read-only; the only writable
  place is /tmp, 512 MB unless configured ("Lambda execution environment", "Configure ephemeral storage");
- each layer's zip is extracted into /opt, and /opt/python is on a Python function's path ("Adding layers":
  "Layer paths for each Lambda runtime");
- the function runs as a user without root privileges ("Lambda execution environment"; container images
  run "as a default Linux user with least-privileged permissions");
- an exception is reported as {"errorMessage", "errorType", "stackTrace"} ("Python Lambda function errors").

How this machine imitates it: `unshare --mount` makes a private mount namespace in which /var/task (the
bundled code), /var/runtime (this module's bootstrap and the SDK the runtime provides), /var/lang/bin/python
and /opt (the layers) are read-only and /tmp is a fresh 512 MiB tmpfs; `setpriv` then drops to uid/gid
65534 (nobody) with no capabilities and no new privileges, and `env -i` passes only Lambda's variables.
Nothing outside the namespace changes. `invoke` starts a fresh environment for each invocation (a cold start);
`warm()` keeps one up between invocations, its module state and /tmp kept, as Lambda keeps an environment for the
next invocation ("Lambda execution environment lifecycle"); the runtime ends each invocation's output with the
"END RequestId:" line Lambda's platform writes to the log, which tells one invocation's log from the next.

The tools on Lambda's PATH are Lambda's, not this machine's (a handler that shells out to a tool found only
here must fail here too):
- /usr/bin (and /bin) holds only the programs the Lambda Python image is known to have (tests/lambda_image.py
  says which, and why); the harness's own Python is not on PATH: it is mounted at /var/lang as Lambda's is;
  the one host program the harness needs after the mounts, `setpriv`, runs from /var/runtime/harness
  (Lambda's /var/runtime likewise holds the runtime's own code, off PATH);
- /usr/local/bin becomes an empty read-only tmpfs; /opt/bin exists only if a layer provides it;
- /dev/shm becomes an empty read-only tmpfs: Lambda has no /dev/shm, so multiprocessing's locks and queues
  fail there; here they fail too (read-only instead of missing).

Without root, a user namespace (`unshare --user --map-root-user`) does the same mounts but the handler runs as
that namespace's root: a LambdaFidelityWarning says so. Where neither works, SandboxUnavailable names the
reason (tests skip with it, never silently; under CI they fail instead: see require_sandbox).

Known differences, all visible here: the interpreter is this environment's base Python (sys.base_prefix,
mounted read-only at /var/lang where Lambda keeps its own) run with `-S`, so only the bundle, the layers and
the runtime's SDK can be imported; its version is this machine's (3.11 here), not the function's runtime
(python3.14). The runtime-provided SDK (boto3 and what it needs) is this environment's, at the versions pinned
in pyproject.toml, not Lambda's; as on Lambda it is files of /var/runtime's own, copied once into the user's
cache (tests/lambda_image.py, lambda_var_runtime), so the sandbox user never needs to reach the checkout or its
.venv: a checkout under an owner-only directory (a home directory such as /root) works as any other. Only
PATH is Lambda's: the rest of this machine's filesystem (/usr/sbin, /usr/lib, home directories) stays
readable by absolute path.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lambda_image import (
    SandboxUnavailable,
    extracted_layer,
    host_program,
    lambda_usr_bin,
    lambda_var_runtime,
    merge_layers,
    world_readable,
)

# "Defined runtime environment variables" (values for every runtime; PYTHONPATH is the Python runtime's).
LAMBDA_PATH = "/usr/local/bin:/usr/bin/:/bin:/opt/bin"
LAMBDA_LD_LIBRARY_PATH = (
    "/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib"
)
TASK_ROOT = "/var/task"
RUNTIME_DIR = "/var/runtime"
TMP_SIZE = "512m"  # the default ephemeral storage
SANDBOX_UID = 65534  # nobody: owns nothing on this machine
REQUIRE_ROOT_SANDBOX = "HUBSPOKE_REQUIRE_ROOT_SANDBOX"
# Lambda keeps its Python under /var/lang (its LD_LIBRARY_PATH starts there, and the AWS CLI layer's `aws`
# starts with #!/var/lang/bin/python): this environment's base installation is mounted there.
LANG_DIR = "/var/lang"
PYTHON = f"{LANG_DIR}/bin/python3"
# What the Lambda Python runtime ships besides the standard library (hubspoke/constructs/cnq/bundling.py
# leaves these out of bundles for that reason): the AWS SDK for Python and what it imports.
RUNTIME_PROVIDED_MODULES = ("boto3", "botocore", "s3transfer", "jmespath", "urllib3", "dateutil", "six")

_BOOTSTRAP = r"""
import importlib, json, os, sys, time, traceback, uuid
version = "python%d.%d" % sys.version_info[:2]
sys.path[:0] = [os.environ["LAMBDA_TASK_ROOT"], "/opt/python/lib/%s/site-packages" % version, "/opt/python"]

class Context:
    function_name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
    function_version = os.environ["AWS_LAMBDA_FUNCTION_VERSION"]
    memory_limit_in_mb = os.environ["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]
    log_group_name = os.environ["AWS_LAMBDA_LOG_GROUP_NAME"]
    log_stream_name = os.environ["AWS_LAMBDA_LOG_STREAM_NAME"]
    invoked_function_arn = "arn:aws:lambda:%s:123456789012:function:%s" % (os.environ["AWS_REGION"], function_name)
    def __init__(self, timeout, request_id):
        self._deadline = time.monotonic() + timeout
        self.aws_request_id = request_id
    def get_remaining_time_in_millis(self):
        return max(0, int((self._deadline - time.monotonic()) * 1000))

timeout, results = float(sys.argv[1]), os.fdopen(int(sys.argv[2]), "w")
module_name, _, function_name = os.environ["_HANDLER"].rpartition(".")
handler = None
# One event per line; the environment stays up between them, as a warm Lambda environment does.
for line in sys.stdin:
    request_id = str(uuid.uuid4())
    try:
        if handler is None:  # the init phase: a module that failed to import is tried again next time
            handler = getattr(importlib.import_module(module_name), function_name)
        text = json.dumps({"result": handler(json.loads(line), Context(timeout, request_id))})
    except Exception as error:
        text = json.dumps({"errorType": type(error).__name__, "errorMessage": str(error),
                           "stackTrace": traceback.format_tb(error.__traceback__)})
    # Lambda's platform ends an invocation's log with "END RequestId: <id>"; here the runtime writes it to both
    # streams, so the harness can tell where an invocation's output ends, even after a line left unfinished.
    for stream in (sys.stdout, sys.stderr):
        print("END RequestId: %s" % request_id, file=stream, flush=True)
    results.write(text + "\n")
    results.flush()
"""


class LambdaFidelityWarning(UserWarning):
    """The sandbox runs, but weaker than Lambda in the way the message says."""


@dataclass(frozen=True)
class Invocation:
    """One invocation: the handler's return value or error, and what it printed (Lambda's log stream)."""

    payload: dict[str, Any]
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return "errorType" not in self.payload

    @property
    def result(self) -> Any:
        if not self.ok:
            raise AssertionError(f"the handler failed: {self.error}\n--- log ---\n{self.stdout}{self.stderr}")
        return self.payload["result"]

    @property
    def error(self) -> str:
        return f"{self.payload.get('errorType')}: {self.payload.get('errorMessage')}" if not self.ok else ""


@dataclass
class LambdaFunction:
    """One function as its template configures it: code, handler, layers (zips), environment, timeout."""

    code: Path
    handler: str
    layers: Sequence[Path] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    memory_mb: int = 1024
    region: str = "us-west-2"
    name: str = "hubspoke-test-function"

    def invoke(self, event: Mapping[str, Any]) -> Invocation:
        """One invocation in a fresh environment: a cold start."""
        with self.warm() as environment:
            return environment.invoke(event)

    @contextlib.contextmanager
    def warm(self) -> Iterator[Environment]:
        """An execution environment kept up between invocations, as Lambda keeps a warm one ("Lambda execution
        environment lifecycle": after an invocation Lambda freezes the environment and thaws it for the next;
        module-level state and /tmp's files remain). After a timeout or a crash the next invocation starts cold
        in a new environment, /tmp empty: one of Lambda's outcomes. Lambda may instead reset the environment and
        keep /tmp ("Files survive Lambda timeouts, but your handler doesn't", Zac Charles); not imitated here."""
        environment = Environment(self)
        try:
            yield environment
        finally:
            environment.stop()

    def _start(self, stage: Path) -> tuple[subprocess.Popen[str], int]:
        """The sandbox process, its runtime waiting for events on stdin; the pipe its results come back on."""
        mode = sandbox_mode()
        task = stage / "task"
        shutil.copytree(self.code, task, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        world_readable(stage)
        sdk = [_module_path(module) for module in RUNTIME_PROVIDED_MODULES]
        harness = {"harness/setpriv": host_program("setpriv")} if mode == "root" else {}
        runtime = lambda_var_runtime({"bootstrap.py": _BOOTSTRAP}, {**{p.name: p for p in sdk}, **harness})
        opt = merge_layers([extracted_layer(layer) for layer in self.layers])
        read, write = os.pipe()
        script = _namespace_script(
            task=task, runtime=runtime, opt=opt, usr_bin=lambda_usr_bin(), drop_to_nobody=mode == "root"
        )
        interpreter = [PYTHON, "-S", f"{RUNTIME_DIR}/bootstrap.py", str(self.timeout_s), str(write)]
        command = [*_unshare(mode), "bash", "-c", script, "bash", *self._environ(), *interpreter]
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(write,),
            start_new_session=True,
            encoding="utf-8",
            errors="backslashreplace",  # a handler's stray bytes show in its log, not stop the harness
        )
        os.close(write)
        return process, read

    def _environ(self) -> list[str]:
        """The function's whole environment: Lambda's defined variables, then the configured ones."""
        defined = {
            "_HANDLER": self.handler,
            "AWS_EXECUTION_ENV": "AWS_Lambda_python3.14",
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.memory_mb),
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "2026/01/01/[$LATEST]0123456789abcdef",
            # The execution role's temporary credentials (any well-formed values: the fakes check signatures' shape).
            "AWS_ACCESS_KEY_ID": "ASIAFAKEFAKEFAKEFAKE",
            "AWS_SECRET_ACCESS_KEY": "fake/secret/access/key/0000000000000000000",
            "AWS_SESSION_TOKEN": "fake-session-token",
            "LAMBDA_TASK_ROOT": TASK_ROOT,
            "LAMBDA_RUNTIME_DIR": RUNTIME_DIR,
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PATH": LAMBDA_PATH,
            "LD_LIBRARY_PATH": LAMBDA_LD_LIBRARY_PATH,
            "PYTHONPATH": RUNTIME_DIR,
        }
        reserved = set(defined) - {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "LANG"}
        clash = reserved & set(self.environment)
        if clash:
            raise ValueError(f"Lambda refuses to let a function set reserved variables: {sorted(clash)}")
        return [f"{k}={v}" for k, v in {**defined, **self.environment}.items()]


class Environment:
    """One execution environment of a function: started at the first invocation, kept up for the next."""

    def __init__(self, function: LambdaFunction) -> None:
        self.function = function
        self.invocations = 0  # in the current environment: 1 is a cold start
        self._stage: Path | None = None
        self._process: subprocess.Popen[str] | None = None
        self._results: Any = None
        self._logs: dict[str, queue.Queue[str | None]] = {}
        self._pumps: list[threading.Thread] = []

    def invoke(self, event: Mapping[str, Any]) -> Invocation:
        if self._process is None:
            self._stage = Path(tempfile.mkdtemp(prefix="hubspoke-lambda-"))
            try:
                self._process, read = self.function._start(self._stage)
            except BaseException:
                self.stop()
                raise
            self._results = os.fdopen(read)
            self._logs = {name: queue.Queue() for name in _STREAMS}
            self._pumps = [
                threading.Thread(target=_pump, args=(stream, self._logs[name]), daemon=True)
                for name, stream in (("stdout", self._process.stdout), ("stderr", self._process.stderr))
            ]
            for pump in self._pumps:
                pump.start()
            self.invocations = 0
        process = self._process
        assert process.stdin is not None
        self.invocations += 1
        try:
            process.stdin.write(json.dumps(event) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            pass  # the environment died on its way up: the empty result below says so
        line = self._result_line(self.function.timeout_s + 30)
        if line:
            return Invocation(json.loads(line), *(self._log(name, until_end=True) for name in _STREAMS))
        # No answer: the runtime exited, or the time ran out. The environment ends either way, with whatever the
        # handler left running; an exiting runtime closes its pipe before it can be reaped, and its status stays.
        self._kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        logs = [self._log(name, until_end=False) for name in _STREAMS]
        self.stop()
        if line is None:
            return Invocation({"errorType": "Sandbox.Timeout", "errorMessage": "Task timed out"}, *logs)
        return Invocation(
            {"errorType": "Runtime.ExitError", "errorMessage": f"exit {process.returncode}"}, *logs
        )

    def _result_line(self, timeout: float) -> str | None:
        """The runtime's next result; "" if the runtime exited first, None if the time ran out first."""
        answer: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: answer.put(self._results.readline()), daemon=True).start()
        try:
            return answer.get(timeout=timeout)
        except queue.Empty:
            return None

    def _log(self, name: str, *, until_end: bool) -> str:
        """What the invocation wrote to one stream: up to the runtime's END marker, or all that is left."""
        lines = []
        while (line := self._logs[name].get(timeout=30)) is not None:
            end = _END.search(line) if until_end else None
            if end:
                lines.append(line[: end.start()])
                break
            lines.append(line)
        return "".join(lines)

    def _kill(self) -> None:
        """Kill every process of the environment: the runtime leads its own session, its children in it."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)

    def stop(self) -> None:
        """End the environment (every process in it) and remove what it was made of."""
        if self._process is not None:
            self._kill()
            self._process.wait()
            for pump in self._pumps:  # at the end of the streams, once every process holding them is gone
                pump.join(timeout=30)
            for pipe in (self._process.stdin, self._process.stdout, self._process.stderr, self._results):
                with contextlib.suppress(OSError):
                    pipe.close()  # type: ignore[union-attr]
            self._process = None
        if self._stage is not None:
            shutil.rmtree(self._stage, ignore_errors=True)
            self._stage = None


_STREAMS = ("stdout", "stderr")
_END = re.compile(r"END RequestId: [0-9a-f-]{36}\n\Z")


def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
    """Copy a stream into a queue line by line, then None at its end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


_MODE: str | None = None


def sandbox_mode() -> str:
    """'root' (mount namespace + nobody) or 'userns' (user namespace, weaker); raises SandboxUnavailable."""
    global _MODE
    if _MODE is None:
        missing = [tool for tool in ("unshare", "setpriv", "bash") if shutil.which(tool) is None]
        if missing:
            raise SandboxUnavailable(f"the Lambda sandbox needs {', '.join(missing)} (util-linux, bash)")
        if not (Path(sys.base_prefix) / "bin" / "python3").exists():
            raise SandboxUnavailable(
                f"the Lambda sandbox mounts {sys.base_prefix} as /var/lang; it has no bin/python3"
            )
        mode = "root" if os.geteuid() == 0 else "userns"
        probe = subprocess.run([*_unshare(mode), "true"], capture_output=True, text=True, check=False)
        if probe.returncode != 0:
            raise SandboxUnavailable(f"`{' '.join(_unshare(mode))}` failed here: {probe.stderr.strip()}")
        _MODE = mode
    if _MODE == "userns":
        warnings.warn(
            LambdaFidelityWarning(
                "not root: the handler runs as a user namespace's root instead of an unprivileged user; "
                "read-only mounts still hold, but file permissions inside the sandbox are not Lambda's"
            ),
            stacklevel=2,
        )
    return _MODE


def _unshare(mode: str) -> list[str]:
    if mode == "root":
        return ["unshare", "--mount", "--propagation", "private"]
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


def _namespace_script(
    *, task: Path, runtime: Path, opt: dict[str, Path], usr_bin: Path, drop_to_nobody: bool
) -> str:
    """Bash run inside the new mount namespace: build Lambda's filesystem, then exec the runtime."""
    q = shlex.quote
    lines = [
        "set -eu",
        # /var and /opt become private tmpfs: the host's stay as they were, and nothing leaks in.
        "mount -t tmpfs -o mode=0755 tmpfs /var",
        f"mkdir -p {TASK_ROOT} {RUNTIME_DIR} {LANG_DIR}",
        f"mount --bind {q(str(task))} {TASK_ROOT}",
        f"mount -o remount,bind,ro {TASK_ROOT}",
        f"mount --bind {q(str(runtime))} {RUNTIME_DIR}",
        f"mount -o remount,bind,ro {RUNTIME_DIR}",
        f"mount --bind {q(sys.base_prefix)} {LANG_DIR}",
        f"mount -o remount,bind,ro {LANG_DIR}",
        "mount -o remount,ro /var",
        "mount -t tmpfs -o mode=0755 tmpfs /opt",
    ]
    for name in opt:
        lines.append(f"mkdir /opt/{q(name)}")
    lines.append("mount -o remount,ro /opt")
    for name, source in opt.items():
        lines += [f"mount --bind {q(str(source))} /opt/{q(name)}", f"mount -o remount,bind,ro /opt/{q(name)}"]
    lines += [
        # Only what exists is covered: creating a mount point would change this machine's filesystem.
        "if [ -d /usr/local/bin ]; then mount -t tmpfs -o ro,mode=0755 tmpfs /usr/local/bin; fi",
        "if [ -d /dev/shm ]; then mount -t tmpfs -o ro,mode=0755 tmpfs /dev/shm; fi",
        f"mount -t tmpfs -o mode=1777,size={TMP_SIZE} tmpfs /tmp",
        # Last: after it, this machine's mount and setpriv are off PATH (one `mount` call binds and sets ro).
        f"if [ ! -L /bin ]; then mount --bind -o ro {q(str(usr_bin))} /bin; fi",
        f"mount --bind -o ro {q(str(usr_bin))} /usr/bin",
        f"cd {TASK_ROOT}",
    ]
    # "$@" = the environment's NAME=value words, then the interpreter and its arguments.
    drop = (
        f"{RUNTIME_DIR}/harness/setpriv --reuid={SANDBOX_UID} --regid={SANDBOX_UID} --clear-groups "
        "--inh-caps=-all --no-new-privs "
    )
    lines.append(f'exec {drop if drop_to_nobody else ""}/usr/bin/env -i "$@"')
    return "\n".join(lines)


def _module_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SandboxUnavailable(f"{module} (provided by the Lambda Python runtime) is not installed here")
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


def require_sandbox() -> str:
    """The sandbox mode, or a pytest skip that names why this machine cannot provide one: a failure under CI.

    CI services set CI (GitHub Actions: "Always set to true", Variables reference), and there a skipped
    Lambda test would turn green without having run: .github/workflows/ci.yml provides the sandbox instead.
    HUBSPOKE_REQUIRE_ROOT_SANDBOX=1 also refuses the weaker user-namespace mode (the workflow's root step sets it).
    """
    import pytest

    try:
        mode = sandbox_mode()
        if os.environ.get(REQUIRE_ROOT_SANDBOX) == "1" and mode != "root":
            raise SandboxUnavailable(f"{REQUIRE_ROOT_SANDBOX}=1, but the tests do not run as root")
        return mode
    except SandboxUnavailable as reason:
        message = f"no Lambda sandbox on this machine: {reason}"
        if os.environ.get("CI"):
            pytest.fail(f"{message}. CI is set, so the Lambda tests may not skip", pytrace=False)
        pytest.skip(message)


def bundle(bundling: Any, directory: Path) -> Path:
    """Run an asset's local bundling (ILocalBundling.try_bundle) into `directory`, as synth does."""
    directory.mkdir(parents=True, exist_ok=True)
    if not bundling.try_bundle(str(directory)):
        raise SandboxUnavailable("the asset's local bundling declined to run")
    return directory
