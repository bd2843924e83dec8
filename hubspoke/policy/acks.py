"""The one way this project accepts a finding it does not fix: cdk-nag, Control Tower or checkov, always with a reason.

- cdk-nag (`AwsSolutions-IAM5`) and Control Tower (`CT.LAMBDA.PR.3`) findings are acknowledged through CDK's
  Validations API on the construct, which the policy-validation report honours for it and everything below it.
- checkov (`CKV_AWS_117`) reads `Metadata: checkov: skip: [{id, comment}]` on a template resource (checkov
  CloudFormation context parser); the acknowledgment writes that, with the reason as comment, on every resource
  of `resource_types` at or below the construct.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import jsii
from aws_cdk import Acknowledgment, Aspects, CfnResource, IAspect, Stack, Stage, Validations
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

NAG_PACK = "AwsSolutions"
MIN_REASON = 40  # a reason a reviewer can check, not "needed" or "ok"
# The Control Tower plugin's name, which prefixes its rules in acknowledgments (CfnGuardValidator.name).
CONTROL_TOWER_PLUGIN = "cdk-validator-cfnguard"
# Control Tower control IDs and the cfn-guard rule that implements each, as the plugin names its violations
# (cdklabs-cdk-validator-cfnguard 0.0.62, rules/control-tower/cfn-guard/<service>/ct-<control>.guard;
# tests/policy/test_acks.py checks every pair against those files).
CONTROL_TOWER_RULES: dict[str, str] = {
    "CT.CLOUDWATCH.PR.1": "cloudwatch_alarm_action_check",
    "CT.CLOUDWATCH.PR.3": "cloudwatch_log_group_encrypted_check",
    "CT.EC2.PR.16": "ec2_instance_nitro_instance_type_check",
    "CT.EC2.PR.19": "ec2_instance_nitro_encryption_in_transit_check",
    "CT.EKS.PR.1": "eks_endpoint_no_public_access_check",
    "CT.KMS.PR.3": "kms_create_grant_aws_service_check",
    "CT.LAMBDA.PR.3": "lambda_inside_vpc_check",
    "CT.S3.PR.2": "s3_bucket_logging_enabled_check",
    "CT.S3.PR.3": "s3_version_lifecycle_policy_check",
    "CT.S3.PR.4": "s3_event_notifications_enabled_check",
    "CT.S3.PR.6": "s3_lifecycle_policy_check",
    "CT.S3.PR.9": "s3_bucket_object_lock_enabled_check",
    "CT.S3.PR.10": "s3_bucket_default_encryption_kms_check",
    "CT.S3.PR.11": "s3_bucket_versioning_enabled_check",
}
CHECKOV_METADATA = "checkov"
_CHECKOV_ID = re.compile(r"^CKV2?_AWS_\d+$")


@dataclass(frozen=True)
class Accepted:
    """One acknowledgment as made: a row of docs/policy.md's generated table (tools/accepted_findings.py)."""

    rule: str
    reason: str
    path: str  # the construct path of the acknowledged scope
    source: str  # the file that acknowledged it, relative to the checkout: where the reason is written
    findings: tuple[str, ...] = ()
    resource_types: tuple[str, ...] = ()


_CHECKOUT = Path(__file__).resolve().parents[2]
# The lists open in `recorded()`, innermost last: each acknowledgment made meanwhile is appended to every one.
_RECORDING: list[list[Accepted]] = []


@contextmanager
def recorded() -> Iterator[list[Accepted]]:
    """Collect every acknowledgment made inside the block (a construct path costs a kernel call: only here)."""
    found: list[Accepted] = []
    _RECORDING.append(found)
    try:
        yield found
    finally:
        _RECORDING.remove(found)


def _record(
    scope: IConstruct, rule: str, reason: str, findings: list[str], resource_types: list[str]
) -> None:
    """Called by this module's public functions only, so their caller is two frames up."""
    if _RECORDING:
        caller = Path(sys._getframe(2).f_code.co_filename)
        source = str(caller.relative_to(_CHECKOUT)) if caller.is_relative_to(_CHECKOUT) else str(caller)
        made = Accepted(rule, reason, scope.node.path, source, tuple(findings), tuple(resource_types))
        for found in _RECORDING:
            found.append(made)


