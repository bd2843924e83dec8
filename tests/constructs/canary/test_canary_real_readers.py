"""The canary with its real secret loader and portal reader (the handler tests inject stand-ins for both),
against the CNQ world: the spoke's admin secret in moto's Secrets Manager, in the shape the Storage stack
makes it (GenerateSecretString without a template: the secret string is the bare password, AWS::SecretsManager
::Secret), and a portal formed by the provisioning handler between two Qumulo contract fakes.

The oracle is the alarm that consumes the metric: config/dev.yaml's synthesized `portal-probes-not-active` alarm
(its threshold and comparison read from the template), not the canary's own constants.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from hubspoke import canary_metrics
from hubspoke.constructs.canary.runtime import handler
from hubspoke.constructs.canary.runtime.portal import read_portal_status
from tests.conftest import Templates, properties
from tests.constructs.cnq.conftest import HUB_FLOATING, SPOKE, SPOKE_PASSWORD, World, drive
from tests.constructs.cnq.conftest import formed as formed  # the CNQ world's fixtures, shared
from tests.constructs.cnq.conftest import hub as hub
from tests.constructs.cnq.conftest import spoke as spoke
from tests.constructs.cnq.conftest import world as world
from tests.fakes.cloudwatch_alarm import evaluate_every_minute
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")


def portal_alarm_fires(templates: Templates, line: dict[str, Any]) -> bool:
    """Whether dev's portal alarm pages after 10 minutes of records like this canary line, judged as CloudWatch
    evaluates the templated alarm (tests/fakes/cloudwatch_alarm.py), ranges 4 to 10 periods."""
    [alarm] = [
        a
        for _, a in properties(templates[f"ops-{SPOKE.region}"], "AWS::CloudWatch::Alarm")
        if a["AlarmName"].endswith(
            "-portal-probes-not-active"
        )  # the input of the portal-not-active-page page
    ]
    records = {
        name: {m: [float(line[name])] for m in range(10)}
        for name in (canary_metrics.PORTAL_STATUS, canary_metrics.PORTAL_UNREADABLE)
    }
    ends = {
        evaluate_every_minute(alarm, records, minutes=range(10), evaluation_range=span)[-1]
        for span in (4, 5, 10)
    }
    [end_state] = ends
    return end_state == "ALARM"


@pytest.fixture
def canary(formed: World, spoke: FakeQumulo, monkeypatch: pytest.MonkeyPatch) -> Any:
    """One canary round as Lambda runs it in the spoke Region, against the formed clusters: the real loader and
    reader, nothing injected."""
    # Lambda sets AWS_REGION and AWS_DEFAULT_REGION to the function's Region (Lambda developer guide,
    # "Defined runtime environment variables"): the spoke's, where its admin secret lives.
    monkeypatch.setenv("AWS_DEFAULT_REGION", SPOKE.region)
    monkeypatch.setattr(handler, "_credentials_cache", {})
    # The hub probes are not what these tests read: HUB_FLOATING answers nowhere here, so each round waited the
    # whole connect timeout; 0.05 s (not 0.2) keeps them quick.
    env = {
        "HUBSPOKE_ENVIRONMENT": "dev", "SPOKE_REGION": SPOKE.region,
        "HUB_ADDRESSES": ",".join(HUB_FLOATING), "HUB_PORTS": "2049,3713", "CONNECT_TIMEOUT_SECONDS": "0.05",
        "SPOKE_REST_ADDRESS": spoke.node_ips[0], "SPOKE_REST_PORT": str(spoke.port),
        "ADMIN_SECRET_ARN": formed.arns["spoke"], "REST_TIMEOUT_SECONDS": "5",
    }  # fmt: skip

    def round_(**overrides: str) -> dict[str, Any]:
        """The round's portal record. The canary logs two EMF lines, the hub probe's first and then the
        portal's, so a slow secret or REST read cannot delay what the hub alarms read (issue 42 item 1,
        commit b58cdba; the handler's docstring: "EMF lines on stdout (the hub's first)")."""
        lines: list[str] = []
        handler.run({}, env | overrides, emit=lines.append)
        probe, portal = lines
        for line in lines:
            assert SPOKE_PASSWORD not in line, "the password never reaches the log"
        assert canary_metrics.HUB_REACHABLE in json.loads(probe), "the probe record comes first"
        return dict(json.loads(portal))

    return round_


