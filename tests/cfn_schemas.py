"""What CloudFormation's resource schemas say about each type, read from the ones cfn-lint bundles (test support).

Source: cfn-lint 1.58.0 (pinned in pyproject.toml), cfnlint/data/schemas/providers/us-east-1.json (resource type ->
schema file) and cfnlint/data/schemas/resources/<file>.json: the CloudFormation registry schemas, whose
`createOnlyProperties` are the properties whose change requires replacement (CloudFormation CLI, "Resource type
schema": "createOnlyProperties: ... a property that can only be specified on create; changing it causes the
resource to be replaced") and `readOnlyProperties` those CloudFormation sets itself.

Regenerate hubspoke/policy/physical_names.json after a cfn-lint bump:
`.venv/bin/python -m tests.cfn_schemas > hubspoke/policy/physical_names.json`.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

# cfn-lint's package folder, found without importing cfn-lint (half a second at every xdist worker's collection).
_CFNLINT = importlib.util.find_spec("cfnlint")
assert _CFNLINT and _CFNLINT.origin, "cfn-lint is not installed (`make setup`)"
SCHEMAS = Path(_CFNLINT.origin).parent / "data" / "schemas"
# us-east-1 lists the most resource types of the bundled providers.
PROVIDER = SCHEMAS / "providers" / "us-east-1.json"
# CloudFormation User Guide, "Name type": a resource's custom name is its `Name` property or the one named after
# its type (BucketName, RepositoryName, RoleName, DBInstanceIdentifier...); if you don't give one, CloudFormation
# generates a unique physical ID. The schemas do not flag that property, so it is the create-only, settable,
# plain-string top-level property called Name, or <X>Name / <X>Identifier where the type's own name ends in X
# (AWS::EC2::SecurityGroup GroupName, AWS::CloudWatch::CompositeAlarm AlarmName): a ClusterName on an
# AWS::EKS::Addon names its cluster, not the add-on.
_SUFFIXES = ("Name", "Identifier")


@functools.cache
def schema(resource_type: str) -> dict[str, Any] | None:
    """The registry schema of a resource type, None for types without one (Custom::, AWS::CDK::Metadata)."""
    files = json.loads(PROVIDER.read_text())
    name = files.get(resource_type)
    return None if name is None else dict(json.loads((SCHEMAS / "resources" / f"{name}.json").read_text()))


def _top_level(pointers: list[str]) -> set[str]:
    return {p.split("/")[2] for p in pointers if p.count("/") == 2 and p.startswith("/properties/")}


def create_only(resource_type: str) -> frozenset[str]:
    """Top-level properties whose change replaces the resource ("Update requires: Replacement")."""
    found = schema(resource_type)
    return frozenset(_top_level(found.get("createOnlyProperties", []))) if found else frozenset()


@functools.cache
def create_only_paths(resource_type: str) -> tuple[tuple[str, ...], ...]:
    """Every create-only property as a path below Properties, nested ones included ("*": each list item)."""
    found = schema(resource_type)
    pointers = found.get("createOnlyProperties", []) if found else []
    return tuple(tuple(p.split("/")[2:]) for p in sorted(pointers) if p.startswith("/properties/"))


def _is_string(found: dict[str, Any], shape: dict[str, Any]) -> bool:
    """Whether a property's shape is a plain string, following a local `$ref` into the schema's definitions."""
    ref = shape.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        shape = found.get("definitions", {}).get(ref.removeprefix("#/definitions/"), {})
        return "$ref" not in shape and shape.get("type", "string") == "string"
    return ref is None and shape.get("type", "string") == "string"


@functools.cache
def name_property(resource_type: str) -> str | None:
    """The property that gives a resource of this type a custom physical name, None when it has none.

    First the schema's own word: a `primaryIdentifier` of one settable, create-only string property called
    <X>Name or <X>Identifier (CloudFormation CLI, "Resource type schema": primaryIdentifier "uniquely identifies
    an instance of this resource type"), which finds AWS::EC2::KeyPair KeyName and AWS::Backup::BackupVault
    BackupVaultName; then the "Name type" pattern above for types identified by a generated ID or ARN.
    """
    found = schema(resource_type)
    if found is None:
        return None
    own = resource_type.split("::")[-1]
    settable = create_only(resource_type) - _top_level(found.get("readOnlyProperties", []))
    strings = {p for p in settable if _is_string(found, found["properties"].get(p, {}))}
    identifier = _top_level(found.get("primaryIdentifier", []))
    if len(found.get("primaryIdentifier", [])) == len(identifier) == 1 and identifier <= strings:
        (prop,) = identifier
        if prop.endswith(_SUFFIXES):
            return prop
    for prop in sorted(strings):
        stem = next((prop[: -len(s)] for s in _SUFFIXES if prop.endswith(s)), None)
        if stem is not None and own.endswith(stem):
            return prop
    return None


def physical_names() -> dict[str, str]:
    """Every AWS resource type with a custom-name property -> that property."""
    types = json.loads(PROVIDER.read_text())
    found = {t: name_property(t) for t in sorted(types) if t.startswith("AWS::")}
    return {t: p for t, p in found.items() if p}


if __name__ == "__main__":
    print(json.dumps(physical_names(), indent=1, sort_keys=True))
