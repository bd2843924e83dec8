"""The canary handler against loopback listeners: hub up, hub down, half the nodes down, slow connects."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from hubspoke import canary_metrics as metrics
from hubspoke.constructs.canary.runtime import handler as handler_module
from hubspoke.constructs.canary.runtime import probe as probe_module
from hubspoke.constructs.canary.runtime.handler import run, secrets_client
from hubspoke.constructs.canary.runtime.portal import PortalReading
from tests.conftest import Templates, properties

# 127.0.0.0/8 is loopback on Linux: distinct addresses stand in for distinct hub nodes on the same ports.
NODES = ("127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def listeners(addresses: tuple[str, ...], ports: tuple[int, ...], *, backlog: int = 16) -> Iterator[None]:
    """Listening sockets that accept at the kernel level (the backlog), which is all a TCP connect needs."""
    socks = []
    try:
        for address in addresses:
            for port in ports:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((address, port))
                s.listen(backlog)
                socks.append(s)
        yield
    finally:
        for s in socks:
            s.close()


@contextmanager
def full_backlog(address: str, port: int) -> Iterator[None]:
    """A listener whose accept queue is full, so a new SYN is dropped and the connect hangs: a slow hub."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, port))
    s.listen(0)
    fillers = []
    try:
        # Linux keeps backlog+1 completed connections; after that new SYNs go unanswered. Bounded loop.
        for _ in range(8):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex((address, port))
            fillers.append(c)
        yield
    finally:
        for c in fillers:
            c.close()
        s.close()


@pytest.fixture
def ports() -> tuple[int, int]:
    return _free_port(), _free_port()


def _env(ports: tuple[int, ...], **extra: str) -> dict[str, str]:
    return {
        "HUBSPOKE_ENVIRONMENT": "dev",
        "SPOKE_REGION": "us-west-2",
        "HUB_ADDRESSES": ",".join(NODES),
        "HUB_PORTS": ",".join(str(p) for p in ports),
        "CONNECT_TIMEOUT_SECONDS": "0.5",
        **extra,
    }


def _run(env: dict[str, str], **kwargs: object) -> tuple[dict[str, object], dict[str, object]]:
    """The run's result and its EMF lines merged: the probe line first, then the portal's when configured."""
    lines: list[str] = []
    result = run({}, env, emit=lines.append, **kwargs)  # type: ignore[arg-type]
    documents = [json.loads(line) for line in lines]
    assert len(documents) == (2 if env.get("SPOKE_REST_ADDRESS") else 1), lines
    assert metrics.HUB_REACHABLE in documents[0], "the probe result is the first line"
    for document in documents:
        _published(document)
    merged: dict[str, object] = {}
    for document in documents:
        merged.update(document)
    return result, merged


def _published(line: dict[str, object]) -> set[str]:
    directive = line["_aws"]["CloudWatchMetrics"][0]  # type: ignore[index]
    assert directive["Namespace"] == metrics.NAMESPACE
    assert directive["Dimensions"] == [[metrics.DIMENSION_ENVIRONMENT, metrics.DIMENSION_SPOKE]]
    names = {m["Name"] for m in directive["Metrics"]}
    for name in names:
        assert name in line, f"{name} declared in the EMF directive but has no value"
    return names


def test_hub_up_every_node_answers(ports: tuple[int, int]) -> None:
    with listeners(NODES, ports):
        result, line = _run(_env(ports))
    assert result[metrics.HUB_REACHABLE] == 1
    assert result[metrics.NODES_REACHABLE_FRACTION] == 1.0
    assert len(line[metrics.CONNECT_LATENCY]) == len(NODES) * len(ports)  # type: ignore[arg-type]
    assert all(v >= 0 for v in line[metrics.CONNECT_LATENCY])  # type: ignore[union-attr]
    assert result["failed_probes"] == []
    assert line[metrics.DIMENSION_SPOKE] == "us-west-2"
    assert line[metrics.DIMENSION_ENVIRONMENT] == "dev"
    assert metrics.CONNECT_LATENCY in _published(line)


