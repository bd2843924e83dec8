"""Every command a rendered Job runs is in the training image (workload/Dockerfile).

For every Job `hubspoke render` knows: each script the command names under /opt/hubspoke is COPY'd there, and
so is every module it imports, transitively, from workload/ (beside the script, where Python looks first) or
from hubspoke/ (under PYTHONPATH); the build context's .dockerignore lets each source file through; and the
command's executable is either the base image's (python, and torchrun, which ships with PyTorch) or installed
by a RUN line (hyperpodrun: the HyperPod elastic agent, SageMaker developer guide, "Using the training
operator to run jobs").
"""

from __future__ import annotations

import ast
import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke.cli.main import main
from hubspoke.cli.render import RENDERERS

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "config" / "dev.yaml"
DOCKERFILE = ROOT / "workload" / "Dockerfile"
# One invocation per Job variant of every renderer; a renderer missing here fails the test below.
RENDER_ARGS: dict[str, list[list[str]]] = {
    "job": [["--kind", "pytorchjob"], ["--kind", "hyperpod"]],
    "prewarm": [["--rest-address", "10.20.64.10"]],
    "bench": [["--run", "r1"]],
    "results": [[]],
}
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32
BASE_IMAGE_EXECUTABLES = {"python", "torchrun"}
INSTALLED_BY = {"hyperpodrun": "hyperpod-elastic-agent"}


def test_every_renderer_is_rendered_here() -> None:
    assert set(RENDER_ARGS) == set(RENDERERS)


