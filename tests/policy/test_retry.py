"""What the deploy after a failed or deleted one depends on, as policy rules: each passes dev and catches its
mutated template.

Sources (the oracle, written out here):
- CloudFormation User Guide, "DeletionPolicy attribute": Retain keeps a resource when its stack is deleted or the
  create that made it rolls back; RetainExceptOnCreate deletes it when the operation that created it rolls back,
  and otherwise behaves like Retain: deleting the stack keeps it.
- CloudFormation CLI, "Resource type schema": primaryIdentifier is the property that uniquely identifies an
  instance of the type; EC2 CreateKeyPair refuses a KeyName in use (InvalidKeyPair.Duplicate, EC2 API reference,
  error codes), AWS Backup CreateBackupVault an existing BackupVaultName (AlreadyExistsException).
- CloudFormation User Guide, "Name type": custom-name properties such as AWS::ECR::Repository RepositoryName,
  AWS::S3::Bucket BucketName, AWS::IAM::Role RoleName, AWS::RDS::DBInstance DBInstanceIdentifier; without one
  CloudFormation generates a unique physical ID.
- CloudFormation User Guide, "Pseudo parameters reference": AWS::StackId is the ID of the stack being created.
- EC2 User Guide, "Work with instance user data": 16 KB in raw form, before it is base64-encoded; the size of n
  bytes after base64-encoding is ceil(n/3)*4.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.rules import Template, check
from tests.cfn_schemas import name_property, physical_names
from tests.conftest import ROOT, Templates

EC2_USER_DATA_BYTES = 16 * 1024  # EC2 User Guide: 16 KB of raw user data


def _hits(templates: Templates, config: HubSpokeConfig, rule: str) -> list[tuple[str, str]]:
    return [
        (v.template, v.logical_id)
        for v in check([Template(k, t) for k, t in templates.items()], config)
        if v.rule == rule
    ]


SHIPPED = ROOT / "hubspoke" / "policy" / "physical_names.json"
REGENERATE = "regenerate: .venv/bin/python -m tests.cfn_schemas > hubspoke/policy/physical_names.json"


@pytest.mark.thorough
def test_the_name_table_is_the_one_cfn_lints_schemas_give() -> None:
    """The pack's copy (synth cannot import cfn-lint, a dev dependency) equals the derivation from every
    registry schema cfn-lint bundles (about 1,800 files: the fast tier checks the types we deploy, below)."""
    assert json.loads(SHIPPED.read_text()) == physical_names(), REGENERATE


def test_the_name_table_knows_the_names_of_what_we_deploy(dev_templates: Templates) -> None:
    """For every type in dev's templates and the names the "Name type" page lists, the copy says what the
    schemas say, and that derivation finds the documented names."""
    shipped = json.loads(SHIPPED.read_text())
    deployed = {r["Type"] for t in dev_templates.values() for r in t["Resources"].values()}
    documented = {
        "AWS::ECR::Repository": "RepositoryName",
        "AWS::S3::Bucket": "BucketName",
        "AWS::IAM::Role": "RoleName",
        "AWS::RDS::DBInstance": "DBInstanceIdentifier",
        "AWS::Logs::LogGroup": "LogGroupName",
        "AWS::SecretsManager::Secret": "Name",
        "AWS::EKS::Cluster": "Name",
        "AWS::SageMaker::Cluster": "ClusterName",
    }
    for kind in deployed | set(documented):
        assert shipped.get(kind) == name_property(kind), f"{kind}: {REGENERATE}"
    assert {t: shipped.get(t) for t in documented} == documented
    # Named by their primaryIdentifier although the name is not <own type>Name (KeyPair: KeyName) or its shape is
    # a $ref to a string definition (BackupVault, MWAA Environment).
    by_identifier = {
        "AWS::EC2::KeyPair": "KeyName",
        "AWS::Backup::BackupVault": "BackupVaultName",
        "AWS::MWAA::Environment": "Name",
    }
    assert {t: name_property(t) for t in by_identifier} == by_identifier
    assert {t: shipped.get(t) for t in by_identifier} == by_identifier, REGENERATE
    # Properties that name another resource are not the resource's own name.
    assert shipped.get("AWS::EKS::Addon") != "ClusterName"
    assert "AWS::Lambda::Permission" not in shipped


def test_dev_templates_pass_the_retry_rules(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    assert _hits(dev_templates, dev_config, "HubSpoke-RetainedFixedName") == []
    assert _hits(dev_templates, dev_config, "HubSpoke-UserDataSize") == []


def _repository(templates: Templates) -> tuple[str, dict[str, Any]]:
    [(logical_id, res)] = [
        (k, v)
        for k, v in templates["compute-us-west-2"]["Resources"].items()
        if v["Type"] == "AWS::ECR::Repository"
    ]
    return logical_id, res


def test_a_retained_repository_with_a_fixed_name_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The training image repository as it was before (a fixed `hubspoke-<env>-training`, Retain) is refused, and
    so is the same name under RetainExceptOnCreate (deleting the stack keeps it, so re-creating the stack after a
    teardown fails); a name that changes per create is not."""
    broken = copy.deepcopy(dev_templates)
    logical_id, repo = _repository(broken)
    assert repo["DeletionPolicy"] == "Retain"
    repo["Properties"]["RepositoryName"] = "hubspoke-dev-training"
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == [("compute-us-west-2", logical_id)]
    # Built from what a retry keeps (the Region, the stack's name) is still fixed.
    repo["Properties"]["RepositoryName"] = {"Fn::Join": ["-", ["training", {"Ref": "AWS::Region"}]]}
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == [("compute-us-west-2", logical_id)]
    # From the stack's ID, new for every create: not fixed.
    repo["Properties"]["RepositoryName"] = {"Fn::Join": ["-", ["training", {"Ref": "AWS::StackId"}]]}
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == []
    repo["Properties"]["RepositoryName"] = "hubspoke-dev-training"
    repo["DeletionPolicy"] = "RetainExceptOnCreate"
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == [("compute-us-west-2", logical_id)]
    [fix] = [
        v.fix
        for v in check([Template(k, t) for k, t in broken.items()], dev_config)
        if v.rule == "HubSpoke-RetainedFixedName"
    ]
    assert "leave RepositoryName unset" in fix and "use DeletionPolicy RetainExceptOnCreate" not in fix
    # Deleted with its stack: nothing is kept, so a fixed name is no retry problem.
    repo["DeletionPolicy"] = "Delete"
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == []


def test_any_retained_named_type_is_caught_not_only_repositories(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    broken = copy.deepcopy(dev_templates)
    resources = broken["storage-us-east-2"]["Resources"]
    bucket = next(
        k for k, v in resources.items() if v["Type"] == "AWS::S3::Bucket" and v["DeletionPolicy"] == "Retain"
    )
    resources[bucket]["Properties"]["BucketName"] = "hubspoke-dev-data"
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == [("storage-us-east-2", bucket)]


@pytest.mark.parametrize(
    ("kind", "prop"), [("AWS::EC2::KeyPair", "KeyName"), ("AWS::Backup::BackupVault", "BackupVaultName")]
)
@pytest.mark.parametrize("policy", ["Retain", "RetainExceptOnCreate"])
def test_types_named_by_their_primary_identifier_are_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, kind: str, prop: str, policy: str
) -> None:
    """A key pair or backup vault with a fixed name, kept by either policy, blocks the next create."""
    broken = copy.deepcopy(dev_templates)
    broken["storage-us-east-2"]["Resources"]["Mutated"] = {
        "Type": kind,
        "DeletionPolicy": policy,
        "Properties": {prop: "hubspoke-dev-fixed"},
    }
    assert _hits(broken, dev_config, "HubSpoke-RetainedFixedName") == [("storage-us-east-2", "Mutated")]


def _with_user_data(templates: Templates, user_data: Any, *, launch_template: bool = False) -> Templates:
    broken = copy.deepcopy(templates)
    resources = broken["storage-us-east-2"]["Resources"]
    if launch_template:
        resources["Mutated"] = {
            "Type": "AWS::EC2::LaunchTemplate",
            "Properties": {"LaunchTemplateData": {"UserData": user_data}},
        }
    else:
        node = next(k for k, v in resources.items() if v["Type"] == "AWS::EC2::Instance")
        resources[node]["Properties"]["UserData"] = user_data
        resources["Mutated"] = resources.pop(node)
    return broken


def test_user_data_over_16_kb_is_caught_counted_before_base64(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    script = "#!/bin/bash\n" + "#" * (EC2_USER_DATA_BYTES - len("#!/bin/bash\n"))
    assert len(script.encode()) == EC2_USER_DATA_BYTES
    at_limit = _with_user_data(dev_templates, {"Fn::Base64": script})
    assert _hits(at_limit, dev_config, "HubSpoke-UserDataSize") == []
    over = _with_user_data(dev_templates, {"Fn::Base64": script + "#"})
    assert _hits(over, dev_config, "HubSpoke-UserDataSize") == [("storage-us-east-2", "Mutated")]
    # Already base64: the decoded size counts. 15,000 bytes are 20,000 base64 characters, and pass.
    encoded = base64.b64encode(b"#" * 15000).decode()
    assert len(encoded) == -(-15000 // 3) * 4 > EC2_USER_DATA_BYTES
    assert _hits(_with_user_data(dev_templates, encoded), dev_config, "HubSpoke-UserDataSize") == []
    too_big = base64.b64encode(b"#" * (EC2_USER_DATA_BYTES + 1)).decode()
    assert _hits(
        _with_user_data(dev_templates, too_big, launch_template=True), dev_config, "HubSpoke-UserDataSize"
    ) == [("storage-us-east-2", "Mutated")]
    # Built with intrinsics: its literal text alone over the limit is enough to refuse it.
    joined = {"Fn::Base64": {"Fn::Join": ["", [script, {"Ref": "AWS::Region"}, "#"]]}}
    assert _hits(_with_user_data(dev_templates, joined), dev_config, "HubSpoke-UserDataSize") == [
        ("storage-us-east-2", "Mutated")
    ]
