"""The CNQ provisioning handler against contract fakes of a hub and a spoke cluster on 127.0.0.1.

Secrets Manager is moto's; Qumulo is tests/fakes/qumulo.py, reached through the real qumulo-api SDK.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hubspoke.config import HubSpokeConfig
from hubspoke.constructs.cnq.runtime.provisioner import on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError, ProvisioningTimeout
from hubspoke.mtu import peer_mtu
from tests.fakes.qumulo import FakeQumulo

CONFIG = HubSpokeConfig.model_validate(
    {
        "environment": "dev",
        "account": "123456789012",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}],
    }
)
SPOKE = CONFIG.spokes[0]
HUB_FLOATING = ("10.10.64.11", "10.10.64.12")
SPOKE_FLOATING = ("10.20.64.11", "10.20.64.12")
HUB_PASSWORD = "Hub-Passw0rd!x"
SPOKE_PASSWORD = "Spoke-Passw0rd!y"
MUTATING = ("POST", "PUT", "PATCH", "DELETE")
# qumulo-api's dataclasses-json schemas use marshmallow 3 idioms that marshmallow deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")


class Context:
    """The slice of the Lambda context the handler reads."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


# The handler keeps 20 s for the framework to report: 60 s of Lambda time is a 40 s budget.
ROOMY = Context(60)
TIGHT = Context(22.5)


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "0.02")
    with mock_aws():
        arns = {}
        for name, region, value in (
            ("hub", "us-east-2", HUB_PASSWORD),
            ("spoke", "us-west-2", SPOKE_PASSWORD),
        ):
            client = boto3.client("secretsmanager", region_name=region)
            arns[name] = client.create_secret(Name=f"cnq-{name}", SecretString=value)["ARN"]
        yield arns


@pytest.fixture
def hub() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="hub", portal_hosts=HUB_FLOATING, formation_polls=2) as fake:
        yield fake


@pytest.fixture
def spoke() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="spoke", portal_hosts=SPOKE_FLOATING) as fake:
        yield fake


def cluster_event(fake: FakeQumulo, secret: str, *, cidr: str, floating: tuple[str, ...], exports: list[str],
                  request: str = "Create") -> dict[str, Any]:  # fmt: skip
    return {
        "RequestType": request,
        "ResourceType": "Custom::CnqCluster",
        "LogicalResourceId": "Cluster",
        "PhysicalResourceId": "cnq-cluster-x",
        "ResourceProperties": {
            "ClusterName": f"hubspoke-{fake.name}",
            "NodeIps": ["127.0.0.1"],
            "NodeInstanceIds": ["i-0123456789abcdef0"],
            "FloatingIps": list(floating),
            "ObjectStorageUris": [
                "https://b1.s3.us-east-2.amazonaws.com/",
                "https://b2.s3.us-east-2.amazonaws.com/",
            ],
            "UsableCapacityBytes": str(CONFIG.hub.storage.soft_capacity_limit_tb * 10**12),
            "PeerMtu": str(peer_mtu(CONFIG)),
            "AdminSecretArn": secret,
            "ExportPaths": exports,
            "ClientCidrs": [cidr],
            "RestPort": str(fake.port),
        },
    }


def portal_event(hub: FakeQumulo, spoke: FakeQumulo, arns: dict[str, str], request: str = "Create",
                 **overrides: str) -> dict[str, Any]:  # fmt: skip
    props = {
        "SpokeRestAddresses": ["127.0.0.1"],
        "SpokeSecretArn": arns["spoke"],
        "SpokePortalHosts": list(SPOKE_FLOATING),
        "HubRestAddresses": ["127.0.0.1"],
        "HubSecretArn": arns["hub"],
        "HubPortalHosts": list(HUB_FLOATING),
        "HubRoot": CONFIG.hub.storage.dataset_path,
        "SpokeRoot": SPOKE.storage.dataset_path,
        "Mode": SPOKE.portal.mode,
        "EvictionFreeThreshold": str(SPOKE.portal.eviction_free_threshold),
        "ClientCidrs": [SPOKE.cidr],
        "HubRestPort": str(hub.port),
        "SpokeRestPort": str(spoke.port),
        "DeletePatienceSeconds": "0.5",
        **overrides,
    }
    return {"RequestType": request, "ResourceType": "Custom::CnqPortal", "LogicalResourceId": "Portal",
            "PhysicalResourceId": "cnq-portal-x", "ResourceProperties": props, "OldResourceProperties": props}  # fmt: skip


