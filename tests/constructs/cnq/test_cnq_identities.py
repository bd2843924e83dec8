"""Custom::CnqIdentity: a least-privilege Qumulo role and user per purpose, converged from any state, and what
each identity can and cannot do against the contract fake, through the real qumulo-api SDK.

What the identities need is the vendor's: Shift-From needs PRIVILEGE_REPLICATION_OBJECT_WRITE to create and
PRIVILEGE_REPLICATION_OBJECT_READ to view a relationship ("Using Qumulo Shift-From to Copy Objects from Amazon
S3", "Prerequisites", Qumulo/docs@b6ddb9ae); privileges reach a user through a role, and a session keeps the
privileges it logged in with ("Managing Role-Based Access Control (RBAC)", Qumulo/docs@2e866167); files follow
their ACL unless the session holds PRIVILEGE_FILE_FULL_ACCESS or PRIVILEGE_FILE_READ_ACCESS (REST guide,
/v1/auth/roles). The fake refuses with 403 (ASSUMED class, tests/fakes/qumulo/auth.py).
"""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from qumulo.lib.request import RequestError
from qumulo.rest_client import RestClient

from hubspoke.constructs.cnq.identity import LOADER_PRIVILEGES
from hubspoke.constructs.cnq.runtime.identities import (
    IdentitySpec,
    ensure_role,
    ensure_user,
    ensure_write_access,
)
from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from tests.constructs.cnq.conftest import CONFIG, HUB_PASSWORD, SPOKE, World, drive, mutations
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")

DATASET, CHECKPOINTS = CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path
# The guide's two Shift-From privileges, written out (not imported from the construct under test).
SHIFT_FROM = ["PRIVILEGE_REPLICATION_OBJECT_READ", "PRIVILEGE_REPLICATION_OBJECT_WRITE"]
LOADER = {"username": "hubspoke-loader", "password": "Loader-Passw0rd!"}
PREWARM = {"username": "hubspoke-prewarm", "password": "Prewarm-Passw0rd!"}


def _secret(world: World, region: str, value: dict[str, str]) -> str:
    client = boto3.client("secretsmanager", region_name=region)
    return str(client.create_secret(Name=f"login-{value['username']}", SecretString=json.dumps(value))["ARN"])


def _event(world: World, fake: FakeQumulo, side: str, secret: str, privileges: list[str],
           write_path: str = "", request: str = "Create") -> dict[str, Any]:  # fmt: skip
    props = {
        "ClusterName": f"dev-{fake.name}", "RestAddresses": fake.node_ips, "RestPort": str(fake.port),
        "AdminSecretArn": world.arns[side], "IdentitySecretArn": secret, "Role": "hubspoke-purpose",
        "Privileges": privileges, "WaitSeconds": "3000", **({"WritePath": write_path} if write_path else {}),
    }  # fmt: skip
    return {"RequestType": request, "ResourceType": "Custom::CnqIdentity", "LogicalResourceId": "Converge",
            "ResourceProperties": props, "StackId": world.stack_id}  # fmt: skip


def _as(fake: FakeQumulo, login: dict[str, str]) -> Any:
    client = RestClient(fake.node_ips[0], fake.port, timeout=5)
    client.login(login["username"], login["password"])
    return client


def _relationship(client: Any, directory: str) -> Any:
    return client.object_replication.create_object_relationship(
        direction="COPY_FROM_OBJECT", object_store_address="s3.us-east-2.amazonaws.com", bucket="datasets",
        object_folder="c4/", region="us-east-2", access_key_id="AKIAIOSFODNN7EXAMPLE",
        secret_access_key="not-a-secret", local_directory_path=directory,
    )  # fmt: skip


def _refused(call: Any) -> RequestError:
    with pytest.raises(RequestError) as refused:
        call()
    assert refused.value.status_code == 403, refused.value
    return refused.value


@pytest.fixture
def loader(formed: World, hub: FakeQumulo) -> dict[str, Any]:
    """The hub's loader identity as the Storage stack asks for it: Shift-From, and the dataset path to write."""
    secret = _secret(formed, CONFIG.hub.region, LOADER)
    return _event(formed, hub, "hub", secret, SHIFT_FROM, write_path=DATASET)


def test_the_loader_copies_and_writes_the_dataset_path_and_nothing_else(
    loader: dict[str, Any], hub: FakeQumulo
) -> None:
    assert drive(loader)["Data"] == {"Username": LOADER["username"]}
    hub.s3_objects["datasets"] = {"c4/part-000.bin": b"\x01" * 8}
    hub.s3_open_buckets.add("datasets")
    client = _as(hub, LOADER)
    version = client.fs.create_directory(name="v1", dir_path=f"{DATASET}/")["path"]
    relationship = _relationship(client, version)
    client.object_replication.get_object_relationship_status(relationship["id"])
    manifest = client.fs.create_file(name="MANIFEST.json", dir_path=version)
    client.fs.write_file(data_file=io.BytesIO(b"{}"), id_=manifest["id"])
    # Its ACE is on the dataset path only: the checkpoints and the cluster's settings are not its to touch.
    _refused(lambda: client.fs.create_directory(name="x", dir_path=f"{CHECKPOINTS}/"))
    _refused(lambda: client.nfs.nfs_list_exports())
    _refused(lambda: client.roles.create_role("mine", "escalate", ["PRIVILEGE_FILE_FULL_ACCESS"]))


