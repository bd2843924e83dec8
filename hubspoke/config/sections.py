"""The config as the cross-field rules read it (typed by the schema, a refused part absent), and a rule's Problem.

A file the schema accepts is its HubSpokeConfig, seen whole. A file it refuses is still checked: each top-level
field the rules read, and each field of the hub and of every spoke (its `storage`, `compute` and `quotas`
sections as wholes, the items of its `secondary_cidrs` and `az_ids` one by one), is validated on its own, and a
part the schema refuses is absent (None) to the rules, so a rule skips what it cannot read while every other rule
runs: the user sees every problem in one run. An omitted key is the schema's own default (the model supplies
it); no rule re-derives one.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from hubspoke.config.schema import (
    AzId,
    ComputeConfig,
    DatasetConfig,
    HubConfig,
    HubSpokeConfig,
    Model,
    OpsConfig,
    QuotasConfig,
    RegionConfig,
    SecondaryCidr,
    SpokeConfig,
    StorageConfig,
    effective_account,
)


@dataclass(frozen=True)
class Problem:
    """One finding about a config file: where it is, what is wrong, and how to fix it."""

    field: str
    message: str
    severity: str = "error"


@dataclass(frozen=True)
class RegionView:
    """The hub or one spoke as the rules read it: each field typed, or None where the schema refused it."""

    path: str  # "hub" or "spokes[<i>]", the prefix of every field a rule names in it
    region: str | None = None
    cidr: str | None = None
    account: str | None = None
    # A list the schema refuses keeps the items it accepts in place (None for the others), so their indices
    # stay the ones in the file.
    secondary_cidrs: Sequence[str | None] = ()
    az_ids: Sequence[str | None] | None = None
    accelerator_az_id: str | None = None
    nat: Literal["single", "per_az", "none"] | None = None
    storage: StorageConfig | None = None
    compute: ComputeConfig | None = None
    quotas: QuotasConfig | None = None

    @property
    def is_hub(self) -> bool:
        return self.path == "hub"

    @property
    def compute_on(self) -> ComputeConfig | None:
        """The compute section when the schema accepted it and it is enabled, else None."""
        return self.compute if self.compute is not None and self.compute.enabled else None

    @property
    def storage_on(self) -> StorageConfig | None:
        """The storage section when the schema accepted it and it is enabled, else None."""
        return self.storage if self.storage is not None and self.storage.enabled else None

    def cidr_fields(self) -> list[tuple[str, ipaddress.IPv4Network]]:
        """The VPC blocks the schema accepted, with the field each sits in (`<path>.cidr`,
        `<path>.secondary_cidrs[i]`), primary first."""
        fields: list[tuple[str, str | None]] = [(f"{self.path}.cidr", self.cidr)]
        fields += [(f"{self.path}.secondary_cidrs[{i}]", c) for i, c in enumerate(self.secondary_cidrs)]
        return [(field, ipaddress.IPv4Network(value)) for field, value in fields if value is not None]

    def vpc_cidrs(self) -> list[str]:
        """The VPC blocks the schema accepted, primary first."""
        return [str(block) for _, block in self.cidr_fields()]


@dataclass(frozen=True)
class ConfigView:
    """A config file as the rules read it: the environment's account, its Regions and its ops section."""

    account: str | None = None
    hub: RegionView | None = None
    spokes: tuple[RegionView, ...] = ()
    # How many entries `spokes` lists, a refused one included (the hub peers with each).
    spoke_count: int = 0
    ops: OpsConfig | None = None
    dataset: DatasetConfig | None = None

    def regions(self) -> Iterator[RegionView]:
        """The hub first (when the schema accepted its shape), then every spoke in config order."""
        if self.hub is not None:
            yield self.hub
        yield from self.spokes

    def account_of(self, region: RegionView) -> str | None:
        account: str | None = effective_account(region.account, self.account)
        return account


Rule = Callable[[ConfigView], Iterator[Problem]]

_REGION_FIELDS = tuple(f for f in RegionView.__dataclass_fields__ if f != "path")


def view(config: HubSpokeConfig) -> ConfigView:
    """A valid config as the rules read it: every part present."""

    def region(path: str, cfg: RegionConfig) -> RegionView:
        return RegionView(path, **{name: getattr(cfg, name) for name in _REGION_FIELDS})

    return ConfigView(
        account=config.account,
        hub=region("hub", config.hub),
        spokes=tuple(region(f"spokes[{i}]", s) for i, s in enumerate(config.spokes)),
        spoke_count=len(config.spokes),
        ops=config.ops,
        dataset=config.dataset,
    )


def partial_view(data: Mapping[str, Any]) -> ConfigView:
    """A file's YAML mapping as the rules read it, each part validated on its own; refused parts are absent.

    The schema's own errors are the loader's to report (it validates the whole file); here they only decide
    what is absent.
    """
    top = _valid_fields(HubSpokeConfig, data, ("account", "ops", "dataset"))
    spokes = data.get("spokes")
    return ConfigView(
        account=top.get("account"),
        hub=_region_view("hub", data.get("hub"), HubConfig),
        spokes=tuple(
            region
            for i, item in enumerate(spokes if isinstance(spokes, list) else [])
            if (region := _region_view(f"spokes[{i}]", item, SpokeConfig)) is not None
        ),
        spoke_count=len(spokes) if isinstance(spokes, list) else 0,
        ops=top.get("ops"),
        dataset=top.get("dataset"),
    )


# Lists whose items the rules read one by one, with the schema's type of an item.
_ITEMS: dict[str, TypeAdapter[str]] = {
    name: TypeAdapter(item, config=ConfigDict(strict=True))
    for name, item in (("secondary_cidrs", SecondaryCidr), ("az_ids", AzId))
}


def _region_view(path: str, value: Any, model: type[RegionConfig]) -> RegionView | None:
    if not isinstance(value, Mapping):
        return None
    fields = _valid_fields(model, value, _REGION_FIELDS)
    for name, item in _ITEMS.items():
        if name not in fields and isinstance(value.get(name), list):
            fields[name] = [_valid_item(item, v) for v in value[name]]
    return RegionView(path, **fields)


def _valid_item(adapter: TypeAdapter[str], value: Any) -> str | None:
    try:
        return adapter.validate_python(value)
    except ValidationError:
        return None


def _valid_fields(model: type[BaseModel], data: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The fields `names` of `model`, each validated alone: its typed value (the schema's default when the key
    is omitted), left out where the schema refuses it."""
    out: dict[str, Any] = {}
    for name in names:
        try:
            parsed = _alone(model, name).model_validate({name: data[name]} if name in data else {})
        except ValidationError:
            continue
        out[name] = getattr(parsed, name)
    return out


@functools.cache
def _alone(model: type[BaseModel], name: str) -> type[BaseModel]:
    """A model of the one field `name` of `model`, with its type, constraints, validators and default."""
    field = model.model_fields[name]
    one: type[BaseModel] = create_model(
        f"{model.__name__}_{name}", __base__=Model, **{name: (field.annotation, field)}
    )  # type: ignore[call-overload]
    return one