def acknowledge(
    scope: IConstruct,
    rule: str,
    *,
    reason: str,
    findings: Iterable[str] = (),
    resource_types: Iterable[str] = (),
) -> None:
    """Accept `rule` on `scope` and below: a cdk-nag rule (optionally only `findings`), a Control Tower control
    (e.g. "CT.LAMBDA.PR.3") or a checkov check (e.g. "CKV_AWS_116", on the resources of `resource_types`)."""
    if len(reason.strip()) < MIN_REASON:
        raise ValueError(f"acknowledgment of {rule} needs a reason a reviewer can check, got {reason!r}")
    findings, resource_types = list(findings), list(resource_types)
    _record(scope, rule, reason, findings, resource_types)
    if rule.startswith(f"{NAG_PACK}-") and not resource_types:
        ids = [f"{NAG_PACK}::{rule}[{f}]" for f in findings] or [f"{NAG_PACK}::{rule}"]
    elif rule in CONTROL_TOWER_RULES and not findings and not resource_types:
        ids = [f"{CONTROL_TOWER_PLUGIN}::{CONTROL_TOWER_RULES[rule]}"]
    elif _CHECKOV_ID.match(rule) and not findings and resource_types:
        _target(scope).skip(scope, rule, reason, frozenset(resource_types))
        return
    else:
        raise ValueError(
            f"cannot acknowledge {rule!r} with findings={findings} resource_types={resource_types}: use an "
            f"{NAG_PACK}- rule (with findings), a Control Tower control in CONTROL_TOWER_RULES, or a checkov ID "
            "with the resource_types it applies to"
        )
    acks = [Acknowledgment(id=i, reason=reason) for i in ids]
    if _BUILDING:
        _BUILDING[-1].defer(scope, acks)
    else:
        Validations.of(scope).acknowledge(*acks)


@jsii.implements(IAspect)
class _Acknowledgments:
    """Every acknowledgment of one Stage that can wait, applied in one pass over its constructs.

    One pass instead of one aspect per acknowledgment: each aspect visit is a call from the jsii kernel back into
    Python, and a dozen aspects over an environment's ~900 constructs were a third of synth. A Stage that builds
    all its constructs in its constructor (HubSpokeStage) does so inside `applied_at_end`: its acknowledgments are
    recorded in Python with no call into the kernel and applied once every construct exists, one Validations call
    per acknowledged construct (a bucket's three controls are one call, not six); any other Stage gets this
    object as its one aspect. The skips land in the order per-scope aspects gave them (CDK applies an ancestor's
    aspects before a descendant's, each scope's in the order added), so the templates do not change.
    """

    def __init__(self) -> None:
        # (scope, rule, reason, resource types), in the order acknowledged.
        self._skips: list[tuple[IConstruct, str, str, frozenset[str]]] = []
        self._lambda_scopes: list[IConstruct] = []
        # Control Tower and cdk-nag acknowledgments waiting for the end of the Stage's build, by construct.
        self._deferred: dict[int, tuple[IConstruct, list[Acknowledgment]]] = {}
        self._paths: dict[int, str] = {}
        self._walking = False
        # The path of the Stage being walked: an acknowledgment made on it covers every node of the walk.
        self._root: str | None = None
        self.applied = False

    def skip(self, scope: IConstruct, rule: str, reason: str, resource_types: frozenset[str]) -> None:
        self._refuse_late(scope)
        self._skips.append((scope, rule, reason, resource_types))

    def lambdas_in_vpc(self, scope: IConstruct) -> None:
        self._refuse_late(scope)
        self._lambda_scopes.append(scope)

    def defer(self, scope: IConstruct, acks: list[Acknowledgment]) -> None:
        self._refuse_late(scope)
        self._deferred.setdefault(id(scope), (scope, []))[1].extend(acks)

    def _refuse_late(self, scope: IConstruct) -> None:
        if self.applied:
            raise RuntimeError(f"{scope.node.path}: acknowledged after its Stage applied its acknowledgments")

    def _path(self, scope: IConstruct) -> str:
        # Two kernel calls per construct (node, path), asked once however many acknowledgments it has.
        if id(scope) not in self._paths:
            self._paths[id(scope)] = scope.node.path
        return self._paths[id(scope)]

    def visit(self, node: IConstruct) -> None:
        # isinstance and the L1 class's resource type are answered in Python; a resource costs calls into the
        # kernel only when an acknowledgment may apply to it.
        if not isinstance(node, CfnResource):
            return
        resource_type = _resource_type(node)
        function = isinstance(node, lambda_.CfnFunction) and bool(self._lambda_scopes)
        typed = [s for s in self._skips if not s[3] or resource_type in s[3]]
        if not typed and not function:
            return
        # The node's own path costs two kernel calls: asked only when an acknowledgment below the root needs it.
        path = None

        def covers(scope: IConstruct) -> bool:
            nonlocal path
            scope_path = self._path(scope)
            if scope_path == self._root:
                return True
            path = node.node.path if path is None else path
            return _below(path, scope_path)

        if function and any(covers(s) for s in self._lambda_scopes):
            vpc = Stack.of(node).resolve(node.vpc_config)  # type: ignore[attr-defined]
            if isinstance(vpc, dict) and vpc.get("subnetIds") and vpc.get("securityGroupIds"):
                ack = Acknowledgment(id=f"{CONTROL_TOWER_PLUGIN}::{CONTROL_TOWER_RULES['CT.LAMBDA.PR.3']}",
                                     reason=LAMBDA_IN_VPC)  # fmt: skip
                if self._walking:
                    self.defer(node, [ack])
                else:  # visited as an aspect: CDK is synthesizing, nothing would apply it later
                    Validations.of(node).acknowledge(ack)
        matching = [(self._path(s[0]), *s[1:]) for s in typed if covers(s[0])]
        if not matching:
            return
        # Ancestors' acknowledgments first, as CDK would have applied their aspects (stable sort); a later one
        # for the same check replaces an earlier one. One write of the result, not one per acknowledgment.
        matching.sort(key=lambda s: s[0].count("/") + bool(s[0]))
        # This module is the one writer of the key (CHECKOV_METADATA) and a walk visits each node once, so a walk
        # starts from nothing; an aspect may visit a node its Stage's walk already wrote, so it reads first.
        skips = [] if self._walking else list((node.get_metadata(CHECKOV_METADATA) or {}).get("skip", []))
        for _, rule, reason, _types in matching:
            skips = [s for s in skips if s.get("id") != rule] + [{"id": rule, "comment": reason}]
        node.add_metadata(CHECKOV_METADATA, {"skip": skips})

    def apply(self, stage: Stage) -> None:
        """Walk `stage` once, then hand CDK each construct's waiting acknowledgments in one call."""
        self._walking = True
        self._root = stage.node.path
        for node in stage.node.find_all():
            self.visit(node)
        for scope, acks in self._deferred.values():
            Validations.of(scope).acknowledge(*acks)
        self.applied = True


