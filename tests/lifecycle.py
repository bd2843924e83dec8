"""A model of what CloudFormation does to an account across creates, failed creates, updates, rollbacks and deletes,
over synthesized templates (test support: pure Python over JSON, no AWS).

What it follows, by source:
- Names (CloudFormation User Guide, "Name type"): a resource's custom name is the property tests/cfn_schemas.py
  finds in the registry schema cfn-lint bundles; without it CloudFormation generates a unique physical ID per
  create. A name is taken while any resource holds it, one kept after its stack is gone included; creating
  another fails ("already exists"). Scope: the Region, except IAM (a global service: names are unique in the
  account, IAM User Guide "IAM object quotas and identifiers") and S3 buckets (unique across all accounts and
  Regions of a partition, S3 User Guide "General purpose bucket naming rules").
- DeletionPolicy (User Guide, "DeletionPolicy attribute"): Delete and Snapshot remove the resource (Snapshot
  keeps a backup, which holds no name); Retain keeps it, on stack delete, on removal by an update, and when the
  operation that created it rolls back; RetainExceptOnCreate keeps it except when the operation that created it
  rolls back. Default Delete.
- UpdateReplacePolicy (User Guide, "UpdateReplacePolicy attribute"): what happens to the old physical resource
  when an update replaces it: Delete (default), Retain, Snapshot.
- Replacement (User Guide, "Update behaviors of stack resources"): a change to a property whose update requires
  replacement (the schema's createOnlyProperties, nested ones included) creates a new resource, then removes the old one in the
  cleanup phase; with a custom name that did not change, CloudFormation cannot replace it and the update fails
  (User Guide, "Name type": "If you specify a name, you cannot perform updates that require replacement").
  Values are compared resolved, so replacing a resource replaces those whose create-only properties use it.
- Rollback (User Guide, "Update behaviors" and "Stack failure options"): a failed create deletes what it
  created (by DeletionPolicy) and leaves the stack in ROLLBACK_COMPLETE; a failed update deletes what it created,
  returns updated resources to the previous template, and skips the cleanup phase (nothing removed yet).
- `cdk deploy` of a stack that failed creation deletes it first, then creates it (aws-cdk 2.1148.1,
  node_modules/aws-cdk/lib/index.js: "Found existing stack ... that had previously failed creation. Deleting it
  before attempting to re-create it.").
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.cfn_schemas import create_only_paths, name_property

ACCOUNT = "123456789012"
KEEP_ON_DELETE = {"Retain", "RetainExceptOnCreate"}
_SUB_REF = re.compile(r"\$\{([A-Za-z0-9:._]+)\}")
_ids = itertools.count(1)


class StackFailed(Exception):
    """A stack operation CloudFormation would fail, with the resource and its reason."""

    def __init__(self, stack: str, logical_id: str, reason: str) -> None:
        super().__init__(f"{stack}/{logical_id}: {reason}")
        self.stack, self.logical_id, self.reason = stack, logical_id, reason


class InjectedFailure(StackFailed):
    """The failure a replay asked for (capacity, a timeout): what the rollback starts from."""


@dataclass
class Physical:
    """One physical resource in the account: its name (if it holds one) and its resolved create-only values."""

    type: str
    physical_id: str
    name_key: tuple[str, str, str] | None
    fixed: Any
    deletion: str
    replace_policy: str


@dataclass
class Stack:
    name: str
    region: str
    template: Mapping[str, Any]
    stack_id: str
    resources: dict[str, Physical] = field(default_factory=dict)
    status: str = "CREATE_COMPLETE"


def _at(value: Any, path: tuple[str, ...]) -> Any:
    """The value at a schema path below Properties; "*" maps over a list; None where it is absent."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if head == "*":
        return [_at(v, rest) for v in value] if isinstance(value, list) else None
    return _at(value.get(head), rest) if isinstance(value, Mapping) else None


def _scope(resource_type: str, region: str) -> str:
    if resource_type.startswith("AWS::IAM::"):
        return "account"
    return "partition" if resource_type == "AWS::S3::Bucket" else region


def dependencies(res: Mapping[str, Any], logical_ids: Iterable[str]) -> set[str]:
    """The logical IDs a resource waits for: DependsOn, Ref, Fn::GetAtt and Fn::Sub's ${...}."""
    ids = set(logical_ids)
    found: set[str] = set()
    depends = res.get("DependsOn", [])
    found.update([depends] if isinstance(depends, str) else depends)

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            if isinstance(value.get("Ref"), str):
                found.add(value["Ref"])
            if "Fn::GetAtt" in value:
                target = value["Fn::GetAtt"]
                found.add(target[0] if isinstance(target, list) else str(target).split(".")[0])
            if "Fn::Sub" in value:
                text = value["Fn::Sub"][0] if isinstance(value["Fn::Sub"], list) else value["Fn::Sub"]
                found.update(m.split(".")[0] for m in _SUB_REF.findall(str(text)))
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(res.get("Properties", {}))
    return found & ids


