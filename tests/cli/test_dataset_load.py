"""`hubspoke dataset load` through the real qumulo-api SDK against the contract fake's Shift-From endpoints.

What Qumulo says, and these tests hold the command to (administrator guide, "Using Qumulo Shift-From to Copy
Objects from Amazon S3", Qumulo/docs@4087c2c): creating a relationship needs an existing directory and a
bucket readable with the given access key that holds objects, and starts a job; an object lands at
<directory>/<key relative to the folder>; a failed job leaves `last_job.error` and a new job on the same
relationship does not copy again what the failed one copied. Checksums are SHA-256 of the bytes put in S3,
computed here with hashlib, not by the code under test.
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
import yaml
from qumulo.rest_client import RestClient

from hubspoke.cli.dataset import HubLoad, LoadError, ShiftKeys, Source
from hubspoke.cli.main import main
from tests.conftest import with_pins
from tests.fakes.qumulo import FakeQumulo
from tests.fakes.qumulo.grants import shipped_shift_statements

KEY = ShiftKeys("AKIAIOSFODNN7EXAMPLE", "not-a-real-secret")


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


@contextlib.contextmanager
def _seeded_hub(**fake: Any) -> Iterator[FakeQumulo]:
    """The hub cluster with an admin password, the dataset root and a source bucket KEY may read."""
    with FakeQumulo(name="hub", **fake) as hub:
        hub.password = "secret"
        hub.add_file("/dataset/.keep", 0)
        hub.s3_objects["hubspoke-datasets"] = dict(OBJECTS)
        hub.grant(KEY.access_key_id, shipped_shift_statements(["hubspoke-datasets"]))
        yield hub


@pytest.fixture
def hub() -> Iterator[FakeQumulo]:
    with _seeded_hub() as fake:
        yield fake


def _client(fake: FakeQumulo) -> Any:
    client = RestClient(fake.node_ips[0], fake.port, timeout=5)
    client.login("admin", "secret")
    return client


def _load(
    fake: FakeQumulo,
    out: io.StringIO,
    *,
    version: str = "v2",
    source: str = "s3://hubspoke-datasets/c4/llama3/",
    keys: Keys | None = None,
) -> Any:
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
        out=out,
        poll_seconds=0,
        sleep=lambda _: None,
    )


def test_a_load_copies_the_folder_shows_progress_and_seals_the_version(hub: FakeQumulo) -> None:
    out, keys = io.StringIO(), Keys()
    manifest = _load(hub, out, keys=keys).run()
    # One access key for the load, deleted with the relationship once the version is sealed.
    assert keys.created == keys.deleted == [KEY.access_key_id]
    expected = {k.removeprefix("c4/llama3/"): v for k, v in OBJECTS.items() if k.startswith("c4/llama3/")}
    assert {f.path: (f.bytes, f.sha256) for f in manifest.files} == {
        path: (len(data), hashlib.sha256(data).hexdigest()) for path, data in expected.items()
    }
    assert manifest.total_bytes == sum(len(d) for d in expected.values())
    # Objects land under the version directory, byte for byte.
    for path, data in expected.items():
        assert hub.read_back(f"/dataset/c4-llama3/v2/{path}") == data
    sealed = json.loads(hub.read_back("/dataset/c4-llama3/v2/MANIFEST.json"))
    assert sealed["format"] == "hubspoke-dataset/1" and sealed["version"] == "v2"
    assert (sealed["token_bytes"], sealed["vocab_size"]) == (4, 128256)
    assert "/dataset/c4-llama3/v2/.MANIFEST.json.partial" not in hub.files
    log = out.getvalue()
    assert "estimating the work" in log and "%" in log and "sealed c4-llama3/v2" in log
    # The relationship is gone once the version is sealed (the guide: delete those you will not reuse).
    assert hub.relationships == {}
    # The bucket's other folder was not copied.
    assert not any("ignored" in p for p in hub.files)


def test_an_existing_or_sealed_version_is_refused_before_anything_is_created(hub: FakeQumulo) -> None:
    _load(hub, io.StringIO()).run()
    with pytest.raises(LoadError, match="already loaded and sealed") as sealed:
        _load(hub, io.StringIO()).run()
    assert sealed.value.code == 2
    hub.add_file("/dataset/c4-llama3/v3/stray.bin", 4)
    with pytest.raises(LoadError, match="exists and no load is copying into it") as existing:
        _load(hub, io.StringIO(), version="v3").run()
    assert existing.value.code == 2 and hub.relationships == {}


def test_a_bucket_the_key_cannot_read_is_refused_by_qumulo_and_reported(hub: FakeQumulo) -> None:
    hub.grant(KEY.access_key_id, [])
    keys = Keys()
    with pytest.raises(LoadError, match=r"the hub refused: Qumulo 400 object_store_access_error"):
        _load(hub, io.StringIO(), keys=keys).run()
    assert hub.relationships == {}
    # Retried (a new IAM key may not work everywhere yet), then given up; the key is not left behind.
    assert hub.called("POST", r"/v3/replication/object-relationships/$") > 1
    assert keys.deleted == keys.created == [KEY.access_key_id]
    # Nothing half-made: the version directory is gone, so the same command works once access is granted.
    assert "/dataset/c4-llama3/v2" not in hub.files
    hub.grant(KEY.access_key_id, shipped_shift_statements(["hubspoke-datasets"]))
    assert len(_load(hub, io.StringIO()).run().files) == 3


def test_a_failed_job_is_resumed_by_running_again_without_copying_twice(hub: FakeQumulo) -> None:
    # The guide: a key with a '..' part fails the job. Sorted last, so the job copies the others first.
    hub.s3_objects["hubspoke-datasets"]["c4/llama3/zz/../escape.bin"] = b"x"
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
    del hub.s3_objects["hubspoke-datasets"]["c4/llama3/zz/../escape.bin"]
    out = io.StringIO()
    manifest = _load(hub, out).run()
    assert "resuming the load" in out.getvalue() and "starting a new one" in out.getvalue()
    assert len(manifest.files) == 3
    # Not copied again: each file is still the one the failed job wrote (the fake gives a copy a new ID).
    assert all(hub.files[p]["id"] == file_id for p, file_id in copied.items())


def test_a_run_while_the_job_is_running_keeps_polling_the_same_relationship(hub: FakeQumulo) -> None:
    load = _load(hub, io.StringIO())
    status = load._create()  # as if a first run was interrupted right after creating the relationship
    out = io.StringIO()
    _load(hub, out).run()
    assert f"relationship {status['id']}" in out.getvalue()
    assert hub.called("POST", r"/v3/replication/object-relationships/$") == 1


def test_a_resume_from_another_source_is_refused(hub: FakeQumulo) -> None:
    _load(hub, io.StringIO())._create()
    with pytest.raises(LoadError, match="is being loaded from s3://hubspoke-datasets/c4/llama3/"):
        _load(hub, io.StringIO(), source="s3://hubspoke-datasets/other/").run()


# ----- the command line: refusals before any AWS or Qumulo call
def _config(tmp_path: Path, **dataset: Any) -> Path:
    raw = with_pins(
        {
            "environment": "dev",
            "account": "123456789012",
            "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
            "dataset": {"name": "c4-llama3", "version": "v1", **dataset},
        }
    )
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    ("source", "buckets", "field"),
    [
        ("s3://unlisted-bucket/c4/", ["hubspoke-datasets"], "dataset.source_buckets"),
        ("https://example.com/c4", ["hubspoke-datasets"], "--source"),
        ("s3://hubspoke-datasets/c4/../x/", ["hubspoke-datasets"], "--source"),
    ],
)
def test_the_command_refuses_a_source_outside_the_configured_buckets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, buckets: list[str], field: str
) -> None:
    path = _config(tmp_path, source_buckets=buckets)
    argv = [
        "dataset",
        "load",
        "--config",
        str(path),
        "--name",
        "c4-llama3",
        "--version",
        "v2",
        "--source",
        source,
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{path}: {field}:" in err and "Traceback" not in err


def test_the_command_refuses_a_version_that_is_not_a_directory_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    argv = ["dataset", "load", "--config", str(path), "--name", "c4", "--version", "../v1"]
    assert main([*argv, "--source", "s3://hubspoke-datasets/c4/"]) == 2
    assert "--version: '../v1' must be" in capsys.readouterr().err


def _load_through_main(
    tmp_path: Path,
    hub: FakeQumulo,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *,
    rest_output: str,
    flags: list[str],
) -> None:
    """main() with the hub stack's outputs (RestAddress `rest_output`), admin secret and Shift user in moto and
    the REST API on the fake: the load creates an access key for the user, deletes it when the version is
    sealed, and the version is there."""
    import boto3
    from moto import mock_aws

    from tests.cli.preflight_world import isolate_from_real_aws

    isolate_from_real_aws(monkeypatch)
    path = _config(tmp_path, source_buckets=["hubspoke-datasets"])
    hub.s3_policies.clear()
    hub.s3_open_buckets.add("hubspoke-datasets")  # the fake cannot see IAM: any key may read this bucket
    with mock_aws():
        admin = boto3.client("secretsmanager", region_name="us-east-2").create_secret(
            Name="admin", SecretString="secret"
        )["ARN"]
        iam = boto3.client("iam")
        iam.create_user(UserName="shift-user")
        template = {
            "Resources": {"Nothing": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {
                "RestAddress": {"Value": rest_output},
                "AdminSecretArn": {"Value": admin},
                "ShiftUserName": {"Value": "shift-user"},
            },
        }
        boto3.client("cloudformation", region_name="us-east-2").create_stack(
            StackName="hubspoke-dev-storage-us-east-2", TemplateBody=json.dumps(template)
        )
        argv = ["dataset", "load", "--config", str(path), "--name", "c4-llama3", "--version", "v2"]
        argv += ["--source", "s3://hubspoke-datasets/c4/llama3/", *flags]
        assert main([*argv, "--poll-seconds", "0"]) == 0, capsys.readouterr().err
        assert iam.list_access_keys(UserName="shift-user")["AccessKeyMetadata"] == []
    assert "sealed c4-llama3/v2" in capsys.readouterr().out
    assert "/dataset/c4-llama3/v2/MANIFEST.json" in hub.files


def test_the_command_end_to_end_reads_the_hub_stack_and_loads(
    tmp_path: Path, hub: FakeQumulo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--rest-address ADDRESS:PORT wins over the stack's RestAddress (here an address nothing serves)."""
    flags = ["--rest-address", f"{hub.node_ips[0]}:{hub.port}"]
    _load_through_main(tmp_path, hub, monkeypatch, capsys, rest_output="127.0.0.250", flags=flags)


