"""Each HyperPod rule of our pack passes the dev templates (test_rules.py) and catches a mutated template.

The constraints and their sources are the rules' own (hubspoke/policy/hyperpod.py); each mutation below breaks one
the way a careless change would, and the expected rule ID is written out here, not imported.
"""

from __future__ import annotations

import copy
import json
import re
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


# Control Tower CT.KMS.PR.3 as its cfn-guard rule requires it (ct-kms-pr-3.guard: Deny kms:CreateGrant to "*"
# with BoolIfExists kms:GrantIsForAWSResource and aws:PrincipalIsAWSService both "false"), written out here.
CT_KMS_PR_3 = {
    "Effect": "Deny",
    "Principal": {"AWS": "*"},
    "Action": "kms:CreateGrant",
    "Resource": "*",
    "Condition": {
        "BoolIfExists": {"kms:GrantIsForAWSResource": "false", "aws:PrincipalIsAWSService": "false"}
    },
}


def _secrets_key(t: dict[str, Any]) -> str:
    [(_, cluster)] = _resources(t, "AWS::EKS::Cluster")
    return str(cluster["Properties"]["EncryptionConfig"][0]["Provider"]["KeyArn"]["Fn::GetAtt"][0])


def _volume_key(t: dict[str, Any]) -> str:
    storage = _cluster(t)["InstanceGroups"][0]["InstanceStorageConfigs"][0]["EbsVolumeConfig"]
    return str(storage["VolumeKmsKeyId"]["Fn::GetAtt"][0])


def _ecr_key(t: dict[str, Any]) -> str:
    (repo,) = [r for _, r in _resources(t, "AWS::ECR::Repository")]
    return str(repo["Properties"]["EncryptionConfiguration"]["KmsKey"]["Fn::GetAtt"][0])


def secrets_key_with_grant_deny(t: dict[str, Any]) -> None:
    t["Resources"][_secrets_key(t)]["Properties"]["KeyPolicy"]["Statement"].append(dict(CT_KMS_PR_3))


def volume_key_with_grant_deny(t: dict[str, Any]) -> None:
    t["Resources"][_volume_key(t)]["Properties"]["KeyPolicy"]["Statement"].append(dict(CT_KMS_PR_3))


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
        (secrets_key_with_grant_deny, "HubSpoke-ServiceKeyGrantDeny"),
        (volume_key_with_grant_deny, "HubSpoke-ServiceKeyGrantDeny"),
        (values_as_an_object, "HubSpoke-HyperPodAgentRegion"),
    ],
)
def test_each_hyperpod_rule_catches_its_mutation(
    dev_config: HubSpokeConfig, dev_templates: Templates, mutate: Callable[[dict[str, Any]], None], rule: str
) -> None:
    broken = copy.deepcopy(dev_templates)
    mutate(broken[STACK])
    found = check([Template(sid, t) for sid, t in broken.items()], dev_config)
    assert {v.rule for v in found} == {rule}, f"{mutate.__name__}: expected only {rule}, got {found}"
    for v in found:  # "\n" marks where the message and the fix begin and end
        text = f"\n{v.message}\n{v.fix}\n"
        missing = [words for words in READER_WORDS.get(mutate.__name__, ()) if words not in text]
        assert not missing, (missing, text)


