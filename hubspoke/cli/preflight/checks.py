"""Read-only AWS checks that `hubspoke preflight` runs per Region before anything is deployed.

Each check takes the boto3 clients it needs and returns CheckResults; none writes to AWS. Errors that
mean "could not check" (denied, unreachable) become failing rows with a fix, never a traceback.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from botocore.exceptions import ClientError

# The row, its status, the denied-call row and the paginator walk are shared with `hubspoke verify`.
from hubspoke.cli.checks import CheckResult, Status, denied_or_error, error_code
from hubspoke.cli.checks import pages as _pages
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.config.quotas import PEERINGS_DEFAULT_QUOTA, PEERINGS_MAX_QUOTA
from hubspoke.eks_addons import upgrade_refusal
from hubspoke.names import eks_cluster_name
from hubspoke.topology import ENVIRONMENT_TAG, REGION_TAG

__all__ = ["CheckResult", "Status", "denied_or_error"]

BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
# aws-cdk-lib's DefaultStackSynthesizer requires bootstrap version 6: every synthesized template carries a
# CheckBootstrapVersion rule that rejects 1-5 (and the asset manifests say requiresBootstrapStackVersion 6).
MIN_BOOTSTRAP_VERSION = 6
# The version of the bootstrap template shipped with the pinned CDK CLI (package.json, aws-cdk 2.1148.1:
# lib/api/bootstrap/bootstrap-template.yaml). Older stacks still deploy; re-bootstrapping brings fixes.
CLI_BOOTSTRAP_VERSION = 33
# Service Quotas, Amazon VPC: "Active VPC peering connections per VPC", default 50, adjustable to 125.
PEERING_QUOTA_CODE = "L-7E9ECCDB"
# A VPC carrying both stage tags (ENVIRONMENT_TAG, REGION_TAG from hubspoke.topology) is ours, not a clash.


def region_path(config: HubSpokeConfig, region: RegionConfig) -> str:
    """Where a Region sits in the config file, for messages: `hub` or `spokes[1]`."""
    if region is config.hub:
        return "hub"
    return f"spokes[{config.spokes.index(region)}]"  # type: ignore[arg-type]


def check_account(sts: Any, *, region: str, expected: str) -> tuple[CheckResult, str]:
    actual = str(sts.get_caller_identity()["Account"])
    if actual == expected:
        return CheckResult(region, "account", "pass", f"credentials are for account {expected}"), actual
    return (
        CheckResult(
            region,
            "account",
            "fail",
            f"credentials are for account {actual}, the config says {expected}",
            f"use credentials for {expected} (AWS_PROFILE or --profile), or fix `account` in the config",
        ),
        actual,
    )


def check_bootstrap(ssm: Any, *, region: str, account: str, deployer: str) -> CheckResult:
    """The pair's bootstrap version; a missing or too old one warns when `hubspoke deploy` bootstraps it.

    deploy bootstraps only pairs of the environment's account `deployer` (cli/deploy.py refuses other
    credentials); a pair of another account needs that account's own credentials first, so it fails.
    """
    command = f"npx cdk bootstrap aws://{account}/{region}"
    own = account == deployer
    status: Status = "warn" if own else "fail"
    fix = command if own else f"{command} --profile <a profile of {account}>"
    then = (
        ": `hubspoke deploy` bootstraps it" if own else f": bootstrap it with credentials for {account} first"
    )
    try:
        value = ssm.get_parameter(Name=BOOTSTRAP_PARAMETER)["Parameter"]["Value"]
    except ClientError as exc:
        if error_code(exc) != "ParameterNotFound":
            raise
        return CheckResult(region, "cdk bootstrap", status, f"{BOOTSTRAP_PARAMETER} not found{then}", fix)
    if not str(value).isdigit():
        return CheckResult(
            region, "cdk bootstrap", "fail", f"{BOOTSTRAP_PARAMETER} is '{value}', not a version", command
        )
    version = int(value)
    if version < MIN_BOOTSTRAP_VERSION:
        return CheckResult(
            region,
            "cdk bootstrap",
            status,
            f"version {version}; the templates need {MIN_BOOTSTRAP_VERSION} or newer{then}",
            fix,
        )
    if version < CLI_BOOTSTRAP_VERSION:
        return CheckResult(
            region,
            "cdk bootstrap",
            "warn",
            f"version {version} works; the pinned CDK CLI ships {CLI_BOOTSTRAP_VERSION}",
            f"{command} (upgrades in place)",
        )
    return CheckResult(region, "cdk bootstrap", "pass", f"version {version}")


def _vpc_cidrs(vpc: dict[str, Any]) -> list[ipaddress.IPv4Network]:
    blocks = [
        a["CidrBlock"]
        for a in vpc.get("CidrBlockAssociationSet", [])
        if a.get("CidrBlockState", {}).get("State") in ("associated", "associating", None)
    ]
    return [ipaddress.IPv4Network(c) for c in (blocks or [vpc["CidrBlock"]])]


def _tags(resource: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in resource.get("Tags", [])}


def _is_own(vpc: dict[str, Any], config: HubSpokeConfig, region: RegionConfig) -> bool:
    tags = _tags(vpc)
    return tags.get(ENVIRONMENT_TAG) == config.environment and tags.get(REGION_TAG) == region.region


def _free_cidr(taken: list[ipaddress.IPv4Network], prefix: int) -> str | None:
    """The first 10.x block of the given size that overlaps nothing taken: a concrete suggestion."""
    for candidate in ipaddress.IPv4Network("10.0.0.0/8").subnets(new_prefix=prefix):
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate)
    return None


def check_cidrs(
    ec2: Any, *, config: HubSpokeConfig, region: RegionConfig
) -> tuple[list[CheckResult], str | None]:
    """Existing VPCs against the configured CIDRs; returns the rows and the id of our own VPC, if deployed."""
    name = region.region
    vpcs = list(_pages(ec2, "describe_vpcs", "Vpcs"))
    own = next((v["VpcId"] for v in vpcs if _is_own(v, config, region)), None)
    others = [v for v in vpcs if v["VpcId"] != own]
    configured = [ipaddress.IPv4Network(c) for r in config.regions() for c in r.all_cidrs]
    taken = configured + [c for v in others for c in _vpc_cidrs(v)]
    path = region_path(config, region)
    rows: list[CheckResult] = []
    for vpc in others:
        label = f"{vpc['VpcId']}" + (f" ({_tags(vpc)['Name']})" if "Name" in _tags(vpc) else "")
        for existing in _vpc_cidrs(vpc):
            for i, cidr in enumerate(region.all_cidrs):
                if existing.overlaps(ipaddress.IPv4Network(cidr)):
                    field = f"{path}.cidr" if i == 0 else f"{path}.secondary_cidrs[{i - 1}]"
                    free = _free_cidr(taken, ipaddress.IPv4Network(cidr).prefixlen)
                    rows.append(
                        CheckResult(
                            name,
                            "cidr overlap",
                            "fail",
                            f"existing VPC {label} {existing} overlaps {field} {cidr}",
                            f"set {field} to a free block" + (f", e.g. {free}" if free else ""),
                        )
                    )
            for peer in config.peer_cidrs(region):
                if existing.overlaps(ipaddress.IPv4Network(peer)):
                    rows.append(
                        CheckResult(
                            name,
                            "cidr overlap",
                            "warn",
                            f"existing VPC {label} {existing} overlaps peer CIDR {peer}",
                            "harmless unless that VPC is ever routed to this one (TGW, peering); else renumber",
                        )
                    )
    if not rows:
        mine = f"; our VPC {own} is already deployed" if own else ""
        rows.append(
            CheckResult(
                name,
                "cidr overlap",
                "pass",
                f"{len(others)} other VPC(s), none overlaps {', '.join(region.all_cidrs)}{mine}",
            )
        )
    return rows, own


def _peering_quota(quotas: Any) -> tuple[float, str]:
    try:
        return float(
            quotas.get_service_quota(ServiceCode="vpc", QuotaCode=PEERING_QUOTA_CODE)["Quota"]["Value"]
        ), "applied"
    except ClientError as exc:
        if error_code(exc) != "NoSuchResourceException":
            raise
    try:
        value = quotas.get_aws_default_service_quota(ServiceCode="vpc", QuotaCode=PEERING_QUOTA_CODE)
        return float(value["Quota"]["Value"]), "default"
    except ClientError as exc:
        # Only "no such quota" means the documented default applies. The model's other errors for
        # GetAWSDefaultServiceQuota (AccessDeniedException, IllegalArgumentException, ServiceException,
        # TooManyRequestsException: botocore service-quotas 2019-06-24) mean it could not be read: the row says so.
        if error_code(exc) != "NoSuchResourceException":
            raise
        return float(PEERINGS_DEFAULT_QUOTA), "assumed default"


def check_peering_quota(
    ec2: Any, quotas: Any, *, config: HubSpokeConfig, hub_vpc_id: str | None
) -> CheckResult:
    """Active peerings of the hub VPC that are not ours, plus one per spoke, against the per-VPC quota."""
    region = config.hub.region
    quota, origin = _peering_quota(quotas)
    spoke_cidrs = {ipaddress.IPv4Network(c) for s in config.spokes for c in s.all_cidrs}
    foreign = 0
    if hub_vpc_id:
        for pcx in _pages(ec2, "describe_vpc_peering_connections", "VpcPeeringConnections"):
            if pcx.get("Status", {}).get("Code") != "active":
                continue
            requester, accepter = pcx.get("RequesterVpcInfo", {}), pcx.get("AccepterVpcInfo", {})
            if hub_vpc_id not in (requester.get("VpcId"), accepter.get("VpcId")):
                continue
            other = accepter if requester.get("VpcId") == hub_vpc_id else requester
            if not (other.get("CidrBlock") and ipaddress.IPv4Network(other["CidrBlock"]) in spoke_cidrs):
                foreign += 1
    needed = foreign + len(config.spokes)
    detail = f"{needed} active peering(s) needed on the hub VPC ({foreign} existing, {len(config.spokes)} spoke(s)); quota {quota:g} ({origin})"
    if needed > quota:
        target = min(needed, PEERINGS_MAX_QUOTA)
        fix = (
            f"request 'Active VPC peering connections per VPC' ({PEERING_QUOTA_CODE}) = {target} in {region}"
            if needed <= PEERINGS_MAX_QUOTA
            else f"more than {PEERINGS_MAX_QUOTA} peerings per VPC is not possible: split the spokes across hubs"
        )
        return CheckResult(region, "peering quota", "fail", detail, fix)
    if needed > 0.8 * quota:
        return CheckResult(
            region,
            "peering quota",
            "warn",
            detail + "; little headroom",
            f"consider raising {PEERING_QUOTA_CODE}",
        )
    return CheckResult(region, "peering quota", "pass", detail)


def check_availability_zones(ec2: Any, *, config: HubSpokeConfig, region: RegionConfig) -> list[CheckResult]:
    """Every configured AZ ID exists; the accelerator AZ ID offers the EC2 types behind the HyperPod groups."""
    name = region.region
    # AllAvailabilityZones lists Local and Wavelength Zones too (ZoneType "local-zone", "wavelength-zone" in
    # the EC2 API's AvailabilityZone shape); subnets here go in Availability Zones, and the config's AZ-ID
    # pattern only accepts those, so only they are offered as a fix.
    zones = {
        z["ZoneId"]: z
        for z in ec2.describe_availability_zones(AllAvailabilityZones=True)["AvailabilityZones"]
        if z.get("ZoneType", "availability-zone") == "availability-zone"
    }
    wanted = list(dict.fromkeys((*region.resolved_az_ids, region.resolved_accelerator_az_id)))
    missing = [az for az in wanted if az not in zones]
    path = region_path(config, region)
    if missing:
        return [
            CheckResult(
                name,
                "az ids",
                "fail",
                f"AZ ID(s) {', '.join(missing)} do not exist in {name}",
                f"use AZ IDs from {', '.join(sorted(zones))} in {path}.az_ids / {path}.accelerator_az_id",
            )
        ]
    rows = [CheckResult(name, "az ids", "pass", f"{', '.join(wanted)} exist")]
    if not region.compute.enabled:
        return rows
    az = region.resolved_accelerator_az_id
    types = sorted({g.instance_type.removeprefix("ml.") for g in region.compute.instance_groups})
    offered = {
        o["InstanceType"]
        for o in _pages(
            ec2,
            "describe_instance_type_offerings",
            "InstanceTypeOfferings",
            LocationType="availability-zone-id",
            Filters=[{"Name": "location", "Values": [az]}, {"Name": "instance-type", "Values": types}],
        )
    }
    for itype in types:
        if itype in offered:
            rows.append(CheckResult(name, "accelerator az", "pass", f"{az} offers {itype}"))
            continue
        elsewhere = sorted(
            o["Location"]
            for o in _pages(
                ec2,
                "describe_instance_type_offerings",
                "InstanceTypeOfferings",
                LocationType="availability-zone-id",
                Filters=[{"Name": "instance-type", "Values": [itype]}],
            )
        )
        fix = (
            f"set {path}.accelerator_az_id to one of {', '.join(elsewhere)}"
            if elsewhere
            else f"{name} offers no {itype}: train in another Region or change the instance type"
        )
        rows.append(CheckResult(name, "accelerator az", "fail", f"{az} does not offer {itype}", fix))
    return rows


# botocore eks 2017-11-01 service model, ClusterVersionInformation: versionStatus is a VersionStatus
# (UNSUPPORTED, STANDARD_SUPPORT, EXTENDED_SUPPORT); the deprecated status is a ClusterVersionStatus
# (unsupported, standard-support, extended-support), the same three states spelled otherwise.
VERSION_STATUSES = frozenset({"UNSUPPORTED", "STANDARD_SUPPORT", "EXTENDED_SUPPORT"})
_DEPRECATED_STATUS = {
    "unsupported": "UNSUPPORTED",
    "standard-support": "STANDARD_SUPPORT",
    "extended-support": "EXTENDED_SUPPORT",
}


def _support_status(info: dict[str, Any]) -> str | None:
    """The version's VersionStatus: versionStatus, else the deprecated status mapped; anything else as EKS sent it."""
    if info.get("versionStatus"):
        return str(info["versionStatus"])
    if info.get("status"):
        return _DEPRECATED_STATUS.get(info["status"], str(info["status"]))
    return None