def test_an_active_portal_is_read_with_the_clusters_bare_password_secret(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, canary: Any, dev_templates: Templates
) -> None:
    drive(formed.portal_event(hub, spoke))
    line = canary()
    assert "status ACTIVE" in line["portal_detail"], line["portal_detail"]
    assert not portal_alarm_fires(dev_templates, line)


def test_a_portal_cut_from_its_hub_makes_the_alarm_fire(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, canary: Any, dev_templates: Templates
) -> None:
    drive(formed.portal_event(hub, spoke))
    hub.down()
    line = canary()
    assert "status ACTIVE" not in line["portal_detail"], line["portal_detail"]
    assert portal_alarm_fires(dev_templates, line)


def test_a_password_the_cluster_refuses_is_published_as_unknown_with_qumulos_answer(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, canary: Any
) -> None:
    drive(formed.portal_event(hub, spoke))
    boto3.client("secretsmanager", region_name=SPOKE.region).put_secret_value(
        SecretId=formed.arns["spoke"], SecretString="Rotated-Elsewhere-1"
    )
    line = canary()
    assert line[canary_metrics.PORTAL_STATUS] == canary_metrics.PORTAL_STATUS_UNKNOWN
    assert "Error 401" in line["portal_detail"], line["portal_detail"]
    assert line[canary_metrics.PORTAL_UNREADABLE] == 1  # docs/operations.md: 1 = the read failed (REST API)
    # Nothing was read, so nothing is said about the portal's hub hosts either.
    assert canary_metrics.PORTAL_HUB_HOSTS_CURRENT not in line


def test_a_secret_in_another_region_is_not_found_and_says_so(
    formed: World,
    hub: FakeQumulo,
    spoke: FakeQumulo,
    canary: Any,
    monkeypatch: pytest.MonkeyPatch,
    dev_templates: Templates,
) -> None:
    """The loader reads the secret from the function's own Region: a canary deployed elsewhere reports why. The
    portal was never read, so it is published as unreadable (issue 42 review item 5) and the portal page, whose
    portal may well be ACTIVE, does not fire: canary-failing counts it (tests/constructs/test_canary_alarms.py)."""
    drive(formed.portal_event(hub, spoke))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    line = canary()
    assert line[canary_metrics.PORTAL_STATUS] == canary_metrics.PORTAL_STATUS_UNKNOWN
    assert line[canary_metrics.PORTAL_UNREADABLE] == 1
    assert not portal_alarm_fires(dev_templates, line)
    assert (
        line["portal_detail"].startswith("admin secret: ")
        and "ResourceNotFoundException" in line["portal_detail"]
    )


def test_a_portal_on_hub_addresses_the_canary_no_longer_has_publishes_zero(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo, canary: Any
) -> None:
    """The portal keeps the hub hosts it was formed with (GET /v2/portal/spokes/ through qumulo-api: hub_hosts).
    When the hub's floating IPs change, the canary's HUB_ADDRESSES (the hub's current output, which verify's
    "canary inputs" row checks) no longer hold them all: PortalHubHostsCurrent is 0 and the detail names the
    stale ones; with the addresses the portal was formed with it is 1."""
    drive(formed.portal_event(hub, spoke))
    line = canary()
    assert line[canary_metrics.PORTAL_HUB_HOSTS_CURRENT] == 1, line["portal_detail"]
    moved = [HUB_FLOATING[0], "10.10.99.9"]
    line = canary(HUB_ADDRESSES=",".join(moved))
    assert line[canary_metrics.PORTAL_HUB_HOSTS_CURRENT] == 0
    for stale in HUB_FLOATING[1:]:
        assert stale in line["portal_detail"], line["portal_detail"]
    # None of the portal's hosts among them: no portal towards the hub at all, still 0.
    line = canary(HUB_ADDRESSES="10.10.99.8,10.10.99.9")
    assert line[canary_metrics.PORTAL_HUB_HOSTS_CURRENT] == 0
    assert line[canary_metrics.PORTAL_STATUS] == canary_metrics.PORTAL_STATUS_UNKNOWN
    assert "no spoke portal towards the hub" in line["portal_detail"], line["portal_detail"]
    # Read, and no portal towards the hub: a portal problem for the portal page, not the canary's (item 5).
    assert line[canary_metrics.PORTAL_UNREADABLE] == 0


