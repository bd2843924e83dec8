"""The provisioning handler's request contract (runtime/provisioner.py) as CloudFormation and the CDK Provider
framework define it, in the CNQ world (moto, the Qumulo contract fake through the real SDK).

CloudFormation's side (User Guide, "Custom resource request objects" and "Custom resource response objects"): a
request carries RequestType Create, Update or Delete, its ResourceProperties and, after a Create, the
PhysicalResourceId the Create answered; an answer that changes that ID on an Update is a replacement, after which
CloudFormation sends a Delete for the old ID, so an Update or Delete must answer with the ID it was sent. The
framework's side (aws-cdk-lib custom_resources, "Asynchronous Providers: isComplete"): is_complete receives the
request merged with on_event's answer, at every poll.
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from hubspoke.constructs.cnq.runtime import provisioner
from hubspoke.constructs.cnq.runtime.provisioner import is_complete, on_event
from hubspoke.constructs.cnq.runtime.session import ProvisioningError, ProvisioningTimeout
from tests.constructs.cnq.conftest import (
    CONFIG,
    ROOMY,
    TIGHT,
    VIRTUAL_RETRY_SECONDS,
    Context,
    VirtualClock,
    World,
    drive,
)
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")

# Every custom resource type the handler serves (hubspoke/constructs/cnq; its docstring lists them).
KINDS = (
    "Custom::CnqNodeShape",
    "Custom::CnqCluster",
    "Custom::CnqFloatingIps",
    "Custom::CnqPersistentStorage",
    "Custom::CnqNodeProtection",
    "Custom::CnqIdentity",
    "Custom::CnqPortal",
)
PORTAL_KEYS = ("SpokeRestAddresses", "SpokeSecretArn", "SpokePortalHosts", "HubRestAddresses", "HubSecretArn",
               "HubPortalHosts", "HubRoot", "SpokeRoot", "EvictionFreeThreshold")  # fmt: skip
LOGGER = "hubspoke.constructs.cnq.runtime.provisioner"
IDENTITY_KEYS = ("ClusterName", "RestAddresses", "AdminSecretArn", "IdentitySecretArn", "Role")


def identity_event(
    world: World, fake: FakeQumulo, request: str = "Create", **overrides: Any
) -> dict[str, Any]:
    props = {
        "ClusterName": "dev-hub", "RestAddresses": fake.node_ips, "RestPort": str(fake.port),
        "AdminSecretArn": world.arns["hub"], "IdentitySecretArn": world.arns["hub"], "Role": "hubspoke-loader",
        "Privileges": ["PRIVILEGE_REPLICATION_OBJECT_READ"], "WaitSeconds": "3000", **overrides,
    }  # fmt: skip
    return {"RequestType": request, "ResourceType": "Custom::CnqIdentity", "LogicalResourceId": "Loader",
            "ResourceProperties": props, "StackId": world.stack_id}  # fmt: skip


def protection_event(world: World, request: str = "Create") -> dict[str, Any]:
    props = {
        "ClusterName": "dev-hub",
        "NodeInstanceIds": world.instances(4, "dev-hub"),
        "WaitSeconds": "3000",
    }
    return {"RequestType": request, "ResourceType": "Custom::CnqNodeProtection", "StackId": world.stack_id,
            "LogicalResourceId": "NodeProtection", "ResourceProperties": props}  # fmt: skip


def test_a_delete_answers_with_the_physical_id_it_was_sent(
    world: World, hub: FakeQumulo, spoke: FakeQumulo, caplog: pytest.LogCaptureFixture
) -> None:
    """Another ID would make CloudFormation delete a resource it thinks replaced. The portal's Delete reads
    the hub's ID from the spoke first; an unformed spoke has none."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    for kind in KINDS:
        caplog.clear()
        base = (
            world.portal_event(hub, spoke, "Delete")
            if kind == "Custom::CnqPortal"
            else identity_event(world, hub)
        )
        event = {**base, "RequestType": "Delete", "ResourceType": kind, "PhysicalResourceId": "made-earlier"}
        if kind == "Custom::CnqNodeProtection":
            event["ResourceProperties"] = protection_event(world)["ResourceProperties"]
        assert on_event(event, ROOMY)["PhysicalResourceId"] == "made-earlier", kind
        lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
        assert lines[0] == f"Delete {kind} ({event['LogicalResourceId']})"
        if kind == "Custom::CnqPortal":
            assert lines[1].startswith(
                "spoke REST API unreachable, no portal to remove: spoke: the cluster at "
            )