def check_kubernetes_version(eks: Any, *, config: HubSpokeConfig, region: RegionConfig) -> CheckResult:
    """The configured Kubernetes version is one EKS offers in this Region, preferably in standard support."""
    name = region.region
    wanted = region.compute.kubernetes_version
    # includeAll: "Include all available versions in the response" (botocore eks 2017-11-01 model); the default
    # set is not documented (ASSUMED to leave some out), so ask for all rather than fail an offered version.
    versions = {
        v["clusterVersion"]: v
        # clusterType: "The type of cluster to filter versions by" (same model). Which types EKS lists without it
        # is not documented (ASSUMED: others than the cloud's own, "eks"), so ask for ours.
        for v in _pages(
            eks, "describe_cluster_versions", "clusterVersions", includeAll=True, clusterType="eks"
        )
    }
    field = f"{region_path(config, region)}.compute.kubernetes_version"
    standard = sorted(
        (v for v, info in versions.items() if _support_status(info) == "STANDARD_SUPPORT"),
        key=lambda v: tuple(int(p) for p in v.split(".")),
    )
    info = versions.get(wanted)
    status = _support_status(info) if info else None
    if info is None or status == "UNSUPPORTED":
        return CheckResult(
            name,
            "kubernetes version",
            "fail",
            f"EKS does not offer {wanted} here",
            f"set {field} to one of {', '.join(standard) or 'the versions EKS lists'}",
        )
    if status is not None and status not in VERSION_STATUSES:
        return CheckResult(
            name,
            "kubernetes version",
            "warn",
            f"EKS lists {wanted} with status {status!r}, which its API model does not define",
            "check the version's support status in the EKS console before deploying",
        )
    from hubspoke.eks_addons import HYPERPOD_KUBERNETES_VERSIONS

    # Both warnings can hold at once (an old version in extended support that HyperPod no longer lists).
    problems, fixes = [], []
    if status == "EXTENDED_SUPPORT":
        problems.append(f"{wanted} is in extended support (billed extra per cluster hour)")
        fixes.append(
            f"set {field} to {standard[-1]}" if standard else "upgrade when a newer version is offered"
        )
    if wanted not in HYPERPOD_KUBERNETES_VERSIONS:
        listed = sorted(HYPERPOD_KUBERNETES_VERSIONS, key=version_key)
        problems.append(
            f"HyperPod's EKS prerequisites list only {listed[0]} to {listed[-1]}: CreateCluster may refuse {wanted}"
        )
        fixes.append(
            f"set {field} to {listed[-1]}, or check the SageMaker developer guide's HyperPod EKS prerequisites"
        )
    if problems:
        return CheckResult(
            name,
            "kubernetes version",
            "warn",
            f"EKS offers {wanted} ({status or 'listed'}); " + "; ".join(problems),
            "; ".join(fixes),
        )
    return CheckResult(name, "kubernetes version", "pass", f"EKS offers {wanted} ({status or 'listed'})")


