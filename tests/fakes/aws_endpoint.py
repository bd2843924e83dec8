"""moto's server mode on a free loopback port: AWS APIs for code running in another process (the Lambda sandbox).

Point a client at it with `AWS_ENDPOINT_URL` or a service's own `AWS_ENDPOINT_URL_<SERVICE>` variable.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_moto_server(server)


def stop_moto_server(server: Any) -> None:
    """ThreadedMotoServer.stop(), without waiting out the serve loop's poll.

    moto 5.2.5 serves with werkzeug's `serve_forever()` at its default poll_interval of 0.5 s
    (moto/moto_server/threaded_moto_server.py, werkzeug/serving.py), and socketserver notices a shutdown only
    when its select() returns: a connection makes it return now.
    """
    host, port = server.get_host_and_port()
    stopping = threading.Thread(target=server.stop)
    stopping.start()
    while stopping.is_alive():
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.1):
            pass
        stopping.join(0.01)
