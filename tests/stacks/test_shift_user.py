"""The hub's Shift-From user may read exactly the configured source buckets, and exists only where loads run.

Qumulo's administrator guide ("Using Qumulo Shift-From to Copy Objects from Amazon S3", "Prerequisites" and
"Example IAM Policy", Qumulo/docs@b6ddb9ae) lists what a Shift-From key needs: s3:ListBucket on the bucket and
s3:GetObject and s3:GetObjectTagging on its objects, passed as an access key ID and secret (no instance role). The key is made per load
by `hubspoke dataset load`, so the template holds none. The buckets below are
tests/shapes.py's cross-account `dataset.source_buckets`, written out.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Templates, load_shape, properties, resources

BUCKETS = ["c4-tokenized", "c4.other-region"]


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return load_shape("cross-account", tmp_path_factory).templates


def _statements(template: dict[str, Any], group_id: str) -> list[dict[str, Any]]:
    """Every statement granted to the group, and none to the user directly (Control Tower CT.IAM.PR.4)."""
    assert not [p for _, p in properties(template, "AWS::IAM::Policy") if p.get("Users")]
    policies = [
        p for _, p in properties(template, "AWS::IAM::Policy") if {"Ref": group_id} in p.get("Groups", [])
    ]
    return [s for p in policies for s in p["PolicyDocument"]["Statement"]]


def _text(arn: Any) -> str:
    """An ARN as text, a Fn::Join of strings and the partition pseudo parameter written <AWS::Partition>."""
    if isinstance(arn, str):
        return arn
    (parts,) = arn.values()
    return "".join(p if isinstance(p, str) else f"<{p['Ref']}>" for p in parts[1])


def _arns(value: Any) -> list[str]:
    return [_text(v) for v in (value if isinstance(value, list) else [value])]


@pytest.mark.thorough
def test_the_hub_user_reads_the_source_buckets_and_nothing_else(multi: Templates) -> None:
    hub = multi["storage-us-east-1"]
    (user_id,) = [name for name, _ in resources(hub, "AWS::IAM::User")]
    (group_id,) = [name for name, _ in resources(hub, "AWS::IAM::Group")]
    assert dict(properties(hub, "AWS::IAM::User"))[user_id]["Groups"] == [{"Ref": group_id}]
    granted: dict[str, set[str]] = {}
    for statement in _statements(hub, group_id):
        assert statement["Effect"] == "Allow"
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            granted.setdefault(action, set()).update(_arns(statement["Resource"]))
    assert granted == {
        "s3:ListBucket": {f"arn:<AWS::Partition>:s3:::{b}" for b in BUCKETS},
        "s3:GetObject": {f"arn:<AWS::Partition>:s3:::{b}/*" for b in BUCKETS},
        "s3:GetObjectTagging": {f"arn:<AWS::Partition>:s3:::{b}/*" for b in BUCKETS},
    }
    # No key and no secret in the template: `hubspoke dataset load` creates a key per load and deletes it.
    assert not list(resources(hub, "AWS::IAM::AccessKey"))
    assert hub["Outputs"]["ShiftUserName"]["Value"] == {"Ref": user_id}


@pytest.mark.thorough
def test_spokes_have_no_shift_user(multi: Templates) -> None:
    for name, template in multi.items():
        if name.startswith("storage-") and name != "storage-us-east-1":
            assert not list(resources(template, "AWS::IAM::User")), name


def test_without_source_buckets_there_is_no_user(
    dev_templates: Templates, dev_templates_without_source_buckets: Templates
) -> None:
    """config/dev.yaml without its source bucket (it lists an example one since 1ca5cac): no user, no key, no
    output; with it, the user is there."""
    assert list(resources(dev_templates["storage-us-east-2"], "AWS::IAM::User"))
    hub = dev_templates_without_source_buckets["storage-us-east-2"]
    assert not list(resources(hub, "AWS::IAM::User")) and not list(resources(hub, "AWS::IAM::AccessKey"))
    assert "ShiftUserName" not in hub.get("Outputs", {})


# ----- review of issue 24: the stack's partition, and kms:Decrypt for SSE-KMS source buckets
KEY_ARN = "arn:aws-cn:kms:cn-north-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"  # KMS guide's example id


def _bare(region: str, kms_keys: list[str]) -> dict[str, Any]:
    """The construct alone in a stack of `region`: seconds, not a whole-environment synth."""
    from aws_cdk import App, Environment, Stack
    from aws_cdk.assertions import Template

    from hubspoke.constructs.shift import ShiftFromUser

    stack = Stack(App(), "Hub", env=Environment(account="123456789012", region=region))
    ShiftFromUser(stack, "Shift", environment="dev", buckets=["c4-tokenized"], kms_keys=kms_keys)
    return Template.from_stack(stack).to_json()


def _granted(template: dict[str, Any]) -> dict[str, list[Any]]:
    (policy,) = [p for _, p in properties(template, "AWS::IAM::Policy")]
    return {
        action: _arns(s["Resource"])
        for s in policy["PolicyDocument"]["Statement"]
        for action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }


def test_the_grant_uses_the_stack_partition_and_decrypts_only_the_listed_keys() -> None:
    """China Regions are partition aws-cn (AWS General Reference, "Amazon Resource Names (ARNs)"): an arn:aws:
    bucket ARN there grants nothing, so the ARN takes the stack's partition (the AWS::Partition pseudo
    parameter, as in the app). kms:Decrypt is granted on exactly the configured keys, and only then."""
    granted = _granted(_bare("cn-north-1", [KEY_ARN]))
    assert granted["s3:ListBucket"] == ["arn:<AWS::Partition>:s3:::c4-tokenized"]
    assert granted["s3:GetObject"] == ["arn:<AWS::Partition>:s3:::c4-tokenized/*"]
    assert granted["s3:GetObjectTagging"] == ["arn:<AWS::Partition>:s3:::c4-tokenized/*"]
    assert granted["kms:Decrypt"] == [KEY_ARN]
    assert "kms:Decrypt" not in _granted(_bare("us-east-2", []))


def test_kms_key_arns_are_checked_in_config() -> None:
    from pydantic import ValidationError

    from hubspoke.config.schema import DatasetConfig

    assert DatasetConfig(source_buckets=["c4-tokenized"], source_kms_key_arns=[KEY_ARN]).source_kms_key_arns
    with pytest.raises(ValidationError, match="source_kms_key_arns"):
        DatasetConfig(source_buckets=["c4-tokenized"], source_kms_key_arns=["alias/datasets"])
    with pytest.raises(ValidationError, match="without source_buckets"):
        DatasetConfig(source_kms_key_arns=[KEY_ARN])