def check_deployed_kubernetes(eks: Any, *, config: HubSpokeConfig, region: RegionConfig) -> CheckResult:
    """A deployed control plane can reach the configured version in this deploy: EKS moves one minor at a time.

    A config that relied on the former default (1.33) and states no version would ask a deployed cluster for
    1.35; EKS refuses that at the cluster and the stack rolls back, so say so before the deploy.
    """
    name = region.region
    cluster_name = eks_cluster_name(config, region)
    wanted = region.compute.kubernetes_version
    try:
        # EKS DescribeCluster: cluster.version (botocore eks 2017-11-01 model); ResourceNotFoundException when
        # no cluster has that name in the Region.
        live = str(eks.describe_cluster(name=cluster_name)["cluster"].get("version", ""))
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        return CheckResult(
            name, "deployed kubernetes", "pass", f"no cluster {cluster_name} yet: created at {wanted}"
        )
    field = f"{region_path(config, region)}.compute.kubernetes_version"
    refusal = upgrade_refusal(live, wanted)
    if refusal is None:
        change = "unchanged" if live == wanted else f"this deploy upgrades it to {wanted} (one minor)"
        return CheckResult(name, "deployed kubernetes", "pass", f"{cluster_name} runs {live}: {change}")
    why, step = refusal
    return CheckResult(
        name,
        "deployed kubernetes",
        "fail",
        f"{cluster_name} runs Kubernetes {live}, the config says {wanted}: {why}",
        f"set {field} to {step} (docs/runbooks/compute.md, 'Upgrading Kubernetes')",
    )


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in "".join(c if c.isdigit() else " " for c in version).split())
