"""The configuration reference (docs/configuration.md) is the schema's own field descriptions and defaults
(hubspoke/config/reference.py renders its key table, `make docs` rewrites it), so docs cannot drift from the
schema: the committed file must be what the schema renders, every field must carry a description, every key must
have a row, and the defaults the rows state must be what loading a file without the key gives."""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from hubspoke.config import schema
from hubspoke.config.reference import splice
from hubspoke.config.schema import HubSpokeConfig, RegionConfig, SpokeConfig
from tests.conftest import ROOT

REFERENCE = ROOT / "docs" / "configuration.md"


def _models(annotation: object) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models(arg)
    if isinstance(annotation, types.UnionType):
        for arg in annotation.__args__:
            yield from _models(arg)


def _is_list_of_models(annotation: object) -> bool:
    text = str(annotation)
    return text.startswith(("list[", "typing.Annotated[list[")) and bool(list(_models(annotation)))


def keys(model: type[BaseModel], prefix: str) -> Iterator[str]:
    """Every key path under a model; `dkv` and `read_cache` share `write_cache`'s keys, documented once."""
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}{'[]' if _is_list_of_models(field.annotation) else ''}"
        yield path
        if name not in ("dkv", "read_cache"):
            for sub in _models(field.annotation):
                yield from keys(sub, f"{path}.")


def _rows() -> dict[str, tuple[str, str]]:
    """The committed table: key -> (default, meaning)."""
    found = re.findall(r"^\| `([^`]+)` \| (.*?) \| (.*) \|$", REFERENCE.read_text(), flags=re.M)
    return {key: (default, meaning) for key, default, meaning in found}


def test_the_configuration_reference_is_what_the_schema_renders() -> None:
    current = REFERENCE.read_text()
    assert current == splice(current), (
        "docs/configuration.md is out of date with hubspoke/config/schema.py: run `make docs` and commit it"
    )


def test_every_field_of_every_config_model_has_a_description() -> None:
    """A key cannot land undocumented: the description is its row in the reference."""
    reachable: set[type[BaseModel]] = set()
    pending: list[type[BaseModel]] = [HubSpokeConfig]
    while pending:
        model = pending.pop()
        if model not in reachable:
            reachable.add(model)
            pending += [m for f in model.model_fields.values() for m in _models(f.annotation)]
    declared = {
        obj for obj in vars(schema).values() if inspect.isclass(obj) and issubclass(obj, schema.Model)
    } - {schema.Model}
    assert {SpokeConfig, schema.VolumeSetConfig, schema.InstanceGroupConfig} <= reachable
    missing = sorted(
        f"{model.__name__}.{name}"
        for model in reachable | declared
        for name, field in model.model_fields.items()
        if not (field.description or "").strip()
    )
    assert not missing, f"fields without a description (Field(description=...) in schema.py): {missing}"


def test_every_config_key_has_a_row_and_every_row_is_a_key() -> None:
    expected = {k for k in keys(HubSpokeConfig, "") if not k.startswith(("hub.", "spokes[]."))}
    expected |= {f".{k}" for k in keys(RegionConfig, "")}
    expected |= {
        f"spokes[].{k}" for k in keys(SpokeConfig, "") if k.split(".")[0] not in RegionConfig.model_fields
    }
    documented = set(_rows())
    assert sorted(expected - documented) == [], "keys without a row"
    assert sorted(documented - expected) == [], "rows naming no key"


@pytest.mark.parametrize(
    ("key", "default"),
    [
        # EC2 User Guide, "Network MTU": traffic over an inter-Region VPC peering connection is at most 8500 bytes.
        ("inter_region_mtu", "`8500`"),
        # The reference hub ran 4 CNQ nodes (docs/design.md, the measured topology).
        (".storage.node_count", "`4`"),
        # 3 floating IPs per node, what releases before floating_ip_count created (docs/runbooks/qumulo-core.md).
        (".storage.floating_ip_count", "3 per node"),
        # The reference spoke: a HyperPod cluster of 2 x ml.p5.48xlarge.
        (".compute.instance_groups[].instance_type", "`ml.p5.48xlarge`"),
        (".compute.instance_groups[].count", "`2`"),
        # Qumulo's DKV volumes (aws-terraform-cnq 6.3, modules/qcluster: dkvSlots 4 x dkvSize 4 GiB, 3000 IOPS,
        # 125 MB/s), gp3 being the type's default.
        (".storage.cache_volumes.dkv", "`count: 4`, `size_gib: 4`, `iops: 3000`, `throughput_mibps: 125`"),
        # Qumulo's bucket rule (qumulo-terraform-gcp @ a30b449c, persistent-storage main.tf number_buckets_calc).
        (".storage.bucket_count", "max(16, ceil(soft_capacity_limit_tb / 500))"),
        # Control Tower's CT.CLOUDWATCH.PR.2 refuses log groups kept under 365 days.
        (".flow_logs_retention_days", "`365`"),
    ],
)
def test_documented_defaults(key: str, default: str) -> None:
    assert _rows()[key][0] == default