# The acknowledgments of the Stage being built inside `applied_at_end`, innermost last.
_BUILDING: list[_Acknowledgments] = []


def _target(scope: IConstruct) -> _Acknowledgments:
    """Where an acknowledgment of `scope` goes: the Stage being built, else `scope`'s Stage (found in the kernel)."""
    return _BUILDING[-1] if _BUILDING else _acknowledgments(scope)


_TYPE_OF_CLASS: dict[type, str | None] = {}


def _resource_type(node: CfnResource) -> str:
    """The CloudFormation type: the L1 class's constant (one kernel call per class), else the node's own."""
    cls = type(node)
    if cls not in _TYPE_OF_CLASS:
        _TYPE_OF_CLASS[cls] = getattr(cls, "CFN_RESOURCE_TYPE_NAME", None) if cls is not CfnResource else None
    return _TYPE_OF_CLASS[cls] or node.cfn_resource_type


def _below(path: str, scope_path: str) -> bool:
    return not scope_path or path == scope_path or path.startswith(f"{scope_path}/")


def _acknowledgments(scope: IConstruct) -> _Acknowledgments:
    """The acknowledgments of `scope`'s Stage (or App); made, and added as its aspect, the first time needed.

    Per Stage, not per app: CDK does not carry an app's aspects into its Stages (each Stage's constructs are
    prepared with the Stage's own aspects and its descendants').
    """
    stage = scope if Stage.is_stage(scope) else Stage.of(scope)
    assert stage is not None, f"{scope.node.path} is in no Stage or App"
    found: _Acknowledgments | None = getattr(stage, "_hubspoke_acknowledgments", None)
    if found is None:
        found = _Acknowledgments()
        stage._hubspoke_acknowledgments = found  # type: ignore[attr-defined]
        Aspects.of(stage).add(found)
    return found


@contextmanager
def applied_at_end(stage: Stage) -> Iterator[None]:
    """Build every construct of `stage` inside: its acknowledgments wait in Python and are applied when the block
    ends, with no aspect; one made later is refused. A block left by an exception applies nothing."""
    found = _Acknowledgments()
    stage._hubspoke_acknowledgments = found  # type: ignore[attr-defined]
    _BUILDING.append(found)
    try:
        yield
    finally:
        _BUILDING.remove(found)
    found.apply(stage)


LAMBDA_IN_VPC = (
    "The function runs in the VPC: its VpcConfig names security groups and the Region's private subnets, read "
    "from the Network stack with Fn::GetStackOutput; the local cfn-guard rule accepts only literal or "
    "same-template subnet IDs (cdk-validator-cfnguard README: reference checks stay within one template)."
)


def acknowledge_lambdas_in_vpc(scope: IConstruct) -> None:
    """CT.LAMBDA.PR.3 cannot follow cross-stack subnet IDs: acknowledge it for functions that have a VpcConfig,
    and only those, so a function outside any VPC still fails synth."""
    _record(scope, "CT.LAMBDA.PR.3", LAMBDA_IN_VPC, [], [])
    _target(scope).lambdas_in_vpc(scope)
