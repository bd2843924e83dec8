"""Our rules on SageMaker HyperPod: the deploy-time constraints its documentation states and a template shows."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.model import PolicyRule, Template, Violation, referenced

HYPERPOD_CLUSTER = "AWS::SageMaker::Cluster"
HEALTH_AGENT = "health-monitoring-agent"
# SageMaker developer guide, "Getting started with Amazon EKS support in SageMaker HyperPod": VPC CNI 1.18.3+.
MIN_VPC_CNI = (1, 18, 3)


def _groups(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    groups = props.get("InstanceGroups", [])
    return groups if isinstance(groups, list) else []


def _volume_keys(props: Mapping[str, Any]) -> list[Any]:
    return [
        config.get("EbsVolumeConfig", {}).get("VolumeKmsKeyId")
        for group in _groups(props)
        for config in group.get("InstanceStorageConfigs", [])
        if config.get("EbsVolumeConfig", {}).get("VolumeKmsKeyId")
    ]


def hyperpod_key_needs_continuous(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodKeyNeedsContinuous: a customer managed volume key only with continuous node provisioning."""
    for t in templates:
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            if _volume_keys(props) and props.get("NodeProvisioningMode") != "Continuous":
                yield Violation(
                    "HubSpoke-HyperPodKeyNeedsContinuous", t.path, logical_id,
                    "an instance group sets VolumeKmsKeyId but the cluster's NodeProvisioningMode is not Continuous",
                    "set NodeProvisioningMode: Continuous, or drop VolumeKmsKeyId for the AWS owned key (SageMaker "
                    "developer guide, 'Customer managed AWS KMS key encryption for SageMaker HyperPod': supported "
                    "only for clusters using the continuous node provisioning mode)",
                )  # fmt: skip


def hyperpod_key_policy_without_context(
    templates: list[Template], config: HubSpokeConfig
) -> Iterator[Violation]:
    """HubSpoke-HyperPodKeyPolicy: a HyperPod volume key's policy is not scoped by encryption context."""
    for t in templates:
        keys = dict(t.resources("AWS::KMS::Key"))
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            for key_id in {referenced(k) for k in _volume_keys(props)} & set(keys):
                if "kms:EncryptionContext" in str(keys[key_id].get("KeyPolicy", {})):
                    yield Violation(
                        "HubSpoke-HyperPodKeyPolicy", t.path, key_id,
                        f"the key encrypting {logical_id}'s volumes has kms:EncryptionContext conditions",
                        "remove the encryption-context conditions: HyperPod passes no encryption context, so the "
                        "cluster could not use the key (SageMaker developer guide, 'Customer managed AWS KMS key "
                        "encryption for SageMaker HyperPod')",
                    )  # fmt: skip


def _literal_start(value: Any) -> str:
    """The literal beginning of a template string: the string itself, or a Fn::Join's leading literal parts,
    each followed by the delimiter when another part comes after it (Fn::Join: values joined by a delimiter)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        literal = list(itertools.takewhile(lambda part: isinstance(part, str), parts))
        if literal:
            return separator.join(literal) + (separator if len(literal) < len(parts) else "")
    return ""  # a generated name or a reference: nothing is known of its start


def _bucket_name(t: Template, value: Any) -> str | None:
    """The known beginning of the name of the S3 bucket an s3:// URI names, when the template shows it."""
    if isinstance(value, str):
        return value.removeprefix("s3://").split("/")[0] if value.startswith("s3://") else None
    if isinstance(value, Mapping) and "Fn::Join" in value:
        parts = value["Fn::Join"][1]
        if parts and parts[0] == "s3://" and len(parts) > 1:
            bucket = t.body.get("Resources", {}).get(referenced(parts[1]) or "", {})
            return _literal_start(bucket.get("Properties", {}).get("BucketName"))
    return None


