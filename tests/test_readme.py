"""The configuration reference (docs/configuration.md) documents every config key, so docs cannot drift from the schema."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from hubspoke.config.schema import HubSpokeConfig, RegionConfig, SpokeConfig
from tests.conftest import ROOT


def _models(annotation: object) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models(arg)
    if isinstance(annotation, types.UnionType):
        for arg in annotation.__args__:
            yield from _models(arg)


def keys(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        nested = list(_models(field.annotation))
        if nested and not name.endswith(("instance_groups", "write_cache", "dkv", "read_cache")):
            for sub in nested:
                yield from keys(sub, f"{path}.")
        else:
            yield path


def test_every_config_key_is_in_the_configuration_reference() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)`", reference, flags=re.M))
    expected = {k for k in keys(HubSpokeConfig, "") if not k.startswith(("hub.", "spokes."))}
    expected |= {f".{k}" for k in keys(RegionConfig, "")}
    expected |= {f"spokes[].{k}" for k in keys(SpokeConfig, "") if k.startswith("portal.")}
    expected -= {"hub", "spokes"}
    missing = sorted(
        k
        for k in expected
        if k not in documented
        and k.replace(".compute.instance_groups", ".compute.instance_groups[]") not in documented
    )
    assert not missing, f"docs/configuration.md lacks: {missing}"


def test_the_smallest_file_the_readme_shows_is_valid(tmp_path: Path) -> None:
    """README "Configuration" shows the smallest valid file: a new user copies it, so it must pass validation."""
    from hubspoke.config import load

    readme = (ROOT / "README.md").read_text()
    start = readme.index("```yaml", readme.index("\n## Configuration\n")) + len("```yaml\n")
    block = readme[start : readme.index("```\n", start)]
    path = tmp_path / "env.yaml"
    path.write_text(block)
    assert load(path).config.environment == "dev"