def _containers(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "containers" and isinstance(value, list):
                yield from value
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


def _commands(capsys: pytest.CaptureFixture[str]) -> list[list[str]]:
    commands = []
    for kind, variants in RENDER_ARGS.items():
        for variant in variants:
            argv = ["render", kind, "--config", str(DEV), "--region", "us-west-2", "--image", IMAGE, *variant]
            assert main(argv) == 0
            docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
            found = [c["command"] for d in docs for c in _containers(d)]
            assert found, f"render {kind} {variant}: no container command"
            commands += found
    return commands


def _instructions() -> list[str]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _image_files() -> dict[str, str]:
    """Image path -> repository path of every file a COPY puts in the image."""
    files = {}
    for line in _instructions():
        if line.startswith("COPY "):
            *sources, destination = shlex.split(line)[1:]
            for source in sources:
                files[posixpath.join(destination, posixpath.basename(source))] = source
    return files


def _pythonpath() -> list[str]:
    for line in _instructions():
        match = re.search(r"PYTHONPATH=(\S+)", line) if line.startswith("ENV ") else None
        if match:
            return match.group(1).split(":")
    return []


def _local_imports(source: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _needed(script: str) -> set[str]:
    """Image paths the script at `script` needs: itself and its local imports, transitively."""
    folder = posixpath.dirname(script)
    todo, needed = [(script, ROOT / "workload" / posixpath.basename(script))], set()
    while todo:
        image_path, source = todo.pop()
        if image_path in needed:
            continue
        needed.add(image_path)
        for module in _local_imports(source):
            parts = module.split(".")
            if (ROOT / "workload" / f"{parts[0]}.py").exists():
                todo.append((f"{folder}/{parts[0]}.py", ROOT / "workload" / f"{parts[0]}.py"))
            elif parts[0] == "hubspoke":
                for base in _pythonpath() or ["<no PYTHONPATH>"]:
                    package = posixpath.join(base, "hubspoke")
                    needed.add(f"{package}/__init__.py")
                    if len(parts) > 1:
                        todo.append((f"{package}/{parts[1]}.py", ROOT / "hubspoke" / f"{parts[1]}.py"))
    return needed


def _let_through(path: str) -> bool:
    """Whether the build context's .dockerignore (last matching pattern wins) sends `path` to the build."""
    included = True
    for line in (ROOT / "workload" / "Dockerfile.dockerignore").read_text().splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negated = pattern.startswith("!")
        if fnmatch.fnmatch(path, pattern.lstrip("!")):
            included = negated
    return included


def test_every_rendered_command_runs_from_what_the_image_holds(capsys: pytest.CaptureFixture[str]) -> None:
    files = _image_files()
    runs = " ".join(line for line in _instructions() if line.startswith("RUN "))
    scripts_seen = set()
    for command in _commands(capsys):
        executable = command[0]
        assert executable in BASE_IMAGE_EXECUTABLES or INSTALLED_BY.get(executable, "\0") in runs, (
            f"{executable} is neither in the base image nor installed by a RUN line"
        )
        for script in (a for a in command if a.startswith("/opt/hubspoke/") and a.endswith(".py")):
            scripts_seen.add(posixpath.basename(script))
            for image_path in _needed(script):
                assert image_path in files, f"{' '.join(command[:3])}... needs {image_path}; COPY it"
                assert _let_through(files[image_path]), f"{files[image_path]} is excluded by .dockerignore"
    assert {"train.py", "prewarm.py", "bench_reader.py"} <= scripts_seen


# torch versions at the edges of what the image accepts, from the sources (not from torch_check.py):
# - hyperpod-elastic-agent 1.1.3, PKG-INFO on PyPI: "Requires-Dist: torch<2.12.0,>=2.4.0"; pip's `<2.12.0` also
#   excludes 2.12 pre-releases (PEP 440, "Exclusive ordered comparison").
# - train.py: `from torch.distributed.fsdp import fully_shard` (PyTorch docs page
#   "torch.distributed.fsdp.fully_shard", created 2024-12-04 for 2.6) and scaled_dot_product_attention's
#   enable_gqa (documented signature). So 2.6 and newer.
ACCEPTED = ["2.6.0", "2.6.0a0+ecf3bae40a.nv25.01", "2.7.1+cu128", "2.11.0", "2.11.9+cu130"]
REFUSED = ["2.4.0", "2.5.1+cu124", "2.12.0", "2.12.0a0+git", "2.12.1", "3.0.0", "1.13.1"]
CHECK = ROOT / "workload" / "torch_check.py"


def _torch_check() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_check", CHECK)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check(*argv: str, path: Path | None = None) -> tuple[int, str, str]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(path) if path else ""}
    done = subprocess.run(
        [sys.executable, str(CHECK), *argv], capture_output=True, text=True, env=env, check=False, timeout=60
    )
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("version", ACCEPTED)
def test_torch_check_accepts_versions_both_bounds_allow(version: str) -> None:
    problem = _torch_check().problem

    assert problem(version) is None


@pytest.mark.parametrize("version", REFUSED)
def test_torch_check_refuses_versions_outside_either_bound(version: str) -> None:
    problem = _torch_check().problem

    why = problem(version)
    assert why is not None and version in why
    # The message says which side is wrong and what to choose instead.
    assert ("hyperpod-elastic-agent" in why) == version.startswith(("2.12", "3."))
    assert "2.6 to 2.11" in why


def _stub_torch(root: Path, version: str, *, fully_shard: bool = True, gqa: bool = True) -> Path:
    """A stand-in `torch` package with the version and the two features train.py needs (or without them)."""
    (root / "torch" / "nn").mkdir(parents=True)
    (root / "torch" / "distributed" / "fsdp").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text(f"__version__ = {version!r}\n")
    (root / "torch" / "nn" / "__init__.py").write_text("")
    signature = "enable_gqa=False" if gqa else "scale=None"
    (root / "torch" / "nn" / "functional.py").write_text(
        f"def scaled_dot_product_attention():\n    '''scaled_dot_product_attention(query, ..., {signature})'''\n"
    )
    (root / "torch" / "distributed" / "__init__.py").write_text("")
    (root / "torch" / "distributed" / "fsdp" / "__init__.py").write_text(
        "def fully_shard(module):\n    return module\n" if fully_shard else ""
    )
    return root


def test_torch_check_reads_the_installed_torch_and_its_features(tmp_path: Path) -> None:
    code, out, _ = _check(path=_stub_torch(tmp_path / "ok", "2.7.1+cu128"))
    assert code == 0 and "2.7.1+cu128 fits" in out
    code, _, err = _check(path=_stub_torch(tmp_path / "new", "2.12.0"))
    assert code == 1 and "hyperpod-elastic-agent 1.1.3 requires torch>=2.4.0,<2.12.0" in err
    code, _, err = _check(path=_stub_torch(tmp_path / "nofsdp", "2.8.0", fully_shard=False))
    assert code == 1 and "fully_shard" in err
    code, _, err = _check(path=_stub_torch(tmp_path / "nogqa", "2.8.0", gqa=False))
    assert code == 1 and "enable_gqa" in err


def test_the_build_checks_torch_before_and_after_installing_the_agent() -> None:
    """The check runs in the image build (a failing RUN fails `docker build`), around the agent's install."""
    files = _image_files()
    assert files.get("/opt/hubspoke/torch_check.py") == "workload/torch_check.py"
    assert _let_through("workload/torch_check.py")
    instructions = _instructions()
    copy_at = next(i for i, line in enumerate(instructions) if "torch_check.py /opt/hubspoke" in line)
    (run,) = [line for line in instructions if line.startswith("RUN ") and "hyperpod-elastic-agent" in line]
    assert instructions.index(run) > copy_at
    steps = [s.strip() for s in run[len("RUN ") :].split("&&")]
    assert steps[0] == steps[-1] == "python /opt/hubspoke/torch_check.py"
    assert any('"hyperpod-elastic-agent==1.1.3"' in s for s in steps[1:-1])
    # FROM the base the build command pins by digest, nothing else.
    assert [line for line in instructions if line.startswith("FROM ")] == ["FROM ${BASE_IMAGE}"]
