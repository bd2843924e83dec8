"""A contract fake of the one Amazon EKS API call hubspoke's handlers make: DescribeCluster, on 127.0.0.1.

Shapes follow botocore's EKS service model (botocore/data/eks/2017-11-01/service-2.json): rest-json,
`GET /clusters/{name}` answering `{"cluster": Cluster}`; an unknown name is a 404 with
`X-Amzn-ErrorType: ResourceNotFoundException`. Like the real endpoint it refuses an unsigned request (403):
every SDK call is SigV4-signed, so an unsigned one means the caller is not an SDK with credentials.
Point a client at it with `AWS_ENDPOINT_URL_EKS` (botocore's service-specific endpoint variable).
"""

from __future__ import annotations

import base64
import http.server
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.fakes.loopback import serve_in_background, shut


@dataclass
class FakeCluster:
    """What DescribeCluster reports for one cluster: where its API server is and the CA that signs it."""

    name: str
    region: str
    account: str
    endpoint: str
    ca_pem: bytes
    status: str = "ACTIVE"
    version: str = "1.33"

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "arn": f"arn:aws:eks:{self.region}:{self.account}:cluster/{self.name}",
            "version": self.version,
            "endpoint": self.endpoint,
            "status": self.status,
            "certificateAuthority": {"data": base64.b64encode(self.ca_pem).decode()},
            "accessConfig": {"authenticationMode": "API"},
        }


@dataclass
class FakeEks:
    """DescribeCluster for the clusters in `clusters`, on a free loopback port."""

    clusters: dict[str, FakeCluster] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                fake.calls.append(path)
                if not self.headers.get("Authorization", "").startswith("AWS4-HMAC-SHA256 "):
                    return self._error(
                        403, "MissingAuthenticationTokenException", "Missing Authentication Token"
                    )
                name = unquote(path.removeprefix("/clusters/")) if path.startswith("/clusters/") else None
                cluster = fake.clusters.get(name or "")
                if cluster is None:
                    return self._error(
                        404, "ResourceNotFoundException", f"No cluster found for name: {name}."
                    )
                self._reply(200, {"cluster": cluster.describe()}, {})

            def _error(self, status: int, kind: str, message: str) -> None:
                self._reply(status, {"message": message}, {"X-Amzn-ErrorType": kind})

            def _reply(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = serve_in_background(self._server, "http")

    def stop(self) -> None:
        shut(self._server)
