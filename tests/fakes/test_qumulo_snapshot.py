"""FakeQumulo.snapshot and restore, which give the CNQ tests a formed world without forming it again: a restored
fake answers over the SDK as the cluster it copies, and the copy shares nothing with the original."""

from __future__ import annotations

import pytest
from qumulo.lib.request import RequestError
from qumulo.rest_client import RestClient

from tests.fakes.qumulo import FakeQumulo

# qumulo-api's dataclasses-json schemas use marshmallow 3 idioms that marshmallow deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")


def _size(fake: FakeQumulo, password: str, path: str) -> int:
    """The file's size as the SDK reads it (qumulo.rest.fs.get_file_attr), after logging in as admin."""
    client = RestClient(fake.node_ips[0], fake.port, timeout=5)
    client.login("admin", password)
    return int(client.fs.get_file_attr(path=path)["size"])


def test_a_restored_cluster_answers_as_the_one_it_copies_and_shares_nothing_with_it() -> None:
    with FakeQumulo(name="a") as original:
        original.password = "Passw0rd-a!"
        original.add_file("/data/one.bin", 3)
        saved = original.snapshot()
        original.add_file("/data/two.bin", 4)  # after the snapshot: not in it
    with FakeQumulo(name="a") as restored:
        assert restored.state == "UNCONFIGURED"
        restored.restore(saved)
        assert restored.state == "ACTIVE" and restored.cluster_id == original.cluster_id
        assert _size(restored, "Passw0rd-a!", "/data/one.bin") == 3
        with pytest.raises(RequestError):
            _size(restored, "Passw0rd-a!", "/data/two.bin")
        restored.add_file("/data/three.bin", 5)
    assert "/data/three.bin" not in saved["files"] and "/data/three.bin" not in original.files


def test_a_snapshot_restores_only_into_a_fake_with_the_same_nodes() -> None:
    with (
        FakeQumulo(name="a") as four,
        FakeQumulo(name="b", node_count=3, first_node=6) as three,
        pytest.raises(ValueError, match="same nodes"),
    ):
        three.restore(four.snapshot())
