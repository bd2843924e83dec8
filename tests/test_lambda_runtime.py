"""The Lambda sandbox (tests/lambda_runtime.py) offers a handler Lambda's tools and none of this machine's.

What Lambda offers: PATH `/usr/local/bin:/usr/bin/:/bin:/opt/bin` (Lambda developer guide, "Defined runtime
environment variables"); layers extracted under /opt ("Adding layers"), so the kubectl layer's tools are at
/opt/kubectl/kubectl and /opt/helm/helm and the AWS CLI layer's at /opt/awscli/aws, none of them on PATH;
no /dev/shm, so multiprocessing's locks, queues and pools fail (AWS Compute Blog, "Parallel Processing in
Python with AWS Lambda": "the Lambda execution environment not having /dev/shm (shared memory for processes)
support, you can't use multiprocessing.Queue or multiprocessing.Pool"). The Python image's own programs
include bash (also its sh) and coreutils (`rpm -qa` of public.ecr.aws/lambda/python:3.12 in
amazonlinux/amazon-linux-2023 issue #585). This machine has kubectl in /usr/bin and docker in /usr/local/bin:
a handler must not find them.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests import lambda_runtime
from tests.lambda_image import SandboxUnavailable, cache_root, extract_zip
from tests.lambda_layers import awscli_layer_zip, kubectl_layer_zip
from tests.lambda_runtime import LambdaFunction, require_sandbox

NOT_ON_LAMBDA = ("helm", "kubectl", "aws", "docker", "git", "unshare", "setpriv", "mount")

_PROBE = r"""
import multiprocessing, os, shutil, subprocess

def handler(event, context):
    facts = {"which": {t: shutil.which(t) for t in event["tools"]},
             "files": {p: os.access(p, os.X_OK) for p in event["files"]}}
    try:
        with open("/dev/shm/probe", "w"):
            pass
        facts["/dev/shm"] = "writable"
    except OSError as error:
        facts["/dev/shm"] = error.strerror
    try:
        multiprocessing.Lock()
        facts["lock"] = "created"
    except OSError as error:
        facts["lock"] = error.strerror
    facts["sh"] = subprocess.run(["sh", "-c", "echo ${BASH_VERSION:-not bash}"], capture_output=True,
                                 text=True, check=False).stdout.strip()
    return facts
"""


@pytest.fixture(scope="module")
def sandbox() -> str:
    return require_sandbox()


def _probe(tmp_path: Path, layers: list[Path], files: tuple[str, ...] = ()) -> dict[str, Any]:
    (tmp_path / "probe.py").write_text(_PROBE)
    event = {"tools": [*NOT_ON_LAMBDA, "sh", "bash", "env", "cat"], "files": list(files)}
    result: dict[str, Any] = (
        LambdaFunction(code=tmp_path, handler="probe.handler", layers=layers).invoke(event).result
    )
    return result


@pytest.fixture(scope="module")
def bare_facts(sandbox: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The probe's facts from one cold start without layers, shared by the tests that each read some of them."""
    return _probe(tmp_path_factory.mktemp("bare"), layers=[])


def _assert_not_on_path(facts: dict[str, Any]) -> None:
    found = {tool: where for tool, where in facts["which"].items() if tool in NOT_ON_LAMBDA and where}
    assert found == {}, "tools Lambda's image does not have are on the sandbox's PATH"


def test_no_tool_of_this_machine_is_on_path(bare_facts: dict[str, Any]) -> None:
    facts = bare_facts
    _assert_not_on_path(facts)
    assert facts["/dev/shm"] in ("No such file or directory", "Read-only file system", "Permission denied")
    assert facts["lock"] != "created", "multiprocessing needs /dev/shm, which Lambda does not have"


def test_the_images_own_programs_are_there(bare_facts: dict[str, Any]) -> None:
    which = bare_facts["which"]
    assert {tool: bool(which[tool]) for tool in ("sh", "bash", "env", "cat")} == dict.fromkeys(
        ("sh", "bash", "env", "cat"), True
    )