def _spoke_portal(portal_id: int, status: str, *hub_hosts: str) -> Any:
    """One entry of GET /v2/portal/spokes/ in the REST API's JSON, parsed by the SDK's own loader (qumulo-api
    7.10.2.1, rest/portal.py: load_spoke_portal, MultiRootSpokePortal)."""
    from qumulo.rest.portal import load_spoke_portal

    return load_spoke_portal(
        {
            "id": portal_id, "type": "PORTAL_READ_ONLY", "state": "ACCEPTED", "status": status,
            "hub_hosts": [{"address": h, "port": 3713} for h in hub_hosts], "hub_id": portal_id,
            "hub_cluster_uuid": "00000000-0000-0000-0000-00000000000a", "roots": [],
        }
    )  # fmt: skip


@pytest.mark.parametrize(
    "statuses",
    [
        ("ACTIVE", "DEGRADED", "INACTIVE"),
        ("INACTIVE", "ACTIVE", "DEGRADED"),
        ("DEGRADED", "INACTIVE", "ACTIVE"),
    ],
)
def test_of_several_spoke_portals_the_least_connected_is_published(statuses: tuple[str, ...]) -> None:
    """A cluster may host up to 32 spoke portals (Qumulo Core 7.5.0.3 and higher). Their `status` is INACTIVE,
    DEGRADED or ACTIVE, ACTIVE being "fully connected portal ready for use" (Qumulo REST API, GET
    /v2/portal/spokes/): the record is the INACTIVE one's, whatever the order the cluster lists them in."""
    portals = [_spoke_portal(i, status, HUB_FLOATING[0]) for i, status in enumerate(statuses, start=1)]
    reading = _read(portals, hub_hosts=(HUB_FLOATING[0],))
    inactive_id = statuses.index("INACTIVE") + 1
    assert reading.detail.startswith(f"portal {inactive_id}: "), reading.detail
    assert reading.detail.endswith("status INACTIVE") and not reading.unreadable  # every hub host is current
    assert reading.hubs_current is True
    assert reading.value < canary_metrics.PORTAL_STATUS_VALUES["DEGRADED"]


class _Lister:
    """A RestClient stand-in that logs in and lists the given spoke portals (login, portal.v2_list_spoke_portals)."""

    def __init__(self, portals: list[Any]) -> None:
        self.portal = SimpleNamespace(v2_list_spoke_portals=lambda: portals)

    def login(self, username: str, password: str) -> None:
        pass


def _read(portals: list[Any], hub_hosts: tuple[str, ...] = ()) -> Any:
    return read_portal_status(
        address="10.20.0.5", port=8000, username="admin", password="pw", timeout_s=5,
        hub_hosts=hub_hosts, client_factory=lambda *_: _Lister(portals),
    )  # fmt: skip


def test_without_hub_addresses_nothing_is_said_about_the_portals_hub_hosts() -> None:
    """PortalReading.hubs_current is None when not compared: with no hub addresses given there is nothing to
    compare the portals' hub hosts with, whether the cluster lists a portal or none."""
    assert _read([]).hubs_current is None
    # The detail says what the cluster lacks, first thing: no spoke portal (towards the hub).
    assert _read([]).detail.startswith("the spoke cluster has no spoke portal"), _read([]).detail
    assert _read([_spoke_portal(1, "ACTIVE", HUB_FLOATING[0])]).hubs_current is None
    assert _read([], hub_hosts=(HUB_FLOATING[0],)).hubs_current is False
    # Nor does the detail call any hub host stale: there is no HUB_ADDRESSES list to be missing from.
    assert _read([_spoke_portal(1, "ACTIVE", HUB_FLOATING[0])]).detail.endswith("status ACTIVE")


