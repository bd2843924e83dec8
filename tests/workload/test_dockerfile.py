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
