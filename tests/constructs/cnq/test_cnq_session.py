"""The provisioner's time budgets, error text and logins (runtime/session.py), against the qumulo-api SDK's own
RestClient and RequestError and the Qumulo contract fake; the clock is stopped, so every wait reads exactly.

What the SDK fixes: RestClient(address, port, timeout=...) keeps them as host, port and timeout (qumulo-api,
qumulo/rest_client.py RestClient.__init__), the timeout in whole seconds handed to socket.settimeout
(qumulo/lib/request.py RealConnectionFactory, HTTPSConnectionWithSocketOptions), where 0 means non-blocking
(Python docs, socket.settimeout); a RequestError carries status_code, error_class and description
(qumulo/lib/request.py RequestError.__init__).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from qumulo.lib.request import RequestError

from hubspoke.constructs.cnq.runtime import session
from hubspoke.constructs.cnq.runtime.session import (
    Deadline,
    ProvisioningError,
    ProvisioningTimeout,
    anonymous_client,
    describe,
    login,
    wait_until,
)
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
PASSWORD = "Admin-Passw0rd!z"


class StoppedClock:
    """session's clock, stopped: only its own sleeps move it, and each is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> StoppedClock:
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "1")
    stopped = StoppedClock()
    monkeypatch.setattr(session, "time", stopped)
    return stopped


def answer(status: int, error_class: str, description: str) -> RequestError:
    """A Qumulo error reply as the SDK raises it (its JSON body's error_class and description)."""
    return RequestError(status, "reason", {"error_class": error_class, "description": description})


def probe_of(*steps: object, limit: int = 20) -> Callable[[], object]:
    """A probe that raises or returns each step in turn (the last one again and again), at most `limit` calls."""
    calls = iter(range(limit))
    items = list(steps)

    def probe() -> object:
        n = next(calls, None)
        if n is None:
            raise AssertionError(f"probed more than {limit} times")
        step = items[min(n, len(items) - 1)]
        if isinstance(step, BaseException):
            raise step
        return step

    return probe


# ---------------------------------------------------------------- deadlines
def test_a_deadline_counts_down_and_never_below_zero(clock: StoppedClock) -> None:
    assert Deadline.after(30).remaining() == 30
    assert Deadline.after(-5).remaining() == 0, "a budget already spent leaves nothing, not a second"
    deadline = Deadline.after(30)
    clock.now += 45
    assert deadline.remaining() == 0


@pytest.mark.parametrize(("budget", "sooner", "left"), [(100, 60, 60), (30, 60, 30), (100, -5, 0)])
def test_sooner_is_whichever_deadline_comes_first(
    clock: StoppedClock, budget: float, sooner: float, left: float
) -> None:
    assert Deadline.after(budget).sooner(sooner).remaining() == left


@pytest.mark.parametrize(
    ("left", "cap", "timeout"),
    [
        (300, None, 10),  # one request never blocks longer than 10 s (session's promise)
        (300, 120, 120),  # unless the call is known to take longer
        (45, 120, 45),
        (2.7, None, 2),  # whole seconds, rounded down: the request ends by the deadline
        (0.4, None, 1),  # never 0, which the socket would take as non-blocking
        (0, None, 1),
    ],
)
def test_a_request_timeout_is_whole_seconds_within_the_deadline(
    clock: StoppedClock, left: float, cap: float | None, timeout: int
) -> None:
    assert Deadline.after(left).request_timeout(cap) == timeout


def test_an_anonymous_client_talks_to_the_address_and_port_within_the_budget(clock: StoppedClock) -> None:
    client = anonymous_client("10.10.64.11", 8000, Deadline.after(300), cap=60)
    assert (client.host, client.port, client.timeout) == ("10.10.64.11", 8000, 60)
    assert anonymous_client("10.10.64.12", 8000, Deadline.after(300)).timeout == 10


# ---------------------------------------------------------------- error text
@pytest.mark.parametrize(
    ("error", "text"),
    [
        (
            answer(404, "fs_no_such_entry_error", "Path /data does not exist"),
            "Qumulo 404 fs_no_such_entry_error: Path /data does not exist",
        ),
        (ConnectionRefusedError(111, "Connection refused"), "[Errno 111] Connection refused"),
        (TimeoutError(), "TimeoutError"),
        (OSError("the first line\nand a second"), "the first line"),
        (OSError("  "), "OSError"),
        (OSError("x" * 400), "x" * 300),
    ],
)
def test_describe_gives_qumulos_own_text_or_the_first_line_of_the_socket_error(
    error: BaseException, text: str
) -> None:
    assert describe(error) == text