def creation_order(template: Mapping[str, Any]) -> list[str]:
    """The resources in an order CloudFormation may create them (each after what it depends on)."""
    resources = template.get("Resources", {})
    deps = {lid: dependencies(res, resources) for lid, res in resources.items()}
    order: list[str] = []
    done: set[str] = set()

    def visit(lid: str, path: tuple[str, ...]) -> None:
        assert lid not in path, f"dependency cycle: {(*path, lid)}"
        if lid not in done:
            for dep in sorted(deps[lid]):
                visit(dep, (*path, lid))
            done.add(lid)
            order.append(lid)

    for lid in resources:
        visit(lid, ())
    return order


class Account:
    """One AWS account: its stacks, every physical name taken, and what stacks kept after letting go of it."""

    def __init__(self, account_id: str = ACCOUNT) -> None:
        self.account_id = account_id
        self.stacks: dict[tuple[str, str], Stack] = {}
        self.names: dict[tuple[str, str, str], str] = {}
        self.kept: list[Physical] = []

    # Resolving a template's values as CloudFormation would for this stack (enough for names and comparisons).
    def _resolve(self, value: Any, stack: Stack, physical: Mapping[str, Physical]) -> Any:
        if isinstance(value, list):
            return [self._resolve(v, stack, physical) for v in value]
        if not isinstance(value, Mapping):
            return value
        if len(value) != 1:
            return {k: self._resolve(v, stack, physical) for k, v in value.items()}
        [(fn, arg)] = value.items()
        if fn == "Ref":
            return self._ref(str(arg), stack, physical)
        if fn == "Fn::GetAtt":
            lid, attr = arg if isinstance(arg, list) else str(arg).split(".", 1)
            target = self._ref(lid, stack, physical)
            if attr == "Arn":
                return f"arn:aws:svc:{stack.region}:{self.account_id}:{target}"
            return f"{target}.{attr}"
        args = self._resolve(arg, stack, physical)
        if fn == "Fn::Join":
            return str(args[0]).join(str(a) for a in args[1])
        if fn == "Fn::Select":
            items = args[1]
            return (
                items[int(args[0])] if isinstance(items, list) and int(args[0]) < len(items) else repr(args)
            )
        if fn == "Fn::Split":
            return str(args[1]).split(str(args[0]))
        if fn == "Fn::Sub":
            text, names = (arg[0], arg[1]) if isinstance(arg, list) else (arg, {})
            local = {k: self._resolve(v, stack, physical) for k, v in names.items()}

            def one(match: re.Match[str]) -> str:
                ref = match.group(1)
                if ref in local:
                    return str(local[ref])
                if "." in ref and not ref.startswith("AWS::"):
                    lid, attr = ref.split(".", 1)
                    return str(self._resolve({"Fn::GetAtt": [lid, attr]}, stack, physical))
                return str(self._ref(ref, stack, physical))

            return _SUB_REF.sub(one, str(text))
        if fn == "Fn::Base64":
            return args
        # Cross-stack reads, conditions, mappings: the same on every create of this stack.
        return {fn: args}

    def _ref(self, target: str, stack: Stack, physical: Mapping[str, Physical]) -> Any:
        pseudo = {
            "AWS::AccountId": self.account_id,
            "AWS::Region": stack.region,
            "AWS::StackName": stack.name,
            "AWS::StackId": stack.stack_id,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": None,
        }
        if target in pseudo:
            return pseudo[target]
        if target in physical:
            return physical[target].physical_id
        if target in stack.template.get("Resources", {}):
            raise AssertionError(f"{stack.name}: {target} is referenced before it exists")
        return stack.template.get("Parameters", {}).get(target, {}).get("Default", f"<parameter {target}>")

    # Single resources.
    def _create(self, stack: Stack, lid: str, physical: dict[str, Physical]) -> Physical:
        res = stack.template["Resources"][lid]
        kind = res["Type"]
        props = res.get("Properties", {})
        prop = name_property(kind)
        name_key = None
        if prop and props.get(prop) is not None:
            name = str(self._resolve(props[prop], stack, physical))
            name_key = (_scope(kind, stack.region), kind, name)
            if name_key in self.names:
                raise StackFailed(stack.name, lid, f"{kind} {name} already exists ({self.names[name_key]})")
            physical_id = name
        else:
            physical_id = f"{stack.name}-{lid}-{next(_ids):012x}".lower()
        made = Physical(
            kind,
            physical_id,
            name_key,
            self._fixed(res, stack, physical),
            res.get("DeletionPolicy", "Delete"),
            res.get("UpdateReplacePolicy", "Delete"),
        )
        if name_key:
            self.names[name_key] = f"held by {stack.name}/{lid}"
        physical[lid] = made
        return made

    def _fixed(self, res: Mapping[str, Any], stack: Stack, physical: Mapping[str, Physical]) -> Any:
        """The resolved values of the resource's create-only properties: a change to any replaces it."""
        props = res.get("Properties", {})
        values = {"/".join(path): _at(props, path) for path in create_only_paths(res["Type"])}
        present = {k: self._resolve(v, stack, physical) for k, v in values.items() if v is not None}
        return json.dumps(present, sort_keys=True, default=str)

    def _let_go(self, made: Physical, policy: str, where: str) -> None:
        """Delete a physical resource (its name is free again), or keep it outside any stack."""
        if policy in ("Retain", "RetainExceptOnCreate"):
            self.kept.append(made)
            if made.name_key:
                self.names[made.name_key] = f"kept by {where}"
        elif made.name_key:
            self.names.pop(made.name_key, None)

    # Stack operations.
    def deploy(
        self, region: str, name: str, template: Mapping[str, Any], *, fail_at: str | None = None
    ) -> Stack:
        """What `cdk deploy` does: create the stack, or update it; a stack that failed creation is deleted first."""
        stack = self.stacks.get((region, name))
        if stack is not None and stack.status == "ROLLBACK_COMPLETE":
            self.delete(region, name)
            stack = None
        if stack is None:
            return self.create(region, name, template, fail_at=fail_at)
        return self.update(region, name, template, fail_at=fail_at)

    def create(
        self, region: str, name: str, template: Mapping[str, Any], *, fail_at: str | None = None
    ) -> Stack:
        uuid = f"{next(_ids):08x}-0000-4000-8000-{next(_ids):012x}"
        stack_id = f"arn:aws:cloudformation:{region}:{self.account_id}:stack/{name}/{uuid}"
        stack = Stack(name, region, template, stack_id, status="CREATE_IN_PROGRESS")
        self.stacks[(region, name)] = stack
        created: list[str] = []
        try:
            for lid in creation_order(template):
                if lid == fail_at:
                    raise InjectedFailure(name, lid, "injected failure")
                self._create(stack, lid, stack.resources)
                created.append(lid)
        except StackFailed:
            # Rollback of the operation that created them: RetainExceptOnCreate deletes, Retain keeps.
            for lid in reversed(created):
                made = stack.resources.pop(lid)
                policy = "Delete" if made.deletion == "RetainExceptOnCreate" else made.deletion
                self._let_go(made, policy, f"the rolled-back create of {name}")
            stack.status = "ROLLBACK_COMPLETE"
            raise
        stack.status = "CREATE_COMPLETE"
        return stack

    def update(
        self, region: str, name: str, template: Mapping[str, Any], *, fail_at: str | None = None
    ) -> Stack:
        stack = self.stacks[(region, name)]
        before = dict(stack.resources)
        now: dict[str, Physical] = {}
        new: list[str] = []
        replaced: list[Physical] = []
        draft = Stack(name, region, template, stack.stack_id)
        try:
            for lid in creation_order(template):
                if lid == fail_at:
                    raise InjectedFailure(name, lid, "injected failure")
                res = template["Resources"][lid]
                old = before.get(lid)
                if old is None:
                    self._create(draft, lid, now)
                    new.append(lid)
                    continue
                if old.type == res["Type"] and old.fixed == self._fixed(res, draft, now):
                    now[lid] = old  # updated in place (or unchanged): same physical resource
                    continue
                prop = name_property(res["Type"])
                given = res.get("Properties", {}).get(prop) if prop else None
                if given is not None and old.name_key and self._resolve(given, draft, now) == old.name_key[2]:
                    raise StackFailed(
                        name,
                        lid,
                        "CloudFormation cannot update a stack when a custom-named resource requires replacing",
                    )
                self._create(draft, lid, now)
                new.append(lid)
                replaced.append(old)
        except StackFailed:
            # Update rollback: what this update created goes (by DeletionPolicy, as a create's rollback); the
            # rest returns to the previous template; the cleanup phase never ran.
            for lid in reversed(new):
                made = now[lid]
                policy = "Delete" if made.deletion == "RetainExceptOnCreate" else made.deletion
                self._let_go(made, policy, f"the rolled-back update of {name}")
            stack.status = "UPDATE_ROLLBACK_COMPLETE"
            raise
        # Cleanup phase: replaced physicals by UpdateReplacePolicy, removed resources by DeletionPolicy.
        for old in replaced:
            self._let_go(old, old.replace_policy, f"the replacement in {name}")
        for lid, old in before.items():
            if lid not in now:
                self._let_go(old, old.deletion, f"the update of {name} that removed {lid}")
        stack.template, stack.resources, stack.status = template, now, "UPDATE_COMPLETE"
        return stack

    def delete(self, region: str, name: str) -> None:
        stack = self.stacks.pop((region, name))
        for lid in reversed(creation_order(stack.template)):
            if lid in stack.resources:
                made = stack.resources[lid]
                self._let_go(made, made.deletion, f"the deleted stack {name}")


def without_leaves(template: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The template minus the resources nothing else in it uses: a previous version an update adds them to."""
    resources = template["Resources"]
    used = set().union(*(dependencies(res, resources) for res in resources.values()))
    leaves = {lid for lid in resources if lid not in used and resources[lid]["Type"] != "AWS::CDK::Metadata"}
    smaller = {**template, "Resources": {k: v for k, v in resources.items() if k not in leaves}}
    smaller.pop("Outputs", None)
    return smaller, leaves