def test_an_update_answers_with_the_physical_id_it_was_sent(world: World) -> None:
    world.stack_status("UPDATE_IN_PROGRESS")
    event = {**protection_event(world, "Update"), "PhysicalResourceId": "made-by-an-earlier-release"}
    assert on_event(event, ROOMY)["PhysicalResourceId"] == "made-by-an-earlier-release"


def test_a_create_names_its_id_after_the_role_or_the_portal(
    world: World, hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    """Two identities (or portals) of one stack are told apart by their IDs in CloudFormation's events."""
    loader = on_event(identity_event(world, hub), ROOMY)["PhysicalResourceId"]
    prewarm = on_event(identity_event(world, hub, Role="hubspoke-prewarm"), ROOMY)["PhysicalResourceId"]
    assert "hubspoke-loader" in loader and "hubspoke-prewarm" in prewarm
    portal = {**world.portal_event(hub, spoke), "LogicalResourceId": "PortalUsWest2"}
    del portal["PhysicalResourceId"]
    assert on_event(portal, ROOMY)["PhysicalResourceId"].endswith("PortalUsWest2")


def test_a_portal_without_a_property_it_needs_is_refused_naming_it(
    world: World, hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    for missing in PORTAL_KEYS:
        event = world.portal_event(hub, spoke)
        del event["ResourceProperties"][missing]
        with pytest.raises(
            ProvisioningError, match=rf"^Custom::CnqPortal Create: missing resource properties: {missing}$"
        ):
            on_event(event, ROOMY)
    assert not hub.calls and not spoke.calls


def test_an_identity_without_a_property_it_needs_is_refused_naming_it_at_either_step(
    world: World, hub: FakeQumulo
) -> None:
    for missing in IDENTITY_KEYS:
        event = identity_event(world, hub)
        del event["ResourceProperties"][missing]
        expected = rf"^Custom::CnqIdentity Create: missing resource properties: {missing}$"
        with pytest.raises(ProvisioningError, match=expected):
            on_event(event, ROOMY)
        # A poll checks them again: what it is sent is the Provider's merge, not on_event's word.
        with pytest.raises(ProvisioningError, match=expected):
            is_complete({**event, "StartedAt": str(time.time())}, ROOMY)
    assert not hub.calls


def test_a_portal_mode_is_one_of_qumulos_two_and_read_only_when_unset(
    world: World, hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    """Qumulo's portal types are PORTAL_READ_ONLY and PORTAL_READ_WRITE (qumulo-api, qumulo/commands/portal.py);
    hubspoke's default is the read-only cache (docs: a spoke caches the hub's dataset)."""
    for mode in (None, "", "read_only", "read_write"):
        event = world.portal_event(hub, spoke, "Update")
        event["ResourceProperties"].pop("Mode")
        if mode is not None:
            event["ResourceProperties"]["Mode"] = mode
        assert on_event(event, ROOMY)["PhysicalResourceId"] == "cnq-portal-Portal", mode
    event = world.portal_event(hub, spoke, "Update", Mode="cache")
    with pytest.raises(ProvisioningError) as raised:
        on_event(event, ROOMY)
    assert "Mode must be one of ['read_only', 'read_write'], not 'cache'" in str(raised.value)


def test_the_budget_spans_every_poll_from_on_events_start(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """on_event's answer (StartedAt) reaches every poll through the framework's merge; once WaitSeconds less
    the reserve has passed since, no poll starts."""
    clock = VirtualClock().install(monkeypatch)
    event = protection_event(world)
    merged = {**event, **on_event(event, ROOMY)}
    clock.skipped += 3000
    with pytest.raises(ProvisioningTimeout, match=r"^Custom::CnqNodeProtection Create: gave up after 3000 s"):
        is_complete(merged, ROOMY)


def test_an_identity_whose_cluster_does_not_answer_names_the_cluster(
    world: World, hub: FakeQumulo, monkeypatch: pytest.MonkeyPatch
) -> None:
    VirtualClock().install(monkeypatch)
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "5")  # a few refused logins on the virtual clock, not 2,000
    login = json.dumps({"username": "hubspoke-loader", "password": "Loader-Passw0rd!"})
    secrets = boto3.client("secretsmanager", region_name=CONFIG.hub.region)
    event = identity_event(
        world, hub, IdentitySecretArn=secrets.create_secret(Name="loader", SecretString=login)["ARN"]
    )
    merged = {**event, **on_event(event, ROOMY)}
    hub.down()
    with pytest.raises(ProvisioningTimeout, match=r"^Custom::CnqIdentity Create: dev-hub: REST API on port "):
        is_complete(merged, ROOMY)


# ---------------------------------------------------------------- what the log tells an operator


def test_each_request_and_each_poll_that_waits_is_logged_with_what_it_waits_for(
    world: World, hub: FakeQumulo, caplog: pytest.LogCaptureFixture
) -> None:
    """The budget's failure points at 'the previous poll's log line' for what was awaited: that line names the
    resource, the request, the time waited and the last answer."""
    hub.formation_polls = 50
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        merged = {**event, **on_event(event, ROOMY)}
        while is_complete(merged, ROOMY) == {"IsComplete": False} and not hub.create_requests:
            pass
        assert is_complete(merged, ROOMY) == {"IsComplete": False}
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert lines[0] == "Create Custom::CnqCluster (Cluster)"
    waiting = [line for line in lines if line.startswith("Custom::CnqCluster Create: not yet (")]
    assert waiting and all(
        re.fullmatch(r"Custom::CnqCluster Create: not yet \(\d+ s\): \S.*", w) for w in waiting
    )
    assert not any(w.endswith(": None") for w in waiting)


def test_a_portal_whose_hub_is_away_at_delete_leaves_the_qq_command_for_its_record(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, portal: dict[str, Any], caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """qq portal_delete_hub --id (qumulo-api, qumulo/commands/portal.py) removes the hub's record once the hub
    is back (docs/runbooks/portal.md, step 3)."""
    [hub_id] = list(hub.hubs)
    hub.down()
    clock = VirtualClock().install(monkeypatch)
    # A few refused hub logins per poll on the virtual clock, as the `clock` fixture's tests make.
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", str(VIRTUAL_RETRY_SECONDS))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        drive(
            formed.portal_event(hub, spoke, "Delete", DeletePatienceSeconds="600"), context=TIGHT, clock=clock
        )
    [line] = [r.getMessage() for r in caplog.records if "hub unreachable" in r.getMessage()]
    assert f"its portal record {hub_id} stays until `qq portal_delete_hub --id {hub_id}`" in line
    assert "(docs/runbooks/portal.md)" in line and "portal_delete_hub" in _runbook("portal.md")


def test_an_identity_on_a_cluster_that_is_gone_is_deleted_with_a_warning(
    world: World, hub: FakeQumulo, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    VirtualClock().install(monkeypatch)
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "5")
    hub.down()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert drive(identity_event(world, hub, "Delete"))["IsComplete"] is True
    [line] = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert line.startswith("identity not removed (cluster or secret gone?): ")


def _runbook(name: str) -> str:
    return (Path(__file__).resolve().parents[3] / "docs" / "runbooks" / name).read_text()


# ---------------------------------------------------------------- budgets and retries
class WallClock:
    """The provisioner's wall clock (its `time`), reading each of `readings` in turn and then the last one for
    good: a poll's budget checks land exactly where a test puts them."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def time(self) -> float:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


START = 2_000_000_000.0


def test_no_poll_starts_at_the_budgets_very_end(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """WaitSeconds 3000 less the 60-s reserve: a poll at 2940 s finds the budget spent, not one second left."""
    monkeypatch.setattr(provisioner, "time", WallClock(START + 2940))
    event = {**protection_event(world), "StartedAt": str(START)}
    with pytest.raises(ProvisioningTimeout, match=r"gave up after 2940 s \(budget 2940 s\)"):
        is_complete(event, ROOMY)


def test_a_poll_whose_wait_ends_with_the_budget_gives_up_naming_what_it_waited_for(
    world: World, hub: FakeQumulo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poll starts 1 s into a 2-s budget (WaitSeconds 62) and the cluster is still forming when it ends at
    2 s: the request fails there, with that answer, rather than handing the framework a poll past the budget."""
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), WaitSeconds="62")
    merged = {**event, **on_event(event, ROOMY), "StartedAt": str(START)}
    monkeypatch.setattr(provisioner, "time", WallClock(START + 1, START + 2))
    with pytest.raises(
        ProvisioningTimeout, match=r"gave up after 2 s; last: cluster dev-hub: creation requested"
    ):
        is_complete(merged, ROOMY)


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_during_a_poll_is_retried_at_the_next_and_logged_in_qumulos_words(
    world: World, hub: FakeQumulo, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    """Only Qumulo's 4xx answers are final (a quorum re-forming may answer any 5xx)."""
    hub.fail("POST", r"^/v3/nfs/exports/", times=1, status=status, error_class="quorum_not_ready_error",
             description="The cluster is re-forming quorum")  # fmt: skip
    event = world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), exports=("/data",))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        drive(event)
    assert hub.called("POST", r"^/v3/nfs/exports/") == 2
    said = f": Qumulo {status} quorum_not_ready_error: The cluster is re-forming quorum"
    assert any(r.getMessage().endswith(said) for r in caplog.records if "not yet" in r.getMessage())