def hyperpod_lifecycle_bucket(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodLifecycleBucket: lifecycle scripts come from a bucket whose name starts with sagemaker-."""
    for t in templates:
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            for group in _groups(props):
                name = _bucket_name(t, group.get("LifeCycleConfig", {}).get("SourceS3Uri"))
                if name is not None and not name.startswith("sagemaker-"):
                    yield Violation(
                        "HubSpoke-HyperPodLifecycleBucket", t.path, logical_id,
                        f"instance group {group.get('InstanceGroupName')} reads its lifecycle scripts from bucket "
                        f"{name or '(a generated name)'}",
                        "name the bucket sagemaker-...: the SageMaker API reference (ClusterLifeCycleConfig."
                        "SourceS3Uri) marks it Important, because the managed AmazonSageMakerClusterInstanceRolePolicy "
                        "on the nodes' role reads only buckets with that prefix (the API's own pattern, "
                        "(https|s3)://([^/]+)/?(.*), accepts any bucket)",
                    )  # fmt: skip


def hyperpod_access_entry(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodAccessEntry: no access entry of our own for an instance group's execution role."""
    for t in templates:
        roles = {
            referenced(g.get("ExecutionRole"))
            for _, props in t.resources(HYPERPOD_CLUSTER)
            for g in _groups(props)
        } - {None}
        for logical_id, props in t.resources("AWS::EKS::AccessEntry"):
            if referenced(props.get("PrincipalArn")) in roles:
                yield Violation(
                    "HubSpoke-HyperPodAccessEntry", t.path, logical_id,
                    "an access entry for a HyperPod execution role, which HyperPod creates itself",
                    "remove it: HyperPod creates the execution role's access entry (SageMaker API reference, "
                    "ClusterMetadata.EksRoleAccessEntries) and EKS allows one access entry per principal (EKS API "
                    "reference, CreateAccessEntry principalArn)",
                )  # fmt: skip


def _version(text: str) -> tuple[int, ...] | None:
    match = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return tuple(int(p) for p in match.groups()) if match else None


def hyperpod_vpc_cni(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodVpcCni: the VPC CNI add-on of a HyperPod orchestrator is 1.18.3 or newer."""
    for t in templates:
        if not any(True for _ in t.resources(HYPERPOD_CLUSTER)):
            continue
        for logical_id, props in t.resources("AWS::EKS::Addon"):
            if props.get("AddonName") != "vpc-cni":
                continue
            version = _version(str(props.get("AddonVersion", "")))
            if version is None or version < MIN_VPC_CNI:
                yield Violation(
                    "HubSpoke-HyperPodVpcCni", t.path, logical_id,
                    f"vpc-cni {props.get('AddonVersion', '(EKS default)')} on a HyperPod orchestrator",
                    "pin vpc-cni 1.18.3 or newer (SageMaker developer guide, 'Getting started with Amazon EKS "
                    "support in SageMaker HyperPod')",
                )  # fmt: skip


def hyperpod_health_agent_region(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-HyperPodAgentRegion: the dependencies chart gets the health agent's Region as a value."""
    for t in templates:
        region = t.meta.get("region")
        for logical_id, props in t.resources("Custom::HyperPodDependencies"):
            try:
                agent = json.loads(props.get("Values", "")).get(HEALTH_AGENT, {})
            except (TypeError, ValueError, AttributeError):
                agent = {}
            if agent.get("region") != region:
                yield Violation(
                    "HubSpoke-HyperPodAgentRegion", t.path, logical_id,
                    f"the chart's {HEALTH_AGENT}.region is {agent.get('region')!r}, not the stack's {region}",
                    f"pass Values as one JSON string with {HEALTH_AGENT}.region set: before any node exists the "
                    "chart falls back to us-east-1 (aws/sagemaker-hyperpod-cli at the pinned commit, "
                    "charts/health-monitoring-agent/templates/_helpers.tpl)",
                )  # fmt: skip


def _denies_unflagged_grants(key_policy: Any) -> bool:
    """A key policy statement denying kms:CreateGrant unless it is flagged kms:GrantIsForAWSResource (CT.KMS.PR.3)."""
    statements = key_policy.get("Statement", []) if isinstance(key_policy, Mapping) else []
    for statement in statements if isinstance(statements, list) else []:
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        if (
            statement.get("Effect") == "Deny"
            and any(a in ("kms:CreateGrant", "kms:*", "*") for a in actions)
            and "kms:grantisforawsresource" in json.dumps(statement.get("Condition", {})).lower()
        ):
            return True
    return False


def service_key_grant_deny(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-ServiceKeyGrantDeny: EKS secrets and HyperPod volume keys do not deny grants unflagged for AWS."""
    for t in templates:
        keys = dict(t.resources("AWS::KMS::Key"))
        users: list[tuple[str, Any, str]] = []
        for logical_id, props in t.resources("AWS::EKS::Cluster"):
            for config_entry in props.get("EncryptionConfig", []) or []:
                key = config_entry.get("Provider", {}).get("KeyArn")
                users.append((logical_id, key, "EKS makes its CreateCluster grant in the caller's name, and "
                              "kms:GrantIsForAWSResource is not supported for CreateCluster (EKS User Guide, "
                              "enable-kms note; Control Tower CT.EKS.PR.2 usage considerations)"))  # fmt: skip
        for logical_id, props in t.resources(HYPERPOD_CLUSTER):
            for key in _volume_keys(props):
                users.append((logical_id, key, "ASSUMED: SageMaker's grants on the volume key may not carry "
                              "kms:GrantIsForAWSResource (hubspoke/constructs/hyperpod/cluster.py)"))  # fmt: skip
        for user, key, why in users:
            key_id = referenced(key)
            if key_id in keys and _denies_unflagged_grants(keys[key_id].get("KeyPolicy")):
                yield Violation(
                    "HubSpoke-ServiceKeyGrantDeny", t.path, key_id,
                    f"the key {user} encrypts with denies kms:CreateGrant unless kms:GrantIsForAWSResource: {why}",
                    "leave the CT.KMS.PR.3 statement off this key (retained_key(..., caller_grants=<reason>)) "
                    "and acknowledge CT.KMS.PR.3 on it",
                )  # fmt: skip


# EKS self-installs these, so the managed add-on needs ResolveConflicts OVERWRITE
# (terraform-aws-modules/terraform-aws-eks#2829), as AWS's HyperPod template sets
# (aws-samples/awsome-distributed-training@e369abdb, nested-stacks/eks-cluster-stack.yaml).
BOOTSTRAPPED_ADDONS = ("vpc-cni", "kube-proxy", "coredns")


def eks_core_addon_overwrite(templates: list[Template], config: HubSpokeConfig) -> Iterator[Violation]:
    """HubSpoke-EksCoreAddonOverwrite: vpc-cni, kube-proxy and coredns add-ons overwrite EKS's bootstrapped copies."""
    for t in templates:
        for logical_id, props in t.resources("AWS::EKS::Addon"):
            if props.get("AddonName") in BOOTSTRAPPED_ADDONS and props.get("ResolveConflicts") != "OVERWRITE":
                yield Violation(
                    "HubSpoke-EksCoreAddonOverwrite", t.path, logical_id,
                    f"{props.get('AddonName')} with ResolveConflicts {props.get('ResolveConflicts', '(unset)')}: "
                    "EKS bootstraps its own copy first, and the managed add-on conflicts with it",
                    "set ResolveConflicts: OVERWRITE, as AWS's HyperPod eks-cluster-stack.yaml does "
                    "(aws-samples/awsome-distributed-training)",
                )  # fmt: skip


HYPERPOD_RULES: tuple[PolicyRule, ...] = (
    hyperpod_key_needs_continuous,
    hyperpod_key_policy_without_context,
    hyperpod_lifecycle_bucket,
    hyperpod_access_entry,
    hyperpod_vpc_cni,
    hyperpod_health_agent_region,
    eks_core_addon_overwrite,
    service_key_grant_deny,
)