def test_without_rest_address_the_stack_output_is_used_on_the_rest_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No flag: the hub Storage stack's RestAddress output, a bare address, on port 8000, where the Qumulo Core
    REST API listens (qumulo-api 7.10.2.1, qumulo/rest_client.py DEFAULT_REST_PORT and RestClient's `port`:
    "typically 8000"). The fake's node sits on an address no other test uses, so that fixed port is its own."""
    with _seeded_hub(first_node=240, node_count=1, port=8000) as hub:
        _load_through_main(tmp_path, hub, monkeypatch, capsys, rest_output="127.0.0.240", flags=[])


def test_access_lost_mid_job_fails_the_job_and_says_how_to_resume(hub: FakeQumulo) -> None:
    """The guide: a fatal error fails the job and leaves `last_job.error`; the command exits 1 naming it."""
    load = _load(hub, io.StringIO())
    status = load._create()
    hub.grant(KEY.access_key_id, [])  # e.g. the bucket policy changed under the load
    with pytest.raises(LoadError, match=r"failed: Access Denied.*run the same command again") as failed:
        _load(hub, io.StringIO()).run()
    assert failed.value.code == 1 and status["id"] in hub.relationships


def test_a_missing_qumulo_privilege_is_reported_in_one_line(hub: FakeQumulo) -> None:
    """Creating a relationship needs PRIVILEGE_REPLICATION_OBJECT_WRITE (guide, "Prerequisites"); the 403's
    class here is injected (ASSUMED), the point is that Qumulo's answer reaches the user as one line."""
    hub.fail("POST", r"/v3/replication/object-relationships/$", status=403, error_class="privilege_error")
    with pytest.raises(LoadError) as refused:
        _load(hub, io.StringIO()).run()
    assert str(refused.value).startswith("the hub refused: Qumulo 403 privilege_error") and "\n" not in str(
        refused.value
    )
    assert hub.called("POST", r"/v3/replication/object-relationships/$") == 1, "a 403 is not retried"


