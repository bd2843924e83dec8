"""Verify's compute checks: the HyperPod cluster and its nodes, the EKS cluster and its add-ons, and Kubernetes.

Names come from hubspoke/compute_metrics.py (the Compute stack names both clusters with them), add-ons from
hubspoke/eks_addons.py, claims from hubspoke/k8s/names.py. Kubernetes is read through the user's kubeconfig
(kube.py); the EKS endpoint is private by default, so "not checked" there is normal outside the VPC.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.access import caller
from hubspoke.cli.checks import Check, CheckResult, error_code, guarded, pages, run_listed
from hubspoke.cli.verify.kube import KubeApi, KubeUnavailable, connect
from hubspoke.cli.verify.live import Context, Scope, Unavailable
from hubspoke.config import RegionConfig
from hubspoke.eks_addons import ADDONS, addon_version, upgrade_refusal
from hubspoke.k8s.names import (
    CHECKPOINT_CLAIM,
    DATASET_CLAIM,
    NAMESPACE,
    checkpoint_volume_name,
    dataset_volume_name,
)
from hubspoke.names import eks_cluster_name, hyperpod_cluster_name
from hubspoke.outputs import ACCESS_HOST_INSTANCE, FLOATING_IPS
from hubspoke.topology import stack_id

_COMPUTE_RUNBOOK = "docs/runbooks/compute.md"
# SageMaker DescribeCluster models ResourceNotFound (botocore sagemaker 2017-07-24 service-2.json); moto 5.2.5
# answers ValidationException "Could not find cluster '<name>'." (moto/sagemaker/models.py describe_cluster), as
# SageMaker's older Describe calls word a missing resource (ASSUMED for the live API: both are read as missing).
_NO_CLUSTER = {"ResourceNotFound", "ResourceNotFoundException"}


def _cluster(s: Scope) -> list[CheckResult]:
    found, row = _eks(s.ctx, s.region)
    s.eks.extend([found] if found else [])
    return [row]


def _has_eks(s: Scope) -> bool:
    return bool(s.eks)


COMPUTE: tuple[Check[Scope], ...] = (
    Check("hyperpod", "sagemaker", lambda s: True, lambda s: _hyperpod(s.ctx, s.region, s.hyperpod)),
    # Its own entry: an EC2 error (DescribeSubnets denied, a subnet gone) names EC2, not SageMaker.
    Check("hyperpod placement", "ec2", lambda s: bool(s.hyperpod),
          lambda s: [_hyperpod_placement(s.ctx, s.region, s.hyperpod[0])]),
    Check("eks", "eks", lambda s: True, _cluster),
    Check("eks placement", "ec2", _has_eks, lambda s: [_eks_placement(s.ctx, s.region, s.eks[0])]),
    Check("eks add-ons", "eks", _has_eks, lambda s: _addons(s.ctx, s.region)),
    Check("eks access", "eks", _has_eks, lambda s: _access(s.ctx, s.region, s.eks[0])),
    Check("access host", "ec2", lambda s: _has_eks(s) and s.ctx.config.access.host_enabled,
          lambda s: [_access_host(s.ctx, s.region)]),
    Check("kubernetes", "", _has_eks, lambda s: _kubernetes(s.ctx, s.region, s.eks[0])),
)  # fmt: skip


def compute_rows(s: Scope) -> list[CheckResult]:
    return run_listed(COMPUTE, s, partial(guarded, s.code))


def _missing_cluster(exc: ClientError) -> bool:
    return error_code(exc) in _NO_CLUSTER or (
        error_code(exc) == "ValidationException" and "Could not find cluster" in str(exc)
    )


def _hyperpod(ctx: Context, region: RegionConfig, found: list[dict[str, Any]]) -> list[CheckResult]:
    code = region.region
    name = hyperpod_cluster_name(ctx.config, region)
    sagemaker = ctx.clients("sagemaker", code)
    deploy = ctx.deploy_command(stack_id("compute", code))
    try:
        # SageMaker DescribeCluster: ClusterStatus (Creating | Deleting | Failed | InService | RollingBack |
        # SystemUpdating | Updating), FailureMessage, InstanceGroups[] (InstanceGroupName, InstanceType,
        # CurrentCount, TargetCount, Status).
        cluster = sagemaker.describe_cluster(ClusterName=name)
    except ClientError as exc:
        if not _missing_cluster(exc):
            raise
        return [CheckResult(code, "hyperpod", "fail", f"no HyperPod cluster {name}", deploy)]
    found.append(cluster)
    status = cluster.get("ClusterStatus")
    rows = []
    if status != "InService":
        failure = f": {cluster['FailureMessage']}" if cluster.get("FailureMessage") else ""
        fix = (
            "wait for it to finish, then run hubspoke verify again"
            if status in ("Creating", "Updating", "SystemUpdating")
            else f"follow {_COMPUTE_RUNBOOK}, then {deploy}"
        )
        rows.append(CheckResult(code, "hyperpod", "fail", f"{name} is {status}{failure}", fix))
    else:
        rows.append(CheckResult(code, "hyperpod", "pass", f"{name} is InService"))
    live = {g.get("InstanceGroupName"): g for g in cluster.get("InstanceGroups", [])}
    for group in region.compute.instance_groups:
        rows.append(
            _group_row(code, name, group.name, group.instance_type, group.count, live.get(group.name), deploy)
        )
    for extra in sorted(set(live) - {g.name for g in region.compute.instance_groups}):
        rows.append(
            CheckResult(
                code,
                "hyperpod group",
                "warn",
                f"{name} has instance group {extra}, which the config does not name",
            )
        )
    rows.append(_nodes_row(code, name, sagemaker))
    return rows


# Keys fixed at the first deploy (docs/runbooks/deploy-environment.md, "Keys fixed at the first deploy"):
# - HyperPod: SageMaker UpdateCluster (botocore 1.44 sagemaker service-2.json, UpdateClusterRequest) has no
#   VpcConfig member, so the cluster's subnets, hence its AZ, are those it was created with; a new
#   `accelerator_az_id` makes CloudFormation replace the accelerator subnet (AWS::EC2::Subnet
#   AvailabilityZoneId: "Update requires: Replacement"), and a subnet holding the cluster's ENIs cannot go.
# - EKS: UpdateClusterConfig's resourcesVpcConfig (botocore eks service-2.json, VpcConfigRequest.subnetIds)
#   takes new subnets, but the EKS User Guide ("View Amazon EKS networking requirements for VPC and subnets")
#   says "All subnets that you add must be in the same set of AZs as originally provided when you created
#   the cluster"; a new `az_ids` asks for subnets in other AZs (aws/containers-roadmap#2330: recreate the
#   cluster).
# DescribeCluster answers both: SageMaker VpcConfig.Subnets, EKS cluster.resourcesVpcConfig.subnetIds;
# EC2 DescribeSubnets gives each subnet's AvailabilityZoneId.
def _subnet_az_ids(ctx: Context, code: str, subnet_ids: list[str]) -> dict[str, str]:
    if not subnet_ids:
        return {}
    subnets = ctx.clients("ec2", code).describe_subnets(SubnetIds=subnet_ids)["Subnets"]
    return {str(s["SubnetId"]): str(s.get("AvailabilityZoneId")) for s in subnets}


def _fixed_key_row(
    code: str, check: str, what: str, field: str, wanted: set[str], deployed: dict[str, str]
) -> CheckResult:
    live = set(deployed.values())
    if live == wanted:
        return CheckResult(code, check, "pass", f"{what} in {', '.join(sorted(live))}, as {field} says")
    return CheckResult(
        code,
        check,
        "fail",
        f"{what} was created in {', '.join(sorted(live)) or 'no subnet'} "
        f"({', '.join(f'{s} {a}' for s, a in sorted(deployed.items()))}); {field} says {', '.join(sorted(wanted))}",
        f"{field} cannot change after the first deploy: set it back to {', '.join(sorted(live))} "
        "(docs/runbooks/deploy-environment.md, keys fixed at the first deploy)",
    )


def _hyperpod_placement(ctx: Context, region: RegionConfig, cluster: dict[str, Any]) -> CheckResult:
    code = region.region
    subnets = [str(s) for s in (cluster.get("VpcConfig") or {}).get("Subnets", [])]
    return _fixed_key_row(
        code,
        "hyperpod placement",
        f"HyperPod cluster {cluster.get('ClusterName')}",
        f"{_field(ctx, region)}.accelerator_az_id",
        {region.resolved_accelerator_az_id},
        _subnet_az_ids(ctx, code, subnets),
    )


def _eks_placement(ctx: Context, region: RegionConfig, cluster: dict[str, Any]) -> CheckResult:
    code = region.region
    subnets = [str(s) for s in (cluster.get("resourcesVpcConfig") or {}).get("subnetIds", [])]
    return _fixed_key_row(
        code,
        "eks placement",
        f"EKS cluster {cluster.get('name')}",
        f"{_field(ctx, region)}.az_ids",
        set(region.resolved_az_ids),
        _subnet_az_ids(ctx, code, subnets),
    )


def _field(ctx: Context, region: RegionConfig) -> str:
    """The config path of the Region: `hub` or `spokes[N]`, as validate names fields."""
    if region.region == ctx.config.hub.region:
        return "hub"
    return f"spokes[{[s.region for s in ctx.config.spokes].index(region.region)}]"


def _group_row(
    code: str,
    cluster: str,
    group: str,
    instance_type: str,
    count: int,
    live: dict[str, Any] | None,
    deploy: str,
) -> CheckResult:
    if live is None:
        return CheckResult(code, "hyperpod group", "fail", f"{cluster} has no instance group {group}", deploy)
    problems = []
    if live.get("InstanceType") != instance_type:
        problems.append(f"type {live.get('InstanceType')}, config {instance_type}")
    if live.get("TargetCount") != count:
        problems.append(f"target {live.get('TargetCount')} nodes, config {count}")
    if live.get("CurrentCount") != count:
        problems.append(f"{live.get('CurrentCount')} of {count} nodes running")
    if live.get("Status") not in (None, "InService"):
        problems.append(f"status {live['Status']}")
    if problems:
        return CheckResult(
            code,
            "hyperpod group",
            "fail",
            f"{group}: " + "; ".join(problems),
            f"capacity and quota: {_COMPUTE_RUNBOOK}; a config change: {deploy}",
        )
    return CheckResult(code, "hyperpod group", "pass", f"{group}: {count} x {instance_type}")


def _nodes_row(code: str, cluster: str, sagemaker: Any) -> CheckResult:
    # SageMaker ListClusterNodes (paginator result key ClusterNodeSummaries): InstanceStatus.Status is one
    # of Running, Failure, Pending, ShuttingDown, SystemUpdating, DeepHealthCheckInProgress, NotFound, ...
    nodes = list(pages(sagemaker, "list_cluster_nodes", "ClusterNodeSummaries", ClusterName=cluster))
    bad = [n for n in nodes if n.get("InstanceStatus", {}).get("Status") != "Running"]
    if not nodes:
        return CheckResult(
            code, "hyperpod nodes", "fail", f"{cluster} has no nodes", f"see {_COMPUTE_RUNBOOK}"
        )
    if bad:
        listed = "; ".join(
            f"{n.get('InstanceId')} ({n.get('InstanceGroupName')}) {n['InstanceStatus'].get('Status')}"
            + (f": {n['InstanceStatus']['Message']}" if n["InstanceStatus"].get("Message") else "")
            for n in bad
        )
        return CheckResult(
            code,
            "hyperpod nodes",
            "fail",
            f"{len(bad)} of {len(nodes)} nodes not Running: {listed}",
            f"deep health checks and replacements: {_COMPUTE_RUNBOOK}",
        )
    return CheckResult(code, "hyperpod nodes", "pass", f"all {len(nodes)} nodes Running")


def _eks(ctx: Context, region: RegionConfig) -> tuple[dict[str, Any] | None, CheckResult]:
    code = region.region
    name = eks_cluster_name(ctx.config, region)
    try:
        # EKS DescribeCluster: cluster.status (CREATING | ACTIVE | DELETING | FAILED | UPDATING | PENDING),
        # version, arn, endpoint, resourcesVpcConfig.endpointPublicAccess, health.issues[].code/message.
        cluster = ctx.clients("eks", code).describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if not _missing_cluster(exc):
            raise
        return None, CheckResult(
            code, "eks", "fail", f"no EKS cluster {name}", ctx.deploy_command(stack_id("compute", code))
        )
    problems = []
    if cluster.get("status") != "ACTIVE":
        problems.append(f"status {cluster.get('status')}")
    problems += [
        f"{i.get('code')}: {i.get('message')}" for i in (cluster.get("health") or {}).get("issues", [])
    ]
    live = str(cluster.get("version", ""))
    if problems and live != region.compute.kubernetes_version:
        problems.append(f"Kubernetes {live}, config {region.compute.kubernetes_version}")
    if problems:
        return cluster, CheckResult(
            code,
            "eks",
            "fail",
            f"{name}: " + "; ".join(problems),
            f"{_COMPUTE_RUNBOOK}; a version change: {ctx.deploy_command(stack_id('compute', code))}",
        )
    return cluster, _version_row(ctx, region, name, live)


def _version_row(ctx: Context, region: RegionConfig, name: str, live: str) -> CheckResult:
    """The live control plane's version against compute.kubernetes_version, as the next deploy would move it: a
    config one minor ahead is that deploy's upgrade, any other difference makes it fail (and roll back) at the
    cluster (hubspoke.eks_addons.upgrade_refusal)."""
    code = region.region
    wanted = region.compute.kubernetes_version
    field = f"{_field(ctx, region)}.compute.kubernetes_version"
    deploy = ctx.deploy_command(stack_id("compute", code))
    if live == wanted:
        return CheckResult(code, "eks", "pass", f"{name} ACTIVE, Kubernetes {wanted}")
    refusal = upgrade_refusal(live, wanted)
    if refusal is None:
        return CheckResult(
            code,
            "eks",
            "warn",
            f"{name} ACTIVE, Kubernetes {live}; the config says {wanted}: the next deploy upgrades the control "
            "plane (one minor, as EKS allows)",
            f'intended? follow {_COMPUTE_RUNBOOK}, "Upgrading Kubernetes" (no job running; the add-on pins '
            f"follow the version), then {deploy}; else set {field} back to {live}",
        )
    why, step = refusal
    fix = (
        f"set {field} to {live}, the cluster's version"
        if step == live
        else f"set {field} to {step} and deploy, then raise it one minor per deploy "
        f'({_COMPUTE_RUNBOOK}, "Upgrading Kubernetes")'
    )
    return CheckResult(
        code, "eks", "fail", f"{name} runs Kubernetes {live}, the config says {wanted}: {why}", fix
    )


def _addons(ctx: Context, region: RegionConfig) -> list[CheckResult]:
    code = region.region
    name = eks_cluster_name(ctx.config, region)
    eks = ctx.clients("eks", code)
    # EKS ListAddons (paginator result key addons) and DescribeAddon: addon.status (CREATING | ACTIVE |
    # CREATE_FAILED | UPDATING | DELETING | DELETE_FAILED | DEGRADED | UPDATE_FAILED), addonVersion,
    # health.issues[].code/message.
    installed = set(pages(eks, "list_addons", "addons", clusterName=name))
    deploy = ctx.deploy_command(stack_id("compute", code))
    rows, healthy = [], []
    for addon_name in ADDONS:
        if addon_name not in installed:
            rows.append(
                CheckResult(code, "eks add-ons", "fail", f"{addon_name} is not installed on {name}", deploy)
            )
            continue
        addon = eks.describe_addon(clusterName=name, addonName=addon_name)["addon"]
        status, version = addon.get("status"), addon.get("addonVersion")
        issues = "; ".join(
            f"{i.get('code')}: {i.get('message')}" for i in (addon.get("health") or {}).get("issues", [])
        )
        pinned = addon_version(addon_name, region.compute.kubernetes_version)
        if status != "ACTIVE":
            settling = status in ("CREATING", "UPDATING")
            rows.append(
                CheckResult(
                    code,
                    "eks add-ons",
                    "warn" if settling else "fail",
                    f"{addon_name} {version} is {status}" + (f": {issues}" if issues else ""),
                    "wait for it to settle" if settling else f"{_COMPUTE_RUNBOOK}, then {deploy}",
                )
            )
        elif issues:
            # ACTIVE is the add-on's state, its health a separate list (EKS DescribeAddon: addon.health.issues,
            # AddonIssue code / message / resourceIds): an ACTIVE add-on can report issues.
            rows.append(
                CheckResult(
                    code,
                    "eks add-ons",
                    "warn",
                    f"{addon_name} {version} is ACTIVE but reports health issues: {issues}",
                    f"{_COMPUTE_RUNBOOK}; `aws eks describe-addon --cluster-name {name} --addon-name {addon_name} "
                    f"--region {code}` lists them",
                )
            )
        elif pinned and version != pinned:
            rows.append(
                CheckResult(
                    code, "eks add-ons", "warn", f"{addon_name} runs {version}, the pin is {pinned}", deploy
                )
            )
        else:
            healthy.append(f"{addon_name} {version}")
    if healthy:
        rows.append(CheckResult(code, "eks add-ons", "pass", f"ACTIVE: {', '.join(healthy)}"))
    return rows


def _access(ctx: Context, region: RegionConfig, cluster: dict[str, Any]) -> list[CheckResult]:
    """Whether the listed administrators have access entries, and whether the caller is one of them.

    EKS ListAccessEntries (botocore eks service-2.json: accessEntries, a list of principal ARNs) names every
    principal the cluster authenticates; an API-mode cluster refuses anyone else (EKS User Guide, "Grant IAM
    users and roles access to Kubernetes APIs"). That the entry carries its access policy is not read here.
    """
    code = region.region
    name = str(cluster.get("name", ""))
    entries = [
        str(a)
        for a in pages(ctx.clients("eks", code), "list_access_entries", "accessEntries", clusterName=name)
    ]
    deploy = ctx.deploy_command(stack_id("compute", code))
    rows = []
    missing = [a for a in ctx.config.access.administrators if a not in entries]
    if missing:
        rows.append(
            CheckResult(
                code, "eks access", "fail", f"{name} has no access entry for {', '.join(missing)}", deploy
            )
        )
    else:
        listed = len(ctx.config.access.administrators)
        rows.append(
            CheckResult(
                code, "eks access", "pass", f"{name}: all {listed} listed administrators have entries"
            )
        )
    me = caller(str(ctx.clients("sts", code).get_caller_identity()["Arn"]))
    mine = me.entry(entries)
    connect = f"`hubspoke connect --config {ctx.config_path} --region {code}`"
    if mine:
        rows.append(CheckResult(code, "eks caller", "pass", f"you ({me.arn}) have the access entry {mine}"))
    elif me.kind == "other":
        rows.append(
            CheckResult(
                code,
                "eks caller",
                "warn",
                f"you ({me.arn}) are not an IAM role or user, which is all an access entry can name",
                f"use a role listed under access.administrators: {connect} prints the kubeconfig with it",
            )
        )
    else:
        rows.append(
            CheckResult(
                code,
                "eks caller",
                "warn",
                f"you ({me.arn}) have no access entry on {name}: kubectl would be refused",
                f"add your {me.kind}'s ARN to access.administrators in {ctx.config_path}, then {deploy}; or "
                f"assume a listed role: {connect} prints the kubeconfig with it",
            )
        )
    return rows


def _access_host(ctx: Context, region: RegionConfig) -> CheckResult:
    """The SSM access host is running and its agent is online: the tunnel `hubspoke connect` prints can open.

    EC2 DescribeInstances: State.Name (pending | running | shutting-down | terminated | stopping | stopped).
    SSM DescribeInstanceInformation: InstanceInformationList[].PingStatus (Online | ConnectionLost | Inactive);
    an instance whose agent never reached Systems Manager is not listed (botocore ssm service-2.json).
    """
    code = region.region
    compute = stack_id("compute", code)
    try:
        instance_id = ctx.stacks.output(compute, ACCESS_HOST_INSTANCE.key())
    except Unavailable as exc:
        return CheckResult(code, "access host", "not checked", str(exc), ctx.deploy_command(compute))
    found = ctx.clients("ec2", code).describe_instances(
        Filters=[{"Name": "instance-id", "Values": [instance_id]}]
    )["Reservations"]
    state = next((i["State"]["Name"] for r in found for i in r["Instances"]), None)
    if state in (None, "terminated", "shutting-down"):
        return CheckResult(
            code,
            "access host",
            "fail",
            f"{instance_id} is {state or 'gone'}",
            ctx.gone_fix(compute, instance_id),
        )
    if state != "running":
        return CheckResult(
            code,
            "access host",
            "fail",
            f"{instance_id} is {state}",
            f"`aws ec2 start-instances --instance-ids {instance_id} --region {code}`",
        )
    listed = ctx.clients("ssm", code).describe_instance_information(
        Filters=[{"Key": "InstanceIds", "Values": [instance_id]}]
    )["InstanceInformationList"]
    ping = listed[0].get("PingStatus") if listed else None
    if ping != "Online":
        why = f"its SSM Agent is {ping}" if ping else "its SSM Agent has not registered with Systems Manager"
        return CheckResult(
            code,
            "access host",
            "fail",
            f"{instance_id} is running but {why}: Session Manager cannot open the tunnel",
            "the agent reaches Systems Manager through the NAT gateway: check the network rows; a host just "
            'created needs a few minutes (docs/runbooks/compute.md, "Reach the cluster")',
        )
    return CheckResult(code, "access host", "pass", f"{instance_id} is running, its SSM Agent Online")


def _kubernetes(ctx: Context, region: RegionConfig, cluster: dict[str, Any]) -> list[CheckResult]:
    code = region.region
    storage = ["kubernetes volumes", "volume addresses"] if region.storage.enabled else []
    checks = ["kubernetes nodes", *storage]
    vpc = cluster.get("resourcesVpcConfig") or {}
    private = vpc.get("endpointPublicAccess") is False
    try:
        api = connect(
            ctx.kubeconfig,
            arn=str(cluster.get("arn", "")),
            endpoint=str(cluster.get("endpoint", "")),
            name=str(cluster.get("name", "")),
            region=code,
            profile=ctx.profile,
        )
        rows = [_ready_nodes(code, api, sum(g.count for g in region.compute.instance_groups))]
        if region.storage.enabled:
            rows.append(_bound_claims(code, api))
            rows.append(_volume_addresses(ctx, region, api))
        return rows
    except KubeUnavailable as exc:
        why = exc.reason + (" (the endpoint is private: normal outside the VPC)" if private else "")
        tunnel = f"`hubspoke connect --config {ctx.config_path} --region {code}`"
        fix = exc.fix or (f"open the tunnel {tunnel} prints, then run verify again" if private else "")
        return [CheckResult(code, check, "not checked", why, fix) for check in checks]


def _ready_nodes(code: str, api: KubeApi, expected: int) -> CheckResult:
    # Kubernetes core/v1 NodeList: items[].status.conditions[] with type "Ready" and status "True"/"False"/"Unknown".
    nodes = api.items("/api/v1/nodes")
    not_ready = []
    for node in nodes:
        ready: dict[str, Any] = next(
            (c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {}
        )
        if ready.get("status") != "True":
            reason = ready.get("message") or ready.get("reason") or "no Ready condition"
            not_ready.append(f"{node.get('metadata', {}).get('name')} ({reason})")
    if not_ready:
        return CheckResult(
            code,
            "kubernetes nodes",
            "fail",
            f"{len(not_ready)} of {len(nodes)} nodes not Ready: {'; '.join(not_ready)}",
            f"kubectl describe node <node>; {_COMPUTE_RUNBOOK}",
        )
    if len(nodes) < expected:
        return CheckResult(
            code,
            "kubernetes nodes",
            "fail",
            f"{len(nodes)} nodes registered, the HyperPod groups have {expected}",
            f"nodes that never joined: {_COMPUTE_RUNBOOK}",
        )
    return CheckResult(code, "kubernetes nodes", "pass", f"all {len(nodes)} nodes Ready")


def _bound_claims(code: str, api: KubeApi) -> CheckResult:
    # Kubernetes core/v1 PersistentVolumeClaimList: items[].metadata.name, status.phase Pending | Bound | Lost.
    claims = {
        c.get("metadata", {}).get("name"): c
        for c in api.items(f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims")
    }
    problems = []
    for name in (DATASET_CLAIM, CHECKPOINT_CLAIM):
        claim = claims.get(name)
        phase = (claim.get("status") or {}).get("phase") if claim else None
        if claim is None:
            problems.append(f"{name} does not exist")
        elif phase != "Bound":
            problems.append(f"{name} is {phase}")
    if problems:
        return CheckResult(
            code,
            "kubernetes volumes",
            "fail",
            f"in namespace {NAMESPACE}: " + "; ".join(problems),
            f"kubectl -n {NAMESPACE} describe pvc; the volumes are applied by the Compute stack ({_COMPUTE_RUNBOOK})",
        )
    return CheckResult(
        code, "kubernetes volumes", "pass", f"{DATASET_CLAIM} and {CHECKPOINT_CLAIM} Bound in {NAMESPACE}"
    )


def _volume_addresses(ctx: Context, region: RegionConfig, api: KubeApi) -> CheckResult:
    """The NFS servers the volumes mount are the Region's CNQ floating IPs its Storage stack outputs now.

    The Compute stack writes them into the PersistentVolumes from Fn::GetStackOutput of that output, resolved
    when the stack is created or updated (CloudFormation Template Reference, "Fn::GetStackOutput"): after the
    CNQ cluster's addresses change, the volumes keep mounting the old ones until the Compute stack is deployed
    again, and even then Kubernetes refuses to change a volume's source in place ("spec.persistentvolumesource
    is immutable after creation", the API server's PersistentVolume update validation). Which address each
    volume gets is the stack's (hubspoke/stacks/compute.py, local_floating_ips); any current one mounts. Kubernetes
    core/v1 PersistentVolumeList: items[].metadata.name, items[].spec.nfs.server.
    """
    code = region.region
    storage = stack_id("storage", code)
    try:
        joined = ctx.stacks.output(storage, FLOATING_IPS.key())
    except Unavailable as exc:
        return CheckResult(
            code, "volume addresses", "not checked", str(exc), "see the stack rows of that stack"
        )
    ips = [ip for ip in joined.split(",") if ip]
    if not ips:
        return CheckResult(
            code,
            "volume addresses",
            "fail",
            f"{ctx.stacks.plan(storage).name} outputs no floating IP ({FLOATING_IPS.key()} is {joined!r})",
            f"the Storage stack rows; {_COMPUTE_RUNBOOK}",
        )
    names = (dataset_volume_name(region), checkpoint_volume_name(region))
    servers = {
        str(v.get("metadata", {}).get("name")): ((v.get("spec") or {}).get("nfs") or {}).get("server")
        for v in api.items("/api/v1/persistentvolumes")
    }
    missing = [name for name in names if name not in servers]
    # A mounted address still in the list works wherever it sits in it (a floating IP moves between nodes).
    stale = [
        f"{n} mounts {servers[n]}, not one of {joined}"
        for n in names
        if n in servers and servers[n] not in ips
    ]
    if missing and not stale:
        return CheckResult(
            code,
            "volume addresses",
            "fail",
            f"no PersistentVolume {', '.join(missing)}",
            f"the volumes are applied by the Compute stack ({_COMPUTE_RUNBOOK}): "
            f"{ctx.deploy_command(stack_id('compute', code))}",
        )
    if stale:
        return CheckResult(
            code,
            "volume addresses",
            "fail",
            f"the volumes mount addresses {ctx.stacks.plan(storage).name} no longer outputs: "
            + "; ".join(stale),
            f'{_COMPUTE_RUNBOOK}, "Volumes on stale CNQ addresses": with no job running, delete the claims and '
            f"volumes, then {ctx.refresh_command(stack_id('compute', code))}",
        )
    return CheckResult(
        code,
        "volume addresses",
        "pass",
        f"{names[0]} and {names[1]} mount {code}'s current CNQ floating IPs "
        f"({servers[names[0]]}, {servers[names[1]]})",
    )
