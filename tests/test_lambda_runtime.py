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

from pathlib import Path
from typing import Any

import pytest

from tests import lambda_runtime
from tests.lambda_image import SandboxUnavailable
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


def _assert_not_on_path(facts: dict[str, Any]) -> None:
    found = {tool: where for tool, where in facts["which"].items() if tool in NOT_ON_LAMBDA and where}
    assert found == {}, "tools Lambda's image does not have are on the sandbox's PATH"


@pytest.mark.usefixtures("sandbox")
def test_no_tool_of_this_machine_is_on_path(tmp_path: Path) -> None:
    facts = _probe(tmp_path, layers=[])
    _assert_not_on_path(facts)
    assert facts["/dev/shm"] in ("No such file or directory", "Read-only file system", "Permission denied")
    assert facts["lock"] != "created", "multiprocessing needs /dev/shm, which Lambda does not have"


@pytest.mark.usefixtures("sandbox")
def test_the_images_own_programs_are_there(tmp_path: Path) -> None:
    which = _probe(tmp_path, layers=[])["which"]
    assert {tool: bool(which[tool]) for tool in ("sh", "bash", "env", "cat")} == dict.fromkeys(
        ("sh", "bash", "env", "cat"), True
    )


@pytest.mark.usefixtures("sandbox")
def test_sh_is_bash_as_on_amazon_linux(tmp_path: Path) -> None:
    assert _probe(tmp_path, layers=[])["sh"] != "not bash"


@pytest.mark.usefixtures("sandbox")
def test_layers_add_their_tools_under_opt_not_on_path(tmp_path: Path) -> None:
    files = ("/opt/helm/helm", "/opt/kubectl/kubectl", "/opt/awscli/aws")
    facts = _probe(tmp_path, layers=[kubectl_layer_zip(), awscli_layer_zip()], files=files)
    assert facts["files"] == dict.fromkeys(files, True)
    _assert_not_on_path(facts)


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


def test_a_runtime_module_under_tmp_is_copied_in_because_the_sandbox_covers_tmp(tmp_path: Path) -> None:
    """A checkout cloned under /tmp has its .venv there too; the sandbox mounts a fresh /tmp (as Lambda gives
    one), so a symlink to the host's boto3 would dangle inside it (seen: 'No module named boto3' in a clone
    under /tmp). Outside /tmp a symlink is kept: nothing covers it."""
    from tests.lambda_runtime import _provide

    module = tmp_path / "site" / "fakemod"
    module.mkdir(parents=True)
    (module / "__init__.py").write_text("VALUE = 1\n")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    _provide(module, runtime)
    assert not (runtime / "fakemod").is_symlink()
    assert (runtime / "fakemod" / "__init__.py").read_text() == "VALUE = 1\n"

    import json  # the standard library's package: part of the Python installation, never under /tmp

    _provide(Path(json.__file__).parent, runtime)
    assert (runtime / "json").is_symlink()
