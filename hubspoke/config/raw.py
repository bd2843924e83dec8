"""The raw YAML as every config rule reads it, and the Problem a rule reports.

Rules read the raw YAML mapping, not the parsed model, so they still run when an unrelated field is
wrong: the user sees every problem in one run. A value the schema rejects reads as absent here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hubspoke.config.schema import StorageConfig


@dataclass(frozen=True)
class Problem:
    """One finding about a config file: where it is, what is wrong, and how to fix it."""

    field: str
    message: str
    severity: str = "error"


Rule = Callable[[Mapping[str, Any]], Iterator[Problem]]


def regions(raw: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(dotted path, mapping) of the hub and of every spoke that is a mapping."""
    hub = raw.get("hub")
    if isinstance(hub, Mapping):
        yield "hub", hub
    spokes = raw.get("spokes")
    if isinstance(spokes, list):
        for i, spoke in enumerate(spokes):
            if isinstance(spoke, Mapping):
                yield f"spokes[{i}]", spoke


def net(value: Any) -> ipaddress.IPv4Network | None:
    """An IPv4 block written as a CIDR, else None."""
    if not isinstance(value, str) or "/" not in value:
        return None
    try:
        block = ipaddress.ip_network(value)
    except ValueError:
        return None
    return block if isinstance(block, ipaddress.IPv4Network) else None


def section(region: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = region.get(name)
    return value if isinstance(value, Mapping) else {}


def default(model: type[BaseModel], field: str) -> Any:
    """The schema's default for `field`: rules read raw YAML, where an omitted key means that default."""
    return model.model_fields[field].default


def enabled(part: Mapping[str, Any]) -> bool:
    """Whether a storage or compute section is on; they share the default (on), a test keeps the two in step."""
    return part.get("enabled", default(StorageConfig, "enabled")) is not False


def cidr_fields(path: str, region: Mapping[str, Any]) -> list[tuple[str, ipaddress.IPv4Network]]:
    """A Region's valid VPC blocks with the field each sits in (`<path>.cidr`, `<path>.secondary_cidrs[i]`)."""
    secondary = region.get("secondary_cidrs")
    fields = [(f"{path}.cidr", region.get("cidr"))]
    fields += [
        (f"{path}.secondary_cidrs[{i}]", c)
        for i, c in enumerate(secondary if isinstance(secondary, list) else [])
    ]
    return [(field, block) for field, value in fields if (block := net(value)) is not None]


def vpc_cidrs(region: Mapping[str, Any]) -> list[str]:
    """A Region's valid VPC blocks, primary first."""
    return [str(block) for _, block in cidr_fields("", region)]