def test_hub_down_nothing_listens(ports: tuple[int, int]) -> None:
    result, line = _run(_env(ports))
    assert result[metrics.HUB_REACHABLE] == 0
    assert result[metrics.NODES_REACHABLE_FRACTION] == 0.0
    assert len(result["failed_probes"]) == len(NODES) * len(ports)  # type: ignore[arg-type]
    # Nothing listens, so the kernel refuses: ECONNREFUSED, whose text (glibc strerror) names the cause.
    assert all(f.endswith(" Connection refused") for f in result["failed_probes"]), result["failed_probes"]  # type: ignore[union-attr]
    # No successful connect, so no latency sample: publishing 0 ms would read as a fast hub.
    assert metrics.CONNECT_LATENCY not in _published(line)
    assert metrics.HUB_REACHABLE in _published(line)
    # The log line says which probes failed, not only the returned result (what an operator reads).
    assert line["failed_probes"] == result["failed_probes"]
    assert line["hub_addresses"] == list(NODES)


@pytest.mark.parametrize(
    ("hub", "up", "fraction"),
    # A third is published to four decimal places: 0.3333, a hundredth of a per cent of the hub's nodes.
    [(NODES, 2, 0.5), (NODES[:3], 1, 0.3333)],
)
def test_some_nodes_down(hub: tuple[str, ...], up: int, fraction: float, ports: tuple[int, int]) -> None:
    with listeners(hub[:up], ports):
        result, _ = _run(_env(ports, HUB_ADDRESSES=",".join(hub)))
    assert result[metrics.HUB_REACHABLE] == 1
    assert result[metrics.NODES_REACHABLE_FRACTION] == fraction
    failed = result["failed_probes"]
    assert all(f.split(":")[0] in hub[up:] for f in failed)  # type: ignore[union-attr]


def test_a_node_with_only_one_port_open_is_not_reachable(ports: tuple[int, int]) -> None:
    nfs, _portal = ports
    with listeners(NODES, (nfs,)):
        result, _ = _run(_env(ports))
    # NFS answers but the portal port does not: the portal cannot fetch misses, so the hub is not usable.
    assert result[metrics.HUB_REACHABLE] == 0
    assert result[metrics.NODES_REACHABLE_FRACTION] == 0.0


def test_slow_connect_is_cut_at_the_timeout_and_counted_unreachable() -> None:
    port = _free_port()
    with full_backlog(NODES[0], port), listeners(NODES[1:], (port,)):
        result, _ = _run(_env((port,), CONNECT_TIMEOUT_SECONDS="0.1"))
    assert result[metrics.NODES_REACHABLE_FRACTION] == 0.75
    failed = result["failed_probes"]
    assert len(failed) == 1 and failed[0].startswith(f"{NODES[0]}:{port}")  # type: ignore[index,union-attr]
    assert failed[0].endswith(" no answer within 0.1 s"), failed  # type: ignore[index] # the setting's bound


def test_connect_timeout_leaves_time_to_publish() -> None:
    from hubspoke.constructs.canary.runtime.handler import RESERVE_MS, _bounded

    # With 4 s left and 3 s reserved, a configured 10 s timeout must shrink to 1 s.
    assert _bounded(10.0, 4000) == pytest.approx((4000 - RESERVE_MS) / 1000)
    assert _bounded(1.0, 60_000) == 1.0


def test_portal_status_is_published_with_the_documented_mapping(ports: tuple[int, int]) -> None:
    seen: dict[str, object] = {}

    def reader(**kwargs: object) -> PortalReading:
        seen.update(kwargs)
        return PortalReading(metrics.PORTAL_STATUS_VALUES["DEGRADED"], "portal 1: degraded")

    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", SPOKE_REST_PORT="18000", ADMIN_SECRET_ARN="arn:x")
    with listeners(NODES, ports):
        result, line = _run(env, portal_reader=reader, credentials=lambda arn: ("admin", "pw"))
    assert line[metrics.PORTAL_STATUS] == 1 and line[metrics.PORTAL_UNREADABLE] == 0
    assert seen["port"] == 18000 and seen["username"] == "admin" and seen["password"] == "pw"
    assert "pw" not in json.dumps(line), "the password never reaches the log"
    assert result["portal_detail"] == "portal 1: degraded"


def test_unreadable_secret_publishes_unknown_not_a_crash(ports: tuple[int, int]) -> None:
    def broken(arn: str) -> tuple[str, str]:
        raise PermissionError("AccessDenied")

    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", SPOKE_REST_PORT="8000", ADMIN_SECRET_ARN="arn:x")
    _, line = _run(env, credentials=broken)
    assert line[metrics.PORTAL_STATUS] == metrics.PORTAL_STATUS_UNKNOWN
    # Its own metric (issue 42 review item 5): canary-failing counts it, the portal page does not.
    assert line[metrics.PORTAL_UNREADABLE] == 1
    assert "AccessDenied" in line["portal_detail"]  # type: ignore[operator]


