"""What every rule of our pack reads and returns: a synthesized template, a violation, the rule's signature."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hubspoke.config.schema import HubSpokeConfig

# Every template we emit carries this metadata (stage.py) so rules know which stack they read.
METADATA_KEY = "hubspoke"


@dataclass(frozen=True)
class Template:
    """One synthesized stack template and what stage.py recorded about it."""

    path: str
    body: Mapping[str, Any]

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.body.get("Metadata", {}).get(METADATA_KEY, {})

    def resources(self, kind: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for logical_id, res in self.body.get("Resources", {}).items():
            if res.get("Type") == kind:
                yield logical_id, res.get("Properties", {})


@dataclass(frozen=True)
class Violation:
    """A rule broken by one resource, with the fix."""

    rule: str
    template: str
    logical_id: str
    message: str
    fix: str


PolicyRule = Callable[[list[Template], HubSpokeConfig], Iterator[Violation]]


def referenced(value: Any) -> Any:
    """The logical ID a Ref or Fn::GetAtt points to, else None."""
    if isinstance(value, Mapping) and "Ref" in value:
        return value["Ref"]
    if isinstance(value, Mapping) and "Fn::GetAtt" in value:
        return value["Fn::GetAtt"][0]
    return None


def ingress(template: Template) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every security-group ingress rule of a template with its resource's logical ID, standalone or inline."""
    yield from template.resources("AWS::EC2::SecurityGroupIngress")
    for logical_id, props in template.resources("AWS::EC2::SecurityGroup"):
        for rule in props.get("SecurityGroupIngress", []):
            yield logical_id, rule
