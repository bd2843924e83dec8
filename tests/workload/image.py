"""The training image as workload/Dockerfile builds it, read from its own lines, and every container `hubspoke
render` puts it in: the shared reading of tests/workload/test_dockerfile.py (fast) and test_image_env.py (thorough).

Nothing here lists the Jobs or the image's packages: the kinds come from the render command's registry, their
variants from each kind's own options, the files from the COPY lines, the packages from the RUN lines.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import importlib
import io
import ipaddress
import posixpath
import re
import shlex
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hubspoke.cli.main import main
from hubspoke.cli.render import RENDERERS
from hubspoke.config import load

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "config" / "dev.yaml"
DOCKERFILE = ROOT / "workload" / "Dockerfile"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32


# ----- the Dockerfile -----
def instructions() -> list[str]:
    """Each instruction on one line, continuations joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def image_files() -> dict[str, str]:
    """Image path -> repository path of every file a COPY puts in the image."""
    files = {}
    for line in instructions():
        if line.startswith("COPY "):
            *sources, destination = shlex.split(line)[1:]
            for source in sources:
                files[posixpath.join(destination, posixpath.basename(source))] = source
    return files


def env(name: str) -> str | None:
    """The value an ENV line gives `name` (the `ENV A=x B=y` form)."""
    for line in instructions():
        if line.startswith("ENV "):
            for word in shlex.split(line)[1:]:
                key, _, value = word.partition("=")
                if key == name:
                    return value
    return None


def pythonpath() -> list[str]:
    value = env("PYTHONPATH")
    return value.split(":") if value else []


def workdir() -> str:
    found = [line.split(None, 1)[1] for line in instructions() if line.startswith("WORKDIR ")]
    return found[-1] if found else "/"


def run_steps() -> list[str]:
    """Every `&&`-joined step of every RUN line, in build order."""
    return [
        step.strip()
        for line in instructions()
        if line.startswith("RUN ")
        for step in line[len("RUN ") :].split("&&")
    ]


def pip_requirements() -> list[str]:
    """Every requirement a `pip install` step names: its quoted specs and the lines of its -r files (read from the
    repository file the COPY put at that image path)."""
    files, found = image_files(), []
    for step in run_steps():
        words = shlex.split(step)
        if "pip" not in words or "install" not in words:
            continue
        rest = iter(words[words.index("install") + 1 :])
        for word in rest:
            if word in ("-r", "--requirement"):
                source = ROOT / files[next(rest)]
                found += [
                    line.split("#")[0].strip()
                    for line in source.read_text().splitlines()
                    if line.split("#")[0].strip()
                ]
            elif word in ("-c", "--constraint"):
                next(rest)
            elif not word.startswith("-"):
                found.append(word)
    return found


