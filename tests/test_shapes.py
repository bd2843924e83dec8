"""The topology shapes (tests/shapes.py) stay valid and, with config/dev.yaml, cover what every invariant
must be run over (issue 11): a shape that loses its cross-account spoke or its secondary CIDRs fails here,
not silently in the invariants that stop exercising them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubspoke.config import ConfigError, HubSpokeConfig, load
from tests.conftest import ROOT, minimal, write_config
from tests.shapes import SHAPES


def configs(tmp_path: Path) -> dict[str, HubSpokeConfig]:
    found = {"dev": load(ROOT / "config" / "dev.yaml")}
    found |= {name: load(write_config(tmp_path, data, f"{name}.yaml")) for name, data in SHAPES.items()}
    assert all(not loaded.warnings for loaded in found.values()), "a shape must load without warnings"
    return {name: loaded.config for name, loaded in found.items()}


def test_shapes_load_and_cover_the_topologies_the_invariants_need(tmp_path: Path) -> None:
    shapes = configs(tmp_path)
    regions = [(c, r) for c in shapes.values() for r in c.regions()]
    assert any(len(c.spokes) >= 3 for c in shapes.values()), "several spokes"
    cross = [(c, s) for c in shapes.values() for s in c.spokes if c.account_of(s) != c.account_of(c.hub)]
    assert cross, "a spoke in another account"
    assert any(s.secondary_cidrs for _, s in cross), "a cross-account spoke with a secondary CIDR"
    assert any(c.hub.secondary_cidrs for c in shapes.values()), "secondary CIDRs on a hub"
    assert any(s.secondary_cidrs for c in shapes.values() for s in c.spokes), "secondary CIDRs on a spoke"
    assert {r.nat for _, r in regions} == {"single", "per_az", "none"}, "each NAT mode"
    assert any(r.storage.enabled and not r.compute.enabled for _, r in regions), "storage without compute"
    assert any(not r.storage.enabled and not r.compute.enabled for _, r in regions), "a network-only Region"
    assert any(r.storage.enabled and r.compute.enabled for _, r in regions), "storage with compute"
    assert len({c.environment for c in shapes.values()}) == len(shapes), "distinct stack names per shape"


def test_compute_without_storage_is_refused_so_no_shape_can_have_it(tmp_path: Path) -> None:
    """The reverse of storage-without-compute: the PVs mount the Region's own CNQ (docs/configuration.md, `.compute`)."""
    data = minimal()
    data["spokes"][0]["storage"] = {"enabled": False}
    with pytest.raises(ConfigError) as caught:
        load(write_config(tmp_path, data))
    assert "spokes[0].compute: compute mounts the dataset from this Region's own CNQ" in str(caught.value)