# ----- interrupted runs leave nothing that blocks the next one (review of issue 24)
def test_a_seal_interrupted_after_writing_the_temporary_manifest_is_resealed_without_it(
    hub: FakeQumulo,
) -> None:
    """A run stopped between writing `.MANIFEST.json.partial` and renaming it (Ctrl-C, a lost session): the
    re-run must not list the temporary file in the manifest, else the version names a file that no longer
    exists and every job refuses it."""
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
        clone = real.clone

    first.client = Client()
    with pytest.raises(KeyboardInterrupt):
        first.run()
    assert "/dataset/c4-llama3/v2/.MANIFEST.json.partial" in hub.files  # the state the review reproduced
    manifest = _load(hub, io.StringIO()).run()
    assert sorted(f.path for f in manifest.files) == [
        "tokenizer.json",
        "train/part-000.bin",
        "train/part-001.bin",
    ]
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


def _iam_load(fake: FakeQumulo, iam: Any, version: str = "v2") -> HubLoad:
    from hubspoke.cli.dataset import IamKeys

    fake.s3_policies.clear()
    fake.s3_open_buckets.add("hubspoke-datasets")  # the fake cannot see moto's keys
    load = _load(fake, io.StringIO(), version=version)
    load.keys = IamKeys(iam, "shift-user")
    return load


