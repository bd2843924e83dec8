"""The Qumulo fake is reached as a deployed caller reaches a node, never through the SDK's local-root backdoor.

qumulo-api (qumulo/lib/request.py, Connection.__init__ and user_is_local_root) sends a root process's
requests to "localhost", "127.0.0.1" or "::1" from a privileged source port, 900 to 1023
(get_backdoor_connection); the tests run as root, the Lambdas and pods that call a node's private address
do not. So the fake's nodes start at 127.0.0.2, and a node refuses a connection from a port below 1024.
"""

from __future__ import annotations

import os
import socket

import pytest
from qumulo.lib.request import LOCALHOSTS, user_is_local_root

from tests.fakes.qumulo import FakeQumulo


def test_no_node_listens_where_the_sdk_would_take_its_backdoor() -> None:
    with FakeQumulo(name="wire") as fake:
        assert not set(fake.node_ips) & LOCALHOSTS
        assert not any(user_is_local_root(ip) for ip in fake.node_ips)
    with pytest.raises(ValueError, match=r"127\.0\.0\.2"):
        FakeQumulo(name="backdoor", first_node=1)


@pytest.mark.skipif(
    os.geteuid() != 0, reason="binding a source port below 1024 needs root, as the backdoor does"
)
def test_a_connection_from_a_privileged_port_is_refused_and_named_at_teardown() -> None:
    fake = FakeQumulo(name="wire")
    fake.up()
    try:
        node = fake.node_ips[0]
        client = socket.socket()
        # A free privileged port from the range the SDK picks from (PRIV_PORT_BEG 900 to PRIV_PORT_END 1024).
        for port in range(1023, 899, -1):
            try:
                client.bind((node, port))
                break
            except OSError:
                continue
        else:
            pytest.fail("no port from 900 to 1023 is free to bind")
        with client:
            client.connect((node, fake.port))
            client.settimeout(5)
            # No TLS handshake, no HTTP answer: the node closes the connection.
            assert client.recv(1) == b""
        with pytest.raises(AssertionError, match=r"privileged source port.*get_backdoor_connection"):
            fake.down()
    finally:
        fake.down()
