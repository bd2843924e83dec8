"""The training job's EMF sender against a loopback stand-in for the CloudWatch agent's TCP listener.

Covered: records arrive newline-delimited and valid EMF on one connection; an agent that is down or goes
away never raises into training, records then go to stdout with one warning per outage, connection attempts
respect the back-off, and a restarted agent is found again. Not covered (no cluster here): the Service's DNS
name resolving inside a pod, and the agent turning the records into CloudWatch metrics.
"""

from __future__ import annotations

import io
import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from hubspoke import training_metrics as tm
from tests.fakes.clock import ManualClock as Clock
from tests.fakes.emf_agent import FakeEmfAgent

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import emf_sink


def record(step: int) -> str:
    return tm.emf_line(
        {tm.SAMPLES_PER_SECOND: 100.0 + step}, environment="dev", region="us-west-2", Step=step
    )


def assert_emf(line: str) -> dict[str, Any]:
    """One log event CloudWatch would extract metrics from: an EMF document on its own."""
    document = json.loads(line)
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == tm.NAMESPACE
    for dimension_set in directive["Dimensions"]:
        assert all(isinstance(document[d], str) for d in dimension_set)
    assert all(isinstance(document[m["Name"]], float) for m in directive["Metrics"])
    assert isinstance(document["_aws"]["Timestamp"], int)
    return document


def sink_for(endpoint: str | None, **kwargs: Any) -> tuple[emf_sink.EmfSink, io.StringIO, list[str]]:
    stdout, warnings = io.StringIO(), []
    sink = emf_sink.EmfSink(endpoint, stdout=stdout, warn=warnings.append, **kwargs)
    return sink, stdout, warnings


def closed_endpoint() -> str:
    """A loopback port nothing listens on any more: connections are refused."""
    agent = FakeEmfAgent()
    agent.stop()
    return agent.endpoint


def test_records_reach_the_agent_newline_delimited_and_valid_emf() -> None:
    with FakeEmfAgent() as agent:
        sink, stdout, warnings = sink_for(agent.endpoint)
        assert all(sink.send(record(step)) for step in (10, 20, 30))
        lines = agent.wait_for(3)
        sink.close()
    assert [assert_emf(line)["Step"] for line in lines] == [10, 20, 30]
    assert agent.connections == 1, "one connection carries every record"
    assert stdout.getvalue() == "" and warnings == []


def test_agent_down_means_stdout_one_warning_and_bounded_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []
    connect = socket.create_connection

    def counted(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        attempts.append(address)
        return connect(address, *args, **kwargs)

    monkeypatch.setattr(emf_sink.socket, "create_connection", counted)
    endpoint, clock = closed_endpoint(), Clock()
    sink, stdout, warnings = sink_for(endpoint, retry_seconds=30.0, clock=clock)

    sent = [record(step) for step in (1, 2, 3)]
    assert [sink.send(line) for line in sent] == [False, False, False]
    assert stdout.getvalue().splitlines() == sent, "nothing is lost: the container log keeps every record"
    assert len(warnings) == 1 and endpoint in warnings[0]
    assert len(attempts) == 1, "within the back-off no new connection is tried"

    clock.now += 30.0
    assert sink.send(record(4)) is False
    assert len(attempts) == 2 and len(warnings) == 1, "one warning per outage, not per record"


def test_agent_restart_is_followed_without_losing_a_record() -> None:
    with FakeEmfAgent() as agent:
        sink, stdout, warnings = sink_for(agent.endpoint)
        assert sink.send(record(1))
        agent.wait_for(1)
        agent.restart()
        # The closed connection is noticed before writing, so the next record goes to a new one.
        assert sink.send(record(2)) and sink.send(record(3))
        delivered = agent.wait_for(3)
        sink.close()
    assert [assert_emf(line)["Step"] for line in delivered] == [1, 2, 3]
    assert agent.connections == 2, "the sink reconnected to the restarted agent"
    assert stdout.getvalue() == "" and warnings == []


def test_an_agent_that_comes_up_later_is_used_after_the_back_off() -> None:
    clock = Clock()
    endpoint = closed_endpoint()
    sink, stdout, warnings = sink_for(endpoint, retry_seconds=5.0, clock=clock)
    assert sink.send(record(1)) is False
    with FakeEmfAgent(port=emf_sink.parse_endpoint(endpoint)[1]) as agent:
        assert sink.send(record(2)) is False, "still inside the back-off: stdout"
        clock.now += 5.0
        assert sink.send(record(3)) is True
        delivered = agent.wait_for(1)
        sink.close()
    assert [json.loads(line)["Step"] for line in stdout.getvalue().splitlines()] == [1, 2]
    assert [assert_emf(line)["Step"] for line in delivered] == [3]
    assert len(warnings) == 2 and "reconnected" in warnings[1]


@pytest.mark.parametrize(
    "endpoint", ["udp://127.0.0.1:25888", "cloudwatch-agent:25888", "tcp://cloudwatch-agent", "tcp://:x"]
)
def test_an_endpoint_that_is_not_tcp_host_port_is_reported_once(endpoint: str) -> None:
    sink, stdout, warnings = sink_for(endpoint)
    assert sink.send(record(1)) is False and sink.send(record(2)) is False
    assert len(stdout.getvalue().splitlines()) == 2
    assert len(warnings) == 1 and "tcp://host:port" in warnings[0]


def test_without_an_endpoint_records_go_to_stdout_silently() -> None:
    sink, stdout, warnings = sink_for(None)
    line = record(1)  # one record: each call stamps the clock, and two calls may straddle a millisecond
    assert sink.send(line) is False
    assert stdout.getvalue().splitlines() == [line] and warnings == []


def test_the_jobs_endpoint_names_the_agent_service_and_port() -> None:
    host, port = emf_sink.parse_endpoint(tm.AGENT_ENDPOINT)
    assert host == f"{tm.AGENT_SERVICE}.{tm.AGENT_NAMESPACE}"
    assert port == tm.AGENT_PORT == 25888  # the port the add-on's operator publishes EMF on


class _Writes(io.StringIO):
    """A stream that remembers each write call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return super().write(text)


def test_a_stdout_record_is_one_write_so_another_threads_line_cannot_land_inside_it() -> None:
    """The training loop's progress lines and the throughput thread's records share stdout (workload/train.py);
    a record written in two calls (text, then newline, as print() does) could end up glued to a progress line,
    which is no longer a line of its own (a CI run of test_train lost a record that way)."""
    stream = _Writes()
    sink = emf_sink.EmfSink(None, stdout=stream, warn=lambda _: None)
    assert sink.send('{"a": 1}') is False
    emf_sink.write_line(stream, "[rank 0] step 4 loss 1.0000")
    assert stream.calls == ['{"a": 1}\n', "[rank 0] step 4 loss 1.0000\n"]