def test_missing_rest_port_publishes_unknown_with_the_reason(ports: tuple[int, int]) -> None:
    """The construct always sets SPOKE_REST_PORT from hubspoke/ports.py; the runtime keeps no default of its own."""
    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", ADMIN_SECRET_ARN="arn:x")
    _, line = _run(env, credentials=lambda arn: ("admin", "pw"))
    assert line[metrics.PORTAL_STATUS] == metrics.PORTAL_STATUS_UNKNOWN
    assert "SPOKE_REST_PORT is ''" in line["portal_detail"]  # type: ignore[operator] # the value it found: none
    assert line[metrics.PORTAL_UNREADABLE] == 1  # docs/operations.md: 1 = the read failed


@pytest.mark.parametrize("env", [{"HUB_PORTS": "2049"}, {"HUB_ADDRESSES": NODES[0]}])
def test_no_targets_is_a_configuration_error(env: dict[str, str]) -> None:
    """Either setting missing: the error names both settings first, and the fix (a value in each)."""
    with pytest.raises(ValueError, match=r"^HUB_ADDRESSES and HUB_PORTS .*at least one value"):
        run({}, env, emit=lambda _: None)


def test_event_overrides_targets(ports: tuple[int, int]) -> None:
    with listeners(NODES[:1], ports):
        lines: list[str] = []
        # Entries are trimmed and blank ones dropped, as in the comma-separated setting.
        result = run({"hub_addresses": [f" {NODES[0]} ", " "]}, _env(ports), emit=lines.append)
    assert result["hub_addresses"] == [NODES[0]]
    assert result[metrics.NODES_REACHABLE_FRACTION] == 1.0


def test_emf_rejects_a_metric_it_does_not_declare() -> None:
    with pytest.raises(ValueError, match="not a canary metric"):
        metrics.emf_line(environment="e", spoke="s", values={"Bogus": 1}, timestamp_ms=0)


def test_the_probe_result_is_published_before_a_slow_portal_read(ports: tuple[int, int]) -> None:
    """issue 42: a secret or REST read that hangs (a spoke-side NAT or endpoint problem) must not delay or lose the
    hub's record. The reader blocks until the hub line is out, then hangs until the run is over (at most 5 s);
    the portal line then says it did not finish."""
    lines: list[str] = []
    hub_line_out, run_over = threading.Event(), threading.Event()
    saw_hub_line_first: list[bool] = []

    def emit(line: str) -> None:
        lines.append(line)
        hub_line_out.set()

    def slow_reader(**_: object) -> PortalReading:
        saw_hub_line_first.append(hub_line_out.wait(timeout=5))
        run_over.wait(timeout=5)  # longer than the run has left for it
        return PortalReading(metrics.PORTAL_STATUS_VALUES["ACTIVE"], "late")

    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", SPOKE_REST_PORT="8000", ADMIN_SECRET_ARN="arn:x")
    started = time.monotonic()
    with listeners(NODES, ports):
        # 3.2 s left in the invocation: the handler keeps 3 s (RESERVE_MS) to publish, so 0.2 s for the portal.
        try:
            run(
                {},
                env,
                emit=emit,
                remaining_ms=3200,
                portal_reader=slow_reader,
                credentials=lambda arn: ("a", "p"),
            )
        finally:
            run_over.set()
    assert time.monotonic() - started < 2, "the run did not wait for the hung portal read"
    assert saw_hub_line_first == [True]
    hub, portal = (json.loads(line) for line in lines)
    assert hub[metrics.HUB_REACHABLE] == 1
    assert portal[metrics.PORTAL_STATUS] == metrics.PORTAL_STATUS_UNKNOWN
    # A read cut by the time is a failed read (docs/operations.md: PortalUnreadable 1 = secret, REST API, time).
    assert portal[metrics.PORTAL_UNREADABLE] == 1
    # The reader needs which read ran out of time, first: the portal's (not the probes').
    assert portal["portal_detail"].startswith("portal read "), portal["portal_detail"]
    assert "did not finish" in portal["portal_detail"]


