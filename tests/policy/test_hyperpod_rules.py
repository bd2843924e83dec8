"""Each HyperPod rule of our pack passes the dev templates (test_rules.py) and catches a mutated template.

The constraints and their sources are the rules' own (hubspoke/policy/hyperpod.py); each mutation below breaks one
the way a careless change would, and the expected rule ID is written out here, not imported.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.rules import Template, check
from tests.conftest import Templates

STACK = "compute-us-west-2"


def _resources(template: dict[str, Any], kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [(k, r) for k, r in template["Resources"].items() if r["Type"] == kind]


def _cluster(template: dict[str, Any]) -> dict[str, Any]:
    [(_, cluster)] = _resources(template, "AWS::SageMaker::Cluster")
    return dict(cluster["Properties"])


def without_continuous(t: dict[str, Any]) -> None:
    _resources(t, "AWS::SageMaker::Cluster")[0][1]["Properties"].pop("NodeProvisioningMode")


def key_policy_with_context(t: dict[str, Any]) -> None:
    key_id = _cluster(t)["InstanceGroups"][0]["InstanceStorageConfigs"][0]["EbsVolumeConfig"][
        "VolumeKmsKeyId"
    ]
    statement = t["Resources"][key_id["Fn::GetAtt"][0]]["Properties"]["KeyPolicy"]["Statement"][0]
    statement["Condition"] = {"StringEquals": {"kms:EncryptionContext:aws:sagemaker:cluster": "x"}}


def lifecycle_bucket_generated_name(t: dict[str, Any]) -> None:
    uri = _cluster(t)["InstanceGroups"][0]["LifeCycleConfig"]["SourceS3Uri"]
    bucket_id = next(p["Ref"] for p in uri["Fn::Join"][1] if isinstance(p, dict))
    del t["Resources"][bucket_id]["Properties"]["BucketName"]


def lifecycle_bucket_joined_without_prefix(t: dict[str, Any]) -> None:
    uri = _cluster(t)["InstanceGroups"][0]["LifeCycleConfig"]["SourceS3Uri"]
    bucket_id = next(p["Ref"] for p in uri["Fn::Join"][1] if isinstance(p, dict))
    name = t["Resources"][bucket_id]["Properties"]["BucketName"]
    name["Fn::Join"][1][0] = name["Fn::Join"][1][0].removeprefix("sagemaker-")


def lifecycle_bucket_literal(t: dict[str, Any]) -> None:
    group = _resources(t, "AWS::SageMaker::Cluster")[0][1]["Properties"]["InstanceGroups"][0]
    group["LifeCycleConfig"]["SourceS3Uri"] = "s3://my-scripts/lifecycle/"


def access_entry_for_the_execution_role(t: dict[str, Any]) -> None:
    t["Resources"]["InjectedNodeAccess"] = {
        "Type": "AWS::EKS::AccessEntry",
        "Properties": {
            "ClusterName": "c",
            "PrincipalArn": _cluster(t)["InstanceGroups"][0]["ExecutionRole"],
            "Type": "HYPERPOD_LINUX",
        },
    }


def old_vpc_cni(t: dict[str, Any]) -> None:
    for _, addon in _resources(t, "AWS::EKS::Addon"):
        if addon["Properties"]["AddonName"] == "vpc-cni":
            addon["Properties"]["AddonVersion"] = "v1.18.2-eksbuild.1"


def coredns_without_overwrite(t: dict[str, Any]) -> None:
    for _, addon in _resources(t, "AWS::EKS::Addon"):
        if addon["Properties"]["AddonName"] == "coredns":
            addon["Properties"].pop("ResolveConflicts")


def kube_proxy_preserving(t: dict[str, Any]) -> None:
    for _, addon in _resources(t, "AWS::EKS::Addon"):
        if addon["Properties"]["AddonName"] == "kube-proxy":
            addon["Properties"]["ResolveConflicts"] = "PRESERVE"


def agent_region_missing(t: dict[str, Any]) -> None:
    [(_, deps)] = _resources(t, "Custom::HyperPodDependencies")
    deps["Properties"]["Values"] = json.dumps({"health-monitoring-agent": {"enabled": True}})


def values_as_an_object(t: dict[str, Any]) -> None:
    [(_, deps)] = _resources(t, "Custom::HyperPodDependencies")
    deps["Properties"]["Values"] = {"health-monitoring-agent": {"region": "us-west-2"}}


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (without_continuous, "HubSpoke-HyperPodKeyNeedsContinuous"),
        (key_policy_with_context, "HubSpoke-HyperPodKeyPolicy"),
        (lifecycle_bucket_generated_name, "HubSpoke-HyperPodLifecycleBucket"),
        (lifecycle_bucket_joined_without_prefix, "HubSpoke-HyperPodLifecycleBucket"),
        (lifecycle_bucket_literal, "HubSpoke-HyperPodLifecycleBucket"),
        (access_entry_for_the_execution_role, "HubSpoke-HyperPodAccessEntry"),
        (old_vpc_cni, "HubSpoke-HyperPodVpcCni"),
        (agent_region_missing, "HubSpoke-HyperPodAgentRegion"),
        (coredns_without_overwrite, "HubSpoke-EksCoreAddonOverwrite"),
        (kube_proxy_preserving, "HubSpoke-EksCoreAddonOverwrite"),
        (values_as_an_object, "HubSpoke-HyperPodAgentRegion"),
    ],
)
def test_each_hyperpod_rule_catches_its_mutation(
    dev_config: HubSpokeConfig, dev_templates: Templates, mutate: Callable[[dict[str, Any]], None], rule: str
) -> None:
    broken = copy.deepcopy(dev_templates)
    mutate(broken[STACK])
    hits = {v.rule for v in check([Template(sid, t) for sid, t in broken.items()], dev_config)}
    assert hits == {rule}, f"{mutate.__name__}: expected only {rule}, got {sorted(hits)}"


def test_the_core_addons_overwrite_what_eks_bootstrapped(dev_templates: Templates) -> None:
    """AWS's HyperPod CloudFormation (aws-samples/awsome-distributed-training@e369abdb474e27b49975b619c88d066c15ae9960,
    1.architectures/7.sagemaker-hyperpod-eks/cfn-templates/nested-stacks/eks-cluster-stack.yaml) creates
    vpc-cni, kube-proxy, coredns and eks-pod-identity-agent with ResolveConflicts: OVERWRITE: EKS installs its
    own copies of the first three with the cluster (terraform-aws-modules/terraform-aws-eks#2829 shows the
    ConfigurationConflict a fresh cluster answers without it)."""
    addons = {
        a["Properties"]["AddonName"]: a["Properties"]
        for _, a in _resources(dev_templates[STACK], "AWS::EKS::Addon")
    }
    for name in ("vpc-cni", "kube-proxy", "coredns", "eks-pod-identity-agent"):
        assert addons[name].get("ResolveConflicts") == "OVERWRITE", name