# What a reader of each finding needs, as written (case and all): the property or call to change, and the
# source docs/policy.md's table gives for the rule (quotes single in the finding). "\n" anchors a message's
# or fix's start or end.
READER_WORDS: dict[str, tuple[str, ...]] = {
    "without_continuous": (
        "\nan instance group sets VolumeKmsKeyId", "NodeProvisioningMode is not Continuous\n",
        "\nset NodeProvisioningMode: Continuous", "continuous node provisioning mode)\n",
        "(SageMaker developer guide, 'Customer managed AWS KMS key encryption for SageMaker HyperPod': supported only",
    ),
    "key_policy_with_context": (
        "\nremove the encryption-context conditions", "HyperPod passes no encryption context",
        "so the cluster could not use the key",
        "(SageMaker developer guide, 'Customer managed AWS KMS key encryption for SageMaker HyperPod')\n",
    ),
    "lifecycle_bucket_literal": (
        "\nname the bucket sagemaker-", "SageMaker API reference (ClusterLifeCycleConfig.SourceS3Uri) marks it",
        "AmazonSageMakerClusterInstanceRolePolicy on the nodes' role", "(the API's own pattern, (https|s3)://",
        "accepts any bucket)\n",
    ),
    "access_entry_for_the_execution_role": (
        "\nan access entry for a HyperPod execution role", "which HyperPod creates itself\n", "\nremove it: ",
        "(SageMaker API reference, ClusterMetadata.EksRoleAccessEntries) and EKS",
        "(EKS API reference, CreateAccessEntry principalArn)\n",
    ),
    "old_vpc_cni": ("\npin vpc-cni 1.18.3 or newer", "Amazon EKS support in SageMaker HyperPod')\n"),
    "agent_region_missing": (
        "the chart falls back to us-east-1",
        "pinned commit, charts/health-monitoring-agent/templates/_helpers.tpl)\n",
    ),
    "coredns_without_overwrite": (
        "coredns with ResolveConflicts (unset): EKS bootstraps its own copy", "conflicts with it\n",
        "\nset ResolveConflicts: OVERWRITE", "eks-cluster-stack.yaml does (aws-samples/awsome-distributed-training)\n",
    ),
    "secrets_key_with_grant_deny": (
        ": EKS makes its CreateCluster grant", "name, and kms:GrantIsForAWSResource is not supported",
        "(EKS User Guide, enable-kms note", "CT.EKS.PR.2 usage considerations)\n",
        "\nleave the CT.KMS.PR.3 statement off this key", ")) and acknowledge CT.KMS.PR.3 on it\n",
    ),
    "volume_key_with_grant_deny": (
        ": ASSUMED: SageMaker's grants", "may not carry kms:GrantIsForAWSResource",
        "(hubspoke/constructs/hyperpod/cluster.py)\n",
    ),
}  # fmt: skip


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


def _denied(policy: dict[str, Any], context: dict[str, bool]) -> bool:
    """Whether an explicit Deny of the key policy matches kms:CreateGrant by a role with this request context.

    IAM User Guide, "Policy evaluation logic": an explicit Deny overrides any Allow. "IAM JSON policy elements:
    Condition operators": all operators of a Condition block must match; Bool compares the key's value, and a
    ...IfExists operator also matches when the key is absent from the request context. Only what the statements
    here use is modelled; anything else fails the test rather than guess."""
    for statement in policy["Statement"]:
        if statement["Effect"] != "Deny":
            continue
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if not {"kms:CreateGrant", "kms:*", "*"} & set(actions):
            continue
        assert statement["Principal"] in ("*", {"AWS": "*"}), statement
        matches = True
        for operator, conditions in statement.get("Condition", {}).items():
            assert operator in ("Bool", "BoolIfExists"), f"not modelled: {operator}"
            for key, wanted in conditions.items():
                if key not in context:
                    matches &= operator == "BoolIfExists"
                else:
                    matches &= str(context[key]).lower() == str(wanted).lower()
        if matches:
            return True
    return False


# The two readings of a grant made while CloudFormation, as the CDK execution role, creates the cluster: flagged
# as for an AWS resource, or (as the EKS User Guide says of CreateCluster) without the key in the request.
FLAGGED = {"kms:GrantIsForAWSResource": True, "aws:PrincipalIsAWSService": False}
UNFLAGGED = {"aws:PrincipalIsAWSService": False}


