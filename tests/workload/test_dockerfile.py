"""Every command a rendered Job runs is in the training image (workload/Dockerfile), checked from its lines.

For every container of every kind `hubspoke render` knows and of every Job another command prints with --dry-run
(`dataset load`; tests/workload/image.py finds them: containers and init containers, every Region of
config/dev.yaml): each script the command names is COPY'd to its path, and so
is every module it imports, transitively, from workload/ (beside the script, where Python looks first) or from
hubspoke/ (under PYTHONPATH); the build context's .dockerignore lets every COPY source through; every package
those files import is the base image's (torch) or installed by a RUN line's pip install, directly or as a
dependency; and the executable is the base image's (python; torchrun, a console script of torch) or a console
script of a distribution a RUN line installs (hyperpodrun: the HyperPod elastic agent, SageMaker developer
guide, "Using the training operator to run jobs"). test_image_env.py (thorough) then runs them in an
environment built from the same lines.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata as metadata
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.workload import image
from tests.workload.image import ROOT, Container

# The base image: an AWS Deep Learning Container "pytorch-training" GPU image (workload/Dockerfile's BASE_IMAGE)
# holds Python and PyTorch; everything else the Jobs need must be installed by a RUN line.
BASE_IMAGE_DISTRIBUTIONS = {"torch"}
BASE_IMAGE_EXECUTABLES = {"python"}


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


def _requires(name: str, extras: frozenset[str] = frozenset()) -> list[Requirement]:
    """The requirements of an installed distribution (this venv's metadata), with the extras asked for."""
    found = []
    for text in metadata.requires(name) or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": e}) for e in {"", *extras}):
            found.append(requirement)
    return found


@cache
def _installed() -> frozenset[str]:
    """Every distribution the image holds: the base's, the RUN lines' pip installs, and their dependencies."""
    todo = [Requirement(s) for s in image.pip_requirements()] + [
        Requirement(d) for d in BASE_IMAGE_DISTRIBUTIONS
    ]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += _requires(requirement.name, frozenset(requirement.extras))
        except metadata.PackageNotFoundError:
            continue  # not in the dev venv: its own dependencies are unknown here (test_image_env.py installs it)
    return frozenset(seen)


@cache
def _console_scripts() -> dict[str, str]:
    """Console script -> its distribution, for every distribution in this venv."""
    return {
        ep.name: canonicalize_name(dist.metadata["Name"])
        for dist in metadata.distributions()
        for ep in dist.entry_points
        if ep.group == "console_scripts"
    }


@cache
def _providers() -> dict[str, list[str]]:
    """Top-level module -> the distributions in this venv that provide it."""
    return dict(metadata.packages_distributions())


def problems(container: Container, files: dict[str, str]) -> list[str]:
    """What the container runs that the image (`files`: image path -> repository path) does not hold."""
    found, executable = [], container.argv[0]
    where = f"{container.render}, container {container.name}"
    if executable not in BASE_IMAGE_EXECUTABLES:
        dist = _console_scripts().get(executable)
        if dist is None or dist not in _installed():
            found.append(f"{where}: runs {executable}, which neither the base image nor a RUN line installs")
    sources: list[Path] = []
    for script in container.scripts():
        for image_path, source in image.needed(script).items():
            if image_path not in files:
                found.append(f"{where}: needs {image_path}; COPY it (workload/Dockerfile)")
            sources.append(source)
    code = container.inline_code()
    imported = image.third_party(sources) | (image.third_party_in(code) if code else set())
    providers = _providers()
    for module in sorted(imported):
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & _installed():
            found.append(
                f"{where}: imports {module} ({', '.join(sorted(dists)) or 'no known distribution'}), which the "
                "image does not install: add it, pinned, to workload/requirements.txt"
            )
    return found


def test_every_rendered_container_runs_what_the_image_holds() -> None:
    files = image.image_files()
    containers = image.rendered()
    assert [p for c in containers for p in problems(c, files)] == []
    # The programs the rendered Jobs are known to run, and one kind of each launcher, were among them.
    scripts = {s.rsplit("/", 1)[1] for c in containers for s in c.scripts()}
    assert {"train.py", "prewarm.py", "bench_reader.py", "load.py"} <= scripts
    assert {"torchrun", "hyperpodrun", "python"} <= {c.argv[0] for c in containers}


def test_every_copy_source_exists_and_reaches_the_build() -> None:
    for image_path, source in image.image_files().items():
        assert (ROOT / source).is_file(), f"COPY {source} -> {image_path}: no such file"
        assert _let_through(source), f"{source} is excluded by workload/Dockerfile.dockerignore"


def _container(*argv: str) -> Container:
    return Container("render test", "c", list(argv))


def test_the_check_refuses_a_missing_file_an_uninstalled_package_and_an_unknown_launcher() -> None:
    """The check itself can fail: a script nobody COPY'd, a program importing what no RUN line installs, and an
    executable the image lacks."""
    files = image.image_files()
    assert problems(_container("python", "/opt/hubspoke/prewarm.py"), files) == []
    missing = problems(_container("python", "/opt/hubspoke/no_such_program.py"), files)
    assert missing and "needs /opt/hubspoke/no_such_program.py" in missing[0]
    bare = problems(_container("python", "-c", "import moto"), files)
    assert bare and "imports moto" in bare[0]
    launcher = problems(_container("mpirun", "/opt/hubspoke/train.py"), files)
    assert launcher and "runs mpirun" in launcher[0]


_real_requirements = image.pip_requirements


def test_a_package_only_the_dev_venv_has_is_not_in_the_image(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without qumulo-api among the install lines' requirements, prewarm's import of the Qumulo SDK is refused:
    the defect issue 40 found (the SDK was in the dev venv, not in the image)."""
    monkeypatch.setattr(
        image, "pip_requirements", lambda: [r for r in _real_requirements() if not r.startswith("qumulo-api")]
    )
    _installed.cache_clear()
    try:
        found = problems(_container("python", "/opt/hubspoke/prewarm.py"), image.image_files())
    finally:
        _installed.cache_clear()
    assert found and "imports qumulo (qumulo-api)" in found[0]


def test_the_build_installs_the_requirements_file_with_torch_held() -> None:
    """requirements.txt is COPY'd and installed by a RUN line, under a constraint naming the base's own torch
    (pip User Guide, "Constraints Files"), with torch_check after it."""
    files = image.image_files()
    (target,) = [p for p, s in files.items() if s == "workload/requirements.txt"]
    (run,) = [line for line in image.instructions() if line.startswith("RUN ") and f"-r {target}" in line]
    steps = [s.strip() for s in run[len("RUN ") :].split("&&")]
    (install,) = [s for s in steps if f"-r {target}" in s]
    constraint = install.split("-c ")[1].split()[0]
    assert any(f"> {constraint}" in s and "version('torch')" in s for s in steps[: steps.index(install)])
    assert steps[-1] == "python /opt/hubspoke/torch_check.py"


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
    files = image.image_files()
    assert files.get("/opt/hubspoke/torch_check.py") == "workload/torch_check.py"
    assert _let_through("workload/torch_check.py")
    instructions = image.instructions()
    copy_at = next(i for i, line in enumerate(instructions) if "torch_check.py /opt/hubspoke" in line)
    (run,) = [line for line in instructions if line.startswith("RUN ") and "hyperpod-elastic-agent" in line]
    assert instructions.index(run) > copy_at
    steps = [s.strip() for s in run[len("RUN ") :].split("&&")]
    assert steps[0] == steps[-1] == "python /opt/hubspoke/torch_check.py"
    assert any('"hyperpod-elastic-agent==1.1.3"' in s for s in steps[1:-1])
    # FROM the base the build command pins by digest, nothing else.
    assert [line for line in instructions if line.startswith("FROM ")] == ["FROM ${BASE_IMAGE}"]