def test_sh_is_bash_as_on_amazon_linux(bare_facts: dict[str, Any]) -> None:
    assert bare_facts["sh"] != "not bash"


@pytest.mark.usefixtures("sandbox")
def test_layers_add_their_tools_under_opt_not_on_path(tmp_path: Path) -> None:
    files = ("/opt/helm/helm", "/opt/kubectl/kubectl", "/opt/awscli/aws")
    facts = _probe(tmp_path, layers=[kubectl_layer_zip(), awscli_layer_zip()], files=files)
    assert facts["files"] == dict.fromkeys(files, True)
    _assert_not_on_path(facts)


@pytest.mark.thorough
def test_the_aws_cli_layers_bytecode_stays_valid_against_its_extracted_sources(tmp_path: Path) -> None:
    """Extracted files keep the times their zip records, to the second, as Info-ZIP's unzip restores them.

    Oracle: CPython's .pyc header (PEP 552: magic, flags, then the source's modification time and size, each
    4 bytes little-endian; flags 0 means checked against those). The layer ships bytecode for odd seconds too,
    which the zip's DOS time (two-second steps) cannot carry: only the extended timestamp can. Extracted here,
    not into the sandbox's cache, which a run before a change to the extraction may have filled. Fast twin: the
    extended-timestamp test below.
    """
    extract_zip(awscli_layer_zip(), tmp_path)
    checked = odd = 0
    for pyc in sorted((tmp_path / "awscli").glob("**/__pycache__/*.cpython-311.pyc")):
        source = pyc.parent.parent / f"{pyc.name.split('.')[0]}.py"
        if not source.exists():
            continue
        flags, mtime, size = struct.unpack("<III", pyc.read_bytes()[4:16])
        assert flags == 0, f"{pyc} is hash-based: times would not matter"
        assert (mtime, size) == (int(source.stat().st_mtime), source.stat().st_size), source
        checked, odd = checked + 1, odd + mtime % 2
    assert checked > 500 and odd > 0, (
        "the layer's bytecode as shipped: 586 modules (aws-cdk.asset-awscli-v1 2.2.292)"
    )


def test_an_extended_timestamp_gives_the_second_it_records(tmp_path: Path) -> None:
    """Info-ZIP's extended timestamp extra field (proginfo/extrafld.txt: tag 0x5455 "UT", its size, a flags
    byte whose bit 0 says a modification time follows, then that time as 4 bytes of Unix seconds, little-endian)
    wins over the DOS time, to the odd second: the AWS CLI layer's entries carry one (1785770741 for
    awscli/yaml/dumper.py in aws-cdk.asset-awscli-v1 2.2.292, the time in its bytecode's header)."""
    entry = zipfile.ZipInfo("awscli/run.py", date_time=(2026, 8, 3, 15, 25, 42))
    entry.extra = struct.pack("<HHBI", 0x5455, 5, 1, 1785770741)
    with zipfile.ZipFile(tmp_path / "layer.zip", "w") as zipped:
        zipped.writestr(entry, "print(1)\n")
    extract_zip(tmp_path / "layer.zip", tmp_path / "tree")
    assert (tmp_path / "tree" / "awscli" / "run.py").stat().st_mtime == 1785770741


@pytest.mark.parametrize(
    ("zone", "expected"),
    # 2020-01-02 03:04:06 read in the zone: UTC, and New York's EST (UTC-5) five hours later.
    [("UTC0", 1577934246), ("EST5EDT,M3.2.0,M11.1.0", 1577952246)],
)
def test_a_zip_without_extended_times_gives_its_dos_time_as_local_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zone: str, expected: int
) -> None:
    """zipfile writes only the DOS time, which has no zone; Info-ZIP's unzip reads it as local time."""
    archive = tmp_path / "layer.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr(zipfile.ZipInfo("tool/run.py", date_time=(2020, 1, 2, 3, 4, 6)), "print(1)\n")
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        extract_zip(archive, tmp_path / "tree")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert (tmp_path / "tree" / "tool" / "run.py").stat().st_mtime == expected


