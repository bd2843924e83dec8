"""Request paths of the CNQ provisioning handler that the formation and portal tests never take: request and
resource types CloudFormation does not send, a guard's Delete, nodes that belong to two clusters, an admin
password the cluster refuses, and a hub that refuses the plain delete of its portal record.

Same world as the other CNQ tests: moto for Secrets Manager, EC2 and CloudFormation, the Qumulo contract fake
reached through the real qumulo-api SDK, `drive` playing the provider framework.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from hubspoke.constructs.cnq.provisioning import QUERY_INTERVAL
from hubspoke.constructs.cnq.runtime.provisioner import is_complete, on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError
from tests.constructs.cnq.conftest import CONFIG, HUB_FLOATING, ROOMY, VirtualClock, World, drive, mutations
from tests.constructs.cnq.test_cnq_shape import guard, launch
from tests.constructs.cnq.test_cnq_shape import subnets as subnets  # the fixture, shared
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")


def test_a_resource_type_the_handler_does_not_know_is_refused_by_name(world: World) -> None:
    event = {"RequestType": "Create", "ResourceType": "Custom::CnqSomethingElse", "LogicalResourceId": "X",
             "ResourceProperties": {}, "StackId": world.stack_id}  # fmt: skip
    with pytest.raises(ProvisioningError, match=r"^Custom::CnqSomethingElse Create: unknown resource type"):
        on_event(event, ROOMY)


@pytest.mark.parametrize("request_type", ["Replace", "create", ""])
def test_a_request_type_cloudformation_never_sends_changes_nothing(
    world: World, hub: FakeQumulo, request_type: str
) -> None:
    """CloudFormation User Guide, "Custom resource request objects": RequestType is Create, Update or Delete.
    Anything else must not be taken for a Create: it would form a cluster from whatever nodes it names."""
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), request=request_type)
    with pytest.raises(ProvisioningError, match="unknown request type"):
        on_event(event, ROOMY)
    assert not hub.calls, "nothing was sent to the cluster"


def test_deleting_the_node_shape_guard_never_refuses(world: World, subnets: tuple[str, str]) -> None:
    """On a stack delete or a rollback the guard goes away whatever the nodes look like: refusing would leave
    the stack stuck in DELETE_FAILED. An Update with the same properties is refused (test_cnq_shape)."""
    launch(subnets[0])
    changed = guard(subnets[0], request="Delete", image="ami-0123456789abcdef0", itype="i7i.4xlarge")
    assert drive(changed)["PhysicalResourceId"] == "cnq-nodes-dev-hub"
    with pytest.raises(ProvisioningError, match="would replace or stop every node at once"):
        drive(guard(subnets[0], request="Update", image="ami-0123456789abcdef0"))


def test_nodes_of_two_clusters_are_refused_before_anything_changes(world: World, hub: FakeQumulo) -> None:
    """A stray node of another cluster (its node_state names another cluster_id) must not be enlisted, and
    nothing may be sent to either cluster."""
    instances = world.instances(4, "dev-hub")
    drive(world.cluster_event(hub, "hub", instances))
    other = FakeQumulo(name="other", first_node=11)
    other.port = hub.port  # the same REST port on other addresses, as two clusters in one VPC would have
    with other:
        other.password = "Other-Passw0rd!"  # formed from its own four nodes
        mixed = [*hub.node_ips[:3], other.node_ips[0]]
        event = world.cluster_event(hub, "hub", instances, request="Update", NodeIps=mixed)
        before_hub, before_other = len(mutations(hub)), len(mutations(other))
        with pytest.raises(ProvisioningError, match=r"nodes belong to different clusters"):
            drive(event)
        assert mutations(hub)[before_hub:] == [] and mutations(other)[before_other:] == []
        assert hub.cluster_id != other.cluster_id and hub.members == hub.node_ips


def test_an_admin_password_the_cluster_refuses_fails_at_once_naming_the_secret(
    world: World, hub: FakeQumulo
) -> None:
    """Changed on the cluster but not in Secrets Manager (docs/runbooks/portal.md rotates it with qq): the
    cluster answers 401, which waiting does not fix, so the first poll fails and says which secret to update."""
    instances = world.instances(4, "dev-hub")
    drive(world.cluster_event(hub, "hub", instances))
    boto3.client("secretsmanager", region_name=CONFIG.hub.region).put_secret_value(
        SecretId=world.arns["hub"], SecretString="Not-The-Clusters-0ne"
    )
    event = world.cluster_event(hub, "hub", instances, request="Update", floating=HUB_FLOATING)
    event["OldResourceProperties"] = world.cluster_event(hub, "hub", instances)["ResourceProperties"]
    merged = {**event, **on_event(event, ROOMY)}
    logins = hub.called("POST", r"^/v1/session/login")
    with pytest.raises(
        ProvisioningError, match=r"rejected the admin password from Secrets Manager \(Qumulo 401 "
    ):
        is_complete(merged, ROOMY)
    assert hub.called("POST", r"^/v1/session/login") == logins + 1, "one try: a 401 is final"
    assert not hub.frontend_networks, "nothing changed on the cluster"


def test_a_hub_that_refuses_the_plain_delete_of_its_record_gets_the_forced_one(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, portal: dict[str, Any], clock: VirtualClock | None
) -> None:
    """The spoke side is gone first, so the hub's record has nothing left to sync: forcing its delete loses
    nothing (qq portal_delete_hub --force: "Data under the hub portal root directory is not affected"). The
    hub's refusal of the plain delete is injected (ASSUMED when Qumulo answers so: a peer it cannot reach).
    The spoke's delete patience passes on the virtual clock between polls (the framework's interval,
    QUERY_INTERVAL), on the real one in the thorough tier's twin."""

    def poll() -> dict[str, object]:
        answer = is_complete(merged, ROOMY)
        if clock:
            clock.sleep(QUERY_INTERVAL.to_seconds())
        return answer

    spoke.stall_delete_without_hub = True  # the reading in which the spoke's delete needs the force
    hub_files = dict(hub.files)
    [hub_id] = list(hub.hubs)
    hub.down()  # the spoke's side is removed while the hub is away (forced: a read-only cache)
    event = formed.portal_event(hub, spoke, "Delete")
    merged = {**event, **on_event(event, ROOMY)}
    while not any("force=true" in p for _, p in spoke.calls):
        assert poll() == {"IsComplete": False}
    assert hub.hubs, "the hub's record survives while the hub is away"
    hub.up()
    hub.fail("DELETE", rf"^/v2/portal/hubs/{hub_id}$", status=503, error_class="portal_peer_unreachable_error",
             description="Unable to connect to the spoke cluster")  # fmt: skip
    for _ in range(10):
        if poll()["IsComplete"]:
            break
    deletes = [p for m, p in hub.calls if m == "DELETE" and p.startswith(f"/v2/portal/hubs/{hub_id}")]
    assert deletes == [f"/v2/portal/hubs/{hub_id}", f"/v2/portal/hubs/{hub_id}?force=true"]
    assert not hub.hubs and hub.files == hub_files, "the record is gone, the hub's data untouched"
