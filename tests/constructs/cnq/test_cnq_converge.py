"""Custom::CnqCluster converges from the states a second deploy meets (issue 41 item 2), against the fake.

CloudFormation's rollback Update carries the previous values as ResourceProperties and the failed new ones
as OldResourceProperties (CloudFormation User Guide, "Custom resource request objects"); the redeploy after
it carries them the other way round again, while the cluster still holds what the first try gave it.
"""

from __future__ import annotations

from typing import Any

import pytest

from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from tests.constructs.cnq.conftest import VirtualClock, World, deploy, drive, mutations
from tests.fakes.qumulo import PSTORE_BYTES, FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
TB = 10**12


def _update(world: World, hub: FakeQumulo, instances: list[str], old: dict[str, Any], **new: Any) -> dict:
    event = world.cluster_event(hub, "hub", instances, request="Update", **new)
    event["OldResourceProperties"] = old["ResourceProperties"]
    return event


def test_a_raise_deployed_again_after_its_rollback_completes(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """The first raise reached Qumulo ("quorum will be abandoned and the change will appear in the new
    quorum") and was rolled back, which cannot lower it ("a value below the current provisioned capacity has
    no effect"; qumulo-api 7.10.2.1, qumulo/commands/capacity.py, CapacityLimitSetCommand.SYNOPSIS). The
    same raise deployed again finds the cluster holding it: it completes, and the clamp is not changed."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    world.stack_status("UPDATE_IN_PROGRESS")
    raised = _update(world, hub, instances, formed, capacity_tb=250)
    deploy(world, raised)
    held = hub.capacity_clamp
    assert held == 250 * TB // PSTORE_BYTES * PSTORE_BYTES
    world.stack_status("UPDATE_ROLLBACK_IN_PROGRESS")
    deploy(world, _update(world, hub, instances, raised, capacity_tb=100))
    world.stack_status("UPDATE_IN_PROGRESS")
    puts = hub.called("PUT", r"^/v1/capacity/clamp")
    deploy(world, _update(world, hub, instances, formed, capacity_tb=250), polls=8)
    assert hub.capacity_clamp == held
    assert hub.called("PUT", r"^/v1/capacity/clamp") - puts <= 1, "never re-sent at every poll"


def test_a_raise_smaller_than_one_pstore_completes(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Qumulo stores "a pstore count that produces a byte count closest to the requested bytes without going
    over" (capacity_clamp_set): a raise inside the same pstore changes nothing, and the update completes."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    clamp, puts = hub.capacity_clamp, hub.called("PUT", r"^/v1/capacity/clamp")
    # 100 TB + 0.1 TB: the same whole count of the fake's pstores (tests/fakes/qumulo/cluster.py, ASSUMED size).
    nudged = str(100 * TB + PSTORE_BYTES // 3)
    assert int(nudged) // PSTORE_BYTES * PSTORE_BYTES == clamp, "the raise stays within one pstore"
    deploy(world, _update(world, hub, instances, formed, UsableCapacityBytes=nudged), polls=8)
    assert hub.capacity_clamp == clamp
    assert hub.called("PUT", r"^/v1/capacity/clamp") - puts <= 1


def test_added_nodes_are_active_in_the_quorum_before_the_update_completes(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Qumulo's provisioner waits until an added node itself reports ACTIVE (qumulo-terraform-gcp @ a30b449c,
    provision.py add_cluster_nodes: wait_for_active_quorum on the first new node); the membership list
    names a joining node before it has switched modes (the fake lags it `api_switch_reads` reads)."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    hub.api_switch_reads = 12
    new = hub.add_nodes(2)
    drive(_update(world, hub, instances + world.instances(2, "dev-hub"), formed))
    assert [hub.nodes[ip].unconfigured_reads for ip in new] == [0, 0], "every new node has switched modes"
    assert hub.state == "ACTIVE" and hub.members == hub.node_ips


def test_a_rolled_back_update_leaves_no_bucket_qumulo_writes_to(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Qumulo cannot give a bucket back (qumulo-api 7.10.2.1, qumulo/rest/object_storage.py: get_uris and
    add_uris only). The buckets an update adds reach the cluster only in the stack's last resource, after
    every other one (hubspoke/stacks/storage.py): an update that fails before it (here a later export refused)
    rolls back with the cluster still on the buckets the stack keeps."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    uris = list(hub.object_storage_uris)
    world.stack_status("UPDATE_IN_PROGRESS")
    hub.fail("POST", r"^/v3/nfs/exports/", status=400, error_class="nfs_export_quota_error")
    grown = _update(world, hub, instances, formed, buckets=6, exports=("/later",))
    with pytest.raises(ProvisioningError, match="nfs_export_quota_error"):
        deploy(world, grown)
    assert hub.object_storage_uris == uris, "no bucket reached Qumulo before the update could still fail"
    world.stack_status("UPDATE_ROLLBACK_IN_PROGRESS")
    deploy(world, _update(world, hub, instances, grown))
    assert hub.object_storage_uris == uris


def test_the_bucket_step_refuses_fewer_buckets_and_names_the_import_runbook(
    world: World, hub: FakeQumulo
) -> None:
    """A bucket the cluster holds but the stack lost (an orphan from before the bucket step was last) is
    named with the fix an operator can follow: import it back (docs/runbooks/qumulo-core.md)."""
    instances = world.instances(4, "dev-hub")
    six = world.cluster_event(hub, "hub", instances, buckets=6)
    deploy(world, six)
    before = len(mutations(hub))
    event = world.storage_event(world.cluster_event(hub, "hub", instances, buckets=4))
    with pytest.raises(ProvisioningError, match=r"import each back .*'A bucket outside the stack'"):
        drive(event)
    assert mutations(hub)[before:] == []


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(400, "api_validation_error"), (500, "fake_injected_error")],
    ids=["4xx", "timeout"],
)
def test_a_capacity_step_that_fails_after_the_add_completes_the_update(
    world: World,
    hub: FakeQumulo,
    lone_hub: list[str],
    status: int,
    error_class: str,
    clock: VirtualClock | None,
) -> None:
    """Once the buckets an update adds are in the cluster, a failure of the same resource would roll the update
    back and leave them outside the stack while Qumulo writes to them (it cannot give a bucket back: qumulo-api
    7.10.2.1, qumulo/rest/object_storage.py has get_uris and add_uris only). So the capacity raise after the add
    (Qumulo's order: qumulo-terraform-gcp @ a30b449c, provision.py add_object_buckets -> update_capacity_limit)
    may fail, refused (4xx) or by running out of time (5xx until the budget), and the resource still completes,
    reporting the step's state. The time runs out on the virtual clock in the fast tier, on the real one in the
    thorough tier's twin (conftest `clock`)."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    world.stack_status("UPDATE_IN_PROGRESS")
    grown = world.storage_event(_update(world, hub, instances, formed, buckets=6, capacity_tb=250))
    if status == 500 and clock is None:
        grown["ResourceProperties"]["WaitSeconds"] = "61.5"  # 1.5 s after the 60 s the handler keeps back
    elif status == 500:
        # Six of the framework's 30-s poll intervals after the 60 s the handler keeps back: the quorum the add
        # abandoned forms again, then the clamp answers 5xx at every poll until the budget is spent.
        grown["ResourceProperties"]["WaitSeconds"] = "240"
    hub.fail("PUT", r"^/v1/capacity/clamp", status=status, error_class=error_class, times=10**6)
    answer = drive(grown, polls=1000, clock=clock)
    assert len(hub.object_storage_uris) == 6
    assert hub.called("PUT", r"^/v1/capacity/clamp") >= 1, "the time ran out on the capacity step itself"
    assert (
        answer["Data"]["CapacityStep"] != "done"
        and "capacity step did not finish" in answer["Data"]["CapacityStep"]
    )


def test_a_bucket_step_that_fails_before_the_add_still_fails(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """Before anything reaches Qumulo a failure is safe to roll back, so it is reported as a failure."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    world.stack_status("UPDATE_IN_PROGRESS")
    grown = world.storage_event(_update(world, hub, instances, formed, buckets=6))
    hub.fail("POST", r"^/v2/object-storage/add-uris", status=400, error_class="api_validation_error")
    with pytest.raises(ProvisioningError, match="api_validation_error"):
        drive(grown)
    assert len(hub.object_storage_uris) == 4


def test_a_raise_completes_once_the_new_quorum_shows_it_and_a_first_create_sends_none(
    world: World, hub: FakeQumulo, lone_hub: list[str]
) -> None:
    """An applied clamp abandons the quorum and "will appear in the new quorum" (qumulo-api 7.10.2.1,
    qumulo/commands/capacity.py, CapacityLimitSetCommand.SYNOPSIS; the fake shows the old value until then), so
    reading it back at once cannot tell whether it took effect: the update waits for the new quorum and its
    value, with one PUT. The first create sends none: the cluster formed with this limit in the same deploy."""
    instances = lone_hub
    formed = world.cluster_event(hub, "hub", instances)
    assert hub.called("PUT", r"^/v1/capacity/clamp") == 0
    world.stack_status("UPDATE_IN_PROGRESS")
    drive(world.storage_event(_update(world, hub, instances, formed, capacity_tb=250)))
    assert hub.state == "ACTIVE", "complete only once the new quorum formed"
    assert hub.capacity_clamp == 250 * TB // PSTORE_BYTES * PSTORE_BYTES
    assert hub.called("PUT", r"^/v1/capacity/clamp") == 1
