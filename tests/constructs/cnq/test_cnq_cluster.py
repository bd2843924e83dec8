"""Custom::CnqCluster and Custom::CnqNodeShape against the Qumulo contract fake and moto's EC2.

The fake clusters have Qumulo's default 4 nodes and are reached through the real qumulo-api SDK; the
provider framework is played by `drive` (on_event once, is_complete until done).
"""

from __future__ import annotations

import logging
import re

import pytest

from hubspoke.constructs.cnq.runtime.provisioner import is_complete, on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from tests.constructs.cnq.conftest import (
    CONFIG,
    HUB_FLOATING,
    HUB_PASSWORD,
    ROOMY,
    World,
    deploy,
    drive,
    mutations,
    once_per_process,
    polls_until_complete,
)  # fmt: skip
from tests.fakes.qumulo import PSTORE_BYTES, FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
HUB_EXPORTS = (CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path)


def test_forms_four_nodes_host_managed_and_protects_none(world: World, hub: FakeQumulo) -> None:
    """Qumulo's provisioner order: every node answers, create, ACTIVE, floating IPs on a HOST network."""
    instances = world.instances(4, "dev-hub")
    result = drive(world.cluster_event(hub, "hub", instances, floating=HUB_FLOATING, exports=HUB_EXPORTS))
    assert hub.state == "ACTIVE" and result["Data"] == {"ClusterId": hub.cluster_id}
    assert hub.members == hub.node_ips and len(hub.members) == 4, "Qumulo's default cluster: 4 nodes"
    (request,) = hub.create_requests
    assert request["host_instance_id"] == instances[0]
    assert [n["node_ip"] for n in request["node_ips_and_fault_domains"]] == hub.node_ips
    assert hub.password == HUB_PASSWORD, "the admin password is the one in Secrets Manager"
    (network,) = hub.frontend_networks
    assert network["addresses"]["type"] == "HOST"
    # The fake echoes the four consecutive addresses as one range, as the SDK's "1.1.1.1-4" form allows.
    assert network["addresses"]["host_addresses"]["floating_ip_ranges"] == ["10.10.64.11-14"]
    assert not hub.called("PATCH", r"^/v2/network/interfaces"), "no interface MTU change in host mode"
    exports = {e["export_path"]: e for e in hub.exports.values()}
    assert set(exports) == set(HUB_EXPORTS)
    assert not any(map(world.protected, instances)), "protection is the stack's last resource's job"


def test_formation_spans_polls_while_nodes_install(world: World, hub: FakeQumulo) -> None:
    """A node still installing is waited for across polls, not inside one 15-minute Lambda."""
    hub.down_node(hub.node_ips[3])
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"))
    merged = {**event, **on_event(event, ROOMY)}
    for _ in range(3):
        assert is_complete(merged, ROOMY) == {"IsComplete": False}
    assert not hub.create_requests, "no create until every node answers"
    hub.up()
    for _ in range(20):
        if is_complete(merged, ROOMY)["IsComplete"]:
            break
    assert hub.state == "ACTIVE" and len(hub.members) == 4


def test_repeated_create_changes_nothing(world: World, hub: FakeQumulo) -> None:
    event = world.cluster_event(
        hub, "hub", world.instances(4, "dev-hub"), floating=HUB_FLOATING, exports=HUB_EXPORTS
    )
    first = drive(event)
    before = len(mutations(hub))
    assert drive(event)["Data"] == first["Data"]
    assert mutations(hub)[before:] == [], "a second run with the same properties must not change anything"


def test_a_node_with_another_release_is_refused_before_create(world: World, hub: FakeQumulo) -> None:
    old = hub.node_ips[2]
    hub.nodes[old].version = "7.9.0"
    with pytest.raises(
        ProvisioningError, match=rf"{re.escape(old)} .* installed Qumulo Core 7\.9\.0.*re-stage"
    ):
        drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub")))
    assert not hub.create_requests


