"""The fake refuses a Shift-From relationship whose access key lacks a permission Qumulo's guide lists, and the
key's permissions are the ones the hub's Storage stack ships (tests/fakes/qumulo/grants.py synthesizes them).

Qumulo administrator guide, "Using Qumulo Shift-From to Copy Objects from Amazon S3" (Qumulo/docs@b6ddb9ae),
"Prerequisites": the access key needs s3:GetObject, s3:GetObjectTagging and s3:ListBucket; "How Shift-From
Relationships Work", step 1: creating the relationship verifies that the bucket "is accessible by using the
specified credentials, and contains downloadable objects". The refusal's status and class are ASSUMED (the
guide shows no error body); the tests hold the fake only to refusing, and naming what is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from qumulo.lib.request import RequestError
from qumulo.rest_client import RestClient

from tests.fakes.qumulo import FakeQumulo
from tests.fakes.qumulo.grants import shipped_shift_statements

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")

BUCKET, KEY_ID = "c4-tokenized", "AKIAIOSFODNN7EXAMPLE"  # the guide's example access key ID
GUIDE_PERMISSIONS = ["s3:GetObject", "s3:GetObjectTagging", "s3:ListBucket"]  # the guide's "Prerequisites"


@pytest.fixture
def hub() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="hub", node_count=1) as fake:
        fake.password = "Passw0rd-hub!"
        fake.add_file("/dataset/v1/.keep", 0)
        fake.s3_objects[BUCKET] = {"c4/part-000.bin": b"\x01" * 16, "c4/part-001.bin": b"\x02" * 16}
        yield fake


def _create(fake: FakeQumulo) -> Any:
    client = RestClient(fake.node_ips[0], fake.port, timeout=5)
    client.login("admin", "Passw0rd-hub!")
    return client.object_replication.create_object_relationship(
        direction="COPY_FROM_OBJECT", object_store_address="s3.us-east-2.amazonaws.com", bucket=BUCKET,
        object_folder="c4/", region="us-east-2", access_key_id=KEY_ID, secret_access_key="not-a-secret",
        local_directory_path="/dataset/v1/",
    )  # fmt: skip


def _without(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    """The policy with one action taken out of every statement (a statement left with none is dropped)."""
    kept = []
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        rest = [a for a in actions if a != action]
        if rest:
            kept.append({**statement, "Action": rest})
    return kept


def test_the_shipped_policy_lets_the_relationship_be_created(hub: FakeQumulo) -> None:
    hub.grant(KEY_ID, shipped_shift_statements([BUCKET]))
    assert _create(hub)["bucket"] == BUCKET
    statements = shipped_shift_statements([BUCKET])
    granted = {
        a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    }
    assert granted == set(GUIDE_PERMISSIONS)  # and nothing beyond the guide's list


@pytest.mark.parametrize("action", GUIDE_PERMISSIONS)
def test_a_policy_missing_one_listed_permission_fails_the_creation(hub: FakeQumulo, action: str) -> None:
    hub.grant(KEY_ID, _without(shipped_shift_statements([BUCKET]), action))
    with pytest.raises(RequestError) as refused:
        _create(hub)
    assert (
        refused.value.status_code == 400 and action in refused.value.description
    )  # ASSUMED status, see above
    assert not hub.relationships


def test_a_key_granted_another_bucket_is_refused(hub: FakeQumulo) -> None:
    hub.grant(KEY_ID, shipped_shift_statements(["some-other-bucket"]))
    with pytest.raises(RequestError, match="s3:ListBucket"):
        _create(hub)
