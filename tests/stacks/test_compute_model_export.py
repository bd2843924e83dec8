"""The Compute stack wires the model export: EKS maps the rendered Job's namespace and service account to the role
(AWS::EKS::PodIdentityAssociation Namespace and ServiceAccount; EKS User Guide, "Assign an IAM role to a Kubernetes
service account"), and the output `hubspoke render export` reads names the bucket that role may write to."""

from __future__ import annotations

from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.k8s.export import export_job
from tests.conftest import Templates


@pytest.mark.parametrize("code", ["us-east-2", "us-west-2"])
def test_the_association_names_the_jobs_service_account_and_the_output_its_bucket(
    dev_config: HubSpokeConfig, dev_templates: Templates, code: str
) -> None:
    _, job = export_job(
        dev_config,
        dev_config.region_config(code),
        bucket="b-from-the-output",
        image="registry.example/t@sha256:" + "ab" * 32,
    )
    template: dict[str, Any] = dev_templates[f"compute-{code}"]
    resources = template["Resources"]
    # Exactly one association maps the Job's namespace and service account; the hub's Compute stack has the
    # dataset loader's too, since config/dev.yaml lists a source bucket (1ca5cac).
    pod = (job["metadata"]["namespace"], job["spec"]["template"]["spec"]["serviceAccountName"])
    [association] = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::EKS::PodIdentityAssociation"
        and (r["Properties"]["Namespace"], r["Properties"]["ServiceAccount"]) == pod
    ]
    bucket = template["Outputs"]["ModelExportBucket"]["Value"]["Ref"]
    assert resources[bucket]["Type"] == "AWS::S3::Bucket"
    role = association["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    policies = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role} in r["Properties"]["Roles"]
    ]
    assert policies and f"'{bucket}'" in repr(policies)
