"""hubspoke.dataset_load through the real qumulo-api SDK against the contract fake, hashing through a mount.

What Qumulo says, and these tests hold the load to (administrator guide, "Using Qumulo Shift-From to Copy
Objects from Amazon S3", Qumulo/docs@4087c2c): creating a relationship needs an existing directory and a
bucket readable with the given access key that holds objects, and starts a job; an object lands at
<directory>/<key relative to the folder>; a failed job leaves `last_job.error` and a new job on the same
relationship does not copy again what the failed one copied. The checksums are read through a real local
directory that holds the fake's dataset tree as its NFS export presents it (tests/fakes/qumulo/mount.py);
expected checksums are SHA-256 of the bytes put in S3, computed here with hashlib, not by the code under test.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from qumulo.rest_client import RestClient

from hubspoke.dataset_load import HubLoad
from hubspoke.shift_from import IamKeys, LoadError, ShiftKeys, Source
from tests.fakes.qumulo.grants import shipped_shift_statements
from tests.fakes.qumulo.mount import MountedQumulo

KEY = ShiftKeys("AKIAIOSFODNN7EXAMPLE", "not-a-real-secret")
BUCKET = "hubspoke-datasets"


class Keys:
    """The Shift user's keys as IAM would hand them out: KEY, holding its group's shipped policy."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.deleted: list[str] = []

    def create(self) -> ShiftKeys:
        self.created.append(KEY.access_key_id)
        return KEY

    def delete(self, access_key_id: str) -> None:
        self.deleted.append(access_key_id)


OBJECTS = {
    "c4/llama3/train/part-000.bin": b"\x01\x00\x00\x00" * 300,
    "c4/llama3/train/part-001.bin": b"\x02\x00\x00\x00" * 100,
    "c4/llama3/tokenizer.json": b'{"vocab": 128256}',
    "other/ignored.bin": b"\xff" * 8,
}
EXPECTED = {k.removeprefix("c4/llama3/"): v for k, v in OBJECTS.items() if k.startswith("c4/llama3/")}


@contextlib.contextmanager
def seeded_hub(mount: Path, **fake: Any) -> Iterator[MountedQumulo]:
    """The hub cluster with an admin password, the dataset root /dataset mounted at `mount`, and a source bucket
    KEY may read with the Shift user's shipped policy."""
    with MountedQumulo(name="hub", fs_path="/dataset", directory=mount, **fake) as hub:
        hub.password = "secret"
        hub.add_file("/dataset/.keep", 0)
        hub.s3_objects[BUCKET] = dict(OBJECTS)
        hub.grant(KEY.access_key_id, shipped_shift_statements([BUCKET]))
        yield hub


@pytest.fixture
def mount(tmp_path: Path) -> Path:
    return tmp_path / "mnt-dataset"


@pytest.fixture
def hub(mount: Path) -> Iterator[MountedQumulo]:
    with seeded_hub(mount) as fake:
        yield fake


def _client(fake: MountedQumulo) -> Any:
    client = RestClient(fake.node_ips[0], fake.port, timeout=5)
    client.login("admin", "secret")
    return client


def _load(
    fake: MountedQumulo,
    out: io.StringIO,
    *,
    version: str = "v2",
    source: str = f"s3://{BUCKET}/c4/llama3/",
    keys: Any = None,
) -> HubLoad:
    return HubLoad(
        _client(fake),
        dataset_path="/dataset",
        name="c4-llama3",
        version=version,
        source=Source.parse(source),
        bucket_region="us-east-2",
        token_bytes=4,
        vocab_size=128256,
        keys=keys or Keys(),
        mount=str(fake.directory),
        out=out,
        poll_seconds=0,
        sleep=lambda _: None,
    )