_WARM = r"""
import os, sys

INVOCATIONS = []  # module state: kept in a warm environment, gone in a cold one

def handler(event, context):
    INVOCATIONS.append(context.aws_request_id)
    print("invocation", len(INVOCATIONS), flush=True)
    print("to stderr", len(INVOCATIONS), file=sys.stderr)
    seen = os.path.exists("/tmp/left-by-an-earlier-invocation")
    open("/tmp/left-by-an-earlier-invocation", "w").close()
    if event.get("unfinished"):
        sys.stdout.write("a line left unfinished")
    if event.get("exit"):
        os._exit(3)
    return {"invocations": len(INVOCATIONS), "tmp_seen": seen, "ids": len(set(INVOCATIONS))}
"""


@pytest.mark.usefixtures("sandbox")
def test_a_warm_environment_keeps_module_state_and_tmp_and_a_crash_makes_the_next_start_cold(
    tmp_path: Path,
) -> None:
    """Lambda developer guide, "Lambda execution environment lifecycle": after an invocation the environment is
    frozen and thawed for the next (objects declared outside the handler and /tmp's files remain); an
    environment whose runtime exits is replaced, and the next invocation starts cold (here always in a new
    environment, /tmp empty). Each invocation's log holds only what it printed, a line left unfinished included."""
    (tmp_path / "warm.py").write_text(_WARM)
    with LambdaFunction(code=tmp_path, handler="warm.handler").warm() as environment:
        first, second = environment.invoke({}), environment.invoke({"unfinished": True})
        crashed = environment.invoke({"exit": True})
        after = environment.invoke({})
    assert first.result == {"invocations": 1, "tmp_seen": False, "ids": 1}
    assert second.result == {"invocations": 2, "tmp_seen": True, "ids": 2}, "a new request ID each time"
    assert (first.stdout, first.stderr) == ("invocation 1\n", "to stderr 1\n")
    assert (second.stdout, second.stderr) == ("invocation 2\na line left unfinished", "to stderr 2\n")
    assert crashed.error == "Runtime.ExitError: exit 3" and crashed.stdout == "invocation 3\n"
    assert after.result == {"invocations": 1, "tmp_seen": False, "ids": 1}, "a new environment, cold"
    assert environment.invocations == 1


def _unavailable() -> str:
    raise SandboxUnavailable("unshare failed here: Operation not permitted")


def test_without_a_sandbox_the_tests_skip_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(lambda_runtime, "sandbox_mode", _unavailable)
    with pytest.raises(pytest.skip.Exception, match="Operation not permitted"):
        require_sandbox()


def test_under_ci_a_missing_sandbox_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")  # what GitHub Actions sets
    monkeypatch.setattr(lambda_runtime, "sandbox_mode", _unavailable)
    with pytest.raises(BaseException) as outcome:  # a skip is a BaseException too: it must not be one
        require_sandbox()
    assert outcome.type is pytest.fail.Exception and "CI is set" in str(outcome.value)


def test_a_required_root_sandbox_refuses_the_user_namespace_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("HUBSPOKE_REQUIRE_ROOT_SANDBOX", "1")
    monkeypatch.setattr(lambda_runtime, "sandbox_mode", lambda: "userns")
    with pytest.raises(BaseException) as outcome:
        require_sandbox()
    assert outcome.type is pytest.fail.Exception and "do not run as root" in str(outcome.value)


_SDK_PROBE = r"""
import importlib, os

def handler(event, context):
    found = {}
    for name in event["modules"]:
        module = importlib.import_module(name)
        found[name] = [module.WHERE, os.path.realpath(module.__file__)]
    with open("data.txt") as data:
        return {"modules": found, "bundle": data.read()}
"""