@pytest.mark.parametrize(("lambda_seconds", "waited"), [(60, 40), (300, 60)])
def test_a_portal_delete_gives_an_unreachable_spoke_a_minute_within_the_lambdas_time(
    world: World, hub: FakeQumulo, spoke: FakeQumulo, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch, lambda_seconds: float, waited: int,
) -> None:  # fmt: skip
    """on_event keeps 20 s of the Lambda's time for the framework to report, and waits for the spoke at most
    60 s of what is left (a quorum bounce is under 30 s: Qumulo/docs _config.yml, gns.quorumBounce)."""
    VirtualClock().install(monkeypatch)
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "5")
    spoke.down()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = on_event(world.portal_event(hub, spoke, "Delete"), Context(lambda_seconds))
    assert result["HubPortalId"] == ""
    [line] = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert re.search(rf"^spoke REST API unreachable, no portal to remove: spoke: REST API on port \d+ of .*: "
                     rf"gave up after {waited} s; last answer: ", line), line  # fmt: skip


def test_a_spoke_that_cannot_say_its_hub_id_is_named_in_the_warning(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, portal: dict[str, Any], caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    VirtualClock().install(monkeypatch)
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "5")
    spoke.fail("GET", r"^/v2/portal/spokes", times=10**6, status=503, error_class="quorum_not_ready_error")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert on_event(formed.portal_event(hub, spoke, "Delete"), ROOMY)["HubPortalId"] == ""
    [line] = [r.getMessage() for r in caplog.records if "no portal to remove" in r.getMessage()]
    assert "no portal to remove: spoke: reading the portal's hub ID: gave up after 40 s" in line


def test_an_aws_error_past_the_handlers_own_checks_is_reported_in_one_line_with_the_request(
    world: World,
) -> None:
    """DescribeStacks of a stack CloudFormation does not know answers ValidationError (botocore cloudformation
    2010-05-15 waiters-2.json, StackExists: a ValidationError error means the stack is not there yet; moto
    answers so): the status reason names the resource, the request and AWS's error, not a traceback."""
    event = {
        **protection_event(world, "Delete"),
        "StackId": "arn:aws:cloudformation:us-east-2:123456789012:stack/gone/1",
    }
    event["PhysicalResourceId"] = "cnq-protection-dev-hub"
    with pytest.raises(ProvisioningError) as raised:
        on_event(event, ROOMY)
    text = str(raised.value)
    assert text.startswith("Custom::CnqNodeProtection Delete: An error occurred (ValidationError)"), text
    assert "\n" not in text
