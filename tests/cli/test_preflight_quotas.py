"""`hubspoke preflight`'s quota rows against moto: HyperPod quotas counted with the instances other clusters hold,
the security-group rules quota the topology needs, and the Lambda concurrency a canary reservation needs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.preflight_world import (
    P5,
    P5_QUOTA,
    Unsupported,
    World,
    hyperpod_limits,
    preflight_config,
    rows_of,
    run_checks,
    sagemaker_quota,
)


@pytest.mark.parametrize(
    ("applied", "defaults", "plan", "status"),
    [
        ([sagemaker_quota(P5_QUOTA, 1)], [], False, "fail"),
        ([], [sagemaker_quota(P5_QUOTA, 0)], False, "fail"),
        ([], [sagemaker_quota(P5_QUOTA, 4)], False, "pass"),
        ([sagemaker_quota(P5_QUOTA, 0)], [], True, "warn"),
        ([], [], False, "warn"),
    ],
)
def test_sagemaker_cluster_quota(
    world: World, tmp_path: Path, applied: list[Any], defaults: list[Any], plan: bool, status: str
) -> None:
    world.bootstrap("us-west-2")
    compute: dict[str, Any] = {"instance_groups": [{"count": 2}]}
    if plan:
        compute["training_plan_arn"] = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p"
    spokes = [{"region": "us-west-2", "cidr": "10.20.0.0/16", "compute": compute}]
    clients = Unsupported(
        world.clients, applied_quotas=[*applied, *hyperpod_limits()], default_quotas=defaults
    )
    results = run_checks(
        preflight_config(tmp_path, spokes=spokes), clients, only={"us-west-2"}, checks={"sagemaker quota"}
    )
    (row,) = [r for r in rows_of(results, "sagemaker quota", "us-west-2") if P5 in r.detail]
    assert row.status == status
    if not applied and not defaults:
        # Service Quotas lists it under Amazon SageMaker: the fix says where to look, in which Region.
        assert row.detail == f"no quota named '{P5_QUOTA}' found"
        assert row.fix == "look it up in the Service Quotas console (Amazon SageMaker) in us-west-2"
    if plan:
        assert row.detail.endswith(" for hubspoke-dev-us-west-2 (a training plan is configured)"), row.detail
    # The per-type quota, then the per-cluster, account-wide and EBS ones: a missing quota stops no other row.
    assert len(rows_of(results, "sagemaker quota", "us-west-2")) == 4
    if status == "fail":
        assert "--quota-code L-TESTP5 --desired-value 2 --region us-west-2" in row.fix
        # The quota as SageMaker names it, its value, and what this cluster adds to what others hold; nothing more.
        detail = rf"'{P5_QUOTA}' = \d+; needs 0 in use by other HyperPod clusters \+ 2 for [a-z0-9-]+"
        assert re.fullmatch(detail, row.detail), row.detail
    # Service Quotas was asked for SageMaker's quotas, page after page (the fake serves 2 per page).
    asked = [params for op, params in clients.asked if op == "ListServiceQuotas"]
    assert asked and all(p["ServiceCode"] == "sagemaker" for p in asked)


def test_sagemaker_quotas_listed_once_per_region(world: World, tmp_path: Path) -> None:
    """Each Region's SageMaker quotas are read in one listing when the applied values hold every quota needed;
    the AWS defaults are listed only for a quota whose applied value is not retrieved (Service Quotas API
    Reference, ListServiceQuotas: "If the applied quota value is not available for a quota, the quota is not
    retrieved")."""
    world.bootstrap("us-west-2")
    clients = Unsupported(world.clients, applied_quotas=[sagemaker_quota(P5_QUOTA, 4), *hyperpod_limits()])
    results = run_checks(preflight_config(tmp_path), clients, only={"us-west-2"})
    assert {r.status for r in rows_of(results, "sagemaker quota")} == {"pass"}
    first_pages = [p for op, p in clients.asked if op == "ListServiceQuotas" and "NextToken" not in p]
    assert first_pages == [{"ServiceCode": "sagemaker"}]
    assert [op for op, _ in clients.asked if op == "ListAWSDefaultServiceQuotas"] == []
    # A quota with no applied value: the defaults are listed, once, and answer it.
    clients = Unsupported(
        world.clients, applied_quotas=hyperpod_limits(), default_quotas=[sagemaker_quota(P5_QUOTA, 4)]
    )
    results = run_checks(preflight_config(tmp_path), clients, only={"us-west-2"})
    assert {r.status for r in rows_of(results, "sagemaker quota")} == {"pass"}
    defaults = [p for op, p in clients.asked if op == "ListAWSDefaultServiceQuotas" and "NextToken" not in p]
    assert defaults == [{"ServiceCode": "sagemaker"}]


def _hyperpod(world: World, region: str, name: str, count: int, itype: str = P5) -> None:
    """A HyperPod cluster that already holds `count` instances (moto's CreateCluster)."""
    world.clients("sagemaker", region).create_cluster(
        ClusterName=name,
        InstanceGroups=[
            {
                "InstanceCount": count,
                "InstanceGroupName": "workers",
                "InstanceType": itype,
                "LifeCycleConfig": {
                    "SourceS3Uri": "s3://sagemaker-lifecycle/scripts",
                    "OnCreate": "on_create.sh",
                },
                "ExecutionRole": "arn:aws:iam::123456789012:role/hyperpod",
                "ThreadsPerCore": 1,
            }
        ],
    )


def test_sagemaker_quota_counts_instances_other_clusters_already_hold(world: World, tmp_path: Path) -> None:
    """The per-type quota covers every HyperPod cluster of the account and Region in aggregate (SageMaker
    Developer Guide, "Prerequisites for using SageMaker HyperPod", quotas); our own cluster is not counted twice."""
    world.bootstrap("us-west-2")
    _hyperpod(world, "us-west-2", "someone-elses", 3)
    _hyperpod(world, "us-west-2", "hubspoke-dev-us-west-2", 2)  # ours, from an earlier deploy
    clients = Unsupported(world.clients, applied_quotas=[sagemaker_quota(P5_QUOTA, 4), *hyperpod_limits()])
    results = run_checks(preflight_config(tmp_path), clients, only={"us-west-2"}, checks={"sagemaker quota"})
    (row,) = [r for r in rows_of(results, "sagemaker quota") if P5 in r.detail]
    assert row.status == "fail" and "3 in use" in row.detail
    assert "--desired-value 5 " in row.fix
    clients = Unsupported(world.clients, applied_quotas=[sagemaker_quota(P5_QUOTA, 5), *hyperpod_limits()])
    results = run_checks(preflight_config(tmp_path), clients, only={"us-west-2"}, checks={"sagemaker quota"})
    assert {r.status for r in rows_of(results, "sagemaker quota")} == {"pass"}


@pytest.mark.parametrize(
    ("limits", "failing"),
    [
        (hyperpod_limits(per_cluster=1), "Maximum number instances allowed per SageMaker HyperPod cluster"),
        (hyperpod_limits(total=4), "Total number of instances allowed across SageMaker HyperPod clusters"),
    ],
)
def test_per_cluster_and_account_wide_hyperpod_quotas(
    world: World, tmp_path: Path, limits: list[Any], failing: str
) -> None:
    world.bootstrap("us-west-2")
    _hyperpod(world, "us-west-2", "someone-elses", 3, itype="ml.g5.xlarge")
    clients = Unsupported(world.clients, applied_quotas=[sagemaker_quota(P5_QUOTA, 8), *limits])
    results = run_checks(preflight_config(tmp_path), clients, only={"us-west-2"}, checks={"sagemaker quota"})
    [row] = [r for r in rows_of(results, "sagemaker quota") if r.status != "pass"]
    assert row.status == "fail" and failing in row.detail


@pytest.mark.parametrize(
    ("volume_gb", "quota_gb", "status"), [(500, 1024, "pass"), (1024, 1024, "pass"), (2000, 1024, "fail")]
)
def test_hyperpod_ebs_volume_quota_holds_the_largest_group_volume(
    world: World, tmp_path: Path, volume_gb: int, quota_gb: float, status: str
) -> None:
    """The per-instance EBS quota must hold each group's volume (SageMaker Developer Guide, "Prerequisites for
    using SageMaker HyperPod", quotas table: "must be more than the EBS volume you wish to add"); the largest
    group decides, and other clusters' volumes do not count against it."""
    world.bootstrap("us-west-2")
    _hyperpod(world, "us-west-2", "someone-elses", 3)
    one = {"count": 1, "on_start_deep_health_checks": ["InstanceStress"]}  # connectivity needs 2 nodes
    groups = [{**one, "ebs_volume_gb": 100}, {**one, "name": "second", "ebs_volume_gb": volume_gb}]
    spokes = [{"region": "us-west-2", "cidr": "10.20.0.0/16", "compute": {"instance_groups": groups}}]
    clients = Unsupported(
        world.clients, applied_quotas=[sagemaker_quota(P5_QUOTA, 8), *hyperpod_limits(ebs_gb=quota_gb)]
    )
    results = run_checks(
        preflight_config(tmp_path, spokes=spokes), clients, only={"us-west-2"}, checks={"sagemaker quota"}
    )
    (row,) = [r for r in rows_of(results, "sagemaker quota") if "EBS volume" in r.detail]
    assert row.status == status and f"needs {volume_gb} for" in row.detail and "in use" not in row.detail
    if status == "fail":
        assert "--quota-code L-E13DF72A --desired-value 2000 --region us-west-2" in row.fix


@pytest.mark.parametrize(
    ("stated", "applied", "status"),
    [(None, None, "pass"), (100, None, "fail"), (100, 100.0, "pass"), (100, 80.0, "fail")],
)
def test_security_group_rules_quota_holds_what_the_config_relies_on(
    world: World, tmp_path: Path, stated: int | None, applied: float | None, status: str
) -> None:
    world.deployed_dev()
    hub: dict[str, Any] = {"region": "us-east-2", "cidr": "10.10.0.0/16"}
    if stated:
        hub["quotas"] = {"security_group_rules": stated}
    clients = Unsupported(world.clients, applied_vpc_quotas={"L-0EA8095F": applied} if applied else {})
    results = run_checks(
        preflight_config(tmp_path, hub=hub), clients, only={"us-east-2"}, checks={"security group rules"}
    )
    (row,) = rows_of(results, "security group rules")
    assert row.status == status
    # One spoke CIDR: TCP 2049, 3713, 8000 and ICMP 3/4 on the hub's cross-Region group. Unstated, the config
    # relies on the VPC quotas page's default of 60 rules.
    assert row.detail.startswith(
        f"cross-Region security group needs 4 inbound rules; the config relies on {stated or 60}; "
    )
    value = f"{applied or 60:g} (applied)"  # this world applies the default unless told otherwise
    assert row.detail.endswith(f"' is {value}"), row.detail
    # The quota as the Amazon VPC quotas page names it, so the reader finds it in the Service Quotas console.
    assert "'Inbound or outbound rules per security group' is " in row.detail
    if status == "fail":
        assert "--quota-code L-0EA8095F --desired-value 100 --region us-east-2" in row.fix


@pytest.mark.parametrize(
    ("stated", "groups", "status", "at_most"),
    [
        (None, None, "pass", None),
        (200, None, "pass", None),
        (250, None, "fail", 4),
        (250, 4.0, "pass", None),
        (500, 3.0, "fail", 2),
    ],
)
def test_rules_quota_times_groups_per_interface_fits_a_thousand(
    world: World, tmp_path: Path, stated: int | None, groups: float | None, status: str, at_most: int | None
) -> None:
    """Amazon VPC quotas: 'Security groups per network interface' (L-2AFB9258) is 5 by default, and it times
    'Inbound or outbound rules per security group' may not exceed 1,000: rules past 200 need it lowered first."""
    world.deployed_dev()
    hub: dict[str, Any] = {"region": "us-east-2", "cidr": "10.10.0.0/16"}
    if stated:
        hub["quotas"] = {"security_group_rules": stated}
    clients = Unsupported(world.clients, applied_vpc_quotas={"L-2AFB9258": groups} if groups else {})
    results = run_checks(
        preflight_config(tmp_path, hub=hub),
        clients,
        only={"us-east-2"},
        checks={"security groups per interface"},
    )
    (row,) = rows_of(results, "security groups per interface")
    assert row.status == status, row.detail
    if at_most is not None:
        assert row.fix.startswith(
            f"lower 'Security groups per network interface' (L-2AFB9258) in us-east-2 to at most {at_most} before "
            f"the rules quota is raised to {stated} (the VPC quotas page: their product may not exceed 1,000)"
        )
        # What lowering it costs: interfaces that carry more groups must drop some first.
        assert row.fix.endswith("every network interface here must then carry no more groups than that")
    value = f"{groups or 5:g} (applied)"
    product = f"{(groups or 5) * (stated or 60):g}"
    assert row.detail == (
        f"'Security groups per network interface' is {value}; times the {stated or 60} rules per group the config "
        f"relies on: {product} (Amazon VPC quotas: at most 1,000)"
    )


@pytest.mark.parametrize(
    ("stated", "applied", "status"),
    [
        (None, None, "pass"),
        (100, None, "fail"),
        (100, 100.0, "pass"),
        (100, 80.0, "fail"),
        (None, 2.0, "fail"),
    ],
)
def test_routes_per_route_table_quota_holds_what_the_config_relies_on(
    world: World, tmp_path: Path, stated: int | None, applied: float | None, status: str
) -> None:
    """Amazon VPC User Guide, "Amazon VPC quotas": 'Routes per route table' (L-93826ACB) is 50 by default (what
    moto answers as the AWS default); the applied value must hold what the config states and what its private
    route tables need (a single spoke of one block needs more than 2: its peer route and the table's own)."""
    world.deployed_dev()
    hub: dict[str, Any] = {"region": "us-east-2", "cidr": "10.10.0.0/16"}
    if stated:
        hub["quotas"] = {"routes_per_route_table": stated}
    clients = Unsupported(world.clients, applied_vpc_quotas={"L-93826ACB": applied} if applied else {})
    results = run_checks(
        preflight_config(tmp_path, hub=hub), clients, only={"us-east-2"}, checks={"routes per route table"}
    )
    (row,) = rows_of(results, "routes per route table")
    assert row.status == status, row.detail
    if status == "fail":
        assert "--quota-code L-93826ACB --desired-value" in row.fix and "--region us-east-2" in row.fix
    # One spoke of one block: one route over the peering, among the table's others.
    pattern = (
        r"each private route table needs \d+ routes \(1 over the peering\); the config relies on (\d+); "
    )
    relied = re.match(pattern, row.detail)
    assert relied and relied.group(1) == str(stated or 50), row.detail
    assert "'Routes per route table' is " in row.detail
    assert ("GetServiceQuota", {"ServiceCode": "vpc", "QuotaCode": "L-93826ACB"}) in clients.asked


# The three VPC quota rows: the quota's code and name as the Amazon VPC User Guide's "Amazon VPC quotas" lists them.
VPC_QUOTA_ROWS = {
    "security group rules": ("L-0EA8095F", "Inbound or outbound rules per security group"),
    "routes per route table": ("L-93826ACB", "Routes per route table"),
    "security groups per interface": ("L-2AFB9258", "Security groups per network interface"),
}


@pytest.mark.parametrize("default_error", [None, "NoSuchResourceException"])
def test_a_vpc_quota_without_an_applied_value_is_read_as_the_aws_default_or_named(
    world: World, tmp_path: Path, default_error: str | None
) -> None:
    """GetServiceQuota answering NoSuchResourceException (one of its errors in the botocore service-quotas
    2019-06-24 model) leaves GetAWSDefaultServiceQuota for the same ServiceCode and QuotaCode (moto answers the
    VPC quotas page's defaults: 60 rules, 50 routes, 5 groups); when that has no such quota either, the row warns
    and names the quota to look up."""
    world.deployed_dev()
    errors = {"GetServiceQuota": "NoSuchResourceException"}
    if default_error:
        errors["GetAWSDefaultServiceQuota"] = default_error
    clients = Unsupported(world.clients, quota_errors=errors)
    results = run_checks(preflight_config(tmp_path), clients, only={"us-east-2"}, checks=VPC_QUOTA_ROWS)
    for check, (code, quota) in VPC_QUOTA_ROWS.items():
        (row,) = rows_of(results, check)
        if default_error is None:
            assert row.status == "pass" and "(AWS default)" in row.detail, row
        else:
            assert row.status == "warn" and f"quota {code} not found; " in row.detail, row
            needed = {"security group rules": r"4 rules needed", "security groups per interface": r"60 rules per group needed",
                      "routes per route table": r"\d+ routes per private route table needed"}[check]  # fmt: skip
            assert re.fullmatch(f"quota {code} not found; {needed}", row.detail), row.detail
            assert row.fix == f"check '{quota}' in the Service Quotas console"
    if default_error is None:
        assert (
            "GetAWSDefaultServiceQuota",
            {"ServiceCode": "vpc", "QuotaCode": "L-0EA8095F"},
        ) in clients.asked


@pytest.mark.parametrize(
    ("reserve", "unreserved", "status"),
    [(False, 10, "pass"), (True, 10, "fail"), (True, 101, "pass"), (True, 100, "fail")],
)
def test_canary_reservation_needs_the_unreserved_pool_lambda_keeps(
    world: World, tmp_path: Path, reserve: bool, unreserved: int, status: str
) -> None:
    """Lambda Developer Guide, "Configuring reserved concurrency": reservations must leave 100 unreserved."""
    world.deployed_dev()
    limit = {"ConcurrentExecutions": unreserved, "UnreservedConcurrentExecutions": unreserved}
    clients = Unsupported(world.clients, lambda_limit=limit)
    results = run_checks(
        preflight_config(tmp_path, ops={"reserve_canary_concurrency": reserve}),
        clients,
        only={"us-west-2"},
        checks={"lambda concurrency"},
    )
    (row,) = rows_of(results, "lambda concurrency")
    assert row.status == status
    left = unreserved - 1  # after the canary's reservation of 1
    end = {
        (False, "pass"): "nothing reserves concurrency",
        (True, "pass"): f"{left} left after the canary's 1",
        (True, "fail"): f"reserving 1 for the canary would leave {left}, and Lambda keeps 100",
    }[reserve, status]
    assert row.detail == f"account concurrency {unreserved}, {unreserved} unreserved; {end}"
    if status == "fail":
        assert "ops.reserve_canary_concurrency: false" in row.fix and "L-B99A9384" in row.fix
        # Raising the account limit raises the unreserved pool as much: 101 leaves 101 - 1 = 100 after the canary.
        assert "--desired-value 101 --region us-west-2" in row.fix
    assert ("GetAccountSettings", {}) in clients.asked


def _deployed_canary(world: World, region: str, reserved: int | None, other: int | None = None) -> None:
    """The Ops stack as CloudFormation holds it after a deploy: its canary function reserving `reserved` (none
    if None) and, given `other`, a second function reserving that many.

    The stack name and the logical ID are the ones the synthesized dev templates carry (tests/ snapshots).
    """
    role = world.clients("iam", region).create_role(RoleName="canary", AssumeRolePolicyDocument="{}")["Role"][
        "Arn"
    ]
    function = {
        "Type": "AWS::Lambda::Function",
        "Properties": {
            "Runtime": "python3.12",
            "Handler": "index.handler",
            "Role": role,
            "Code": {"ZipFile": "def handler(event, context): pass"},
        },
    }
    resources = {"HubCanaryFunction24E5FE5B": function}
    if reserved is not None:
        function["Properties"]["ReservedConcurrentExecutions"] = reserved
    if other is not None:
        props = {**function["Properties"], "ReservedConcurrentExecutions": other}
        resources["ProbeHelper0A1B2C3D"] = {**function, "Properties": props}
    world.clients("cloudformation", region).create_stack(
        StackName=f"hubspoke-dev-ops-{region}", TemplateBody=json.dumps({"Resources": resources})
    )


@pytest.mark.parametrize(("unreserved", "status"), [(101, "pass"), (100, "fail")])
def test_a_deployed_canary_reservation_is_not_counted_twice(
    world: World, tmp_path: Path, unreserved: int, status: str
) -> None:
    """After a deploy the canary's 1 is already out of UnreservedConcurrentExecutions (Lambda API Reference,
    AccountLimit: "minus the capacity that's reserved for individual functions with PutFunctionConcurrency"):
    an account of 101 then shows 100 unreserved, which is what Lambda keeps, so nothing more is needed."""
    world.deployed_dev()
    _deployed_canary(world, "us-west-2", reserved=1)
    limit = {"ConcurrentExecutions": unreserved, "UnreservedConcurrentExecutions": unreserved}
    clients = Unsupported(world.clients, lambda_limit=limit)
    results = run_checks(
        preflight_config(tmp_path, ops={"reserve_canary_concurrency": True}),
        clients,
        only={"us-west-2"},
        checks={"lambda concurrency"},
    )
    (row,) = rows_of(results, "lambda concurrency")
    assert row.status == status, row.detail
    assert f"{unreserved - 1} unreserved (the deployed canary already reserves 1); " in row.detail


def test_only_the_canary_functions_reservation_is_the_canarys(world: World, tmp_path: Path) -> None:
    """Another function of the Ops stack reserving 5 is none of the canary's: a canary deployed without a
    reservation still needs its 1 from the pool. GetAccountSettings already leaves the other's 5 out of
    UnreservedConcurrentExecutions (Lambda API Reference, AccountLimit), so an account of 105 shows 100, and
    taking the canary's 1 would leave 99 of the 100 Lambda keeps (Lambda Developer Guide, "Configuring reserved
    concurrency")."""
    world.deployed_dev()
    _deployed_canary(world, "us-west-2", reserved=None, other=5)
    limit = {"ConcurrentExecutions": 105, "UnreservedConcurrentExecutions": 105}
    clients = Unsupported(world.clients, lambda_limit=limit)
    results = run_checks(
        preflight_config(tmp_path, ops={"reserve_canary_concurrency": True}),
        clients,
        only={"us-west-2"},
        checks={"lambda concurrency"},
    )
    (row,) = rows_of(results, "lambda concurrency")
    assert row.status == "fail" and "100 unreserved" in row.detail, row.detail
    assert "already reserves" not in row.detail and "would leave 99" in row.detail


def test_the_fake_service_quotas_answers_and_refuses_as_the_model_says(world: World) -> None:
    """The fake behind these tests follows the botocore service-quotas 2019-06-24 model: a ServiceCode it holds no
    quotas for gets NoSuchResourceException, pages carry a NextToken of the model's alphabet
    (^[a-zA-Z0-9/+]*={0,2}$) until the last, a token it never issued gets InvalidPaginationTokenException, and
    MaxResults over the model's 100 fails the test (botocore checks only the minimum, 1, before sending)."""
    import re

    from botocore.exceptions import ClientError, ParamValidationError

    from tests.cli.preflight_world import Refused

    names = [f"ml.g5.{n}xlarge for cluster usage" for n in (2, 4, 8, 12, 16)]
    clients = Unsupported(
        world.clients, applied_quotas=[sagemaker_quota(n, 1, f"L-{i}") for i, n in enumerate(names)]
    )
    quotas = clients("service-quotas", "us-west-2")
    with pytest.raises(ClientError) as refused:
        quotas.list_service_quotas(ServiceCode="ec2")
    assert refused.value.response["Error"]["Code"] == "NoSuchResourceException"

    page = quotas.list_service_quotas(ServiceCode="sagemaker")
    assert len(page["Quotas"]) < len(names) and re.fullmatch(r"[a-zA-Z0-9/+]*={0,2}", page["NextToken"])
    walked = [
        q["QuotaName"]
        for p in quotas.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker")
        for q in p["Quotas"]
    ]
    assert walked == names
    assert len(quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=1)["Quotas"]) == 1

    with pytest.raises(ClientError) as bad_token:
        quotas.list_aws_default_service_quotas(ServiceCode="sagemaker", NextToken="bm90IGlzc3VlZA==")
    assert bad_token.value.response["Error"]["Code"] == "InvalidPaginationTokenException"
    with pytest.raises(Refused):
        quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=101)
    with pytest.raises(ParamValidationError):
        quotas.list_service_quotas(ServiceCode="sagemaker", MaxResults=0)


