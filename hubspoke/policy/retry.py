"""Rules for the deploy after the first: nothing a failed or deleted stack keeps blocks the next create, and no
template holds what EC2 refuses at launch.

Facts they rest on: Retain and RetainExceptOnCreate both keep a resource when its stack is deleted
(CloudFormation User Guide, "DeletionPolicy attribute"), and a kept custom name blocks the next create ("Name
type"; ECR: RepositoryAlreadyExistsException, botocore data/ecr/2015-09-21/service-2.json CreateRepository),
so kept resources go unnamed; "User data is limited to 16 KB, in raw form, before it is base64-encoded" (EC2
User Guide, "Work with instance user data").
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.model import PolicyRule, Template, Violation

# Resource type -> its custom-name property, derived from CloudFormation's registry schemas as cfn-lint 1.58.0
# bundles them (the primaryIdentifier where it is a settable create-only name, else the "Name type" pattern:
# tests/cfn_schemas.py derives it; tests/policy/test_retry.py keeps this copy equal to it).
PHYSICAL_NAMES: Mapping[str, str] = json.loads(Path(__file__).with_name("physical_names.json").read_text())
# The policies that keep a resource after its stack is gone (DeletionPolicy attribute page): Retain also keeps it
# when the create that made it rolls back, RetainExceptOnCreate only when the stack is deleted.
KEEPS_AFTER_DELETE = ("Retain", "RetainExceptOnCreate")
# Pseudo parameters whose value is the same for every create of the stack in one account and Region
# (CloudFormation User Guide, "Pseudo parameters reference"); AWS::StackId is new for each create.
_STABLE_PSEUDO = {"AWS::AccountId", "AWS::Region", "AWS::Partition", "AWS::URLSuffix", "AWS::StackName"}
# EC2 User Guide, "Work with instance user data": 16 KB in raw form; 16 x 1024 bytes, which the API's limit on
# the base64 text (21,847 characters, the error EC2 returns, quoted in kubicorn/kubicorn#667) matches.
USER_DATA_LIMIT = 16 * 1024


def _same_every_create(value: Any, resources: Mapping[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    """Whether a name evaluates to the same string on every create of the stack (a literal, a parameter, the
    account or Region), not to one that a new create changes (AWS::StackId, a generated name)."""
    if isinstance(value, list):
        return all(_same_every_create(v, resources, seen) for v in value)
    if not isinstance(value, Mapping):
        return True
    target = value.get("Ref")
    if target is None and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"][0]
    if isinstance(target, str):
        if target.startswith("AWS::"):
            return target in _STABLE_PSEUDO
        res = resources.get(target)
        if res is None:
            return True  # a parameter: the same value on a retry
        name = PHYSICAL_NAMES.get(res.get("Type", ""))
        given = res.get("Properties", {}).get(name) if name else None
        return (
            given is not None and target not in seen and _same_every_create(given, resources, seen | {target})
        )
    return all(_same_every_create(v, resources, seen) for v in value.values())


def fixed_name(res: Mapping[str, Any], resources: Mapping[str, Any]) -> str | None:
    """The custom-name property of a resource whose name is the same on every create, else None."""
    prop = PHYSICAL_NAMES.get(res.get("Type", ""))
    given = res.get("Properties", {}).get(prop) if prop else None
    return prop if given is not None and _same_every_create(given, resources) else None


def retained_resources_have_generated_names(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-RetainedFixedName: no resource a deleted stack keeps (Retain, RetainExceptOnCreate) has a name
    fixed across creates."""
    for t in templates:
        resources = t.body.get("Resources", {})
        for logical_id, res in resources.items():
            policy = res.get("DeletionPolicy")
            if policy not in KEEPS_AFTER_DELETE:
                continue
            prop = fixed_name(res, resources)
            if prop is None:
                continue
            yield Violation(
                "HubSpoke-RetainedFixedName",
                t.path,
                logical_id,
                f"{res['Type']} with a fixed {prop} and DeletionPolicy {policy}: "
                + (
                    "a create that rolls back keeps it, and so does deleting the stack"
                    if policy == "Retain"
                    else "deleting the stack keeps it"
                )
                + ", and every later create of the stack fails because the name already exists (CloudFormation "
                "User Guide, 'DeletionPolicy attribute' and 'Name type')",
                f"leave {prop} unset so CloudFormation generates one per create and publish it as an output: "
                "RetainExceptOnCreate alone does not help once the stack was deleted",
            )


def _raw_user_data(value: Any) -> bytes | None:
    """The bytes EC2 receives once it base64-decodes UserData; None when intrinsics leave the text unknown."""
    if isinstance(value, Mapping) and isinstance(value.get("Fn::Base64"), str):
        return str(value["Fn::Base64"]).encode()
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return value.encode()  # not base64: EC2 would refuse it anyway; count it as given
    return None


def _literal_bytes(value: Any) -> int:
    """Bytes of the literal text inside an intrinsic: a lower bound of the user data's size."""
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, list):
        return sum(_literal_bytes(v) for v in value)
    if isinstance(value, Mapping):
        return sum(_literal_bytes(v) for k, v in value.items() if k not in ("Ref", "Fn::GetAtt"))
    return 0


def user_data_within_ec2_limit(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-UserDataSize: no instance or launch template carries user data over EC2's 16 KB."""
    for t in templates:
        found = [(lid, props.get("UserData")) for lid, props in t.resources("AWS::EC2::Instance")]
        found += [
            (lid, props.get("LaunchTemplateData", {}).get("UserData"))
            for lid, props in t.resources("AWS::EC2::LaunchTemplate")
        ]
        for logical_id, user_data in found:
            if user_data is None:
                continue
            raw = _raw_user_data(user_data)
            size = len(raw) if raw is not None else _literal_bytes(user_data)
            if size > USER_DATA_LIMIT:
                yield Violation(
                    "HubSpoke-UserDataSize",
                    t.path,
                    logical_id,
                    f"user data of {size} bytes{'' if raw is not None else ' at least'}, over the "
                    f"{USER_DATA_LIMIT} EC2 accepts before base64 (EC2 User Guide, 'Work with instance user "
                    "data'): the instance is refused at launch and the stack rolls back",
                    "move the bulk of the script to S3 (or an SSM document) and fetch it from a short user data",
                )


RETRY_RULES: tuple[PolicyRule, ...] = (retained_resources_have_generated_names, user_data_within_ec2_limit)