def test_config_release_other_than_the_running_one_is_refused(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    instances = lone_hub
    with pytest.raises(ProvisioningError, match=r"runs Qumulo Core 7\.10\.2\.1, the config says 7\.11\.0"):
        drive(world.cluster_event(hub, "hub", instances, request="Update", version="7.11.0"))


def test_qumulo_managed_networking_is_refused_with_the_reason(world: World) -> None:
    with (
        FakeQumulo(name="old", host_managed=False) as fake,
        pytest.raises(ProvisioningError, match="host-managed"),
    ):
        drive(world.cluster_event(fake, "hub", world.instances(4, "dev-old"), floating=HUB_FLOATING))


def test_more_nodes_join_with_the_membership_call(world: World, hub: FakeQumulo) -> None:
    """qq modify_object_backed_cluster_membership (POST /v2/cluster/object-backed/nodes) with every node."""
    instances = world.instances(4, "dev-hub")
    drive(world.cluster_event(hub, "hub", instances, floating=HUB_FLOATING))
    hub.add_nodes(2)
    grown = instances + world.instances(2, "dev-hub")
    floating = (*HUB_FLOATING, "10.10.64.15", "10.10.64.16")
    drive(world.cluster_event(hub, "hub", grown, request="Update", floating=floating))
    assert hub.membership_requests == [hub.node_ips] and len(hub.members) == 6
    assert hub.frontend_networks[0]["addresses"]["host_addresses"]["floating_ip_ranges"] == ["10.10.64.11-16"]


def test_fewer_nodes_leave_the_cluster(world: World, hub: FakeQumulo, five_node_hub: list[str]) -> None:
    instances = five_node_hub
    update = world.cluster_event(hub, "hub", instances[:4], request="Update")
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    drive(update)
    assert hub.members == hub.node_ips[:4]


def test_a_new_node_with_another_release_is_refused(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    instances = lone_hub
    hub.add_nodes(1, version="7.11.0")
    with pytest.raises(
        ProvisioningError, match=r"installed Qumulo Core 7\.11\.0, the cluster needs 7\.10\.2\.1"
    ):
        drive(world.cluster_event(hub, "hub", instances + world.instances(1, "dev-hub"), request="Update"))
    assert not hub.membership_requests


def test_single_node_and_multi_node_do_not_convert(world: World) -> None:
    with FakeQumulo(name="one", node_count=1) as fake:
        instances = world.instances(1, "dev-one")
        drive(world.cluster_event(fake, "hub", instances))
        fake.add_nodes(2)
        with pytest.raises(
            ProvisioningError, match="1 -> 3 nodes is not a membership change Qumulo documents"
        ):
            drive(
                world.cluster_event(fake, "hub", instances + world.instances(2, "dev-one"), request="Update")
            )


def test_more_buckets_are_added_to_persistent_storage(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """POST /v2/object-storage/add-uris, as Qumulo's provisioner runs add_object_storage_uris."""
    instances = lone_hub
    deploy(world, world.cluster_event(hub, "hub", instances, request="Update", buckets=6))
    assert len(hub.object_storage_uris) == 6 and hub.called("POST", r"^/v2/object-storage/add-uris") == 1


def test_fewer_buckets_are_refused_before_anything_is_touched(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    instances = lone_hub
    before = len(mutations(hub))
    update = world.cluster_event(hub, "hub", instances, request="Update", buckets=3)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    with pytest.raises(ProvisioningError, match=r"bucket_count was lowered.*set it back"):
        on_event(update, ROOMY)
    assert mutations(hub)[before:] == []


def test_a_higher_capacity_limit_is_sent_once(world: World, hub: FakeQumulo, lone_hub: list[str]) -> None:
    """capacity_clamp_set: stored rounded down to whole pstores, quorum abandoned and formed again."""
    instances = lone_hub
    puts = hub.called("PUT", r"^/v1/capacity/clamp")
    update = world.cluster_event(hub, "hub", instances, request="Update", capacity_tb=250)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    deploy(world, update)
    assert hub.called("PUT", r"^/v1/capacity/clamp") - puts == 1, "sent once, not once per poll"
    assert hub.capacity_clamp == 250 * 10**12 // PSTORE_BYTES * PSTORE_BYTES


def test_a_lower_capacity_limit_is_refused(world: World, hub: FakeQumulo, lone_hub: list[str]) -> None:
    """'A value below the current provisioned capacity has no effect' (qq capacity_clamp_set)."""
    instances = lone_hub
    update = world.cluster_event(hub, "hub", instances, request="Update", capacity_tb=50)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    with pytest.raises(ProvisioningError, match=r"never shrinks.*soft_capacity_limit_tb back to 100"):
        on_event(update, ROOMY)


def test_a_server_error_is_retried_at_the_next_poll(world: World, hub: FakeQumulo) -> None:
    """5xx answers may pass (a quorum re-forming); only Qumulo's 4xx answers are final."""
    hub.fail("POST", r"^/v3/nfs/exports/", times=2, status=503, error_class="quorum_not_ready_error")
    drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), exports=HUB_EXPORTS[:1]))
    assert [e["export_path"] for e in hub.exports.values()] == [HUB_EXPORTS[0]]
    assert hub.called("POST", r"^/v3/nfs/exports/") == 3


def test_failure_half_way_reports_qumulo_text_then_a_retry_completes(world: World, hub: FakeQumulo) -> None:
    hub.fail(
        "POST", r"^/v3/nfs/exports/", status=400, error_class="nfs_export_quota_error",
        description="fake: no room left",
    )  # fmt: skip
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), exports=HUB_EXPORTS[:1])
    with pytest.raises(ProvisioningError, match=r"nfs_export_quota_error: fake: no room left"):
        drive(event)
    assert hub.state == "ACTIVE" and not hub.exports
    drive(event)
    assert len(hub.create_requests) == 1, "the retry must not re-create a formed cluster"


