"""moto's server mode on a free loopback port: AWS APIs for code running in another process (the Lambda sandbox).

Point a client at it with `AWS_ENDPOINT_URL` or a service's own `AWS_ENDPOINT_URL_<SERVICE>` variable.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


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
        server.stop()