def test_eks_and_hyperpod_keys_admit_the_grant_either_way_and_other_keys_keep_ct_kms_pr_3(
    dev_templates: Templates,
) -> None:
    """EKS User Guide, "Encrypt Kubernetes secrets with KMS on existing clusters" (note on create-key) and the
    Control Tower controls reference, CT.EKS.PR.2 usage considerations: "kms:GrantIsForAWSResource is not
    supported for the CreateCluster action". The CT.KMS.PR.3 statement denies exactly that grant; the secrets key
    and the HyperPod volume key (whose grants no page we could read describes) admit it under both readings, and so
    does the ECR key of the training images (the repository's creator makes its grants, ECR User Guide).
    Every other key keeps CT.KMS.PR.3."""
    assert not _denied({"Statement": [CT_KMS_PR_3]}, FLAGGED) and _denied(
        {"Statement": [CT_KMS_PR_3]}, UNFLAGGED
    )
    compute = [sid for sid in dev_templates if sid.startswith("compute-")]
    assert STACK in compute
    service_keys = set()
    for sid in compute:
        template = dev_templates[sid]
        # The training-image key too: Amazon ECR User Guide, "Encryption at rest": ECR sends two CreateGrant
        # requests when the repository is created, in the name of its creator; no page says they are flagged.
        for key_id in (_secrets_key(template), _volume_key(template), _ecr_key(template)):
            policy = template["Resources"][key_id]["Properties"]["KeyPolicy"]
            assert not _denied(policy, FLAGGED) and not _denied(policy, UNFLAGGED), f"{sid}/{key_id}"
            service_keys.add((sid, key_id))
    others = [
        (sid, key_id, key)
        for sid, t in dev_templates.items()
        for key_id, key in _resources(t, "AWS::KMS::Key")
        if (sid, key_id) not in service_keys
    ]
    assert others
    for sid, key_id, key in others:
        assert _denied(key["Properties"]["KeyPolicy"], UNFLAGGED), f"{sid}/{key_id} lost CT.KMS.PR.3"