# ---------------------------------------------------------------- waiting
def test_a_4xx_answer_is_final_at_once(clock: StoppedClock) -> None:
    probe = probe_of(answer(404, "fs_no_such_entry_error", "Path /data does not exist"), "late")
    with pytest.raises(ProvisioningError) as raised:
        wait_until(Deadline.after(30), "reading /data", probe)
    assert str(raised.value) == "reading /data: Qumulo 404 fs_no_such_entry_error: Path /data does not exist"
    assert not isinstance(raised.value, ProvisioningTimeout) and clock.slept == []


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_answer_or_a_refused_connection_is_waited_out(clock: StoppedClock, status: int) -> None:
    """A quorum re-forming answers 5xx (Qumulo/docs _config.yml, gns.quorumBounce); a node restarting refuses."""
    busy = answer(status, "quorum_not_formed_error", "no quorum")
    probe = probe_of(busy, ConnectionRefusedError(111, "Connection refused"), None, [])
    assert wait_until(Deadline.after(30), "quorum", probe) == [], "anything but None is an answer"
    assert clock.slept == [1, 1, 1]


@pytest.mark.parametrize(
    ("step", "last"),
    [
        (None, "not ready"),
        (ConnectionRefusedError(111, "Connection refused"), "[Errno 111] Connection refused"),
        (
            answer(503, "quorum_not_formed_error", "no quorum"),
            "Qumulo 503 quorum_not_formed_error: no quorum",
        ),
    ],
)
def test_a_wait_gives_up_at_its_deadline_naming_what_and_the_last_answer(
    clock: StoppedClock, step: object, last: str
) -> None:
    with pytest.raises(ProvisioningTimeout) as raised:
        wait_until(Deadline.after(3), "quorum of dev-hub", probe_of(step))
    assert str(raised.value) == f"quorum of dev-hub: gave up after 3 s; last answer: {last}"
    assert clock.slept == [1, 1, 1]


def test_the_last_sleep_ends_at_the_deadline_and_the_probe_runs_once_more(clock: StoppedClock) -> None:
    assert wait_until(Deadline.after(1.5), "quorum", probe_of(None, None, "ACTIVE")) == "ACTIVE"
    assert clock.slept == [1, 0.5]


def test_polls_are_hubspoke_poll_seconds_apart_and_5_s_without_it(
    clock: StoppedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "0.25")
    wait_until(Deadline.after(30), "quorum", probe_of(None, None, "ACTIVE"))
    assert clock.slept == [0.25, 0.25]
    monkeypatch.delenv("HUBSPOKE_POLL_SECONDS")
    with pytest.raises(ProvisioningTimeout):
        wait_until(Deadline.after(12), "quorum", probe_of(None))
    assert clock.slept[2:] == [5, 5, 2]


# ---------------------------------------------------------------- login
@pytest.fixture
def cluster() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="hub") as fake:
        fake.password = PASSWORD
        yield fake


def test_login_takes_the_first_address_that_answers(clock: StoppedClock, cluster: FakeQumulo) -> None:
    client, address = login(cluster.node_ips, cluster.port, PASSWORD, Deadline.after(30), what="dev-hub")
    assert address == cluster.node_ips[0] and clock.slept == []
    assert client.object_storage.get_uris() == [], "the client is logged in (the route needs a session)"


@pytest.mark.parametrize(("down", "answering"), [((0, 1), 2), ((0, 2), 1)])
def test_login_tries_the_addresses_in_their_order(
    clock: StoppedClock, cluster: FakeQumulo, down: tuple[int, ...], answering: int
) -> None:
    """Floating IPs move between nodes: each address in turn, the next one after each refusal."""
    for i in down:
        cluster.down_node(cluster.node_ips[i])
    _, address = login(cluster.node_ips, cluster.port, PASSWORD, Deadline.after(30), what="dev-hub")
    assert address == cluster.node_ips[answering]
    assert clock.slept == [1] * answering


def test_login_gives_up_naming_the_port_and_every_address(clock: StoppedClock, cluster: FakeQumulo) -> None:
    cluster.down()
    addresses = cluster.node_ips[:2]
    with pytest.raises(ProvisioningTimeout) as raised:
        login(addresses, cluster.port, PASSWORD, Deadline.after(2), what="dev-hub")
    assert str(raised.value).startswith(
        f"dev-hub: REST API on port {cluster.port} of {addresses[0]}, {addresses[1]}: gave up after 2 s"
    )


def test_a_refused_password_fails_at_once_naming_the_address_and_the_fix(
    clock: StoppedClock, cluster: FakeQumulo
) -> None:
    with pytest.raises(ProvisioningError) as raised:
        login(cluster.node_ips, cluster.port, "Not-The-Clusters-0ne", Deadline.after(30), what="dev-hub")
    text = str(raised.value)
    assert text.startswith(f"dev-hub: the cluster at {cluster.node_ips[0]} rejected the admin password")
    assert "(Qumulo 401 " in text and "put the new one in the secret" in text
    assert cluster.called("POST", r"^/v1/session/login") == 1 and clock.slept == []


def test_no_address_is_refused_by_name(clock: StoppedClock) -> None:
    with pytest.raises(ProvisioningError, match=r"^dev-hub: no address to reach the REST API on$"):
        login([], 8000, PASSWORD, Deadline.after(30), what="dev-hub")