def test_a_load_copies_the_folder_shows_progress_and_seals_the_version(hub: MountedQumulo) -> None:
    out, keys = io.StringIO(), Keys()
    manifest = _load(hub, out, keys=keys).run()
    # One access key for the load, deleted with the relationship once the version is sealed.
    assert keys.created == keys.deleted == [KEY.access_key_id]
    assert {f.path: (f.bytes, f.sha256) for f in manifest.files} == {
        path: (len(data), hashlib.sha256(data).hexdigest()) for path, data in EXPECTED.items()
    }
    assert manifest.total_bytes == sum(len(d) for d in EXPECTED.values())
    for path, data in EXPECTED.items():
        assert hub.read_back(f"/dataset/c4-llama3/v2/{path}") == data
    sealed = json.loads(hub.read_back("/dataset/c4-llama3/v2/MANIFEST.json"))
    assert sealed["format"] == "hubspoke-dataset/1" and sealed["version"] == "v2"
    assert (sealed["token_bytes"], sealed["vocab_size"]) == (4, 128256)
    # Sealed through the REST API, and the mount shows it as the export would.
    assert (hub.directory / "c4-llama3/v2/MANIFEST.json").read_bytes() == hub.read_back(
        "/dataset/c4-llama3/v2/MANIFEST.json"
    )
    assert "/dataset/c4-llama3/v2/.MANIFEST.json.partial" not in hub.files
    log = out.getvalue()
    assert "estimating the work" in log and "%" in log and "sealed c4-llama3/v2" in log
    assert "through the dataset mount" in log
    assert hub.relationships == {}
    assert not any("ignored" in p for p in hub.files)


def test_the_checksums_come_from_the_mount_not_from_rest(hub: MountedQumulo) -> None:
    """No file data is read over REST (GET .../data) except the manifest's own read-back on a leftover; a file
    whose bytes on the mount differ from the cluster's is what the manifest records (the mount is the source)."""
    load = _load(hub, io.StringIO())
    real_sha = load._sha256

    def tampered(relative: str, size: int) -> str:
        if relative == "tokenizer.json":
            (hub.directory / "c4-llama3/v2/tokenizer.json").write_bytes(b"X" * size)
        return real_sha(relative, size)

    load._sha256 = tampered  # type: ignore[method-assign]
    manifest = load.run()
    assert hub.called("GET", r"/v1/files/[^/]+/data") == 0
    by_path = {f.path: f.sha256 for f in manifest.files}
    assert by_path["tokenizer.json"] == hashlib.sha256(b"X" * len(EXPECTED["tokenizer.json"])).hexdigest()


def test_a_file_the_mount_shows_short_fails_the_seal_and_the_rerun_seals(hub: MountedQumulo) -> None:
    """The REST walk's size and the bytes read through the mount must agree (a stale mount, another file)."""
    load = _load(hub, io.StringIO())
    real_files = load._files

    def longer() -> list[tuple[str, int]]:
        return [(p, s + 1 if p == "tokenizer.json" else s) for p, s in real_files()]

    load._files = longer  # type: ignore[method-assign]
    with pytest.raises(LoadError, match=r"tokenizer.json: read 17 bytes of 18 through the mount; run again"):
        load.run()
    assert "/dataset/c4-llama3/v2/MANIFEST.json" not in hub.files
    assert len(_load(hub, io.StringIO()).run().files) == 3


def test_an_existing_or_sealed_version_is_refused_before_anything_is_created(hub: MountedQumulo) -> None:
    _load(hub, io.StringIO()).run()
    with pytest.raises(LoadError, match="already loaded and sealed") as sealed:
        _load(hub, io.StringIO()).run()
    assert sealed.value.code == 2
    hub.add_file("/dataset/c4-llama3/v3/stray.bin", 4)
    with pytest.raises(LoadError, match="exists and no load is copying into it") as existing:
        _load(hub, io.StringIO(), version="v3").run()
    assert existing.value.code == 2 and hub.relationships == {}


def test_a_bucket_the_key_cannot_read_is_refused_by_qumulo_and_reported(hub: MountedQumulo) -> None:
    hub.grant(KEY.access_key_id, [])
    keys = Keys()
    with pytest.raises(LoadError, match=r"the hub refused: Qumulo 400 object_store_access_error"):
        _load(hub, io.StringIO(), keys=keys).run()
    assert hub.relationships == {}
    # Retried (a new IAM key may not work everywhere yet), then given up; the key is not left behind.
    assert hub.called("POST", r"/v3/replication/object-relationships/$") > 1
    assert keys.deleted == keys.created == [KEY.access_key_id]
    assert "/dataset/c4-llama3/v2" not in hub.files
    hub.grant(KEY.access_key_id, shipped_shift_statements([BUCKET]))
    assert len(_load(hub, io.StringIO()).run().files) == 3