def test_an_identity_without_the_shift_privileges_cannot_create_a_relationship(
    formed: World, hub: FakeQumulo
) -> None:
    secret = _secret(formed, CONFIG.hub.region, LOADER)
    drive(_event(formed, hub, "hub", secret, ["PRIVILEGE_REPLICATION_OBJECT_READ"], write_path=DATASET))
    refused = _refused(lambda: _relationship(_as(hub, LOADER), f"{DATASET}/"))
    assert "PRIVILEGE_REPLICATION_OBJECT_WRITE" in refused.description


def test_the_prewarm_identity_reads_and_fetches_but_writes_nothing(formed: World, spoke: FakeQumulo) -> None:
    from hubspoke.constructs.cnq.identity import PREWARM_PRIVILEGES

    secret = _secret(formed, SPOKE.region, PREWARM)
    drive(_event(formed, spoke, "spoke", secret, list(PREWARM_PRIVILEGES)))
    spoke.add_file(f"{SPOKE.storage.dataset_path}/v1/part-000.bin", 4096)
    client = _as(spoke, PREWARM)
    entries = list(client.fs.enumerate_entire_directory(path=f"{SPOKE.storage.dataset_path}/v1/"))
    assert [e["name"] for e in entries] == ["part-000.bin"]
    client.fs.fetch_data(offset=0, path=f"{SPOKE.storage.dataset_path}/v1/part-000.bin")
    assert spoke.fetched_bytes[f"{SPOKE.storage.dataset_path}/v1/part-000.bin"] == 4096
    _refused(lambda: client.fs.create_directory(name="x", dir_path=f"{SPOKE.storage.dataset_path}/v1/"))
    _refused(lambda: _relationship(client, f"{SPOKE.storage.dataset_path}/v1/"))


def test_without_a_file_privilege_or_ace_the_fetch_is_refused(formed: World, spoke: FakeQumulo) -> None:
    """The fake's own refusal, so the prewarm test above cannot pass for a fake that lets everyone read."""
    secret = _secret(formed, SPOKE.region, PREWARM)
    drive(_event(formed, spoke, "spoke", secret, ["PRIVILEGE_FS_ATTRIBUTES_READ"]))
    spoke.add_file("/dataset/v1/part-000.bin", 16)
    _refused(lambda: _as(spoke, PREWARM).fs.fetch_data(offset=0, path="/dataset/v1/part-000.bin"))


def test_any_earlier_state_converges(loader: dict[str, Any], hub: FakeQumulo) -> None:
    """A role edited by hand, a user whose password changed, no membership: one run puts all of it right."""
    admin = RestClient(hub.node_ips[0], hub.port, timeout=5)
    admin.login("admin", HUB_PASSWORD)
    admin.roles.create_role("hubspoke-purpose", "edited", ["PRIVILEGE_FILE_FULL_ACCESS"])
    admin.users.add_user("hubspoke-loader", "513", "Old-Passw0rd!")
    drive(loader)
    assert hub.roles["hubspoke-purpose"]["privileges"] == SHIFT_FROM
    assert hub.roles["hubspoke-purpose"]["members"] == {"hubspoke-loader"}
    _as(hub, LOADER)  # the secret's password works
    with pytest.raises(RequestError):
        _as(hub, {"username": "hubspoke-loader", "password": "Old-Passw0rd!"})
    # A rerun changes nothing but setting the same password again (identity/find is a lookup sent as POST).
    before = len(mutations(hub))
    drive(loader)
    assert [p for _, p in mutations(hub)[before:] if not p.endswith(("/setpassword", "/identity/find"))] == []


def test_a_secret_that_is_not_the_json_login_fails_in_one_line(formed: World, hub: FakeQumulo) -> None:
    secret = boto3.client("secretsmanager", region_name=CONFIG.hub.region).create_secret(
        Name="bare", SecretString="just-a-password"
    )["ARN"]
    with pytest.raises(ProvisioningError, match=r'not JSON \{"username"'):
        drive(_event(formed, hub, "hub", secret, SHIFT_FROM))


def test_delete_removes_the_user_and_the_role(loader: dict[str, Any], hub: FakeQumulo) -> None:
    drive(loader)
    drive({**loader, "RequestType": "Delete", "PhysicalResourceId": "cnq-identity-hubspoke-purpose"})
    assert "hubspoke-purpose" not in hub.roles and not hub.local_users


