"""The compute stack's ECR repository for the training image: what Control Tower and the ECR User Guide ask of it.

Sources (the oracle here):
- Control Tower proactive controls CT.ECR.PR.1 (a lifecycle policy), CT.ECR.PR.2 (ImageScanningConfiguration
  ScanOnPush true), CT.ECR.PR.3 (ImageTagMutability IMMUTABLE), as the bundled cfn-guard rules check them.
- AWS::ECR::Repository EncryptionConfiguration: EncryptionType KMS with KmsKey; AES256 when omitted.
- Amazon ECR User Guide, "Lifecycle policy properties": rules with rulePriority, selection.tagStatus
  (untagged/any), countType sinceImagePushed (countUnit days) or imageCountMoreThan, action.type expire.
- The repository is data (images that runs name by digest): DeletionPolicy and UpdateReplacePolicy Retain.
"""

from __future__ import annotations

import json

from hubspoke.config import HubSpokeConfig
from tests.conftest import Templates, resources


def _repository(dev_templates: Templates) -> dict:
    found = list(resources(dev_templates["compute-us-west-2"], "AWS::ECR::Repository"))
    assert len(found) == 1, found
    return found[0][1]


def test_one_repository_per_compute_region(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    compute = {sid for sid in dev_templates if sid.startswith("compute-")}
    assert compute == {"compute-us-east-2", "compute-us-west-2"}  # config/dev.yaml: HyperPod in both Regions
    for sid, template in dev_templates.items():
        count = len(list(resources(template, "AWS::ECR::Repository")))
        assert count == (1 if sid in compute else 0), sid
    # No RepositoryName: CloudFormation generates one per create (User Guide, "Name type"), so the retained
    # repository of a rolled-back or deleted stack never blocks the next create, and environments do not collide.
    assert "RepositoryName" not in _repository(dev_templates)["Properties"]


def test_repository_is_scanned_immutable_encrypted_and_retained(dev_templates: Templates) -> None:
    repo = _repository(dev_templates)
    props = repo["Properties"]
    assert props["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert props["ImageTagMutability"] == "IMMUTABLE"
    assert props["EncryptionConfiguration"]["EncryptionType"] == "KMS"
    key_id = props["EncryptionConfiguration"]["KmsKey"]["Fn::GetAtt"][0]
    key = dev_templates["compute-us-west-2"]["Resources"][key_id]
    assert key["Type"] == "AWS::KMS::Key" and key["Properties"]["EnableKeyRotation"] is True
    assert repo["DeletionPolicy"] == "Retain" and repo["UpdateReplacePolicy"] == "Retain"
    assert key["DeletionPolicy"] == "Retain"


def test_lifecycle_expires_untagged_and_keeps_the_newest(dev_templates: Templates) -> None:
    policy = json.loads(_repository(dev_templates)["Properties"]["LifecyclePolicy"]["LifecyclePolicyText"])
    rules = {r["selection"]["tagStatus"]: r for r in policy["rules"]}
    assert rules["untagged"]["selection"]["countType"] == "sinceImagePushed"
    assert rules["untagged"]["selection"]["countUnit"] == "days"
    assert rules["any"]["selection"]["countType"] == "imageCountMoreThan"
    assert rules["any"]["selection"]["countNumber"] >= 10  # rendered jobs name images by digest: keep many
    # tagStatus "any" must have the highest rulePriority number (ECR User Guide, lifecycle policy rules).
    assert rules["any"]["rulePriority"] > rules["untagged"]["rulePriority"]
    assert all(r["action"] == {"type": "expire"} for r in policy["rules"])


def test_repository_uri_is_an_output(dev_templates: Templates) -> None:
    """`hubspoke image build` reads the generated name from this output: the URI ends in `/<the repository's
    name>`, which Ref of an AWS::ECR::Repository returns (CloudFormation, AWS::ECR::Repository return values)."""
    outputs = dev_templates["compute-us-west-2"]["Outputs"]
    [logical_id] = [k for k, _ in resources(dev_templates["compute-us-west-2"], "AWS::ECR::Repository")]
    parts = outputs["TrainingImageRepositoryUri"]["Value"]["Fn::Join"][1]
    assert parts[-2:] == ["/", {"Ref": logical_id}]
