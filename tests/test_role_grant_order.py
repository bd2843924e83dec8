"""Teardown and rollback order: nothing that acts as a role can outlive the grants that let it act.

CloudFormation creates a resource after everything it references or names in DependsOn, and deletes in the
reverse order (User Guide, "DependsOn attribute": "resources are deleted in the reverse order of creation");
resources with no path between them are created and deleted in parallel. A role's separate policy
(AWS::IAM::Policy, CDK's DefaultPolicy) references the role, not its users, so without a path from the policy to
the user CloudFormation may delete the policy while the service still deletes the user: SageMaker deleting HyperPod
nodes, whose interfaces then block the security group and VPC (issue 41); a Lambda-backed custom resource whose
delete handler is denied. AWS's HyperPod template keeps those permissions on the role itself
(aws-samples/awsome-distributed-training at 7217859, 1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/
nested-stacks/sagemaker-iam-role-stack.yaml, Policies), which orders them the same way.

The rule over every synthesized stack: each grant to a role (an IAM policy attached to it; for Kubernetes
access, its EKS access entry) is an ancestor, in the DependsOn/Ref/GetAtt/Sub graph, of every resource that acts
as the role: one that references it (a Lambda function's Role, EKS's cluster RoleArn, a HyperPod instance group's
ExecutionRole, a flow log's DeliverLogsPermissionArn, a pod identity association), one that launches with its
instance profile, and every custom resource such a function serves (CDK's Provider framework reaches the user
handler through its onEvent function's environment).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.conftest import Templates, load_shape
from tests.lifecycle import dependencies
from tests.shapes import SHAPES

IAM_POLICIES = {"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy"}
ACCESS_ENTRY = "AWS::EKS::AccessEntry"
# Reference a role without acting as it: they are the grants themselves, or pass it on (an instance profile).
# A bucket policy names the role as its Principal (S3 User Guide, "Bucket policies for Amazon S3"): a
# resource-based grant, retained with its bucket since 147db9a, so no rollback of the role's policy takes it away.
NOT_ACTING = {*IAM_POLICIES, ACCESS_ENTRY, "AWS::IAM::InstanceProfile", "AWS::S3::BucketPolicy"}


def _is_custom(kind: str) -> bool:
    return kind == "AWS::CloudFormation::CustomResource" or kind.startswith("Custom::")


def _grants(
    resources: Mapping[str, Any], deps: Mapping[str, set[str]], roles: set[str]
) -> dict[str, set[str]]:
    """Role -> the logical IDs of its IAM policies and EKS access entries in the same template."""
    grants: dict[str, set[str]] = {role: set() for role in roles}
    for lid, res in resources.items():
        if res["Type"] in IAM_POLICIES:
            props = res.get("Properties", {})
            named = [*props.get("Roles", []), props.get("RoleName")]
            for ref in named:
                if isinstance(ref, Mapping) and ref.get("Ref") in roles:
                    grants[ref["Ref"]].add(lid)
        elif res["Type"] == ACCESS_ENTRY:
            for role in deps[lid] & roles:
                grants[role].add(lid)
    return grants


def misordered(template: Mapping[str, Any]) -> list[str]:
    """Every (user, role, grant) where the grant is not an ancestor of a resource acting as the role."""
    resources = template.get("Resources", {})
    deps = {lid: dependencies(res, resources) for lid, res in resources.items()}
    ancestors: dict[str, set[str]] = {}

    def up(lid: str) -> set[str]:
        if lid not in ancestors:
            ancestors[lid] = set()
            for dep in deps[lid]:
                ancestors[lid] |= {dep} | up(dep)
        return ancestors[lid]

    kinds = {lid: res["Type"] for lid, res in resources.items()}
    roles = {lid for lid, kind in kinds.items() if kind == "AWS::IAM::Role"}
    profiles = {lid: deps[lid] & roles for lid, kind in kinds.items() if kind == "AWS::IAM::InstanceProfile"}
    grants = _grants(resources, deps, roles)
    acting: dict[str, set[str]] = {}  # resource -> roles it acts as
    for lid, kind in kinds.items():
        if kind not in NOT_ACTING:
            acting[lid] = (deps[lid] & roles) | {r for p in deps[lid] & profiles.keys() for r in profiles[p]}
    functions = {lid: acting[lid] for lid, kind in kinds.items() if kind == "AWS::Lambda::Function"}
    for lid, kind in kinds.items():
        if _is_custom(kind):
            acting[lid] |= {r for fn in up(lid) & functions.keys() for r in functions[fn]}
    found = []
    for user, used in sorted(acting.items()):
        for role in sorted(used):
            for grant in sorted(grants[role]):
                # Kubernetes access is exercised by the custom resources a handler serves, not by the function.
                if kinds[grant] == ACCESS_ENTRY and not _is_custom(kinds[user]):
                    continue
                if grant not in up(user):
                    found.append(f"{kinds[user]} {user} acts as {role} before/after its grant {grant}")
    return found


def test_every_grant_outlives_what_acts_with_it(dev_templates: Templates) -> None:
    for stack_id, template in sorted(dev_templates.items()):
        assert misordered(template) == [], stack_id


def test_the_hyperpod_cluster_waits_for_its_execution_roles_policy(dev_templates: Templates) -> None:
    """The case issue 41 names, spelled out: the cluster's DependsOn holds the role's DefaultPolicy."""
    for stack_id, template in dev_templates.items():
        resources = template["Resources"]
        for lid, res in resources.items():
            if res["Type"] != "AWS::SageMaker::Cluster":
                continue
            [role] = {g["ExecutionRole"]["Fn::GetAtt"][0] for g in res["Properties"]["InstanceGroups"]}
            policies = [
                p for p, r in resources.items() if r["Type"] == "AWS::IAM::Policy"
                and {"Ref": role} in r["Properties"]["Roles"]
            ]  # fmt: skip
            assert policies, stack_id
            assert set(policies) <= set(res["DependsOn"]), (stack_id, lid)


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


ROLE = {"Type": "AWS::IAM::Role", "Properties": {}}
POLICY = {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "Role"}]}}


def test_the_rule_sees_a_missing_order_through_every_path() -> None:
    """Not vacuous: a direct user, an instance-profile user, a served custom resource and an access entry."""
    cluster = {"Type": "AWS::SageMaker::Cluster", "Properties": {
        "InstanceGroups": [{"ExecutionRole": {"Fn::GetAtt": ["Role", "Arn"]}}]}}  # fmt: skip
    assert misordered(_template(Role=ROLE, Policy=POLICY, Cluster=cluster))
    assert not misordered(_template(Role=ROLE, Policy=POLICY, Cluster={**cluster, "DependsOn": ["Policy"]}))
    profile = {"Type": "AWS::IAM::InstanceProfile", "Properties": {"Roles": [{"Ref": "Role"}]}}
    node = {"Type": "AWS::EC2::Instance", "Properties": {"IamInstanceProfile": {"Ref": "Profile"}}}
    assert misordered(_template(Role=ROLE, Policy=POLICY, Profile=profile, Node=node))
    handler = {"Type": "AWS::Lambda::Function", "Properties": {"Role": {"Fn::GetAtt": ["Role", "Arn"]}},
               "DependsOn": ["Policy"]}  # fmt: skip
    served = {"Type": "Custom::Thing", "Properties": {"ServiceToken": {"Fn::GetAtt": ["Handler", "Arn"]}}}
    assert not misordered(_template(Role=ROLE, Policy=POLICY, Handler=handler, Thing=served))
    entry = {"Type": ACCESS_ENTRY, "Properties": {"PrincipalArn": {"Fn::GetAtt": ["Role", "Arn"]}}}
    assert misordered(_template(Role=ROLE, Policy=POLICY, Handler=handler, Thing=served, Entry=entry))
    assert not misordered(
        _template(
            Role=ROLE, Policy=POLICY, Handler=handler, Thing={**served, "DependsOn": ["Entry"]}, Entry=entry
        )
    )


@pytest.mark.thorough
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_grant_outlives_what_acts_with_it_in_every_shape(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    for stack_id, template in sorted(load_shape(name, tmp_path_factory).templates.items()):
        assert misordered(template) == [], stack_id