def test_a_failed_job_is_resumed_by_running_again_without_copying_twice(hub: MountedQumulo) -> None:
    # The guide: a key with a '..' part fails the job. Sorted last, so the job copies the others first.
    hub.s3_objects[BUCKET]["c4/llama3/zz/../escape.bin"] = b"x"
    with pytest.raises(LoadError, match=r"failed: object zz/\.\./escape\.bin") as failed:
        _load(hub, io.StringIO()).run()
    assert failed.value.code == 1
    assert len(hub.relationships) == 1  # kept, so the next run resumes it
    copied = {
        p: v["id"]
        for p, v in hub.files.items()
        if p.startswith("/dataset/c4-llama3/v2/") and p.endswith((".bin", ".json"))
    }
    assert len(copied) == 3 and "/dataset/c4-llama3/v2/MANIFEST.json" not in hub.files
    del hub.s3_objects[BUCKET]["c4/llama3/zz/../escape.bin"]
    out = io.StringIO()
    manifest = _load(hub, out).run()
    assert "resuming the load" in out.getvalue() and "starting a new one" in out.getvalue()
    assert len(manifest.files) == 3
    # Not copied again: each file is still the one the failed job wrote (the fake gives a copy a new ID).
    assert all(hub.files[p]["id"] == file_id for p, file_id in copied.items())


def test_a_run_while_the_job_is_running_keeps_polling_the_same_relationship(hub: MountedQumulo) -> None:
    status = _load(hub, io.StringIO())._create()  # as if a first run stopped right after creating it
    out = io.StringIO()
    _load(hub, out).run()
    assert f"relationship {status['id']}" in out.getvalue()
    assert hub.called("POST", r"/v3/replication/object-relationships/$") == 1


def test_a_resume_from_another_source_is_refused(hub: MountedQumulo) -> None:
    _load(hub, io.StringIO())._create()
    with pytest.raises(LoadError, match=f"is being loaded from s3://{BUCKET}/c4/llama3/") as refused:
        _load(hub, io.StringIO(), source=f"s3://{BUCKET}/other/").run()
    assert refused.value.code == 2


def test_access_lost_mid_job_fails_the_job_and_says_how_to_resume(hub: MountedQumulo) -> None:
    """The guide: a fatal error fails the job and leaves `last_job.error`; the load fails (1) naming it."""
    status = _load(hub, io.StringIO())._create()
    hub.grant(KEY.access_key_id, [])  # e.g. the bucket policy changed under the load
    with pytest.raises(LoadError, match=r"failed: Access Denied.*run the same command again") as failed:
        _load(hub, io.StringIO()).run()
    assert failed.value.code == 1 and status["id"] in hub.relationships


def test_a_missing_qumulo_privilege_is_reported_in_one_line(hub: MountedQumulo) -> None:
    """Creating a relationship needs PRIVILEGE_REPLICATION_OBJECT_WRITE (guide, "Prerequisites"); the 403's
    class here is injected (ASSUMED), the point is that Qumulo's answer reaches the user as one line."""
    hub.fail("POST", r"/v3/replication/object-relationships/$", status=403, error_class="privilege_error")
    with pytest.raises(LoadError) as refused:
        _load(hub, io.StringIO()).run()
    assert str(refused.value).startswith("the hub refused: Qumulo 403 privilege_error")
    assert "\n" not in str(refused.value)
    assert hub.called("POST", r"/v3/replication/object-relationships/$") == 1, "a 403 is not retried"