def mutations(fake: FakeQumulo) -> list[tuple[str, str]]:
    return [(m, p) for m, p in fake.calls if m in MUTATING and not p.startswith("/v1/session/login")]


def form(
    fake: FakeQumulo, secret: str, *, cidr: str, floating: tuple[str, ...], exports: list[str]
) -> dict[str, Any]:
    return on_event(cluster_event(fake, secret, cidr=cidr, floating=floating, exports=exports), ROOMY)


@pytest.fixture
def formed(secrets: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo) -> dict[str, str]:
    form(hub, secrets["hub"], cidr=CONFIG.hub.cidr, floating=HUB_FLOATING,
         exports=[CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path])  # fmt: skip
    form(
        spoke,
        secrets["spoke"],
        cidr=SPOKE.cidr,
        floating=SPOKE_FLOATING,
        exports=[SPOKE.storage.checkpoint_path],
    )
    return secrets


# ---------------------------------------------------------------- cluster
def test_cluster_forms_sets_mtu_floating_ips_and_exports(secrets: dict[str, str], hub: FakeQumulo) -> None:
    result = form(hub, secrets["hub"], cidr=CONFIG.hub.cidr, floating=HUB_FLOATING,
                  exports=[CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path])  # fmt: skip
    assert hub.state == "ACTIVE" and result["PhysicalResourceId"].endswith(hub.cluster_id)
    assert hub.password == HUB_PASSWORD, "the admin password is the one in Secrets Manager"
    assert hub.interface["mtu"] == peer_mtu(CONFIG)
    assert sorted(hub.network["floating_ip_ranges"]) == sorted(HUB_FLOATING)
    exports = {e["export_path"]: e for e in hub.exports.values()}
    assert set(exports) == {CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path}
    for export in exports.values():
        assert [r["host_restrictions"] for r in export["restrictions"]] == [[CONFIG.hub.cidr]]
    request = hub.create_requests[0]
    assert request["host_instance_id"] == "i-0123456789abcdef0" and len(request["object_storage_uris"]) == 2


def test_cluster_repeated_create_changes_nothing(secrets: dict[str, str], hub: FakeQumulo) -> None:
    args = {"cidr": CONFIG.hub.cidr, "floating": HUB_FLOATING, "exports": [CONFIG.hub.storage.dataset_path]}
    first = form(hub, secrets["hub"], **args)
    before = len(mutations(hub))
    second = form(hub, secrets["hub"], **args)
    assert second == first
    assert mutations(hub)[before:] == [], "a second run with the same properties must not change anything"
    assert len(hub.create_requests) == 1


def test_cluster_failure_half_way_reports_qumulo_text_then_retry_completes(
    secrets: dict[str, str], hub: FakeQumulo
) -> None:
    hub.fail(
        "POST", r"^/v3/nfs/exports/", error_class="nfs_export_quota_error", description="fake: no room left"
    )
    args = {"cidr": CONFIG.hub.cidr, "floating": HUB_FLOATING, "exports": [CONFIG.hub.storage.dataset_path]}
    with pytest.raises(ProvisioningError, match=r"nfs_export_quota_error: fake: no room left"):
        form(hub, secrets["hub"], **args)
    assert hub.state == "ACTIVE" and not hub.exports
    form(hub, secrets["hub"], **args)
    assert len(hub.create_requests) == 1, "the retry must not re-create a formed cluster"
    assert [e["export_path"] for e in hub.exports.values()] == [CONFIG.hub.storage.dataset_path]