def _keys(iam: Any) -> list[str]:
    return [k["AccessKeyId"] for k in iam.list_access_keys(UserName="shift-user")["AccessKeyMetadata"]]


def test_the_two_key_limit_leaves_no_version_directory_and_the_rerun_loads(
    hub: FakeQumulo, iam_user: Any
) -> None:
    """IAM allows two access keys per user (IAM User Guide, "IAM and AWS STS quotas"): with two in use the load
    is refused, and must not leave <name>/<version> behind (the re-run would refuse "exists and no load is
    copying into it")."""
    busy = [iam_user.create_access_key(UserName="shift-user")["AccessKey"]["AccessKeyId"] for _ in range(2)]
    with pytest.raises(LoadError, match="two access keys already"):
        _iam_load(hub, iam_user).run()
    assert "/dataset/c4-llama3/v2" not in hub.files and "/dataset/c4-llama3" not in hub.files
    for key in busy:
        iam_user.delete_access_key(UserName="shift-user", AccessKeyId=key)
    assert len(_iam_load(hub, iam_user).run().files) == 3
    assert _keys(iam_user) == []


def test_ctrl_c_while_creating_the_relationship_deletes_the_key_and_the_directory(
    hub: FakeQumulo, iam_user: Any
) -> None:
    load = _iam_load(hub, iam_user)

    def interrupted(_keys: ShiftKeys) -> dict[str, Any]:
        assert len(_keys_of(iam_user)) == 1  # the key exists at this point
        raise KeyboardInterrupt

    _keys_of = _keys
    load._create_relationship = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        load.run()
    assert _keys(iam_user) == [] and "/dataset/c4-llama3/v2" not in hub.files


def test_a_failing_directory_delete_does_not_keep_the_key(hub: FakeQumulo, iam_user: Any) -> None:
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
    hub: FakeQumulo, iam_user: Any
) -> None:
    """Killed after the rename sealed the version but before the relationship and key were deleted: the
    re-run of the sealed version deletes both and answers with the sealed manifest (exit 0), instead of
    stopping at "already sealed" and leaving them forever."""
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
    # With nothing left over, a third run is refused as before.
    with pytest.raises(LoadError, match="already loaded and sealed"):
        _iam_load(hub, iam_user).run()


def test_checksums_are_computed_several_files_at_once_each_on_its_own_connection(hub: FakeQumulo) -> None:
    """The seal reads every byte back; with hash_workers=3 the three files are hashed at the same time (a
    barrier of three would time out if they were hashed one after another), over clones of the SDK client
    (RestClient.clone, qumulo-api 7.10.2.1), and the checksums are still hashlib's of the S3 bytes."""
    import threading

    load = _load(hub, io.StringIO())
    load.hash_workers = 3
    barrier = threading.Barrier(3, timeout=10)
    clients: set[int] = set()
    real = load._sha256

    def together(relative: str, size: int, client: Any = None) -> str:
        clients.add(id(client))
        barrier.wait()
        return real(relative, size, client)

    load._sha256 = together  # type: ignore[method-assign]
    manifest = load.run()
    expected = {k.removeprefix("c4/llama3/"): v for k, v in OBJECTS.items() if k.startswith("c4/llama3/")}
    assert {f.path: f.sha256 for f in manifest.files} == {
        p: hashlib.sha256(d).hexdigest() for p, d in expected.items()
    }
    assert [f.path for f in manifest.files] == sorted(expected)
    assert len(clients) == 3 and id(load.client) not in clients
