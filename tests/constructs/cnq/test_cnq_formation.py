"""Cluster creation while Qumulo switches modes, a removed node on rollback, and the overall wait budget.

Against the contract fake, through the qumulo-api SDK. The SDK's own create command waits through
"disconnects and errors as the API switches from unconfigured to configured mode"
(qumulo/commands/cluster.py, wait_for_first_quorum_following_cluster_create); Qumulo's provisioner gives
the create 300 s (qumulo-terraform-gcp @ a30b449c, provision.py qq_command timeout=300).
"""

from __future__ import annotations

import re
import time

import boto3
import pytest
from qumulo.rest_client import RestClient

from hubspoke.constructs.cnq.runtime import session
from hubspoke.constructs.cnq.runtime.provisioner import is_complete, on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError, ProvisioningTimeout
from hubspoke.names import CNQ_CREATE_SENT_TAG
from tests.constructs.cnq.conftest import ROOMY, World, drive
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
CREATE = r"^/v5/cluster/object-backed/create"


@pytest.mark.parametrize("switch_reads", [1, 12])
def test_nodes_still_unconfigured_after_the_202_are_waited_for_not_sent_the_create_again(
    world: World, hub: FakeQumulo, switch_reads: int
) -> None:
    """The polls after the 202 still see UNCONFIGURED nodes, for as long as they switch modes; Qumulo's
    provisioner sends the create once and then waits for ACTIVE (qumulo-terraform-gcp @ a30b449c,
    provision.py create_new_cluster), and so does the handler: the first node's instance carries the record."""
    hub.api_switch_reads = switch_reads
    instances = world.instances(4, "dev-hub")
    drive(world.cluster_event(hub, "hub", instances))
    assert hub.state == "ACTIVE" and len(hub.create_requests) == 1
    assert hub.called("POST", CREATE) == 1, "the create is sent once"
    tags = boto3.client("ec2").describe_tags(Filters=[{"Name": "resource-id", "Values": [instances[0]]}])
    assert CNQ_CREATE_SENT_TAG in {t["Key"] for t in tags["Tags"]}


def test_a_create_whose_answer_is_lost_is_waited_for(world: World, hub: FakeQumulo) -> None:
    hub.drop_reply("POST", CREATE)
    drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub")))
    assert hub.state == "ACTIVE" and len(hub.create_requests) == 1
    assert hub.called("POST", CREATE) == 1, "a create that may have landed is not sent again"


def test_a_create_slower_than_an_ordinary_call_is_waited_for(
    world: World, hub: FakeQumulo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ordinary calls are cut short (here at 1 s); the create is not, up to Qumulo's own 300 s."""
    monkeypatch.setattr(session, "MAX_REQUEST_SECONDS", 1.0)
    hub.slow(1.5, "POST", CREATE, times=1)
    drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub")))
    assert hub.state == "ACTIVE" and len(hub.create_requests) == 1


def test_a_refused_create_is_final_with_qumulos_text(world: World, hub: FakeQumulo) -> None:
    hub.fail("POST", CREATE, status=400, error_class="api_validation_error", description="fake: bad name")
    with pytest.raises(ProvisioningError, match="create: Qumulo 400 api_validation_error: fake: bad name"):
        drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub")))


def test_a_removed_node_answers_removed_with_its_cluster_id(
    world: World, hub: FakeQumulo, five_node_hub: list[str]
) -> None:
    """REST guide, /v1/node/state: REMOVED = 'Configured node that has been removed from its cluster';
    cluster_id is '' only 'if the node is unconfigured'."""
    instances = five_node_hub
    drive(world.cluster_event(hub, "hub", instances[:4], request="Update"))
    answer = RestClient(hub.node_ips[4], hub.port).node_state.get_node_state()
    assert dict(answer) == {"node_id": 5, "state": "REMOVED", "cluster_id": hub.cluster_id}


def test_rolling_back_a_node_removal_fails_at_once_saying_the_node_must_be_rebuilt(
    world: World, hub: FakeQumulo, five_node_hub: list[str]
) -> None:
    instances = five_node_hub
    five = world.cluster_event(hub, "hub", instances)
    # The update removes node 5, then a later step is refused: CloudFormation rolls back to 5 nodes.
    hub.fail("POST", r"^/v3/nfs/exports/", status=400, error_class="nfs_export_quota_error")
    update = world.cluster_event(hub, "hub", instances[:4], request="Update", exports=("/dataset",))
    update["OldResourceProperties"] = five["ResourceProperties"]
    with pytest.raises(ProvisioningError, match="nfs_export_quota_error"):
        drive(update)
    assert hub.members == hub.node_ips[:4]
    rollback = world.cluster_event(hub, "hub", instances, request="Update")
    rollback["OldResourceProperties"] = update["ResourceProperties"]
    with pytest.raises(ProvisioningError) as raised:
        drive(rollback, polls=3)
    assert not isinstance(raised.value, ProvisioningTimeout), "refused at once, not waited on"
    assert f"{hub.node_ips[4]} ({instances[4]})" in str(raised.value)
    assert "removed from the cluster" in str(raised.value) and "rebuilt" in str(raised.value)


def test_no_poll_starts_once_the_budget_is_spent(world: World, hub: FakeQumulo) -> None:
    """WaitSeconds less the 60-s reserve is the budget for every poll together."""
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), WaitSeconds="62")
    merged = {**event, **on_event(event, ROOMY), "StartedAt": str(time.time() - 3)}
    before = len(hub.calls)
    with pytest.raises(ProvisioningTimeout, match=r"gave up after 3 s \(budget 2 s\)"):
        is_complete(merged, ROOMY)
    assert len(hub.calls) == before


def test_a_poll_ends_when_the_budget_does(world: World, hub: FakeQumulo) -> None:
    """With half a second of budget left, a node that takes 3 s to answer is not waited for: the poll gives
    up at the budget (and says on what), not at the Lambda's own deadline."""
    hub.slow(3.0, "GET", r"^/v1/node/state")
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), WaitSeconds="62")
    merged = {**event, **on_event(event, ROOMY), "StartedAt": str(time.time() - 1.5)}
    with pytest.raises(
        ProvisioningTimeout,
        match=rf"gave up after \d+ s; last: node {re.escape(hub.node_ips[0])} .* installing",
    ):
        is_complete(merged, ROOMY)
