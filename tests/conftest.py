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


# A Qumulo Core release staged as Qumulo's guide lays it out (docs/runbooks/qumulo-core.md).
QUMULO_CORE: dict[str, str] = {
    "version": "7.10.2.1",
    "install_uri": "s3://hubspoke-test-staging/cnq/qumulo-core-install/",
}


def pinned_ami(region: str) -> str:
    """A distinct, stable, well-formed AMI ID per Region (tests never look images up)."""
    return f"ami-0{sum(map(ord, region)) % 16**8:08x}deadbeef"


def with_pins(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the storage pins issue 13 made required filled in wherever storage is left enabled.

    Keys a test wrote itself win, so a test of a missing or wrong pin writes it (or builds raw YAML).
    """
    regions = [data["hub"]] if isinstance(data.get("hub"), dict) else []
    regions += [s for s in data.get("spokes") or [] if isinstance(s, dict)]
    for region in regions:
        storage = region.setdefault("storage", {})
        if storage.get("enabled", True) is not False and isinstance(region.get("region"), str):
            storage.setdefault("ami_id", pinned_ami(region["region"]))
            storage.setdefault("qumulo_core", dict(QUMULO_CORE))
    return data


def minimal(**overrides: Any) -> dict[str, Any]:
    """The smallest valid config of DESIGN.md §4 (plus the storage pins issue 13 made required)."""
    data: dict[str, Any] = {
        "environment": "dev",
        "account": "123456789012",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}],
    }
    data.update(overrides)
    return with_pins(data)


def synth(config: HubSpokeConfig) -> Templates:
    """Synthesize one environment in-process (policy plugins included); templates keyed by stack id."""
    key = config.model_dump_json()
    if key in _SYNTH_CACHE:
        return _SYNTH_CACHE[key]
    from hubspoke.stage import HubSpokeStage, new_app

    # The templates are kept in memory; the assembly (65 MB of assets) goes, also when a finding stops synth.
    with tempfile.TemporaryDirectory(prefix="hubspoke-synth-", ignore_cleanup_errors=True) as outdir:
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
        return load(write_config(tmp_path, with_pins(data))).config

    return build
