"""The dataset load Job's AWS role, Pod Identity association, service account and settings on the hub's cluster.

From the cross-account shape (tests/shapes.py: its hub, us-east-1, has compute and source buckets). Sources for
the expected shapes: Amazon EKS API Reference, CreatePodIdentityAssociation (cluster, namespace, service account,
role; "The service account and the pods that use the service account must be in this namespace"); EKS User Guide,
"Create IAM role with trust policy required by EKS Pod Identity" (principal pods.eks.amazonaws.com, sts:AssumeRole
and sts:TagSession); IAM API Reference, CreateAccessKey and DeleteAccessKey (resource: the user's ARN, which
carries its path); Secrets Manager API Reference, GetSecretValue (resource: the secret).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Templates, load_shape, properties, resources

pytestmark = pytest.mark.thorough
HUB = "us-east-1"


@pytest.fixture(scope="module")
def shape(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_shape("cross-account", tmp_path_factory)


def _job(shape: Any) -> dict[str, Any]:
    from hubspoke.k8s.load import load_job

    return load_job(shape.config, name="n", version="v", source="s3://c4-tokenized/", bucket_region=HUB,
                    token_bytes=4, vocab_size=10, image="img@sha256:" + "0" * 64)  # fmt: skip


def _text(value: Any, templates: Templates) -> str:
    """A template string with its tokens written as <...>: Fn::Join parts and Refs by name, and a weak reference
    (Fn::GetStackOutput: StackName, OutputName; CloudFormation Template Reference) followed to the value of that
    output in the producer's template, so a token names the producer's resource."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        return "".join(_text(p, templates) for p in value["Fn::Join"][1])
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetStackOutput" in value:
        read = value["Fn::GetStackOutput"]
        [producer] = [t for sid, t in templates.items() if read["StackName"].endswith(f"-{sid}")]
        return _text(producer["Outputs"][read["OutputName"]]["Value"], templates)
    return f"<{next(iter(value))}>"


def _storage_resource(shape: Any, kind: str, prefix: str) -> str:
    """The logical ID of the hub Storage stack's one resource of `kind` whose ID starts with `prefix`."""
    [found] = [i for i, _ in resources(shape.templates[f"storage-{HUB}"], kind) if i.startswith(prefix)]
    return found


def test_the_association_binds_the_jobs_service_account_in_its_namespace(shape: Any) -> None:
    template = shape.templates[f"compute-{HUB}"]
    job = _job(shape)
    wanted = (job["metadata"]["namespace"], job["spec"]["template"]["spec"]["serviceAccountName"])
    found = {
        (a["Namespace"], a["ServiceAccount"]): a
        for _, a in properties(template, "AWS::EKS::PodIdentityAssociation")
    }
    assert wanted in found
    role_id = found[wanted]["RoleArn"]["Fn::GetAtt"][0]
    trust = dict(resources(template, "AWS::IAM::Role"))[role_id]["Properties"]["AssumeRolePolicyDocument"]
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"]["StringEquals"] == {
        "aws:RequestTag/kubernetes-namespace": wanted[0],
        "aws:RequestTag/kubernetes-service-account": wanted[1],
    }
    # Its policy: the Shift user's keys and the login secret, nothing else.
    granted: dict[str, list[str]] = {}
    for _, policy in properties(template, "AWS::IAM::Policy"):
        if {"Ref": role_id} in policy.get("Roles", []):
            for s in policy["PolicyDocument"]["Statement"]:
                actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
                for action in actions:
                    granted[action] = [_text(s["Resource"], shape.templates)]
    user_path = dict(properties(shape.templates[f"storage-{HUB}"], "AWS::IAM::User")).popitem()[1]["Path"]
    shift_user = _storage_resource(shape, "AWS::IAM::User", "ShiftFromUser")
    login = _storage_resource(shape, "AWS::SecretsManager::Secret", "LoaderLogin")
    user = f"arn:<AWS::Partition>:iam::{shape.config.account}:user{user_path}<{shift_user}>"
    assert granted == {
        "iam:CreateAccessKey": [user],
        "iam:DeleteAccessKey": [user],
        "secretsmanager:GetSecretValue": [f"<{login}>"],
    }


def test_the_service_account_and_settings_are_applied_after_the_namespace(shape: Any) -> None:
    template = shape.templates[f"compute-{HUB}"]
    job = _job(shape)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    refs = {e["valueFrom"]["configMapKeyRef"]["key"]: e["valueFrom"]["configMapKeyRef"]["name"]
            for e in container["env"] if "valueFrom" in e}  # fmt: skip
    manifests = dict(resources(template, "Custom::AWSCDK-EKS-KubernetesResource"))
    docs_of = {
        rid: json.loads(_text(r["Properties"]["Manifest"], shape.templates)) for rid, r in manifests.items()
    }
    [(loader_id, docs)] = [(rid, d) for rid, d in docs_of.items() if any(x["kind"] == "ConfigMap" for x in d)]
    kinds = {d["kind"]: d for d in docs}
    assert (
        kinds["ServiceAccount"]["metadata"]["name"] == job["spec"]["template"]["spec"]["serviceAccountName"]
    )
    settings = kinds["ConfigMap"]
    assert set(refs.values()) == {settings["metadata"]["name"]} and set(refs) == set(settings["data"])
    assert (
        settings["data"]["shift-user"] == f"<{_storage_resource(shape, 'AWS::IAM::User', 'ShiftFromUser')}>"
    )
    assert (
        settings["data"]["secret-arn"]
        == f"<{_storage_resource(shape, 'AWS::SecretsManager::Secret', 'LoaderLogin')}>"
    )
    assert "FloatingIps" in settings["data"]["rest-address"] or "<" in settings["data"]["rest-address"]
    [storage_id] = [rid for rid, d in docs_of.items() if any(x["kind"] == "Namespace" for x in d)]
    assert storage_id in manifests[loader_id].get("DependsOn", [])


def _loaders(templates: Templates) -> list[str]:
    """The compute stacks giving the load Job's service account a Pod Identity role."""
    return [name for name, template in templates.items() if name.startswith("compute-")
            for _, a in properties(template, "AWS::EKS::PodIdentityAssociation")
            if a["ServiceAccount"] == "hubspoke-dataset-loader"]  # fmt: skip


def test_no_loader_without_source_buckets(
    dev_templates: Templates, dev_templates_without_source_buckets: Templates
) -> None:
    """config/dev.yaml without its source bucket (it lists an example one since 1ca5cac) has no loader; with it,
    the hub's compute stack has one."""
    assert _loaders(dev_templates) == ["compute-us-east-2"]
    assert _loaders(dev_templates_without_source_buckets) == []
