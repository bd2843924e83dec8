"""The hub's Shift-From user may read exactly the configured source buckets, and exists only where loads run.

Qumulo's administrator guide ("Using Qumulo Shift-From to Copy Objects from Amazon S3", "Prerequisites" and
"Example IAM Policy", Qumulo/docs@4087c2c) lists what a Shift-From key needs: s3:ListBucket on the bucket and
s3:GetObject on its objects, passed as an access key ID and secret (no instance role). The key is made per load
by `hubspoke dataset load`, so the template holds none. The buckets below are
tests/shapes.py's multi-spoke `dataset.source_buckets`, written out.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Templates, load_shape, properties, resources

BUCKETS = ["c4-tokenized", "c4.other-region"]


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return load_shape("multi-spoke", tmp_path_factory).templates


def _statements(template: dict[str, Any], group_id: str) -> list[dict[str, Any]]:
    """Every statement granted to the group, and none to the user directly (Control Tower CT.IAM.PR.4)."""
    assert not [p for _, p in properties(template, "AWS::IAM::Policy") if p.get("Users")]
    policies = [
        p for _, p in properties(template, "AWS::IAM::Policy") if {"Ref": group_id} in p.get("Groups", [])
    ]
    return [s for p in policies for s in p["PolicyDocument"]["Statement"]]


def _arns(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


@pytest.mark.thorough
def test_the_hub_user_reads_the_source_buckets_and_nothing_else(multi: Templates) -> None:
    hub = multi["storage-us-east-2"]
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
        "s3:ListBucket": {f"arn:aws:s3:::{b}" for b in BUCKETS},
        "s3:GetObject": {f"arn:aws:s3:::{b}/*" for b in BUCKETS},
    }
    # No key and no secret in the template: `hubspoke dataset load` creates a key per load and deletes it.
    assert not list(resources(hub, "AWS::IAM::AccessKey"))
    assert hub["Outputs"]["ShiftUserName"]["Value"] == {"Ref": user_id}


@pytest.mark.thorough
def test_spokes_have_no_shift_user(multi: Templates) -> None:
    for name, template in multi.items():
        if name.startswith("storage-") and name != "storage-us-east-2":
            assert not list(resources(template, "AWS::IAM::User")), name


def test_without_source_buckets_there_is_no_user(dev_templates: Templates) -> None:
    """config/dev.yaml lists no source buckets: no user, no key, no output."""
    hub = dev_templates["storage-us-east-2"]
    assert not list(resources(hub, "AWS::IAM::User")) and not list(resources(hub, "AWS::IAM::AccessKey"))
    assert "ShiftUserName" not in hub.get("Outputs", {})
