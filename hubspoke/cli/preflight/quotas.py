"""Preflight rows for the account quotas a first deploy depends on: security-group rules, HyperPod, Lambda.

Each check reads the applied quota (Service Quotas, falling back to the AWS default) and what is already in use,
compares both with what the config needs, and names the quota to raise. Read-only, like every preflight check.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import error_code
from hubspoke.cli.preflight.checks import CheckResult, Status, _pages, region_path
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.config.quotas import (
    ROUTES_PER_ROUTE_TABLE_QUOTA_CODE,
    RULES_TIMES_GROUPS_LIMIT,
    SECURITY_GROUP_RULES_QUOTA_CODE,
    SECURITY_GROUPS_PER_INTERFACE_QUOTA_CODE,
    peer_path_rules,
    private_route_table_routes,
)
from hubspoke.names import hyperpod_cluster_name
from hubspoke.topology import stack_name

# Lambda Developer Guide, "Configuring reserved concurrency": "You can reserve up to the Unreserved account
# concurrency value minus 100"; the quota behind the account limit is Lambda "Concurrent executions".
LAMBDA_MIN_UNRESERVED = 100
LAMBDA_CONCURRENCY_QUOTA_CODE = "L-B99A9384"
CANARY_RESERVATION = 1
# SageMaker Developer Guide, "Prerequisites for using SageMaker HyperPod", quotas table: the per-type quota
# must exceed "the number of instances to add across all your clusters in your account in aggregate", and the
# per-cluster and account-wide instance quotas go by these names (Service Quotas, Amazon SageMaker).
PER_CLUSTER_QUOTA = "Maximum number instances allowed per SageMaker HyperPod cluster"
TOTAL_QUOTA = "Total number of instances allowed across SageMaker HyperPod clusters"
# The same table: "Your account-level quota value must be more than the EBS volume you wish to add to your
# cluster"; a size per instance, so the largest group's volume is what it must hold. Read as "at least" (the
# quota is named a maximum size; ASSUMED that a volume of exactly the quota is accepted).
EBS_QUOTA = "Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance"


def _type_quota(instance_type: str) -> str:
    return f"{instance_type} for cluster usage"


def _applied_or_default(quotas: Any, service: str, code: str) -> tuple[float, str] | None:
    try:
        return float(
            quotas.get_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]["Value"]
        ), "applied"
    except ClientError as exc:
        if error_code(exc) != "NoSuchResourceException":
            raise
    try:
        value = quotas.get_aws_default_service_quota(ServiceCode=service, QuotaCode=code)["Quota"]["Value"]
    except ClientError as exc:
        if error_code(exc) != "NoSuchResourceException":
            raise
        return None
    return float(value), "AWS default"


def check_security_group_rules(quotas: Any, *, config: HubSpokeConfig, region: RegionConfig) -> CheckResult:
    """The applied 'rules per security group' quota holds the cross-Region rules, and what the config states."""
    name = region.region
    path = region_path(config, region)
    needed = peer_path_rules(config)[path]  # one entry per configured Region (hubspoke.config.quotas)
    stated = region.quotas.security_group_rules
    return _vpc_quota_holds(
        quotas,
        region=name,
        check="security group rules",
        code=SECURITY_GROUP_RULES_QUOTA_CODE,
        quota="Inbound or outbound rules per security group",
        needed=needed,
        stated=stated,
        need=f"cross-Region security group needs {needed} inbound rules",
        missing=f"{needed} rules needed",
    )


def check_route_table_routes(quotas: Any, *, config: HubSpokeConfig, region: RegionConfig) -> CheckResult:
    """The applied 'Routes per route table' holds the routes each private route table needs, and what is stated."""
    name, check = region.region, "routes per route table"
    # One entry per configured Region (hubspoke.config.quotas).
    peers, other = private_route_table_routes(config)[region_path(config, region)]
    needed, stated = peers + other, region.quotas.routes_per_route_table
    return _vpc_quota_holds(
        quotas,
        region=name,
        check=check,
        code=ROUTES_PER_ROUTE_TABLE_QUOTA_CODE,
        quota="Routes per route table",
        needed=needed,
        stated=stated,
        need=f"each private route table needs {needed} routes ({peers} over the peering)",
        missing=f"{needed} routes per private route table needed",
    )


def _vpc_quota_holds(
    quotas: Any,
    *,
    region: str,
    check: str,
    code: str,
    quota: str,
    needed: int,
    stated: int,
    need: str,
    missing: str,
) -> CheckResult:
    """One VPC quota row: the applied value (else AWS's default) holds what the config needs and what it states."""
    found = _applied_or_default(quotas, "vpc", code)
    if found is None:
        return CheckResult(
            region,
            check,
            "warn",
            f"quota {code} not found; {missing}",
            f"check '{quota}' in the Service Quotas console",
        )
    value, origin = found
    detail = f"{need}; the config relies on {stated}; '{quota}' is {value:g} ({origin})"
    if value < max(needed, stated):
        return CheckResult(
            region,
            check,
            "fail",
            detail,
            "aws service-quotas request-service-quota-increase --service-code vpc --quota-code "
            f"{code} --desired-value {max(needed, stated)} --region {region}",
        )
    return CheckResult(region, check, "pass", detail)


def check_security_groups_per_interface(
    quotas: Any, *, config: HubSpokeConfig, region: RegionConfig
) -> CheckResult:
    """The rules quota the config needs, times the applied 'security groups per network interface', fits 1,000."""
    name, check = region.region, "security groups per interface"
    # Validation refuses a topology whose cross-Region rules exceed the stated quota (hubspoke.config.quotas,
    # peer_path_rules_within_quota), so the stated quota is what the config relies on.
    rules = region.quotas.security_group_rules
    found = _applied_or_default(quotas, "vpc", SECURITY_GROUPS_PER_INTERFACE_QUOTA_CODE)
    if found is None:
        return CheckResult(
            name,
            check,
            "warn",
            f"quota {SECURITY_GROUPS_PER_INTERFACE_QUOTA_CODE} not found; {rules} rules per group needed",
            "check 'Security groups per network interface' in the Service Quotas console",
        )
    groups, origin = found
    detail = (
        f"'Security groups per network interface' is {groups:g} ({origin}); times the {rules} rules per group "
        f"the config relies on: {groups * rules:g} (Amazon VPC quotas: at most {RULES_TIMES_GROUPS_LIMIT:,})"
    )
    if groups * rules <= RULES_TIMES_GROUPS_LIMIT:
        return CheckResult(name, check, "pass", detail)
    return CheckResult(
        name,
        check,
        "fail",
        detail,
        f"lower 'Security groups per network interface' ({SECURITY_GROUPS_PER_INTERFACE_QUOTA_CODE}) in {name} to "
        f"at most {RULES_TIMES_GROUPS_LIMIT // rules} before the rules quota is raised to {rules} (the VPC "
        "quotas page: their product may not exceed 1,000); every network interface here must then carry no more "
        "groups than that",
    )


# The canary function's logical ID in the Ops stack: CDK joins the construct path (HubCanary/Function, stacks/ops.py
# and constructs/canary/infrastructure.py) and appends an 8-character hash.
CANARY_FUNCTION_LOGICAL_PREFIX = "HubCanaryFunction"


def _canary_reservation_held(cloudformation: Any, lam: Any, *, config: HubSpokeConfig, region: str) -> int:
    """The concurrency a deployed canary already reserves here (0 before the first deploy of the Ops stack)."""
    stack = stack_name(config, "ops", region)
    try:
        resources = list(
            _pages(cloudformation, "list_stack_resources", "StackResourceSummaries", StackName=stack)
        )
    except ClientError as exc:
        # CloudFormation answers a stack that does not exist with ValidationError "Stack with id ... does not exist".
        if error_code(exc) == "ValidationError" and "does not exist" in str(exc):
            return 0
        raise
    # ResourceType and LogicalResourceId are required members of StackResourceSummary (botocore cloudformation
    # 2010-05-15 model), PhysicalResourceId an optional one (none yet for a function whose create failed).
    canaries = [
        str(r["PhysicalResourceId"])
        for r in resources
        if r["ResourceType"] == "AWS::Lambda::Function"
        and str(r["LogicalResourceId"]).startswith(CANARY_FUNCTION_LOGICAL_PREFIX)
        and r.get("PhysicalResourceId")
    ]
    # GetFunctionConcurrency answers no ReservedConcurrentExecutions for a function without a reservation.
    return sum(
        int(lam.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions") or 0)
        for name in canaries
    )


def check_lambda_concurrency(
    lam: Any, *, config: HubSpokeConfig, region: RegionConfig, cloudformation: Any
) -> CheckResult:
    """A canary reservation, when the config asks for one, leaves the unreserved pool Lambda insists on.

    UnreservedConcurrentExecutions is already net of every PutFunctionConcurrency reservation (Lambda API
    Reference, AccountLimit), a deployed canary's included: only what the canary does not hold yet is subtracted.
    """
    name = region.region
    limit = lam.get_account_settings()["AccountLimit"]
    total, unreserved = limit.get("ConcurrentExecutions"), limit.get("UnreservedConcurrentExecutions")
    detail = f"account concurrency {total}, {unreserved} unreserved"
    if not config.ops.reserve_canary_concurrency:
        return CheckResult(name, "lambda concurrency", "pass", detail + "; nothing reserves concurrency")
    held = _canary_reservation_held(cloudformation, lam, config=config, region=name)
    more = max(CANARY_RESERVATION - held, 0)
    if held:
        detail += f" (the deployed canary already reserves {held})"
    left = int(unreserved) - more
    if left >= LAMBDA_MIN_UNRESERVED:
        return CheckResult(name, "lambda concurrency", "pass", detail + f"; {left} left after the canary's 1")
    raise_to = int(total) + LAMBDA_MIN_UNRESERVED - left
    return CheckResult(
        name,
        "lambda concurrency",
        "fail",
        detail + f"; reserving 1 for the canary would leave {left}, and Lambda keeps {LAMBDA_MIN_UNRESERVED}",
        "set ops.reserve_canary_concurrency: false, or aws service-quotas request-service-quota-increase "
        f"--service-code lambda --quota-code {LAMBDA_CONCURRENCY_QUOTA_CODE} --desired-value {raise_to} "
        f"--region {name}",
    )


# Pending instances of a flexible instance group whose type HyperPod has not chosen yet: they count against the
# account-wide quota only (the type is the first of the group's list with capacity, so no per-type quota is known).
UNCHOSEN = ""


def _held(group: dict[str, Any], cluster_failed: bool) -> int:
    """What one instance group holds: a cluster scaling up holds its target, one scaling down what runs.

    A failed cluster or group (ClusterStatus / InstanceGroupStatus `Failed`, botocore sagemaker 2017-07-24 model)
    holds only what runs: its TargetCount is what it asked for, not what it got.
    """
    current = int(group.get("CurrentCount", 0))
    if cluster_failed or group.get("Status") == "Failed":
        return current
    return max(current, int(group.get("TargetCount", 0)))


def _group_types(group: dict[str, Any], held: int) -> dict[str, int]:
    """Instances per type of one instance group as DescribeCluster answers it.

    botocore sagemaker 2017-07-24 model: a ClusterInstanceGroupDetails carries InstanceType, or, for a flexible
    instance group (ClusterInstanceGroupSpecification: "InstanceType and InstanceRequirements are mutually
    exclusive"), InstanceRequirements plus InstanceTypeDetails, a CurrentCount per InstanceType.
    """
    if group.get("InstanceType"):
        return {group["InstanceType"]: held}
    counts: dict[str, int] = {}
    for detail in group.get("InstanceTypeDetails") or []:
        if detail.get("InstanceType"):
            counts[detail["InstanceType"]] = counts.get(detail["InstanceType"], 0) + int(
                detail.get("CurrentCount", 0)
            )
    pending = held - sum(counts.values())
    if pending > 0:
        counts[UNCHOSEN] = pending
    return counts


def hyperpod_instances_in_use(sagemaker: Any, *, exclude: str) -> dict[str, int]:
    """Instances per type held by the account's other HyperPod clusters in this Region (ours excluded).

    Counts InstanceGroups and RestrictedInstanceGroups (DescribeClusterResponse, botocore sagemaker 2017-07-24);
    instances of a flexible group whose type is not chosen yet are keyed UNCHOSEN.
    """
    used: dict[str, int] = {}
    for summary in _pages(sagemaker, "list_clusters", "ClusterSummaries"):
        if summary["ClusterName"] == exclude:
            continue
        detail = sagemaker.describe_cluster(ClusterName=summary["ClusterArn"])
        failed = detail.get("ClusterStatus") == "Failed"
        # InstanceGroups is a required member of DescribeClusterResponse, but a cluster may be created with
        # restricted instance groups only (CreateClusterRequest requires only ClusterName): read it as optional.
        for group in [*detail.get("InstanceGroups", []), *detail.get("RestrictedInstanceGroups", [])]:
            for itype, count in _group_types(group, _held(group, failed)).items():
                used[itype] = used.get(itype, 0) + count
    return used


def _sagemaker_quotas(quotas: Any, names: set[str]) -> dict[str, dict[str, Any]]:
    """The SageMaker quotas named `names`, by name: applied values, AWS defaults only for what those lack.

    Service Quotas API Reference, ListServiceQuotas: "If the applied quota value is not available for a quota,
    the quota is not retrieved"; so the defaults are listed only when a quota we need is missing, not every time
    (each listing is a full, paged read of every SageMaker quota).
    """
    found = {
        q["QuotaName"]: q for q in _pages(quotas, "list_service_quotas", "Quotas", ServiceCode="sagemaker")
    }
    if names - found.keys():
        defaults = _pages(quotas, "list_aws_default_service_quotas", "Quotas", ServiceCode="sagemaker")
        found = {**{q["QuotaName"]: q for q in defaults}, **found}
    return found


def check_hyperpod_quotas(
    quotas: Any, sagemaker: Any, *, config: HubSpokeConfig, region: RegionConfig
) -> list[CheckResult]:
    """Per-type, per-cluster and account-wide HyperPod quotas against this config plus what is already in use."""
    name = region.region
    ours = hyperpod_cluster_name(config, region)
    in_use = hyperpod_instances_in_use(sagemaker, exclude=ours)
    wanted: dict[str, int] = {}
    for group in region.compute.instance_groups:
        wanted[group.instance_type] = wanted.get(group.instance_type, 0) + group.count
    cluster_total = sum(wanted.values())
    needs = [(_type_quota(itype), in_use.get(itype, 0), count) for itype, count in sorted(wanted.items())] + [
        (PER_CLUSTER_QUOTA, 0, cluster_total),
        (TOTAL_QUOTA, sum(in_use.values()), cluster_total),
        (EBS_QUOTA, 0, max(group.ebs_volume_gb for group in region.compute.instance_groups)),
    ]
    available = _sagemaker_quotas(quotas, {quota_name for quota_name, _, _ in needs})
    rows = []
    for quota_name, used, mine in needs:
        quota = available.get(quota_name)
        if quota is None:
            rows.append(
                CheckResult(
                    name,
                    "sagemaker quota",
                    "warn",
                    f"no quota named '{quota_name}' found",
                    f"look it up in the Service Quotas console (Amazon SageMaker) in {name}",
                )
            )
            continue
        value, needed = float(quota["Value"]), used + mine
        others = (
            f"{used} in use by other HyperPod clusters + "
            if quota_name not in {PER_CLUSTER_QUOTA, EBS_QUOTA}
            else ""
        )
        detail = f"'{quota_name}' = {value:g}; needs {others}{mine} for {ours}"
        if value >= needed:
            rows.append(CheckResult(name, "sagemaker quota", "pass", detail))
            continue
        fix = (
            "aws service-quotas request-service-quota-increase --service-code sagemaker "
            f"--quota-code {quota['QuotaCode']} --desired-value {needed} --region {name}"
        )
        # A training plan brings its own reserved capacity (the per-type quota is about on-demand use).
        planned = region.compute.training_plan_arn and quota_name.endswith(" for cluster usage")
        status: Status = "warn" if planned else "fail"
        rows.append(
            CheckResult(
                name,
                "sagemaker quota",
                status,
                detail + (" (a training plan is configured)" if planned else ""),
                fix,
            )
        )
    return rows
