"""Persistent storage and the soft capacity limit (runtime/capacity.py), step by step against the Qumulo
contract fake through the real qumulo-api SDK, without a CloudFormation world.

Qumulo's own rules: GET /v1/object-storage/uris answers an array of strings and add-uris "adds new URIs to the
list ... and ignores the existing URIs" (REST guide, object-storage_uris and object-storage_add-uris); there is
no call that removes one (qumulo-api, qumulo/rest/object_storage.py: get_uris and add_uris only). The clamp is
read and written at /v1/capacity/clamp, read as None when unset (qumulo/rest/capacity.py get_capacity_clamp),
and "a value below the current provisioned capacity has no effect" (qumulo-api 7.10.2.1,
qumulo/commands/capacity.py, CapacityLimitSetCommand.SYNOPSIS).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from qumulo.rest_client import RestClient

from hubspoke.constructs.cnq.runtime import capacity
from hubspoke.constructs.cnq.runtime.session import Pending, ProvisioningError
from tests.fakes.qumulo import PSTORE_BYTES, FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
TB = 10**12
PASSWORD = "Admin-Passw0rd!z"


def bucket(n: int) -> str:
    return f"https://dev-hub-b{n}.s3.us-east-2.amazonaws.com/"


@pytest.fixture
def cluster() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="hub") as fake:
        fake.password = PASSWORD
        fake.object_storage_uris = [bucket(1), bucket(2)]
        yield fake


@pytest.fixture
def client(cluster: FakeQumulo) -> Any:
    rest = RestClient(cluster.node_ips[0], cluster.port, timeout=10)
    rest.login("admin", PASSWORD)
    return rest


class Ledger:
    """The clamp-sent record (nodes.py keeps it in a tag on the first node): the last request that sent one."""

    def __init__(self, sent: str | None = None) -> None:
        self.value = sent

    def sent(self) -> str | None:
        return self.value

    def record(self, value: str) -> None:
        self.value = value


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == capacity.__name__]


# ---------------------------------------------------------------- buckets
def test_the_clusters_buckets_are_read_as_qumulo_lists_them(client: Any) -> None:
    assert capacity.current_uris(client) == [bucket(1), bucket(2)]


def test_an_answer_that_is_not_a_list_is_refused_with_what_came() -> None:
    answered = {"uris": [bucket(1)], "padding": "x" * 400}
    stub = SimpleNamespace(object_storage=SimpleNamespace(get_uris=lambda: answered))
    with pytest.raises(ProvisioningError) as raised:
        capacity.current_uris(stub)
    text = str(raised.value)
    assert text.startswith("GET /v1/object-storage/uris answered an unexpected shape: {'uris': [")
    assert len(text) == 300, "cut to one readable status reason"


def test_only_the_missing_buckets_are_posted(client: Any, cluster: FakeQumulo) -> None:
    assert capacity.add_missing_uris(client, [bucket(1), bucket(2), bucket(3)]) == [bucket(3)]
    assert cluster.object_storage_uris == [bucket(1), bucket(2), bucket(3)]
    posts = cluster.called("POST", r"^/v2/object-storage/add-uris")
    assert capacity.add_missing_uris(client, [bucket(1), bucket(2), bucket(3)]) == []
    assert cluster.called("POST", r"^/v2/object-storage/add-uris") == posts, "nothing to add, nothing sent"


def test_added_buckets_leave_the_poll_pending_until_the_next(client: Any, cluster: FakeQumulo) -> None:
    """The add re-forms the quorum (ASSUMED in the fake, as capacity_clamp_set says of the clamp)."""
    with pytest.raises(Pending, match=r"^persistent storage: 2 bucket\(s\) added$"):
        capacity.ensure_uris(client, [bucket(1), bucket(2), bucket(3), bucket(4)])
    assert cluster.object_storage_uris == [bucket(n) for n in (1, 2, 3, 4)]
    capacity.ensure_uris(client, [bucket(n) for n in (1, 2, 3, 4)])


def test_a_bucket_the_stack_no_longer_lists_fails_a_forward_update_naming_it_and_the_fix(
    client: Any, cluster: FakeQumulo
) -> None:
    cluster.object_storage_uris = [bucket(1), bucket(2), bucket(3)]
    with pytest.raises(ProvisioningError) as raised:
        capacity.ensure_uris(client, [bucket(2)])
    text = str(raised.value)
    assert text.startswith(
        f"the cluster stores data in 2 bucket(s) the stack does not list ({bucket(1)}, {bucket(3)})"
    )
    # The runbook's section as it is titled (docs/runbooks/qumulo-core.md).
    assert "Qumulo cannot remove persistent storage" in text
    # The fix and where it is written, the runbook's section as it is titled (docs/runbooks/qumulo-core.md).
    assert text.endswith(
        "import each back into the stack as its PersistentStorage<N> bucket "
        "(docs/runbooks/qumulo-core.md, 'A bucket outside the stack')"
    )
    assert "### A bucket outside the stack" in _runbook()
    assert cluster.called("POST", r"^/v2/object-storage/add-uris") == 0


def _runbook() -> str:
    return (Path(__file__).resolve().parents[3] / "docs" / "runbooks" / "qumulo-core.md").read_text()


def test_during_a_rollback_a_dropped_bucket_is_only_warned_about(
    client: Any, cluster: FakeQumulo, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    cluster.object_storage_uris = [bucket(1), bucket(2), bucket(3)]
    capacity.ensure_uris(client, [bucket(2)], rolling_back=True)
    [message] = messages(caplog)
    assert message.startswith("rollback: the cluster keeps storing data in 2 bucket(s) ")
    assert f"no longer list ({bucket(1)}, {bucket(3)})" in message
    assert message.endswith("Qumulo cannot remove persistent storage, the buckets are retained")
    assert cluster.object_storage_uris == [bucket(1), bucket(2), bucket(3)]


def test_a_rollback_that_drops_nothing_says_nothing(client: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    capacity.ensure_uris(client, [bucket(1), bucket(2)], rolling_back=True)
    assert messages(caplog) == []


# ---------------------------------------------------------------- the update's properties
def props(tb: float | None, *buckets: int) -> dict[str, Any]:
    out: dict[str, Any] = {"ObjectStorageUris": [bucket(n) for n in buckets]}
    if tb is not None:
        out["UsableCapacityBytes"] = str(int(tb * TB))
    return out


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (props(100, 1, 2), props(250, 1, 2, 3)),  # a raise and a bucket more
        (props(100, 1, 2), props(100, 1, 2)),  # unchanged
        (props(None, 1, 2), props(100, 1, 2)),  # the first deploy that sets a limit
        (props(None, 1, 2), props(None, 1, 2)),  # no limit before or after
    ],
)
def test_a_raise_or_no_change_passes(old: dict[str, Any], new: dict[str, Any]) -> None:
    capacity.refuse_shrinking(old, new)


@pytest.mark.parametrize(
    ("old_tb", "new_tb", "shown", "back_to"),
    [
        (250, 100, "250 TB -> 100 TB", "250"),
        (250.5, 100, "250.5 TB -> 100 TB", "250"),
        (250, None, "250 TB -> 0 TB", "250"),
    ],
)
def test_a_lower_capacity_limit_is_refused_naming_the_setting_to_restore(
    old_tb: float, new_tb: float | None, shown: str, back_to: str
) -> None:
    """The setting takes whole TB (storage.soft_capacity_limit_tb): the value to restore, rounded down."""
    with pytest.raises(ProvisioningError) as raised:
        capacity.refuse_shrinking(props(old_tb, 1, 2), props(new_tb, 1, 2))
    text = str(raised.value)
    assert text.startswith(f"soft capacity limit {shown}: Qumulo never shrinks provisioned capacity")
    assert "('a value below the current provisioned capacity has no effect')" in text
    assert text.endswith(f"set storage.soft_capacity_limit_tb back to {back_to}")


def test_fewer_buckets_are_refused_by_count() -> None:
    with pytest.raises(ProvisioningError) as raised:
        capacity.refuse_shrinking(props(100, 1, 2, 3), props(100, 2))
    text = str(raised.value)
    assert text.startswith("storage.bucket_count was lowered: 2 bucket(s) would leave the cluster")
    assert "Qumulo cannot remove persistent storage: set it back (the buckets are retained)" in text


def test_a_rollback_that_lowers_both_is_warned_about_not_sent(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    capacity.refuse_shrinking(props(250, 1, 2, 3), props(100, 1), rolling_back=True)
    [message] = messages(caplog)
    assert message.startswith("rollback to 100 TB and 1 bucket(s): the cluster keeps its soft capacity limit")
    assert "'has no effect', qq capacity_clamp_set" in message
    assert (
        "the 2 bucket(s) it stores data in (Qumulo cannot remove persistent storage); nothing is sent"
        in message
    )


def test_a_rollback_that_lowers_nothing_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    capacity.refuse_shrinking(props(100, 1), props(100, 1), rolling_back=True)
    assert messages(caplog) == []


# ---------------------------------------------------------------- the clamp
def test_the_clamp_reads_0_when_none_is_set_and_its_bytes_when_set(client: Any, cluster: FakeQumulo) -> None:
    assert capacity.current_clamp(client) == 0
    cluster.capacity_clamp = 100 * TB
    assert capacity.current_clamp(client) == 100 * TB


def test_a_clamp_left_alone_is_not_read_or_sent(client: Any, cluster: FakeQumulo) -> None:
    capacity.ensure_limit(client, 250 * TB, None, Ledger(), "req-1")
    assert (
        cluster.called("GET", r"^/v1/capacity/clamp") == 0
        and cluster.called("PUT", r"^/v1/capacity/clamp") == 0
    )


def test_a_raise_is_sent_once_recorded_and_awaited(client: Any, cluster: FakeQumulo) -> None:
    cluster.capacity_clamp = 100 * TB
    ledger = Ledger()
    with pytest.raises(
        Pending, match=r"^soft capacity limit 250 TB requested; it appears in the next quorum$"
    ):
        capacity.ensure_limit(client, 250 * TB, 100 * TB, ledger, "req-1")
    assert ledger.sent() == "req-1"
    assert cluster.capacity_clamp == 250 * TB // PSTORE_BYTES * PSTORE_BYTES


@pytest.mark.parametrize(
    ("clamp", "before"),
    [(250 * TB, 250 * TB), (300 * TB, 250 * TB), (250 * TB, 100 * TB), (249.9 * TB, 100 * TB)],
    ids=["already-there", "above", "changed-since-on-event", "rounded-down-to-a-pstore"],
)
def test_a_clamp_at_or_past_the_target_or_changed_since_is_left(
    client: Any, cluster: FakeQumulo, clamp: float, before: int
) -> None:
    """A clamp other than on_event's reading is the new quorum's (Qumulo keeps whole pstores, below the target
    when it does not divide: capacity_clamp_set), or someone else's: neither is sent again."""
    cluster.capacity_clamp = int(clamp)
    capacity.ensure_limit(client, 250 * TB, before, Ledger(), "req-1")
    assert cluster.called("PUT", r"^/v1/capacity/clamp") == 0


def test_a_clamp_unchanged_after_this_requests_put_is_the_closest_qumulo_keeps(
    client: Any, cluster: FakeQumulo, caplog: pytest.LogCaptureFixture
) -> None:
    """Qumulo stores the pstore count closest to the request "without going over" (capacity_clamp_set)."""
    caplog.set_level(logging.WARNING)
    cluster.capacity_clamp = 100 * TB
    capacity.ensure_limit(client, 250 * TB, 100 * TB, Ledger("req-1"), "req-1")
    assert cluster.called("PUT", r"^/v1/capacity/clamp") == 0
    [message] = messages(caplog)
    assert message.startswith(
        f"soft capacity limit: the cluster keeps {100 * TB} bytes for the {250 * TB} requested"
    )
    assert "(the closest whole pstore count without going over); nothing more to change" in message