def test_delete_touches_nothing(world: World, hub: FakeQumulo, lone_hub: list[str]) -> None:
    instances = lone_hub
    before = len(hub.calls)
    drive(world.cluster_event(hub, "hub", instances, request="Delete"))
    assert len(hub.calls) == before


def test_secrets_are_never_logged(world: World, hub: FakeQumulo, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    result = drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub")))
    assert HUB_PASSWORD not in caplog.text and HUB_PASSWORD not in repr(result)
    assert caplog.records, "the handler logs its progress (so the assertion above is not vacuous)"


def test_formation_takes_several_polls_not_one_call(world: World, hub: FakeQumulo) -> None:
    assert polls_until_complete(world.cluster_event(hub, "hub", world.instances(4, "dev-hub"))) > 1


def test_new_buckets_go_in_before_the_capacity_limit_rises(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Qumulo's provisioner adds buckets, then raises the clamp (qumulo-terraform-gcp @ a30b449c,
    provision.py add_object_buckets -> update_capacity_limit)."""
    instances = lone_hub
    update = world.cluster_event(hub, "hub", instances, request="Update", buckets=6, capacity_tb=250)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    before = len(mutations(hub))
    deploy(world, update)
    order = [
        p
        for m, p in mutations(hub)[before:]
        if p.startswith(("/v2/object-storage/add-uris", "/v1/capacity/clamp"))
    ]
    assert order == ["/v2/object-storage/add-uris", "/v1/capacity/clamp"]
    assert len(hub.object_storage_uris) == 6


@pytest.fixture
def raised(world: World, hub: FakeQumulo, lone_hub: list[str]) -> tuple[list[str], dict]:
    """The lone hub after a forward Update that raised capacity and added buckets (both reached Qumulo), the stack
    UPDATE_IN_PROGRESS: its nodes' instance IDs and that Update (built once per process)."""

    def build() -> tuple[list[str], dict]:
        world.stack_status("UPDATE_IN_PROGRESS")
        update = world.cluster_event(hub, "hub", lone_hub, request="Update", buckets=6, capacity_tb=250)
        update["OldResourceProperties"] = world.cluster_event(hub, "hub", lone_hub)["ResourceProperties"]
        deploy(world, update)
        return lone_hub, update

    return once_per_process("raised", world, (hub,), build)


@pytest.mark.parametrize("shrunk", [{"capacity_tb": 100, "buckets": 6}, {"capacity_tb": 250, "buckets": 4},
                                    {"capacity_tb": 100, "buckets": 4}])  # fmt: skip
def test_a_rollback_after_a_raise_is_a_no_op_with_a_warning(
    world: World,
    hub: FakeQumulo,
    caplog: pytest.LogCaptureFixture,
    shrunk: dict,
    raised: tuple[list[str], dict],
) -> None:
    """CloudFormation's rollback Update carries the previous values as ResourceProperties and the failed
    new ones as OldResourceProperties (CloudFormation User Guide, "Custom resource request objects"), while
    the stack is UPDATE_ROLLBACK_IN_PROGRESS ("Stack status codes"). The cluster cannot give the capacity
    or the buckets back: "A value below the current provisioned capacity has no effect" (qumulo-api
    7.10.2.1, qumulo/commands/capacity.py, CapacityLimitSetCommand.SYNOPSIS, qq capacity_clamp_set) and
    qumulo/rest/object_storage.py has get_uris and add_uris only. Failing it would leave the stack in
    UPDATE_ROLLBACK_FAILED, so the rollback completes, changes nothing and says so."""
    instances, update = raised
    clamp, uris, before = hub.capacity_clamp, list(hub.object_storage_uris), len(mutations(hub))
    world.stack_status("UPDATE_ROLLBACK_IN_PROGRESS")
    rollback = world.cluster_event(hub, "hub", instances, request="Update", **shrunk)
    rollback["OldResourceProperties"] = update["ResourceProperties"]
    caplog.set_level(logging.WARNING)
    deploy(world, rollback)
    assert mutations(hub)[before:] == [], "nothing is sent to the cluster"
    assert (hub.capacity_clamp, hub.object_storage_uris) == (clamp, uris)
    assert "keeps" in caplog.text and "rollback" in caplog.text, "the operator is told what stays"


def test_a_forward_update_that_lowers_capacity_is_still_refused(
    world: World, hub: FakeQumulo, raised: tuple[list[str], dict]
) -> None:
    """Outside a rollback a lower value is an operator's change the cluster cannot make: refused at once,
    before anything is touched, so that update's own rollback (which restores the higher value) passes."""
    instances, update = raised
    lower = world.cluster_event(hub, "hub", instances, request="Update", buckets=6, capacity_tb=100)
    lower["OldResourceProperties"] = update["ResourceProperties"]
    with pytest.raises(ProvisioningError, match="soft_capacity_limit_tb back to 250"):
        on_event(lower, ROOMY)


def test_the_capacity_limit_rises_only_once_the_quorum_is_back_after_adding_buckets(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Qumulo's AWS provisioner runs add_object_storage_uris, waits until the cluster is ACTIVE with every
    node in quorum, and only then capacity_clamp_set (aws-terraform-cnq, modules/qprovisioner/scripts/
    provision.sh, the bucket add). The wait belongs in is_complete, whose failures are retried."""
    instances = lone_hub
    update = world.cluster_event(hub, "hub", instances, request="Update", buckets=6, capacity_tb=250)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    hub.clamp_put_states.clear()
    deploy(world, update)
    assert hub.clamp_put_states == ["ACTIVE"], "one clamp change, sent with the quorum whole"
    assert hub.capacity_clamp == 250 * 10**12 // PSTORE_BYTES * PSTORE_BYTES
    assert len(hub.object_storage_uris) == 6


def test_a_capacity_raise_that_cannot_reach_the_cluster_is_retried_by_the_poll(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """A quorum that is still re-forming answers 5xx or not at all; on_event's failures are final, so
    the clamp change is made by is_complete, which retries them."""
    instances = lone_hub
    hub.fail("PUT", r"^/v1/capacity/clamp", times=2, status=503, error_class="quorum_not_ready_error")
    update = world.cluster_event(hub, "hub", instances, request="Update", capacity_tb=250)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    deploy(world, update)
    assert hub.capacity_clamp == 250 * 10**12 // PSTORE_BYTES * PSTORE_BYTES


@pytest.mark.parametrize("normalized", [True, False])
def test_floating_ips_converge_whichever_form_qumulo_echoes(
    world: World, hub: FakeQumulo, normalized: bool
) -> None:
    """The SDK takes the netmask as a dotted quad or a CIDR and floating IPs as single addresses or ranges
    'a.b.c.d-e' (qumulo-api 7.10.2.1, qumulo/commands/network_v3.py, network_v3_put_config help). Which
    form GET /v3/network answers with is not documented (ASSUMED both): the configuration is compared in
    normalized form, so it is written once and not on every poll."""
    hub.echo_network_normalized = normalized
    instances = world.instances(4, "dev-hub")
    drive(world.cluster_event(hub, "hub", instances, floating=HUB_FLOATING))
    assert hub.called("PUT", r"^/v3/network$") == 1
    host = hub.frontend_networks[0]["addresses"]["host_addresses"]
    assert host["netmask"] == ("255.255.192.0" if normalized else "10.10.0.0/18")
    assert host["floating_ip_ranges"] == (["10.10.64.11-14"] if normalized else sorted(HUB_FLOATING))
    before = len(mutations(hub))
    drive(world.cluster_event(hub, "hub", instances, request="Update", floating=HUB_FLOATING))
    assert mutations(hub)[before:] == [], "an unchanged configuration is not sent again"


def test_the_fake_refuses_a_create_qumulo_refuses(world: World) -> None:
    """Node count 1 or 3-24 (Qumulo/qumulo-terraform-aws @ 8a6e4d57, variables.tf node_count) and empty
    buckets only (qq add_object_storage_uris: 'Ensure that the new URIs point to empty S3 buckets'):
    the contract fake refuses them, so a handler that let them through would be caught here."""
    with (
        FakeQumulo(name="two", node_count=2) as fake,
        pytest.raises(ProvisioningError, match=r"2 nodes \(1, or 3 to 24\)"),
    ):
        drive(world.cluster_event(fake, "hub", world.instances(2, "dev-two")))
    with FakeQumulo(name="used") as fake:
        event = world.cluster_event(fake, "hub", world.instances(4, "dev-used"))
        fake.nonempty_uris = {event["ResourceProperties"]["ObjectStorageUris"][0]}
        with pytest.raises(ProvisioningError, match="is not empty"):
            drive(event)
        assert not fake.create_requests


def test_a_cluster_formed_with_four_buckets_grows_to_qumulos_sixteen(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Issue 22 item 8: a cluster an earlier release formed with 4 buckets meets the new default, Qumulo's
    max(16, ceil(TB / 500)) = 16 for 100 TB (qumulo-terraform-gcp @ a30b449c, persistent-storage/module/main.tf).
    The Update converges by adding the 12 missing buckets in one add-uris call ("adds new URIs to the list
    ... and ignores the existing URIs", REST guide) and waiting for the quorum to come back."""
    instances = lone_hub
    update = world.cluster_event(hub, "hub", instances, request="Update", buckets=16)
    update["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    deploy(world, update)
    assert len(hub.object_storage_uris) == 16
    assert hub.called("POST", r"^/v2/object-storage/add-uris") == 1
    assert hub.state == "ACTIVE"


def test_the_product_type_is_sent_at_formation(world: World, hub: FakeQumulo) -> None:
    """create_object_backed_cluster's product_type (qumulo-api 7.10.2.1, qumulo/rest/cluster.py)."""
    event = world.cluster_event(
        hub, "hub", world.instances(4, "dev-hub"), ProductType="ARCHIVE_WITH_IA_STORAGE"
    )
    drive(event)
    (request,) = hub.create_requests
    assert request["product_type"] == "ARCHIVE_WITH_IA_STORAGE"


@pytest.mark.parametrize(
    ("old", "new", "refused"),
    [
        # An earlier release's resource has no ProductType and formed ACTIVE_WITH_STANDARD_STORAGE.
        (None, "ACTIVE_WITH_STANDARD_STORAGE", False),
        (None, "ACTIVE_WITH_INTELLIGENT_STORAGE", True),
        ("ARCHIVE_WITH_IA_STORAGE", "ACTIVE_WITH_STANDARD_STORAGE", True),
    ],
)
def test_a_product_type_change_is_refused_before_anything_is_touched(
    world: World, hub: FakeQumulo, old: str | None, new: str, refused: bool, request: pytest.FixtureRequest
) -> None:
    """'Cluster storage product type (immutable after creation)' (Qumulo/qumulo-terraform-aws @ 8a6e4d57,
    variables.tf cluster_product_type). A cluster formed without ProductType is the lone hub."""
    if old is None:
        instances = request.getfixturevalue("lone_hub")
        formed = world.cluster_event(hub, "hub", instances)
    else:
        instances = world.instances(4, "dev-hub")
        formed = world.cluster_event(hub, "hub", instances, ProductType=old)
        drive(formed)
    world.stack_status("UPDATE_IN_PROGRESS")
    update = world.cluster_event(hub, "hub", instances, request="Update", ProductType=new)
    update["OldResourceProperties"] = formed["ResourceProperties"]
    before = len(mutations(hub))
    if refused:
        with pytest.raises(ProvisioningError, match=r"product_type .* set storage.product_type back"):
            on_event(update, ROOMY)
        assert mutations(hub)[before:] == []
        world.stack_status("UPDATE_ROLLBACK_IN_PROGRESS")
        rollback = world.cluster_event(
            hub, "hub", instances, request="Update", **({"ProductType": old} if old else {})
        )
        rollback["OldResourceProperties"] = update["ResourceProperties"]
        drive(rollback)  # the rollback of a refused change goes through
    else:
        drive(update)