def test_a_seal_interrupted_after_writing_the_temporary_manifest_is_resealed_without_it(
    hub: MountedQumulo,
) -> None:
    """A run stopped between writing `.MANIFEST.json.partial` and renaming it: the rerun must not list the
    temporary file in the manifest, else the version names a file that no longer exists."""
    first = _load(hub, io.StringIO())
    real = first.client

    class Fs:
        def __getattr__(self, name: str) -> Any:
            if name == "rename":
                raise KeyboardInterrupt
            return getattr(real.fs, name)

    class Client:
        fs = Fs()
        object_replication = real.object_replication

    first.client = Client()
    with pytest.raises(KeyboardInterrupt):
        first.run()
    assert "/dataset/c4-llama3/v2/.MANIFEST.json.partial" in hub.files
    manifest = _load(hub, io.StringIO()).run()
    assert sorted(f.path for f in manifest.files) == sorted(EXPECTED)
    sealed = json.loads(hub.read_back("/dataset/c4-llama3/v2/MANIFEST.json"))
    assert not any("partial" in f["path"] for f in sealed["files"])


@pytest.fixture
def iam_user(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A Shift user in moto's IAM: IamKeys makes and deletes real (moto) access keys."""
    import boto3
    from moto import mock_aws

    from tests.cli.preflight_world import isolate_from_real_aws

    isolate_from_real_aws(monkeypatch)
    with mock_aws():
        iam = boto3.client("iam")
        iam.create_user(UserName="shift-user")
        yield iam


def _iam_load(fake: MountedQumulo, iam: Any, version: str = "v2") -> HubLoad:
    fake.s3_policies.clear()
    fake.s3_open_buckets.add(BUCKET)  # the fake cannot see moto's keys
    load = _load(fake, io.StringIO(), version=version)
    load.keys = IamKeys(iam, "shift-user")
    return load


def _keys(iam: Any) -> list[str]:
    return [k["AccessKeyId"] for k in iam.list_access_keys(UserName="shift-user")["AccessKeyMetadata"]]


def test_the_two_key_limit_leaves_no_version_directory_and_the_rerun_loads(
    hub: MountedQumulo, iam_user: Any
) -> None:
    """IAM allows two access keys per user (IAM User Guide, "IAM and AWS STS quotas"): with two in use the load
    is refused and leaves no <name>/<version> behind."""
    busy = [iam_user.create_access_key(UserName="shift-user")["AccessKey"]["AccessKeyId"] for _ in range(2)]
    with pytest.raises(LoadError, match="two access keys already"):
        _iam_load(hub, iam_user).run()
    assert "/dataset/c4-llama3/v2" not in hub.files and "/dataset/c4-llama3" not in hub.files
    for key in busy:
        iam_user.delete_access_key(UserName="shift-user", AccessKeyId=key)
    assert len(_iam_load(hub, iam_user).run().files) == 3
    assert _keys(iam_user) == []


def test_ctrl_c_while_creating_the_relationship_deletes_the_key_and_the_directory(
    hub: MountedQumulo, iam_user: Any
) -> None:
    load = _iam_load(hub, iam_user)

    def interrupted(_keys_given: ShiftKeys) -> dict[str, Any]:
        assert len(_keys(iam_user)) == 1  # the key exists at this point
        raise KeyboardInterrupt

    load._create_relationship = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        load.run()
    assert _keys(iam_user) == [] and "/dataset/c4-llama3/v2" not in hub.files


def test_a_failing_directory_delete_does_not_keep_the_key(hub: MountedQumulo, iam_user: Any) -> None:
    """Qumulo refuses the bucket, then refuses the clean-up delete too: the key is deleted all the same."""
    load = _iam_load(hub, iam_user)
    hub.s3_open_buckets.clear()
    load.key_attempts = 1
    hub.fail("DELETE", r"/v1/files/", times=5)
    with pytest.raises(LoadError, match="object_store_access_error"):
        load.run()
    assert _keys(iam_user) == []
    assert "could not remove /dataset/c4-llama3/v2" in load.out.getvalue()  # type: ignore[attr-defined]


def test_a_run_stopped_between_seal_and_cleanup_is_finished_by_the_rerun(
    hub: MountedQumulo, iam_user: Any
) -> None:
    """Killed after the rename sealed the version but before the relationship and key were deleted: the rerun
    deletes both and answers with the sealed manifest, instead of stopping at "already sealed"."""
    first = _iam_load(hub, iam_user)

    def killed(_status: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    first._finish_cleanup = killed  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        first.run()
    assert len(hub.relationships) == 1 and len(_keys(iam_user)) == 1
    again = _iam_load(hub, iam_user)
    manifest = again.run()
    assert hub.relationships == {} and _keys(iam_user) == []
    assert manifest.version == "v2" and len(manifest.files) == 3
    assert "leftover relationship" in again.out.getvalue()  # type: ignore[attr-defined]
    with pytest.raises(LoadError, match="already loaded and sealed"):
        _iam_load(hub, iam_user).run()


def test_checksums_are_computed_several_files_at_once(hub: MountedQumulo) -> None:
    """With hash_workers=3 the three files are hashed at the same time (a barrier of three would time out if
    they were hashed one after another), and the checksums are still hashlib's of the S3 bytes, in walk order."""
    import threading

    load = _load(hub, io.StringIO())
    load.hash_workers = 3
    barrier = threading.Barrier(3, timeout=10)
    real = load._sha256

    def together(relative: str, size: int) -> str:
        barrier.wait()
        return real(relative, size)

    load._sha256 = together  # type: ignore[method-assign]
    manifest = load.run()
    assert {f.path: f.sha256 for f in manifest.files} == {
        p: hashlib.sha256(d).hexdigest() for p, d in EXPECTED.items()
    }
    assert [f.path for f in manifest.files] == sorted(EXPECTED)


# --- a sealed version is immutable in fact (issue 40 item 4) ---


def _refused_write(hub: MountedQumulo, path: str) -> str:
    from qumulo.lib.request import RequestError

    client = _client(hub)
    try:
        client.fs.write_file(data_file=io.BytesIO(b"changed"), path=path)
    except RequestError as error:
        return str(error.error_class)
    return "written"


def test_a_sealed_version_is_held_so_not_even_the_admin_can_change_it(hub: MountedQumulo) -> None:
    """Qumulo's legal hold: "A removable lock under which files cannot be deleted or modified" (REST API guide,
    files_ref_file-lock; SDK qumulo.rest.fs.modify_file_lock). Every file the manifest lists and MANIFEST.json
    itself carry it once the load returns; a write or a delete over REST, as the admin, is refused."""
    from qumulo.lib.request import RequestError

    out = io.StringIO()
    manifest = _load(hub, out).run()
    version = "/dataset/c4-llama3/v2"
    held = {p for p, info in hub.files.items() if info.get("legal_hold")}
    assert held == {f"{version}/{f.path}" for f in manifest.files} | {f"{version}/MANIFEST.json"}
    assert "held 4 files" in out.getvalue()
    assert _refused_write(hub, f"{version}/train/part-000.bin") != "written"
    with pytest.raises(RequestError):
        _client(hub).fs.delete(path=f"{version}/MANIFEST.json")
    assert hub.read_back(f"{version}/train/part-000.bin") == EXPECTED["train/part-000.bin"]


def test_a_run_stopped_before_the_hold_holds_the_version_on_the_rerun(
    hub: MountedQumulo, iam_user: Any
) -> None:
    first = _iam_load(hub, iam_user)

    def killed(*_: Any) -> None:
        raise KeyboardInterrupt

    import hubspoke.dataset_load as dataset_load

    original = dataset_load.hold_version
    dataset_load.hold_version = killed  # type: ignore[assignment]
    try:
        with pytest.raises(KeyboardInterrupt):
            first.run()
    finally:
        dataset_load.hold_version = original
    assert not any(info.get("legal_hold") for info in hub.files.values()), "sealed, not yet held"
    _iam_load(hub, iam_user).run()
    assert hub.files["/dataset/c4-llama3/v2/MANIFEST.json"].get("legal_hold") is True


def test_a_load_without_the_lock_privilege_says_which_one(hub: MountedQumulo) -> None:
    """Both lock types "require the FS_FILE_LOCK_WRITE privilege" (administrator guide, "Managing File Locks"); the
    403 is injected here (ASSUMED class), the point is the one line naming the privilege."""
    hub.fail("PATCH", r"/file-lock$", times=100, status=403, error_class="privilege_error")
    with pytest.raises(LoadError) as refused:
        _load(hub, io.StringIO()).run()
    message = str(refused.value)
    assert "PRIVILEGE_FS_FILE_LOCK_WRITE" in message and "\n" not in message