@pytest.mark.parametrize(("seconds", "sdk_seconds"), [(3.0, 3), (0.2, 1)])
def test_the_sdk_client_bounds_its_sockets_in_whole_seconds(seconds: float, sdk_seconds: int) -> None:
    """qumulo-api 7.10.2.1 rest_client.py RestClient.__init__: `timeout` is the connection timeout in seconds,
    kept as `.timeout` and handed to its Connection; None (the default) blocks forever and 0 makes the socket
    non-blocking (Python docs, socket.settimeout), so a sub-second bound is one second."""
    from hubspoke.constructs.canary.runtime.portal import sdk_client

    client = sdk_client("10.20.0.5", 8000, seconds)
    assert client.conninfo.timeout == sdk_seconds
    assert (client.conninfo.host, client.conninfo.port) == ("10.20.0.5", 8000)


def test_a_status_the_canary_does_not_know_is_not_counted_as_connected() -> None:
    """Qumulo documents INACTIVE, DEGRADED and ACTIVE (GET /v2/portal/spokes/); a status a later release adds is
    published below DEGRADED, never as a connected portal, and the detail names it."""
    reading = _read([_spoke_portal(1, "SOMETHING_NEW", HUB_FLOATING[0])])
    assert reading.value < canary_metrics.PORTAL_STATUS_VALUES["DEGRADED"]
    assert "status SOMETHING_NEW" in reading.detail


def test_of_equally_disconnected_portals_the_first_listed_is_named() -> None:
    """Two INACTIVE portals (GET /v2/portal/spokes/ lists both): the detail names the first the cluster lists, so a
    tie does not make the named portal change with each later entry."""
    portals = [_spoke_portal(i, "INACTIVE", HUB_FLOATING[0]) for i in (1, 2)]
    reading = _read(portals, hub_hosts=(HUB_FLOATING[0],))
    assert reading.detail.startswith("portal 1: "), reading.detail


def test_the_stale_hub_hosts_are_listed_one_by_one_for_the_reader() -> None:
    """A portal formed towards three hub hosts (hub_hosts, GET /v2/portal/spokes/) of which HUB_ADDRESSES holds one:
    the detail lists the two others as addresses a reader can copy, comma-separated."""
    portal = _spoke_portal(1, "ACTIVE", *HUB_FLOATING[:3])
    reading = _read([portal], hub_hosts=(HUB_FLOATING[0],))
    assert reading.hubs_current is False
    assert reading.detail.endswith(
        f"hub hosts not among HUB_ADDRESSES: {HUB_FLOATING[1]}, {HUB_FLOATING[2]}"
    ), reading.detail


class _Refusing:
    """A RestClient stand-in whose login fails with the given exception."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def login(self, username: str, password: str) -> None:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        # An exception without text (e.g. a reset connection): its class is what the reader can search for.
        (ConnectionResetError(), "ConnectionResetError"),
        # A multi-line error (a server's HTML page, a traceback): its first line only, the log stays one line.
        (RuntimeError("Error 503: Service Unavailable\n<html>busy</html>"), "Error 503: Service Unavailable"),
        # A long one-line message is cut to 300 characters (ASSUMED in portal.py: enough for Qumulo's error
        # class and text, short enough for a log line an operator reads).
        (RuntimeError("E" * 1000), "E" * 300),
    ],
)
def test_a_failed_rest_read_says_why_in_one_line(exc: Exception, said: str) -> None:
    reading = read_portal_status(
        address="10.20.0.5", port=8000, username="admin", password="pw", timeout_s=5,
        client_factory=lambda *_: _Refusing(exc),
    )  # fmt: skip
    assert reading.detail == f"spoke REST API 10.20.0.5:8000: {said}"
    assert reading.unreadable is True
    assert reading.value == canary_metrics.PORTAL_STATUS_UNKNOWN