def test_a_whole_dataset_load_runs_as_the_loader(tmp_path: Any) -> None:
    """hubspoke.dataset_load end to end logged in as the converged loader, not the admin: Shift-From, the version
    directory, the checksums through the mount and the seal all fit the loader's privileges and its one ACE."""
    from hubspoke.constructs.cnq.identity import LOADER_PRIVILEGES
    from hubspoke.constructs.cnq.runtime import identities
    from hubspoke.constructs.cnq.runtime.session import Deadline
    from hubspoke.dataset_load import HubLoad
    from hubspoke.shift_from import Source
    from tests.test_dataset_load import BUCKET, EXPECTED, Keys, seeded_hub

    with seeded_hub(tmp_path / "mnt") as hub:
        admin = RestClient(hub.node_ips[0], hub.port, timeout=5)
        admin.login("admin", "secret")
        spec = identities.IdentitySpec("hubspoke-loader", LOADER["username"], LOADER_PRIVILEGES, "/dataset")
        identities.ensure_identity(admin, spec, LOADER["password"], addresses=hub.node_ips, port=hub.port,
                                   deadline=Deadline.after(30))  # fmt: skip
        load = HubLoad(
            _as(hub, LOADER), dataset_path="/dataset", name="c4-llama3", version="v2",
            source=Source.parse(f"s3://{BUCKET}/c4/llama3/"), bucket_region="us-east-2", token_bytes=4,
            vocab_size=128256, keys=Keys(), mount=str(hub.directory), out=io.StringIO(), poll_seconds=0,
            sleep=lambda _: None,
        )  # fmt: skip
        manifest = load.run()
        assert {f.path for f in manifest.files} == set(EXPECTED)
        assert json.loads(hub.read_back("/dataset/c4-llama3/v2/MANIFEST.json"))["version"] == "v2"


def test_a_whole_prewarm_runs_as_the_prewarm_user(tmp_path: Any) -> None:
    """workload/prewarm.py (walk, fetch-data, end-of-run recheck) logged in as the converged prewarm user."""
    import sys
    from pathlib import Path

    from hubspoke.constructs.cnq.identity import PREWARM_PRIVILEGES
    from hubspoke.constructs.cnq.runtime import identities
    from hubspoke.constructs.cnq.runtime.session import Deadline

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "workload"))
    import prewarm

    sizes = {"/dataset/v1/a.bin": 3 << 20, "/dataset/v1/b/c.bin": 1 << 20}
    with FakeQumulo(name="spoke", node_count=1) as spoke:
        spoke.password = "Spoke-Passw0rd!"
        for path, size in sizes.items():
            spoke.add_file(path, size)
        admin = RestClient(spoke.node_ips[0], spoke.port, timeout=5)
        admin.login("admin", "Spoke-Passw0rd!")
        spec = identities.IdentitySpec("hubspoke-prewarm", PREWARM["username"], PREWARM_PRIVILEGES)
        identities.ensure_identity(admin, spec, PREWARM["password"], addresses=spoke.node_ips, port=spoke.port,
                                   deadline=Deadline.after(30))  # fmt: skip
        journal = prewarm.Journal(tmp_path / "journal.jsonl")
        try:
            make = prewarm.sdk_client_factory(
                spoke.node_ips[0], spoke.port, PREWARM["username"], PREWARM["password"], 5
            )
            options = prewarm.Options(
                root="/dataset/v1/", parallel=2, base_delay_s=0.01, progress_every_s=0.05
            )
            code = prewarm.prewarm(make, journal, options, log=io.StringIO())
        finally:
            journal.close()
        assert code == 0
        assert all(spoke.fetched_bytes.get(p, 0) >= size for p, size in sizes.items())


# ----- what NFS readers see of what the loader writes (the pods, the load's own checksum, training)
# "Everyone" read, as the Shift-From guide's "Best Practices" says copied files get by default ("Using Qumulo
# Shift-From to Copy Objects from Amazon S3", Qumulo/docs@0765db6d); the Everyone auth_id from the SDK
# (qumulo/lib/identity_util.py EVERYONE_ID = 0x200000000), written out here.
EVERYONE_AUTH_ID = "8589934592"


def _admin(fake: FakeQumulo) -> Any:
    client = RestClient(fake.node_ips[0], fake.port, timeout=5)
    client.login("admin", "secret")
    return client


def _converge_loader(admin: Any, dataset: str) -> IdentitySpec:
    spec = IdentitySpec(role="hubspoke-loader", username=LOADER["username"],
                        privileges=tuple(LOADER_PRIVILEGES), write_path=dataset)  # fmt: skip
    ensure_role(admin, spec)
    ensure_user(admin, spec, LOADER["password"])
    admin.roles.add_member(spec.role, name=spec.username)
    ensure_write_access(admin, spec)
    return spec