# ----- what runs in the image -----
@functools.cache  # the rendered containers run the same few programs: each text is parsed once, not per container
def local_imports(source: str) -> frozenset[str]:
    """Every module a file imports, at top level or inside a function (a lazy import is a need all the same)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return frozenset(names)


def needed(script: str) -> dict[str, Path]:
    """Image path -> repository file of what the script at image path `script` needs: itself and the workload/
    (beside it, where Python looks first) and hubspoke/ (under PYTHONPATH) modules it imports, transitively."""
    folder = posixpath.dirname(script)
    todo, found = [(script, ROOT / "workload" / posixpath.basename(script))], {}
    while todo:
        image_path, source = todo.pop()
        if image_path in found:
            continue
        found[image_path] = source
        if not source.exists():
            continue
        for module in local_imports(source.read_text()):
            parts = module.split(".")
            if (ROOT / "workload" / f"{parts[0]}.py").exists():
                todo.append((f"{folder}/{parts[0]}.py", ROOT / "workload" / f"{parts[0]}.py"))
            elif parts[0] == "hubspoke":
                for base in pythonpath() or ["<no PYTHONPATH>"]:
                    package = posixpath.join(base, "hubspoke")
                    todo.append((f"{package}/__init__.py", ROOT / "hubspoke" / "__init__.py"))
                    if len(parts) > 1:
                        todo.append((f"{package}/{parts[1]}.py", ROOT / "hubspoke" / f"{parts[1]}.py"))
    return found


def third_party_in(source: str) -> set[str]:
    """Top-level modules a program text imports that are neither the standard library's nor the project's."""
    local = {p.stem for p in (ROOT / "workload").glob("*.py")} | {"hubspoke"}
    tops = {m.split(".")[0] for m in local_imports(source)}
    return {m for m in tops if m not in sys.stdlib_module_names and m not in local and m != "__future__"}


def third_party(sources: list[Path]) -> set[str]:
    """third_party_in over files (a missing file imports nothing; its absence is reported where it is needed)."""
    return {m for s in sources if s.exists() for m in third_party_in(s.read_text())}


@dataclass(frozen=True)
class Container:
    """One container of one rendered manifest: what it runs, and which render produced it."""

    render: str  # the `hubspoke render` arguments, for messages
    name: str
    argv: list[str]  # command + args, as the kubelet starts it

    def scripts(self) -> list[str]:
        """The image paths of the Python files the argv names."""
        return [a for a in self.argv if a.startswith("/") and a.endswith(".py")]

    def inline_code(self) -> str | None:
        """The program of `python -c CODE`."""
        if self.argv[0] == "python" and len(self.argv) > 2 and self.argv[1] == "-c":
            return self.argv[2]
        return None


def _containers(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from value
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


# Values for the options a render kind requires, or that change what its containers run; the rest keep their
# defaults. An option a kind requires that is missing here fails `variants` (add a sample, then the test sees it).
def _samples(region_cidr: str) -> dict[str, list[str]]:
    return {
        # One of the spoke CNQ's floating IPs: an address inside the Region's VPC (render refuses others).
        "--rest-address": [str(ipaddress.ip_network(region_cidr)[10])],
        "--run": ["r1"],
        "--wait-for-cached-fraction": ["1"],
        "--max-cache-status-age": ["600"],
        "--image": [IMAGE],
        # The export bucket, which render otherwise reads from the Compute stack with AWS credentials.
        "--bucket": ["hubspoke-dev-export-example"],
    }


# Options given in every variant: they name where things are, not what runs.
ALWAYS = ("--image", "--bucket")
# Options render refuses without another one, which their variants then carry: "--at-cache-deadline and
# --max-cache-status-age need --wait-for-cached-fraction" (hubspoke/cli/render.py, 480625c).
NEEDS = {
    "--at-cache-deadline": "--wait-for-cached-fraction",
    "--max-cache-status-age": "--wait-for-cached-fraction",
}


def variants(kind: str, region_cidr: str) -> list[list[str]]:
    """The option sets a kind is rendered with: its required options (and ALWAYS's), then each choice of each
    option with choices, then every option with a sample and every flag at once."""
    module, _, attribute = RENDERERS[kind].partition(":")
    parser = argparse.ArgumentParser(add_help=False)
    getattr(importlib.import_module(module), attribute).add_arguments(parser)
    samples, base, every, choices = _samples(region_cidr), [], [], []
    for action in parser._actions:
        option = action.option_strings[0]
        if action.required or option in ALWAYS:
            assert option in samples, (
                f"render {kind} requires {option}: add a sample to tests/workload/image.py"
            )
            base += [option, *samples[option]]
        elif action.choices:
            needed = [NEEDS[option], *samples[NEEDS[option]]] if option in NEEDS else []
            choices += [[*needed, option, str(c)] for c in action.choices]
        elif option in samples:
            every += [option, *samples[option]]
        elif action.nargs == 0:
            every.append(option)
    found = [
        base,
        *([*base, *c] for c in choices),
        *([*base, *every, *c] for c in (choices or [[]]) if every),
    ]
    return [list(v) for v in dict.fromkeys(tuple(v) for v in found)]


def _leaves(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, [*path, name])


def dry_runs(config: Path = DEV) -> list[Container]:
    """The containers of the Jobs the other commands print with --dry-run instead of starting them (`dataset
    load`'s), found in the CLI's parser (each such command sets the default dry_run_prints="manifests"; others'
    dry runs print commands); `config` with one dataset source bucket listed, which load requires."""
    from hubspoke.cli.commands import COMMANDS
    from hubspoke.cli.main import build_parser

    data = yaml.safe_load(config.read_text())
    bucket = "example-datasets"
    data.setdefault("dataset", {})["source_buckets"] = [bucket]
    samples = {
        "--name": [str(data["dataset"].get("name", "example"))],
        "--version": ["v-image-test"],
        "--source": [f"s3://{bucket}/tokenized/"],
        "--image": [IMAGE],
    }
    found = []
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / config.name
        copy.write_text(yaml.safe_dump(data))
        for name in COMMANDS:
            top = build_parser([name])
            command = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
            for path, leaf in _leaves(command, [name]):
                options = {o: a for a in leaf._actions for o in a.option_strings}
                if "--dry-run" not in options or leaf.get_default("dry_run_prints") != "manifests":
                    continue
                argv = [*path, "--config", str(copy), "--dry-run"]
                for option, action in options.items():
                    if (action.required and option != "--config") or option == "--image":
                        assert option in samples, (
                            f"{' '.join(path)} requires {option}: add a sample to image.py"
                        )
                        argv += [option, *samples[option]]
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    assert main(argv) == 0, f"hubspoke {' '.join(argv)}: {err.getvalue()}"
                for document in (d for d in yaml.safe_load_all(out.getvalue()) if d):
                    for c in _containers(document):
                        found.append(
                            Container(" ".join(argv), c["name"], [*c["command"], *c.get("args", [])])
                        )
    return found


def rendered(config: Path = DEV) -> list[Container]:
    """Every container of every kind `hubspoke render` knows, in every variant, for every Region of `config` that
    accepts it (render refuses some: prewarm on the hub, which caches nothing; each variant renders somewhere),
    and of every Job another command prints with --dry-run."""
    found = []
    regions = list(load(config).config.regions())
    for kind in RENDERERS:
        per_region = {r.region: variants(kind, str(r.cidr)) for r in regions}
        # The same options in every Region, in the same order; only the sample values differ.
        for index in range(len(per_region[regions[0].region])):
            rendered_in = 0
            for region in regions:
                argv = ["render", kind, "--config", str(config), "--region", region.region]
                argv += per_region[region.region][index]
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main(argv)
                assert code in (0, 2), f"{' '.join(argv)}: exit {code}: {err.getvalue()}"
                if code:
                    continue
                rendered_in += 1
                for document in (d for d in yaml.safe_load_all(out.getvalue()) if d):
                    for c in _containers(document):
                        argv_run = [*c["command"], *c.get("args", [])]
                        found.append(Container(" ".join(argv[1:]), c["name"], argv_run))
            assert rendered_in, f"render {kind} {per_region[regions[0].region][index]} rendered in no Region"
    return found + dry_runs(config)