def test_the_secret_read_is_bounded_well_inside_the_function_timeout(dev_templates: Templates) -> None:
    """botocore's defaults are 60 s to connect and 60 s to read with 3 attempts (botocore 1.44.18 config.py, Config;
    retries/standard.py), more than the whole function. The client's own bounds, times its attempts, plus the
    standard mode's longest first backoff (1 s for throttling, ExponentialBackoff, and up to 5 s a retry-after
    header adds) must leave room for the two REST calls of the portal read inside the synthesized Timeout."""
    client = secrets_client("us-west-2")
    config = client.meta.config
    attempts = config.retries["total_max_attempts"]
    worst = attempts * (config.connect_timeout + config.read_timeout) + (attempts - 1) * (1 + 5)
    (function,) = [
        p
        for stack, template in dev_templates.items()
        if stack.startswith("ops-")
        for _, p in properties(template, "AWS::Lambda::Function")
        if p.get("Handler") == "runtime.handler.handler"
    ]
    rest_calls = 2 * float(function["Environment"]["Variables"]["REST_TIMEOUT_SECONDS"])
    assert worst + rest_calls < function["Timeout"] - 3, (worst, rest_calls, function["Timeout"])


# The real secret loader, against moto's Secrets Manager (GetSecretValue answers SecretString: botocore's
# secretsmanager 2017-10-17 service-2.json, GetSecretValueResponse), with a clock for its cache.
SECRET_REGION = "us-west-2"


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[float]]]:
    """moto's Secrets Manager in the function's Region (Lambda sets AWS_DEFAULT_REGION: Lambda developer guide,
    "Defined runtime environment variables"), an empty credentials cache, and the monotonic clock it reads."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", SECRET_REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(handler_module, "_credentials_cache", {})
    now = [5000.0]
    monkeypatch.setattr(handler_module, "time", SimpleNamespace(monotonic=lambda: now[0], time=time.time))
    with mock_aws():
        yield boto3.client("secretsmanager", region_name=SECRET_REGION), now


@pytest.mark.parametrize(
    ("secret_string", "expected"),
    [
        # A JSON object names the user (the console's key/value shape: GetSecretValueResponse.SecretString).
        ('{"username": "canary-reader", "password": "pw-1"}', ("canary-reader", "pw-1")),
        # No user named: the cluster's administrator, whom qumulo-api logs in as `admin` after forming a cluster
        # (qumulo-api 7.10.2.1, commands/cluster.py, username='admin').
        ('{"password": "pw-1"}', ("admin", "pw-1")),
        # The Storage stack's shape: GenerateSecretString without a template stores the bare password
        # (AWS::SecretsManager::Secret); it is used verbatim, also when it happens to parse as JSON.
        ("Bare-Password-1", ("admin", "Bare-Password-1")),
        ("12345678", ("admin", "12345678")),
        ('"Quoted-1"', ("admin", '"Quoted-1"')),
    ],
)
def test_the_admin_secret_is_read_in_either_shape(
    secrets: tuple[Any, list[float]], secret_string: str, expected: tuple[str, str]
) -> None:
    client, _ = secrets
    arn = client.create_secret(Name="spoke-admin", SecretString=secret_string)["ARN"]
    assert handler_module._secret_credentials(arn) == expected


def test_a_rotated_password_is_read_again_once_the_cached_one_is_15_minutes_old(
    secrets: tuple[Any, list[float]],
) -> None:
    """The secret is read at most once per cache lifetime and again after it: 15 minutes, the pick-up time the
    handler promises for a changed password (ASSUMED there as CREDENTIALS_TTL_S; this test pins the number)."""
    client, now = secrets
    arn = client.create_secret(Name="spoke-admin", SecretString="Old-Password-1")["ARN"]
    assert handler_module._secret_credentials(arn) == ("admin", "Old-Password-1")
    client.put_secret_value(SecretId=arn, SecretString="New-Password-1")
    now[0] += 15 * 60 - 0.5
    assert handler_module._secret_credentials(arn) == ("admin", "Old-Password-1")
    now[0] += 0.5
    assert handler_module._secret_credentials(arn) == ("admin", "New-Password-1")


def test_no_secret_arn_is_refused_with_the_setting_to_fix(secrets: tuple[Any, list[float]]) -> None:
    with pytest.raises(ValueError, match=r"^ADMIN_SECRET_ARN is not set"):
        handler_module._secret_credentials("")


class LambdaContext:
    """The part of Lambda's context object the canary reads: get_remaining_time_in_millis(), "the number of
    milliseconds left before the execution times out" (Lambda developer guide, "Using the Lambda context object
    to retrieve Python function information")."""

    def __init__(self, remaining_ms: int) -> None:
        self._deadline = time.monotonic() + remaining_ms / 1000

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - time.monotonic()) * 1000)