def test_cluster_unreachable_nodes_time_out_within_the_budget(
    secrets: dict[str, str], hub: FakeQumulo
) -> None:
    hub.down()
    event = cluster_event(hub, secrets["hub"], cidr=CONFIG.hub.cidr, floating=HUB_FLOATING, exports=[])
    with pytest.raises(ProvisioningTimeout, match="nodes answering"):
        on_event(event, TIGHT)


def test_secrets_are_never_logged(
    secrets: dict[str, str], hub: FakeQumulo, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = form(hub, secrets["hub"], cidr=CONFIG.hub.cidr, floating=HUB_FLOATING, exports=[])
    assert HUB_PASSWORD not in caplog.text and HUB_PASSWORD not in repr(result)
    assert caplog.records, "the handler logs its progress (so the assertion above is not vacuous)"


# ---------------------------------------------------------------- portal
def test_portal_happy_path(formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo) -> None:
    result = on_event(portal_event(hub, spoke, formed), ROOMY)
    (portal,) = spoke.spokes.values()
    view = spoke._spoke_view(portal)
    assert (view["state"], view["status"]) == ("ACCEPTED", "ACTIVE")
    assert view["type"] == "PORTAL_READ_ONLY", "read-only unless config says read-write"
    assert sorted(h["address"] for h in portal["hub_hosts"]) == sorted(HUB_FLOATING)
    assert {h["port"] for h in portal["hub_hosts"]} == {3713}
    (pair,) = portal["roots"]
    assert pair["authorized"] and pair["remote_root"] == hub.files[CONFIG.hub.storage.dataset_path]["id"]
    assert pair["local_root"] == spoke.files[SPOKE.storage.dataset_path]["id"]
    (hub_portal,) = hub.hubs.values()
    assert sorted(h["address"] for h in hub_portal["spoke_hosts"]) == sorted(SPOKE_FLOATING)
    assert spoke.free_threshold == SPOKE.portal.eviction_free_threshold
    dataset_export = next(e for e in spoke.exports.values() if e["export_path"] == SPOKE.storage.dataset_path)
    assert dataset_export["restrictions"][0]["read_only"] is True
    assert result["Data"] == {"SpokePortalId": str(portal["id"])}


def test_portal_read_write_when_configured(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    on_event(portal_event(hub, spoke, formed, Mode="read_write"), ROOMY)
    (portal,) = spoke.spokes.values()
    assert portal["type"] == "PORTAL_READ_WRITE"


def test_portal_repeated_create_changes_nothing(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    first = on_event(portal_event(hub, spoke, formed), ROOMY)
    before = (len(mutations(hub)), len(mutations(spoke)))
    second = on_event(portal_event(hub, spoke, formed), ROOMY)
    assert second == first
    assert (mutations(hub)[before[0] :], mutations(spoke)[before[1] :]) == ([], [])
    assert len(spoke.spokes) == 1 and len(hub.hubs) == 1


def test_portal_hub_unreachable_fails_in_bounded_time_and_leaves_nothing(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    hub.down()
    with pytest.raises(ProvisioningTimeout, match=r"hub: REST API .* gave up after"):
        on_event(portal_event(hub, spoke, formed), TIGHT)
    assert not spoke.spokes, "an unreachable hub must not leave a half-made spoke portal"


def test_portal_slow_hub_times_out(formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo) -> None:
    hub.slow(4.0, "POST", r"^/v1/session/login")
    with pytest.raises(ProvisioningTimeout, match=r"hub: .*timed out"):
        on_event(portal_event(hub, spoke, formed), TIGHT)


def test_portal_failure_half_way_then_retry(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    hub.fail(
        "POST", r"/accept$", status=400, error_class="portal_invalid_state_error", description="fake: busy"
    )
    with pytest.raises(ProvisioningError, match="portal_invalid_state_error: fake: busy"):
        on_event(portal_event(hub, spoke, formed), ROOMY)
    (pending,) = spoke.spokes.values()
    assert pending["state"] == "PENDING", "the failure happened half-way: proposed, not accepted"
    on_event(portal_event(hub, spoke, formed), ROOMY)
    assert len(spoke.spokes) == 1 and len(hub.hubs) == 1
    assert spoke._spoke_view(pending)["status"] == "ACTIVE"


def test_portal_root_change_on_update_is_refused(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    on_event(portal_event(hub, spoke, formed), ROOMY)
    event = portal_event(hub, spoke, formed, "Update", SpokeRoot="/elsewhere")
    event["OldResourceProperties"] = portal_event(hub, spoke, formed)["ResourceProperties"]
    with pytest.raises(ProvisioningError, match="Re-create the portal"):
        on_event(event, ROOMY)


def test_portal_update_converges_mode_and_eviction(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    on_event(portal_event(hub, spoke, formed), ROOMY)
    on_event(
        portal_event(hub, spoke, formed, "Update", Mode="read_write", EvictionFreeThreshold="0.25"), ROOMY
    )
    (portal,) = spoke.spokes.values()
    assert portal["type"] == "PORTAL_READ_WRITE" and spoke.free_threshold == 0.25


def test_delete_with_hub_up_removes_both_sides_and_keeps_hub_data(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    on_event(portal_event(hub, spoke, formed), ROOMY)
    hub_files = dict(hub.files)
    on_event(portal_event(hub, spoke, formed, "Delete"), ROOMY)
    assert not spoke.spokes and not hub.hubs
    assert hub.files == hub_files and hub.exports, "the hub's data and exports are never touched"
    assert not any("force=true" in p for _, p in spoke.calls), "no force needed while the hub answers"


def test_delete_with_hub_down_forces_a_read_only_spoke(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    on_event(portal_event(hub, spoke, formed), ROOMY)
    hub_files = dict(hub.files)
    hub.down()
    on_event(portal_event(hub, spoke, formed, "Delete"), TIGHT)
    assert not spoke.spokes
    assert any(m == "DELETE" and "force=true" in p for m, p in spoke.calls)
    assert hub.files == hub_files and len(hub.hubs) == 1, (
        "the hub keeps its data; its record waits for the runbook"
    )


def test_delete_with_hub_down_never_forces_a_read_write_spoke(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    on_event(portal_event(hub, spoke, formed, Mode="read_write"), ROOMY)
    hub.down()
    with pytest.raises(ProvisioningError, match=r"read-write.*portal_delete_spoke"):
        on_event(portal_event(hub, spoke, formed, "Delete", Mode="read_write"), TIGHT)
    assert len(spoke.spokes) == 1, "writes not yet on the hub would be lost by a forced delete"


def test_delete_when_the_spoke_is_already_gone_succeeds(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    spoke.down()
    on_event(portal_event(hub, spoke, formed, "Delete"), TIGHT)


# ---------------------------------------------------------------- the fake's reads for the canary and prewarm
def test_fake_serves_portal_status_and_fetch_data(
    formed: dict[str, str], hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    """What the hub-outage canary and cache prewarming read through the SDK, as the docs shape it."""
    from qumulo.rest_client import RestClient

    on_event(portal_event(hub, spoke, formed), ROOMY)
    client = RestClient("127.0.0.1", spoke.port, timeout=5)
    client.login("admin", SPOKE_PASSWORD)
    assert [p.status for p in client.portal.v2_list_spoke_portals()] == ["ACTIVE"]
    hub.down()
    assert [p.status for p in client.portal.v2_list_spoke_portals()] == ["DEGRADED"]
    hub.up()
    spoke.add_file(f"{SPOKE.storage.dataset_path}/shard-0000.bin", size=(64 << 20) + 5)
    path = f"{SPOKE.storage.dataset_path}/shard-0000.bin"
    first = client.fs.fetch_data(offset=0, path=path)
    assert first["next_offset"] is not None
    last = client.fs.fetch_data(offset=int(first["next_offset"]), path=path)
    assert last["next_offset"] is None
    assert spoke.fetched_bytes[path] == (64 << 20) + 5