def test_flexible_restricted_and_failed_clusters_are_counted_as_sagemaker_describes_them(
    world: World, tmp_path: Path
) -> None:
    """DescribeCluster as the botocore sagemaker 2017-07-24 model shapes it (DescribeClusterResponse):

    - a flexible instance group has no InstanceType ("InstanceType and InstanceRequirements are mutually
      exclusive", ClusterInstanceGroupSpecification) but InstanceTypeDetails, a CurrentCount per InstanceType;
    - RestrictedInstanceGroups (ClusterRestrictedInstanceGroupDetails) hold instances like any group;
    - a cluster whose ClusterStatus is Failed, or a group whose Status is Failed, holds what runs (CurrentCount),
      not the TargetCount it asked for.

    Here the others hold 2 + 1 + 1 + 1 = 5 p5 instances and 1 flexible instance not yet placed; ours wants 2."""
    world.bootstrap("us-west-2")
    for name in ("flexible", "failed"):
        _hyperpod(world, "us-west-2", name, 1)
    described: dict[str, dict[str, Any]] = {
        "flexible": {
            "InstanceGroups": [
                {
                    "InstanceGroupName": "flex",
                    "CurrentCount": 2,
                    "TargetCount": 3,
                    "InstanceRequirements": {
                        "CurrentInstanceTypes": [P5, "ml.p4d.24xlarge"],
                        "DesiredInstanceTypes": [P5, "ml.p4d.24xlarge"],
                    },
                    # ClusterInstanceTypeDetail has no required member: one without an InstanceType names none.
                    "InstanceTypeDetails": [
                        {"InstanceType": P5, "CurrentCount": 2, "ThreadsPerCore": 1},
                        {"CurrentCount": 0},
                        # ... and one naming its type without a CurrentCount holds none of it yet.
                        {"InstanceType": "ml.p4d.24xlarge"},
                    ],
                    "Status": "Updating",
                },
                # CurrentCount and TargetCount are both optional in ClusterInstanceGroupDetails (no required
                # members): a group answered without one holds the other.
                {"InstanceGroupName": "new", "InstanceType": P5, "TargetCount": 1, "Status": "Creating"},
                {"InstanceGroupName": "old", "InstanceType": P5, "CurrentCount": 1, "Status": "InService"},
                # Scaled to zero, answered without a TargetCount: it holds none.
                {"InstanceGroupName": "idle", "InstanceType": P5, "CurrentCount": 0, "Status": "InService"},
                # Failed to provision before it answered a count: it holds none.
                {"InstanceGroupName": "stillborn", "InstanceType": P5, "TargetCount": 3, "Status": "Failed"},
            ],
            "RestrictedInstanceGroups": [
                {"InstanceGroupName": "nova", "InstanceType": P5, "CurrentCount": 1, "TargetCount": 1},
                # A group whose InstanceGroupStatus is Failed ("has failed to provision", the same model) in a
                # cluster that is not: it holds what runs, none, not the 2 it asked for.
                {
                    "InstanceGroupName": "broken",
                    "InstanceType": P5,
                    "CurrentCount": 0,
                    "TargetCount": 2,
                    "Status": "Failed",
                },
            ],
        },
        "failed": {
            "ClusterStatus": "Failed",
            "InstanceGroups": [
                {"InstanceGroupName": "workers", "InstanceType": P5, "CurrentCount": 0, "TargetCount": 4}
            ],
        },
    }

    def rows(p5: float, total: float) -> list[Any]:
        clients = Unsupported(
            world.clients,
            applied_quotas=[sagemaker_quota(P5_QUOTA, p5), *hyperpod_limits(total=total)],
            described_clusters=described,
        )
        return rows_of(
            run_checks(preflight_config(tmp_path), clients, only={"us-west-2"}, checks={"sagemaker quota"}),
            "sagemaker quota",
        )

    assert {r.status for r in rows(p5=7, total=8)} == {"pass"}
    (short,) = [r for r in rows(p5=6, total=8) if r.status != "pass"]
    assert P5 in short.detail and "5 in use" in short.detail and "--desired-value 7 " in short.fix
    (total,) = [r for r in rows(p5=7, total=7) if r.status != "pass"]
    assert "Total number of instances" in total.detail and "6 in use" in total.detail
    assert "--desired-value 8 " in total.fix