@pytest.mark.parametrize("event", [None, {}])
def test_the_entry_point_ends_a_slow_hubs_probes_before_lambdas_deadline(
    event: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lambda calls handler(event, context) with the settings in the environment; a console test may send a null
    event. A configured connect timeout longer than the invocation has left is cut so the run ends, and prints its
    EMF line, before the context's deadline."""
    port = _free_port()
    left_ms = 2500
    for name, value in _env((port,), CONNECT_TIMEOUT_SECONDS="3").items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SPOKE_REST_ADDRESS", raising=False)
    with full_backlog(NODES[0], port), listeners(NODES[1:], (port,)):
        started = time.monotonic()
        result = handler_module.handler(event, LambdaContext(left_ms))
        took_s = time.monotonic() - started
    assert took_s < left_ms / 1000, took_s
    [failure] = result["failed_probes"]
    waited_s = float(failure.split("no answer within ")[1].split(" s")[0])
    assert waited_s < left_ms / 1000, failure
    [line] = [json.loads(out) for out in capsys.readouterr().out.splitlines()]
    assert line[metrics.NODES_REACHABLE_FRACTION] == 0.75
    assert result["portal_detail"] == "not configured"


def test_an_event_overrides_the_ports_too(ports: tuple[int, int]) -> None:
    """A console test names its own targets: {"hub_addresses": [...], "ports": [...]} (the handler's docstring)."""
    open_port, closed_port = ports
    with listeners(NODES, (open_port,)):
        result = run({"ports": [open_port]}, _env((open_port, closed_port)), emit=lambda _: None)
    assert result["ports"] == [open_port]
    assert result[metrics.HUB_REACHABLE] == 1


def test_a_canary_without_its_dimension_settings_still_publishes_named_dimensions(
    ports: tuple[int, int],
) -> None:
    """CloudWatch dimension values are 1 to 1024 characters (botocore cloudwatch service-2.json, DimensionValue); a missing
    setting is published as the word `unknown` so the records stay findable and say what is wrong."""
    env = {k: v for k, v in _env(ports).items() if k not in ("SPOKE_REGION", "HUBSPOKE_ENVIRONMENT")}
    lines: list[str] = []
    run({}, env, emit=lines.append)
    [line] = [json.loads(out) for out in lines]
    assert line[metrics.DIMENSION_SPOKE] == "unknown"
    assert line[metrics.DIMENSION_ENVIRONMENT] == "unknown"


def test_a_canary_without_its_secret_setting_says_which_setting(
    secrets: tuple[Any, list[float]], ports: tuple[int, int]
) -> None:
    """No ADMIN_SECRET_ARN: the portal line names the missing setting rather than asking Secrets Manager for none."""
    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", SPOKE_REST_PORT="8000")
    _, line = _run(env)
    assert line[metrics.PORTAL_UNREADABLE] == 1
    assert "ADMIN_SECRET_ARN is not set" in line["portal_detail"], line["portal_detail"]  # type: ignore[operator]


def test_connect_latency_is_published_in_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The EMF unit of ConnectLatency is Milliseconds (CloudWatch MetricDatum Unit): a connect of 0.25 s on the
    monotonic clock is 250."""
    port = _free_port()
    ticks = iter([10.0, 10.25])
    monkeypatch.setattr(probe_module, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    with listeners(NODES[:1], (port,)):
        probe = probe_module.connect(NODES[0], port, timeout_s=1.0)
    assert probe == probe_module.Probe(NODES[0], port, True, pytest.approx(250.0))  # type: ignore[arg-type]


def test_a_sub_millisecond_connect_keeps_its_fraction(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connect inside one VPC can take tens of microseconds: 45.6 us on the clock is 0.046 ms, never 0."""
    port = _free_port()
    ticks = iter([10.0, 10.0000456])
    monkeypatch.setattr(probe_module, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    with listeners(NODES[:1], (port,)):
        probe = probe_module.connect(NODES[0], port, timeout_s=1.0)
    # Kept to the microsecond (three decimals of a millisecond): the clock's finer digits are noise.
    assert probe.latency_ms == 0.046


def _raising(exc: BaseException) -> SimpleNamespace:
    def create_connection(*_: object, **__: object) -> None:
        raise exc

    return SimpleNamespace(create_connection=create_connection)


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        # socket.create_connection with a timeout raises TimeoutError (Python 3.11 socket docs: socket.timeout
        # is a deprecated alias of TimeoutError since 3.10).
        (TimeoutError("timed out"), "no answer within 0.5 s"),
        # An OSError built without (errno, strerror) has strerror None (Python docs, OSError): name the class.
        (ConnectionResetError(), "ConnectionResetError"),
    ],
)
def test_a_failed_connect_is_a_plain_failure_with_its_reason(
    exc: BaseException, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(probe_module, "socket", _raising(exc))
    probe = probe_module.connect(NODES[0], 2049, timeout_s=0.5)
    assert probe == probe_module.Probe(NODES[0], 2049, False, None, words)
    assert probe.ok is False


def test_a_refused_connect_carries_the_systems_words() -> None:
    """Nothing listens: Linux answers ECONNREFUSED, whose strerror is "Connection refused" (errno(3))."""
    port = _free_port()
    probe = probe_module.connect(NODES[0], port, timeout_s=0.5)
    assert probe == probe_module.Probe(NODES[0], port, False, None, "Connection refused")
    assert probe.ok is False


@pytest.mark.parametrize("seconds", ["2", "7"])
def test_the_rest_timeout_setting_bounds_each_portal_read(seconds: str, ports: tuple[int, int]) -> None:
    """REST_TIMEOUT_SECONDS is the construct's bound on each REST request (the handler's settings): the portal
    reader is handed that many seconds when the invocation has time for it."""
    seen: dict[str, object] = {}

    def reader(**kwargs: object) -> PortalReading:
        seen.update(kwargs)
        return PortalReading(metrics.PORTAL_STATUS_VALUES["ACTIVE"], "portal 1: status ACTIVE")

    env = _env(
        ports,
        SPOKE_REST_ADDRESS="127.0.0.1",
        SPOKE_REST_PORT="18000",
        ADMIN_SECRET_ARN="arn:x",
        REST_TIMEOUT_SECONDS=seconds,
    )
    with listeners(NODES, ports):
        _run(env, portal_reader=reader, credentials=lambda arn: ("admin", "pw"))
    assert seen["timeout_s"] == float(seconds)
    with listeners(NODES, ports):
        # With 4 s left in the invocation, no REST request may be given more than what is left.
        _run(env, portal_reader=reader, credentials=lambda arn: ("admin", "pw"), remaining_ms=4000)
    assert 0 < seen["timeout_s"] < 4.0


@pytest.mark.parametrize(("probes_took_s", "read"), [(0.5, True), (6.9, False)])
def test_the_portal_wait_counts_the_time_the_probes_already_took(
    probes_took_s: float, read: bool, ports: tuple[int, int]
) -> None:
    """The invocation's time left is read once, at the start (get_remaining_time_in_millis: "the number of
    milliseconds left before the execution times out", Lambda developer guide, "Using the Lambda context object").
    With 10 s left, a portal read of 0.2 s is published when the probes took 0.5 s of them (the run's clock, Unix
    time as Lambda's); when they took 6.9 s, what remains after the time to publish is too short, and the portal
    line says the read did not finish."""
    lines: list[str] = []
    start_s = 1_700_000_000.0
    ticks = [start_s, start_s + probes_took_s]
    # The read starts when the probes' line is out (the wait for the read comes next), however long the real
    # probes took on a busy machine. It takes 0.05 s, or until the run is over (at most 5 s) where the wait must
    # give up first: after the 0.1 s floor left by 10 s less 6.9 s of probes, not after a wait that forgot the
    # probes' time.
    waiting, run_over = threading.Event(), threading.Event()

    def clock() -> float:
        return ticks.pop(0) if len(ticks) > 1 else ticks[0]

    def emit(line: str) -> None:
        lines.append(line)
        waiting.set()

    def reader(**_: object) -> PortalReading:
        waiting.wait(10)
        if read:
            time.sleep(0.05)
        else:
            run_over.wait(5)
        return PortalReading(metrics.PORTAL_STATUS_VALUES["ACTIVE"], "portal 1: status ACTIVE")

    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", SPOKE_REST_PORT="8000", ADMIN_SECRET_ARN="arn:x")
    with listeners(NODES, ports):
        try:
            run({}, env, emit=emit, remaining_ms=10_000, portal_reader=reader,
                credentials=lambda arn: ("a", "p"), clock=clock)  # fmt: skip
        finally:
            run_over.set()
    hub, portal = (json.loads(line) for line in lines)
    assert portal[metrics.PORTAL_UNREADABLE] == (0 if read else 1), portal["portal_detail"]
    assert ("did not finish" in portal["portal_detail"]) is not read
    # Both records carry the run's dimensions and its start (EMF Timestamp: ms since the epoch), not the instant
    # the read ended.
    for record in (hub, portal):
        assert record[metrics.DIMENSION_ENVIRONMENT] == "dev"
        assert record[metrics.DIMENSION_SPOKE] == "us-west-2"
    assert hub["_aws"]["Timestamp"] == portal["_aws"]["Timestamp"] == 1_700_000_000_000


def test_a_canary_without_its_timeout_settings_still_probes_and_reads(ports: tuple[int, int]) -> None:
    """CONNECT_TIMEOUT_SECONDS and REST_TIMEOUT_SECONDS unset: the run still probes, and the portal reader is
    given a positive bound, never none."""
    seen: dict[str, object] = {}

    def reader(**kwargs: object) -> PortalReading:
        seen.update(kwargs, thread=threading.current_thread().name)
        return PortalReading(metrics.PORTAL_STATUS_VALUES["ACTIVE"], "portal 1: status ACTIVE")

    env = _env(ports, SPOKE_REST_ADDRESS="127.0.0.1", SPOKE_REST_PORT="8000", ADMIN_SECRET_ARN="arn:x")
    del env["CONNECT_TIMEOUT_SECONDS"]
    with listeners(NODES, ports):
        result, _ = _run(env, portal_reader=reader, credentials=lambda arn: ("a", "p"))
    assert result[metrics.HUB_REACHABLE] == 1
    assert isinstance(seen["timeout_s"], float) and seen["timeout_s"] > 0
    # The read runs in a thread named for it: a stack dump of a hung run says which read hangs.
    assert str(seen["thread"]).startswith("portal")


def test_a_local_run_without_a_lambda_context_honours_its_event(
    ports: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Called as handler(event, context) outside Lambda (context None: no get_remaining_time_in_millis), the run is
    bounded by its settings alone, and the event's targets replace the configured ones."""
    for name, value in _env(ports).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SPOKE_REST_ADDRESS", raising=False)
    with listeners(NODES[:1], ports):
        result = handler_module.handler({"hub_addresses": [NODES[0]]}, None)
    assert result["hub_addresses"] == [NODES[0]]
    assert result[metrics.NODES_REACHABLE_FRACTION] == 1.0


def test_the_secret_client_is_in_the_region_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A region_name given to the client "takes precedence over environment variable and configuration file values"
    (boto3 user guide, Configuration)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert secrets_client("us-west-2").meta.region_name == "us-west-2"


def test_a_whole_hubs_probes_run_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """probe_all promises one timeout per run, not one per pair: 24 floating IPs on 2 ports are 48 connects, and
    every one is under way before any returns (a barrier of 48 only opens if they all wait on it together)."""
    addresses = [f"10.10.64.{i}" for i in range(1, 25)]
    barrier = threading.Barrier(len(addresses) * 2, timeout=5)
    threads: set[str] = set()

    def connect(address: str, port: int, *, timeout_s: float) -> probe_module.Probe:
        threads.add(threading.current_thread().name)
        barrier.wait()
        return probe_module.Probe(address, port, True, 1.0)

    monkeypatch.setattr(probe_module, "connect", connect)
    reach = probe_module.probe_all(addresses, [2049, 3713], timeout_s=0.5)
    assert reach.reachable_fraction == 1.0 and len(reach.probes) == 48
    assert all(name.startswith("probe") for name in threads), threads  # named for a stack dump


def test_no_target_to_probe_is_no_probe_and_nothing_reachable() -> None:
    """With nothing to probe (no address, or no port) there is no probe, no latency, and no reachable node: 0, never
    a division by zero."""
    for addresses, ports_ in (([], [2049]), ([NODES[0]], [])):
        reach = probe_module.probe_all(addresses, ports_, timeout_s=0.5)
        assert reach.probes == ()
        assert reach.reachable_fraction == 0.0 and reach.hub_reachable is False
        assert reach.latencies_ms == []
