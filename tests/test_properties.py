"""Random topologies of 1 to 10 spokes: validation rejects the config with a message, or synth holds every invariant.

Storage and compute are switched off here so each example synthesizes in seconds; their own invariants are
tested on config/dev.yaml and their own fixtures.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from hubspoke.config import ConfigError, load
from hubspoke.policy.rules import Template, check
from hubspoke.regions import REGIONS
from tests.conftest import synth, write_config

CODES = sorted(REGIONS)


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(min_value=1, max_value=10))
    # Half the examples are drawn well-formed (distinct Regions, disjoint /16s) so synth runs often;
    # the rest draw freely, so overlaps, duplicate Regions and bad prefixes happen often too.
    if draw(st.booleans()):
        codes = draw(st.lists(st.sampled_from(CODES), min_size=n + 1, max_size=n + 1, unique=True))
        octets = draw(
            st.lists(st.integers(min_value=0, max_value=250), min_size=n + 1, max_size=n + 1, unique=True)
        )
        prefixes = [16] * (n + 1)
    else:
        codes = draw(st.lists(st.sampled_from(CODES), min_size=n + 1, max_size=n + 1))
        octets = draw(st.lists(st.integers(min_value=0, max_value=40), min_size=n + 1, max_size=n + 1))
        prefixes = draw(st.lists(st.sampled_from([15, 16, 18, 20, 22]), min_size=n + 1, max_size=n + 1))
    off = {"storage": {"enabled": False}, "compute": {"enabled": False}}

    def region(i: int) -> dict[str, Any]:
        net = ipaddress.IPv4Network((f"10.{octets[i]}.0.0", prefixes[i]), strict=False)
        return {"region": codes[i], "cidr": str(net), **off}

    return {
        "environment": f"prop{draw(st.integers(min_value=0, max_value=999))}",
        "account": "123456789012",
        "hub": region(0),
        "spokes": [region(i) for i in range(1, n + 1)],
    }


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topologies())
def test_reject_or_synth_with_invariants(tmp_path_factory: Any, data: dict[str, Any]) -> None:
    path = write_config(Path(tmp_path_factory.mktemp("prop")), data)
    try:
        config = load(path).config
    except ConfigError as exc:
        assert exc.lines and all(line.startswith(f"{path}: ") for line in exc.lines)
        event("rejected")
        return
    event("synthesized")
    templates = synth(config)
    violations = check([Template(sid, t) for sid, t in templates.items()], config)
    assert not violations
    peerings = sum(
        1
        for t in templates.values()
        for r in t["Resources"].values()
        if r["Type"] == "AWS::EC2::VPCPeeringConnection"
    )
    assert peerings == len(config.spokes)
    assert {sid for sid in templates if sid.startswith("link-")} == {
        f"link-{s.region}" for s in config.spokes
    }
