"""Rules about the portal between a spoke's CNQ and the hub's. Same conventions as rules.py (raw YAML mapping
in, one Problem per finding); kept apart so rules.py can be split without this one moving."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.rules import Problem, Rule, _enabled, _regions, _section


def spoke_storage_needs_hub_storage(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """A spoke's CNQ caches the hub's through a portal (DESIGN.md §1): without a hub cluster it has nothing to
    cache, and synth would have no hub Storage stack to read the portal's addresses from."""
    if _enabled(_section(_section(raw, "hub"), "storage")):
        return
    for path, region in _regions(raw):
        if path != "hub" and _enabled(_section(region, "storage")):
            yield Problem(
                f"{path}.storage",
                "a CNQ spoke caches the hub's CNQ through a portal, but hub.storage.enabled is false: enable "
                "storage in the hub, or set storage.enabled: false and compute.enabled: false here to peer "
                "the network only",
            )


RULES: tuple[Rule, ...] = (spoke_storage_needs_hub_storage,)


def check(raw: Mapping[str, Any]) -> list[Problem]:
    return [problem for rule in RULES for problem in rule(raw)]