@pytest.mark.parametrize("everyone", [True, False], ids=["converged", "without-everyone-read"])
def test_what_the_loader_writes_is_read_by_its_checksum_and_by_training_over_nfs(
    tmp_path: Any, everyone: bool
) -> None:
    """The load, logged in as the loader identity, checksums over an ACL-enforcing mount as a pod (non-root UID),
    and training's TokenShards reads a shard the same way. Without the Everyone ACE (the ACL before this fix),
    both are refused: the mount follows the ACL, inheritance happens at creation (tests/fakes/qumulo/auth.py)."""
    from hubspoke.dataset_load import HubLoad
    from hubspoke.shift_from import LoadError, Source
    from tests.fakes.qumulo.grants import shipped_shift_statements
    from tests.fakes.qumulo.mount import MountedQumulo, as_pod
    from tests.test_dataset_load import BUCKET, KEY, OBJECTS, Keys
    from workload.shards import TokenShards

    mount = tmp_path / "mnt"
    with MountedQumulo(name="hub", fs_path="/dataset", directory=mount, nfs_acl=True) as hub:
        hub.password = "secret"
        hub.add_file("/dataset/.keep", 0)
        hub.s3_objects[BUCKET] = dict(OBJECTS)
        hub.grant(KEY.access_key_id, shipped_shift_statements([BUCKET]))
        admin = _admin(hub)
        _converge_loader(admin, "/dataset")
        acl = admin.fs.get_acl_v2(path="/dataset")
        assert any(str(a["trustee"]["auth_id"]) == EVERYONE_AUTH_ID for a in acl["aces"]), acl
        if not everyone:
            aces = [a for a in acl["aces"] if str(a["trustee"]["auth_id"]) != EVERYONE_AUTH_ID]
            admin.fs.set_acl_v2({**acl, "aces": aces}, path="/dataset")
        load = HubLoad(_as(hub, LOADER), dataset_path="/dataset", name="c4-llama3", version="v1",
                       source=Source.parse(f"s3://{BUCKET}/c4/llama3/"), bucket_region="us-east-2", token_bytes=4,
                       vocab_size=128256, keys=Keys(), mount=str(mount), out=io.StringIO(), poll_seconds=0,
                       sleep=lambda _: None)  # fmt: skip
        shard = mount / "c4-llama3" / "v1" / "train"
        if everyone:
            as_pod(load.run)
            sample = as_pod(lambda: TokenShards(shard, seq_len=8, token_bytes=4)[0])
            assert sample[0].tolist()[:2] == [1, 1]  # part-000.bin: uint32 ones
        else:
            with pytest.raises(LoadError, match=r"cannot read .* through the dataset mount"):
                as_pod(load.run)
            with pytest.raises(PermissionError):
                as_pod(lambda: TokenShards(shard, seq_len=8, token_bytes=4)[0])


def test_a_dataset_directory_made_before_the_loader_ace_is_converged_too(hub: FakeQumulo) -> None:
    """A <dataset_path>/<name> made before the identity (by an earlier release or by hand) inherits nothing later:
    convergence puts both ACEs on each directory directly under the write path, so the loader adds versions there
    and what it writes is readable by Everyone."""
    hub.password = "secret"
    hub.add_file(f"{DATASET}/.keep", 0)
    admin = _admin(hub)
    admin.fs.create_directory(name="c4-llama3", dir_path=f"{DATASET}/")
    _converge_loader(admin, DATASET)
    version = _as(hub, LOADER).fs.create_directory(name="v1", dir_path=f"{DATASET}/c4-llama3/")["path"]
    hub.add_file(version.rstrip("/") + "/part-000.bin", 8)
    assert hub.may_read(version.rstrip("/") + "/part-000.bin")
    again = admin.fs.get_acl_v2(path=f"{DATASET}/c4-llama3")
    _converge_loader(admin, DATASET)  # converged: a rerun changes nothing
    assert admin.fs.get_acl_v2(path=f"{DATASET}/c4-llama3") == again


def test_a_privilege_the_cluster_does_not_offer_is_named_in_one_line(hub: FakeQumulo) -> None:
    """GET /v1/auth/privileges/ (SDK qumulo.rest.roles.list_privileges) lists what this cluster's version offers;
    an identity needing one it lacks is refused naming it, before any role is created."""
    hub.password = "secret"
    hub.offered_privileges.discard("PRIVILEGE_FS_FILE_LOCK_WRITE")
    admin = _admin(hub)
    with pytest.raises(ProvisioningError, match=r"does not offer PRIVILEGE_FS_FILE_LOCK_WRITE;") as refused:
        _converge_loader(admin, DATASET)
    assert "\n" not in str(refused.value)
    assert hub.roles == {}