def _owner_only_checkout(root: Path) -> dict[str, Path]:
    """A checkout as a umask-077 clone under an owner-only home leaves it: code, .venv, cache and temp under `root`
    (mode 0700, as /root is), every directory 0700 and every file 0600. Returns the fake runtime SDK's modules:
    a package for each RUNTIME_PROVIDED_MODULES name, saying where it came from."""
    (root / "bundle").mkdir(parents=True)
    (root / "bundle" / "probe.py").write_text(_SDK_PROBE)
    (root / "bundle" / "data.txt").write_text("from the bundle")
    site = root / ".venv" / "site-packages"
    modules = {}
    for name in lambda_runtime.RUNTIME_PROVIDED_MODULES:
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(f"WHERE = {name + ' as the runtime provides it'!r}\n")
        modules[name] = site / name
    (root / "tmp").mkdir()
    for item in [root, *root.rglob("*")]:
        item.chmod(0o700 if item.is_dir() else 0o600)
    return modules


# "tmp" is the thorough tier's: only "home" catches a sandbox that needs the checkout readable by others.
@pytest.mark.parametrize("under", ["home", pytest.param("tmp", marks=pytest.mark.thorough)])
def test_a_checkout_only_its_owner_can_enter_runs_in_the_sandbox(
    sandbox: str, under: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox user (uid 65534, owning nothing) must not need to reach the checkout: cloned into a home
    directory only its owner can enter (/root is 0700), the runtime's boto3 was a link into the checkout's .venv
    and the handler failed with "No module named 'boto3'"; cloned under /tmp, such a link dangles behind the
    sandbox's fresh /tmp. On Lambda the SDK is part of the runtime's own /var/runtime, and the function's code is
    unpacked into /var/task (Lambda developer guide, "Defined runtime environment variables": LAMBDA_TASK_ROOT,
    LAMBDA_RUNTIME_DIR), both readable by the function's user.

    "home": code, .venv, the sandbox's cache (XDG_CACHE_HOME) and temporary files all under one 0700
    directory outside /tmp, with 0600 files. "tmp": the same under pytest's temporary directory."""
    if under == "home" and sandbox != "root":
        pytest.skip("as a user namespace's root the handler runs as this user, who may enter the directory")
    # Outside /tmp (the sandbox's cache may not be there) and removed afterwards: the cache entries made from
    # these throwaway copies must not pile up in the user's real cache.
    scratch = Path(tempfile.mkdtemp(prefix="owner-only-", dir=cache_root().parent))
    monkeypatch.setenv("XDG_CACHE_HOME", str(scratch / "cache"))
    if under == "home":
        base = scratch
        monkeypatch.setattr(tempfile, "tempdir", str(base / "tmp"))
    else:
        base = tmp_path / "checkout"
    try:
        modules = _owner_only_checkout(base)
        monkeypatch.setattr(lambda_runtime, "_module_path", modules.__getitem__)
        if sandbox == "root":  # the construction is what it claims: uid 65534 cannot read the checkout itself
            blocked = subprocess.run(
                ["setpriv", f"--reuid={lambda_runtime.SANDBOX_UID}", f"--regid={lambda_runtime.SANDBOX_UID}",
                 "--clear-groups", "cat", str(modules["boto3"] / "__init__.py")],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            assert blocked.returncode != 0 and "Permission denied" in blocked.stderr
        function = LambdaFunction(code=base / "bundle", handler="probe.handler")
        result = function.invoke({"modules": list(modules)}).result
    finally:
        shutil.rmtree(scratch)
    assert result == {
        "modules": {
            name: [f"{name} as the runtime provides it", f"/var/runtime/{name}/__init__.py"]
            for name in modules
        },
        "bundle": "from the bundle",
    }
