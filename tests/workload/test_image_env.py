"""Every container `hubspoke render` can produce starts its program in an environment built from workload/Dockerfile.

Thorough tier: it builds a virtual environment and installs from the package index. The environment is the
Dockerfile's own lines, read by tests/workload/image.py, not a copy of them: every COPY lays its files out at
their image paths under a temporary root, every RUN step runs (its image paths moved under that root) with the
environment's python first on PATH, so each `pip install` installs exactly what the line and its -r files name,
and ENV PYTHONPATH, moved the same way, is the path the programs see. Then, for every container of every kind,
variant and Region, and of every --dry-run Job such as `dataset load`'s (image.rendered): its executable must be on that PATH (and import); each script it
names must be there, answer --help, and import everything that it and its modules import (lazily imported
modules too: prewarm imports the Qumulo SDK only when it logs in); a `python -c` program must compile and import
what it imports. It fails when a rendered Job runs a file the image lacks or imports a package it does not install.

The base image, a PyTorch training image, is played by torch and its dependencies from the project venv, put on
the environment's path (a .pth file) with their console scripts (torchrun). Two departures, both forced:
- torch here is the dev pin, 2.13.0+cpu (docs/development.md: no torch inside the image's 2.6 to 2.11 reaches
  these machines), and hyperpod-elastic-agent 1.1.3 requires torch<2.12.0. A base image that fits has a torch
  pip accepts (the build's torch_check.py makes sure), so the stand-in's metadata says 2.11.0, the newest the
  image takes; its code is 2.13's. Without that, pip would replace it with a PyPI CUDA build of several GB.
- the RUN steps that run torch_check.py are skipped: it would refuse 2.13 (the fast tier tests it).
- a launcher (torchrun, hyperpodrun) is checked by importing its entry point's module, not run with --help:
  hyperpodrun adds a --shutdown-timeout option to torch's launcher parser, which torch 2.13 already defines
  (torch/distributed/run.py), so its --help fails on the stand-in; the agent's torch<2.12.0 bound keeps the
  image off such a torch (that 2.11 lacks the option is ASSUMED from that bound, not checked here).
After the RUN steps, torch must still be the stand-in's: pip moved nothing of the base image.
"""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.workload import image

pytestmark = pytest.mark.thorough

