"""Shared fixtures: config builders and an in-process synth of an environment into a temp directory."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke.config import HubSpokeConfig, load

ROOT = Path(__file__).resolve().parent.parent
# jsii runs `node` from PATH: use the pinned Node 22 that `make` installs, as synth does.
os.environ["PATH"] = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"

Templates = dict[str, dict[str, Any]]
_SYNTH_CACHE: dict[str, Templates] = {}
_WARNINGS: dict[str, list[str]] = {}


def write_config(tmp_path: Path, data: dict[str, Any], name: str = "env.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# A Region that only peers: no CNQ, no HyperPod (what a spoke in another account can be today).
NETWORK_ONLY: dict[str, Any] = {"storage": {"enabled": False}, "compute": {"enabled": False}}


def minimal(**overrides: Any) -> dict[str, Any]:
    """The minimal valid config of DESIGN.md §4, with top-level overrides."""
    data: dict[str, Any] = {
        "environment": "dev",
        "account": "123456789012",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}],
    }
    data.update(overrides)
    return data


def synth(config: HubSpokeConfig) -> Templates:
    """Synthesize one environment in-process (policy plugins included); templates keyed by stack id."""
    key = config.model_dump_json()
    if key in _SYNTH_CACHE:
        return _SYNTH_CACHE[key]
    from hubspoke.stage import HubSpokeStage, new_app

    outdir = tempfile.mkdtemp(prefix="hubspoke-synth-")
    app = new_app(outdir=outdir)
    stage = HubSpokeStage(app, config=config)
    assembly = app.synth().get_nested_assembly(f"assembly-{stage.stage_name}")
    templates = {
        stack.node.id: json.loads(
            Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path).read_text()
        )
        for stack in stage.stacks.values()
    }
    _WARNINGS[key] = [
        f"{artifact.id}: {message.entry.data}"
        for artifact in assembly.stacks_recursively
        for message in artifact.messages
        if str(message.level).rsplit(".", 1)[-1] in ("WARNING", "ERROR")
    ]
    _SYNTH_CACHE[key] = templates
    return templates


def synth_warnings(config: HubSpokeConfig) -> list[str]:
    """The warnings and errors CDK attached to the synth of `config` that nobody acknowledged."""
    synth(config)
    return _WARNINGS[config.model_dump_json()]


def resources(template: dict[str, Any], kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(logical ID, resource) for every resource of `kind` in a synthesized template."""
    for logical_id, res in template["Resources"].items():
        if res["Type"] == kind:
            yield logical_id, res


def properties(template: dict[str, Any], kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(logical ID, Properties) for every resource of `kind` in a synthesized template."""
    for logical_id, res in resources(template, kind):
        yield logical_id, res.get("Properties", {})


@pytest.fixture(scope="session")
def dev_config() -> HubSpokeConfig:
    return load(ROOT / "config" / "dev.yaml").config


@pytest.fixture(scope="session")
def dev_templates(dev_config: HubSpokeConfig) -> Templates:
    return synth(dev_config)


@pytest.fixture
def config_from(tmp_path: Path) -> Callable[[dict[str, Any]], HubSpokeConfig]:
    def build(data: dict[str, Any]) -> HubSpokeConfig:
        return load(write_config(tmp_path, data)).config

    return build