def test_a_cluster_of_restricted_groups_only_is_counted_without_instance_groups(
    world: World, tmp_path: Path
) -> None:
    """CreateCluster requires only ClusterName (botocore sagemaker 2017-07-24, CreateClusterRequest), and
    awsome-distributed-training (PR 841) makes the ordinary group optional where only a restricted instance group
    is needed. DescribeClusterResponse lists InstanceGroups as required, but a cluster of restricted groups only
    may answer without it: its restricted instances count, and preflight still prints its rows."""
    world.bootstrap("us-west-2")
    _hyperpod(world, "us-west-2", "restricted", 1)
    described = {
        "restricted": {
            "RestrictedInstanceGroups": [
                {"InstanceGroupName": "nova", "InstanceType": P5, "CurrentCount": 1, "TargetCount": 1}
            ]
        }
    }

    def rows(p5: float) -> list[Any]:
        clients = Unsupported(
            world.clients,
            applied_quotas=[sagemaker_quota(P5_QUOTA, p5), *hyperpod_limits(total=8)],
            described_clusters=described,
        )
        return rows_of(
            run_checks(preflight_config(tmp_path), clients, only={"us-west-2"}, checks={"sagemaker quota"}),
            "sagemaker quota",
        )

    # Ours wants 2 p5 (config/dev.yaml's two ml.p5.48xlarge) beside the restricted group's 1.
    assert {r.status for r in rows(p5=3)} == {"pass"}
    (short,) = [r for r in rows(p5=2) if r.status != "pass"]
    assert "1 in use" in short.detail and "--desired-value 3 " in short.fix