def test_the_grant_deny_fix_names_calls_that_exist(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The fix a user follows is code: `retained_key(..., caller_grants=<reason>)` (hubspoke/constructs/keys.py)
    and `acknowledge` of the control (hubspoke/policy/acks.py, which takes Control Tower ids such as
    CT.KMS.PR.3, Control Tower's id for "KMS key policy does not allow CreateGrant for non-AWS resources").
    Each name in it is checked against the callable it names, spelled as the code spells it."""
    import inspect

    from aws_cdk import App, Stack

    from hubspoke.constructs.keys import retained_key
    from hubspoke.policy.acks import acknowledge

    broken = copy.deepcopy(dev_templates)
    secrets_key_with_grant_deny(broken[STACK])
    [fix] = {
        v.fix
        for v in check([Template(sid, t) for sid, t in broken.items()], dev_config)
        if v.rule == "HubSpoke-ServiceKeyGrantDeny"
    }
    called = re.search(r"\bretained_key\(\.\.\., (\w+)=<reason>\)", fix)
    assert called and called[1] in inspect.signature(retained_key).parameters, fix
    control = re.search(r"\band acknowledge (CT\.KMS\.PR\.\d+) on it$", fix)
    assert control and control[1] == "CT.KMS.PR.3", fix
    acknowledge(Stack(App(), "s"), control[1], reason="a reason long enough for a reviewer to check it here")


def _orchestrator(*resources: tuple[str, str, dict[str, Any]]) -> Template:
    """A hand-written template holding a HyperPod cluster and `resources` (logical ID, type, properties)."""
    body: dict[str, Any] = {"Resources": {"Cluster": {"Type": "AWS::SageMaker::Cluster", "Properties": {}}}}
    for logical_id, kind, props in resources:
        body["Resources"][logical_id] = {"Type": kind, "Properties": props}
    return Template("compute", body)


@pytest.mark.parametrize(
    ("version", "caught"),
    [
        ("v1.18.3-eksbuild.1", False),  # the documented minimum
        ("v1.18.10-eksbuild.2", False),  # numbers, not text: 10 > 3
        ("v1.19.0-eksbuild.1", False),
        ("v2.0.0-eksbuild.1", False),
        ("v1.18.2-eksbuild.1", True),
        ("v1.9.9-eksbuild.1", True),
        ("v0.99.99-eksbuild.1", True),
        (None, True),  # EKS's default version: not known to be new enough
        ("latest", True),
    ],
)
def test_vpc_cni_of_a_hyperpod_orchestrator_is_1_18_3_or_newer(
    dev_config: HubSpokeConfig, version: str | None, caught: bool
) -> None:
    """SageMaker developer guide, "Getting started with Amazon EKS support in SageMaker HyperPod": VPC CNI
    1.18.3 or later. EKS add-on versions read vMAJOR.MINOR.PATCH-eksbuild.N (EKS User Guide, add-on versions)."""
    props = {"AddonName": "vpc-cni", **({"AddonVersion": version} if version else {})}
    found = [v for v in check([_orchestrator(("Cni", "AWS::EKS::Addon", props))], dev_config)
             if v.rule == "HubSpoke-HyperPodVpcCni"]  # fmt: skip
    assert [v.logical_id for v in found] == (["Cni"] if caught else [])
    for v in found:  # the version in force: the pinned one, or EKS's default when none is pinned
        assert v.message.startswith(f"vpc-cni {version or '(EKS default)'} on a HyperPod"), v.message


def test_an_old_vpc_cni_without_hyperpod_or_another_addon_is_not_judged(dev_config: HubSpokeConfig) -> None:
    """The minimum is HyperPod's: an EKS cluster without it, or another add-on, is none of this rule's business."""
    old = ("Cni", "AWS::EKS::Addon", {"AddonName": "vpc-cni", "AddonVersion": "v1.10.0-eksbuild.1"})
    plain = Template("eks", {"Resources": {"Cni": {"Type": old[1], "Properties": old[2]}}})
    other = _orchestrator(("Dns", "AWS::EKS::Addon", {"AddonName": "coredns", "AddonVersion": "v1.10.0-eksbuild.1",
                                                         "ResolveConflicts": "OVERWRITE"}))  # fmt: skip
    assert [v for v in check([plain, other], dev_config) if v.rule == "HubSpoke-HyperPodVpcCni"] == []


@pytest.mark.parametrize(
    ("action", "condition", "caught"),
    [
        ("kms:CreateGrant", {"Bool": {"kms:GrantIsForAWSResource": "false"}}, True),
        (["kms:*"], {"Bool": {"kms:GrantIsForAWSResource": False}}, True),
        ("*", {"Bool": {"KMS:GRANTISFORAWSRESOURCE": "false"}}, True),  # condition keys are case-insensitive
        (["kms:Decrypt", "kms:CreateGrant"], {"Bool": {"kms:GrantIsForAWSResource": "false"}}, True),
        ("kms:CreateGrant", {}, False),  # a plain Deny is another rule's business, not CT.KMS.PR.3's
        ("kms:Decrypt", {"Bool": {"kms:GrantIsForAWSResource": "false"}}, False),
    ],
)
def test_the_ct_kms_pr_3_deny_is_recognised_in_any_spelling(
    dev_config: HubSpokeConfig, action: str | list[str], condition: dict[str, Any], caught: bool
) -> None:
    """CT.KMS.PR.3's statement: Deny kms:CreateGrant unless kms:GrantIsForAWSResource (Control Tower controls
    reference); IAM JSON policy reference: Action is a string or a list, wildcards `kms:*` and `*` cover every
    action, condition key names are case-insensitive. An EKS cluster encrypting its secrets with such a key is
    refused (EKS User Guide, "Encrypt Kubernetes secrets with KMS")."""
    statement = {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": action, "Resource": "*"}
    if condition:
        statement["Condition"] = condition
    key = ("Key", "AWS::KMS::Key", {"KeyPolicy": {"Version": "2012-10-17", "Statement": [statement]}})
    secrets = {
        "EncryptionConfig": [
            {"Provider": {"KeyArn": {"Fn::GetAtt": ["Key", "Arn"]}}, "Resources": ["secrets"]}
        ]
    }
    template = _orchestrator(key, ("Eks", "AWS::EKS::Cluster", secrets))
    found = [v.logical_id for v in check([template], dev_config) if v.rule == "HubSpoke-ServiceKeyGrantDeny"]
    assert found == (["Key"] if caught else [])


BUCKET_URI = {"Fn::Join": ["", ["s3://", {"Ref": "Scripts"}, "/lifecycle/"]]}


@pytest.mark.parametrize(
    ("uri", "bucket_name", "named"),
    [
        ("s3://sagemaker-lifecycle-123/scripts/", None, None),
        (
            "s3://lifecycle-sagemaker/scripts/",
            None,
            "lifecycle-sagemaker",
        ),  # the prefix, not anywhere in the name
        ("s3://my-bucket", None, "my-bucket"),
        # The API's pattern also takes https:// URIs; the rule names buckets of s3:// URIs only and judges no other.
        ("https://my-bucket.s3.us-west-2.amazonaws.com/scripts/", None, None),
        (BUCKET_URI, "sagemaker-scripts", None),
        (BUCKET_URI, {"Fn::Join": ["", ["sagemaker-", {"Ref": "AWS::AccountId"}]]}, None),
        (BUCKET_URI, {"Fn::Join": ["", ["scripts-", {"Ref": "AWS::AccountId"}]]}, "scripts-"),
        # a generated name: CloudFormation names it after the stack, not sagemaker-
        (BUCKET_URI, None, "(a generated name)"),
        # Fn::Join puts the delimiter between the values: "sagemaker" "-" <account> starts with sagemaker-.
        (BUCKET_URI, {"Fn::Join": ["-", ["sagemaker", {"Ref": "AWS::AccountId"}]]}, None),
        (BUCKET_URI, {"Fn::Join": ["-", ["sagemaker", "scripts", {"Ref": "AWS::AccountId"}]]}, None),
        (BUCKET_URI, {"Fn::Join": ["-", ["scripts", {"Ref": "AWS::AccountId"}]]}, "scripts-"),
        (BUCKET_URI, {"Fn::Join": ["-", ["scripts", "sagemaker"]]}, "scripts-sagemaker"),
        (BUCKET_URI, {"Fn::Join": ["-", [{"Ref": "AWS::AccountId"}, "sagemaker"]]}, "(a generated name)"),
    ],
)
def test_lifecycle_scripts_come_from_a_sagemaker_bucket(
    dev_config: HubSpokeConfig, uri: Any, bucket_name: Any, named: str | None
) -> None:
    """SageMaker API reference, ClusterLifeCycleConfig.SourceS3Uri: the bucket's name must start with
    `sagemaker-` (the managed AmazonSageMakerClusterInstanceRolePolicy reads only those); a bucket without
    BucketName gets a generated name (AWS::S3::Bucket BucketName: "If you don't specify a name, AWS
    CloudFormation generates a unique ID"); Fn::Join joins its values with the delimiter between them. The
    finding names the bucket as far as the template shows its start (an s3:// URI's first path segment)."""
    group = {
        "InstanceGroupName": "workers",
        "LifeCycleConfig": {"SourceS3Uri": uri, "OnCreate": "on_create.sh"},
    }
    template = _orchestrator(
        ("Scripts", "AWS::S3::Bucket", {} if bucket_name is None else {"BucketName": bucket_name})
    )
    template.body["Resources"]["Cluster"]["Properties"]["InstanceGroups"] = [group]
    found = [v for v in check([template], dev_config) if v.rule == "HubSpoke-HyperPodLifecycleBucket"]
    assert [v.logical_id for v in found] == ([] if named is None else ["Cluster"])
    for v in found:
        assert v.template == "compute"
        assert "workers" in v.message and v.message.endswith(f"from bucket {named}"), v.message


@pytest.mark.parametrize(
    ("values", "caught"),
    [
        (json.dumps({"health-monitoring-agent": {"region": "us-west-2"}}), False),
        (json.dumps({"health-monitoring-agent": {"region": "us-east-1"}}), True),  # another Region
        (json.dumps({"health-monitoring-agent": {"enabled": True}}), True),  # the chart's fallback
        (json.dumps({}), True),
        ({"health-monitoring-agent": {"region": "us-west-2"}}, True),  # an object, not one JSON string
        ("not json", True),
        (None, True),
    ],
)
def test_the_health_agent_gets_its_stacks_region(
    dev_config: HubSpokeConfig, values: Any, caught: bool
) -> None:
    """aws/sagemaker-hyperpod-cli at the pinned commit, charts/health-monitoring-agent/templates/_helpers.tpl:
    without `health-monitoring-agent.region` the chart falls back to us-east-1 before any node exists. The fix
    names that value and the fallback."""
    props = {} if values is None else {"Values": values}
    body = _orchestrator(("Deps", "Custom::HyperPodDependencies", props)).body
    template = Template(
        "compute", {**body, "Metadata": {"hubspoke": {"kind": "compute", "region": "us-west-2"}}}
    )
    found = [v for v in check([template], dev_config) if v.rule == "HubSpoke-HyperPodAgentRegion"]
    assert [v.logical_id for v in found] == (["Deps"] if caught else [])
    for v in found:
        assert "health-monitoring-agent.region" in v.fix and "us-east-1" in v.fix, v.fix
        assert "us-west-2" in v.message, v.message