# The newest torch the image accepts (workload/torch_check.py's sources: hyperpod-elastic-agent 1.1.3's PKG-INFO,
# `Requires-Dist: torch<2.12.0,>=2.4.0`), the version the stand-in's metadata gives pip.
STAND_IN_TORCH = "2.11.0"
# Imports every module named after the first argument, with that directory first on sys.path (where Python puts a
# script's own directory); prints the ones that fail.
IMPORT_ALL = """
import importlib, sys, traceback
sys.path.insert(0, sys.argv[1])
failed = []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


@dataclass(frozen=True)
class Built:
    root: Path  # the image's / (COPY'd files only)
    env: dict[str, str]  # the environment a container starts with


def _closure(name: str) -> list[metadata.Distribution]:
    """A distribution of the project venv and what it requires (no extras), transitively."""
    todo, seen, found = [name], set(), []
    while todo:
        dist = metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        found.append(dist)
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def _base_image(site: Path, bin_dir: Path, python: Path) -> None:
    """torch and its dependencies from the project venv, linked into `site`; their console scripts in `bin_dir`."""
    site.mkdir(parents=True)
    bin_dir.mkdir(parents=True)
    for dist in _closure("torch"):
        is_torch = dist.metadata["Name"].lower() == "torch"
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            if is_torch and top.endswith(".dist-info"):
                info = site / f"torch-{STAND_IN_TORCH}.dist-info"
                info.mkdir()
                requires = "".join(f"Requires-Dist: {r}\n" for r in dist.requires or [])
                info.joinpath("METADATA").write_text(
                    f"Metadata-Version: 2.1\nName: torch\nVersion: {STAND_IN_TORCH}\n{requires}"
                )
                info.joinpath("entry_points.txt").write_text(dist.read_text("entry_points.txt") or "")
                continue
            (site / top).symlink_to(Path(str(dist.locate_file(top))))
        for entry in (e for e in dist.entry_points if e.group == "console_scripts"):
            module, _, attribute = entry.value.partition(":")
            script = bin_dir / entry.name
            script.write_text(
                f"#!{python}\nimport sys\nfrom {module} import {attribute.split('.')[0]} as main\n"
                "sys.exit(main())\n"
            )
            script.chmod(0o755)


def _moved(root: Path) -> re.Pattern[str]:
    """Image paths of the COPY destinations and /tmp, as they start a word in a command, to move under root."""
    folders = sorted({posixpath.dirname(p) for p in image.image_files()} | {"/tmp"}, key=len, reverse=True)
    return re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(f) for f in folders) + r")(?=/|\s|$|[\"'])")


def _relocate(text: str, root: Path) -> str:
    return _moved(root).sub(lambda m: f"{root}{m.group(1)}", text)


def _run(argv: list[str], built: Built, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=built.env, cwd=cwd or built.root, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    work = tmp_path_factory.mktemp("image")
    root, venv, base = work / "root", work / "venv", work / "base"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    _base_image(base / "site-packages", base / "bin", python)
    (site / "base_image.pth").write_text(f"{base / 'site-packages'}\n")
    for image_path, source in image.image_files().items():
        target = root / image_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(image.ROOT / source, target)
    (root / "tmp").mkdir(exist_ok=True)
    (work / "home").mkdir()
    env = {
        "PATH": os.pathsep.join([str(venv / "bin"), str(base / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(work / "home"),
        "PYTHONNOUSERSITE": "1",  # the user's site-packages is not the image's
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    made = Built(root, env)
    for step in image.run_steps():
        if "torch_check.py" in step:
            continue  # refuses the stand-in's torch 2.13 (module docstring)
        done = _run(["bash", "-c", _relocate(step, root)], made)
        assert done.returncode == 0, (
            f"RUN step `{step}` failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    for name in ("PYTHONPATH", "PYTHONUNBUFFERED"):
        value = image.env(name)
        if value is not None:
            env[name] = _relocate(value, root)
    return made


def test_the_installs_leave_the_base_images_torch_alone(built: Built) -> None:
    probe = (
        "import importlib.metadata as m, json, torch; print(json.dumps([torch.__file__, m.version('torch')]))"
    )
    done = _run(["python", "-c", probe], built)
    assert done.returncode == 0, done.stderr
    where, version = json.loads(done.stdout)
    assert "/base/site-packages/" in where and version == STAND_IN_TORCH


def _imports_of(files: list[Path]) -> list[str]:
    return sorted(
        {m for f in files if f.exists() for m in image.local_imports(f.read_text())} - {"__future__"}
    )


def _check(container: image.Container, built: Built) -> list[str]:
    """What stops the container's program from starting in the built environment."""
    problems, executable = [], container.argv[0]
    found = shutil.which(executable, path=built.env["PATH"])
    if found is None:
        return [f"{executable} is not in the image"]
    if executable != "python":
        # A console script (pip's, or the stand-in's torchrun): the module its entry point is in must import.
        modules = re.findall(r"^from ([\w.]+) import", Path(found).read_text(), re.MULTILINE)
        assert modules, f"{found} is not a console script"
        done = _run(["python", "-c", IMPORT_ALL, str(built.root), *modules], built)
        if done.returncode != 0:
            problems.append(f"{executable}'s entry point does not import: {done.stdout.strip()}")
    for script in container.scripts():
        here = built.root / script.lstrip("/")
        if not here.is_file():
            problems.append(f"{script} is not in the image")
            continue
        done = _run(["python", str(here), "--help"], built)
        if done.returncode != 0:
            problems.append(f"python {script} --help: exit {done.returncode}: {done.stderr.strip()[-800:]}")
        # Every module of the program, as the image holds them (a module the image lacks imports nothing here).
        held = [built.root / p.lstrip("/") for p in image.needed(script)]
        done = _run(["python", "-c", IMPORT_ALL, str(here.parent), *_imports_of(held)], built)
        if done.returncode != 0:
            problems.append(
                f"{script} imports what the image lacks: {done.stdout.strip()} {done.stderr[-800:]}"
            )
    code = container.inline_code()
    if code is not None:
        compile(code, "<python -c>", "exec")
        done = _run(["python", "-c", IMPORT_ALL, str(built.root), *sorted(image.local_imports(code))], built)
        if done.returncode != 0:
            problems.append(f"python -c {code!r} imports what the image lacks: {done.stdout.strip()}")
    return problems


def test_every_rendered_container_starts_its_program_in_the_image(built: Built) -> None:
    containers = image.rendered()
    runs = {(c.argv[0], *c.scripts(), c.inline_code() or ""): c for c in containers}
    problems = {f"{c.render} ({c.name})": p for c in runs.values() if (p := _check(c, built))}
    assert problems == {}, "\n".join(f"{where}:\n  " + "\n  ".join(p) for where, p in problems.items())
    # What the Jobs are known to run was among them: the three launchers and the programs.
    assert {"torchrun", "hyperpodrun", "python"} <= {key[0] for key in runs}
    assert {"train.py", "prewarm.py", "bench_reader.py", "load.py"} <= {
        posixpath.basename(s) for c in runs.values() for s in c.scripts()
    }