def _resolve(value: Any, path: list[str]) -> tuple[bool, Any]:
    """Follow a key path through loaded models or raw YAML: (found, value); `name[]` takes the first entry."""
    for part in path:
        name, many = part.removesuffix("[]"), part.endswith("[]")
        if value is None:  # an optional section left out (cache_volumes): its keys' defaults do not apply
            return False, None
        if isinstance(value, dict):
            if name not in value:
                return False, None
            value = value[name]
        else:
            value = getattr(value, name)
        if many:
            if not value:
                return False, None
            value = value[0]
    return True, value


def test_each_literal_default_is_what_a_file_without_the_key_loads(tmp_path: Path) -> None:
    """The defaults column, read back as YAML, against what the loader gives for the README's smallest file (keys
    that file sets are skipped): the rendered defaults are the schema's real ones."""
    from hubspoke.config import load

    readme = (ROOT / "README.md").read_text()
    start = readme.index("```yaml", readme.index("\n## Configuration\n")) + len("```yaml\n")
    path = tmp_path / "env.yaml"
    path.write_text(readme[start : readme.index("```\n", start)])
    raw = yaml.safe_load(path.read_text())
    config = load(path).config
    checked = []
    for key, (default, _) in _rows().items():
        literal = re.fullmatch(r"`([^`]*)`", default)
        if literal is None:
            continue
        parts = ["hub", *key[1:].split(".")] if key.startswith(".") else key.split(".")
        if _resolve(raw, parts)[0]:
            continue
        found, actual = _resolve(config, parts)
        if not found or isinstance(actual, BaseModel):
            continue
        text = literal.group(1)
        assert (text == actual) if isinstance(actual, str) else (yaml.safe_load(text) == actual), key
        checked.append(key)
    assert {
        "inter_region_mtu",
        ".storage.node_count",
        "spokes[].portal.mode",
        "ops.throughput_floor_fraction",
    } <= set(checked)


def test_the_smallest_file_the_readme_shows_is_valid(tmp_path: Path) -> None:
    """README "Configuration" shows the smallest valid file: a new user copies it, so it must pass validation."""
    from hubspoke.config import load

    readme = (ROOT / "README.md").read_text()
    start = readme.index("```yaml", readme.index("\n## Configuration\n")) + len("```yaml\n")
    block = readme[start : readme.index("```\n", start)]
    path = tmp_path / "env.yaml"
    path.write_text(block)
    assert load(path).config.environment == "dev"


def _number(text: str) -> float:
    return float(text.rstrip(",").replace(",", ""))


def test_a_range_a_description_states_is_the_fields_own() -> None:
    """A description that states the field's range ("30 to 55") restates its Field(ge=..., le=...) bounds for the
    reader: when a bound changes, the words must follow (a range starting elsewhere is another fact, e.g. gp3's
    IOPS within the field's EBS-wide bounds)."""
    stated = []
    for model in {m for m in vars(schema).values() if inspect.isclass(m) and issubclass(m, schema.Model)}:
        if model is schema.Model:
            continue
        properties = model.model_json_schema(mode="validation")["properties"]
        for name, field in model.model_fields.items():
            prop = properties[name]
            alternatives = [prop, *prop.get("anyOf", [])]
            low = next((p["minimum"] for p in alternatives if "minimum" in p), None)
            high = next((p["maximum"] for p in alternatives if "maximum" in p), None)
            for start, end in re.findall(r"(\d[\d,]*) to (\d[\d,]*)", field.description or ""):
                if low is not None and _number(start) == low:
                    stated.append(f"{model.__name__}.{name}")
                    assert _number(end) == high, f"{model.__name__}.{name}: '{start} to {end}' but le={high}"
    assert {
        "StorageConfig.formation_timeout_minutes",
        "VolumeSetConfig.size_gib",
        "InstanceGroupConfig.count",
    } <= set(stated)
