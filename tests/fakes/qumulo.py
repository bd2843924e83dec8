"""A contract fake of one Qumulo cluster's REST API: HTTPS on 127.0.0.1, the endpoints hubspoke calls.

Shapes follow the Qumulo REST API guide (docs.qumulo.com/rest-api-guide, pages named per route below) and
the qumulo-api 7.10.2.1 SDK module that calls each route. Behaviour the docs do not spell out is marked
ASSUMED. Several fakes model a hub and spokes: portal traffic (TCP 3713) is never sent anywhere; a fake
finds its peer through FakeQumulo.peers, keyed by the opaque portal-host addresses it was given.

Faults: `down()`/`up()` (connection refused), `fail(...)` (Qumulo error N times, then normal), `slow(...)`.
"""

from __future__ import annotations

import http.server
import json
import re
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from tests.fakes.tls import loopback_certificate

Reply = tuple[int, Any]


def _self_signed() -> tuple[str, str]:
    """A throwaway certificate: the SDK speaks HTTPS and, like qq, does not verify the cluster's cert."""
    cert = loopback_certificate("fake-qumulo")
    return cert.cert_file, cert.key_file


class QumuloFault(Exception):
    """An error reply in Qumulo's shape (qumulo.lib.request.RequestError reads these keys)."""

    def __init__(self, status: int, error_class: str, description: str) -> None:
        super().__init__(description)
        self.status, self.error_class, self.description = status, error_class, description

    def body(self) -> dict[str, Any]:
        return {"module": "fake", "error_class": self.error_class, "description": self.description,
                "stack": [], "user_visible": True}  # fmt: skip


@dataclass
class _Fault:
    method: str | None
    path: re.Pattern[str]
    times: int
    status: int = 500
    error_class: str = "fake_injected_error"
    description: str = "injected failure"
    delay: float = 0.0


class FakeQumulo:
    """One Qumulo cluster (hub or spoke) behind one REST listener."""

    peers: ClassVar[dict[str, FakeQumulo]] = {}

    def __init__(self, *, name: str, portal_hosts: tuple[str, ...] = (), formation_polls: int = 1) -> None:
        self.name = name
        self.formation_polls = formation_polls
        self.cluster_id = ""
        self.state = "UNCONFIGURED"
        self.password: str | None = None
        self.tokens: set[str] = set()
        self.create_requests: list[dict[str, Any]] = []
        self.files: dict[str, dict[str, Any]] = {
            "/": {"id": "2", "type": "FS_FILE_TYPE_DIRECTORY", "size": 0}
        }
        self.interface = {"id": 1, "name": "bond0", "mtu": 9001, "bonding_mode": "ACTIVE_BACKUP",
                          "default_gateway": "", "default_gateway_ipv6": ""}  # fmt: skip
        self.network = {"id": 1, "name": "Default", "assigned_by": "DHCP", "floating_ip_ranges": [],
                        "dns_servers": [], "dns_search_domains": [], "ip_ranges": [], "netmask": "",
                        "mtu": 9001, "vlan_id": 0, "tenant_id": None}  # fmt: skip
        self.exports: dict[str, dict[str, Any]] = {}
        self.entries_page_size = 1000  # ASSUMED server default when the client sends no `limit`
        self.spokes: dict[int, dict[str, Any]] = {}
        self.hubs: dict[int, dict[str, Any]] = {}
        self.free_threshold = (
            0.05  # "maintains a minimum of 5% free capacity" by default (cache management page)
        )
        self.fetched_bytes: dict[str, int] = {}
        self.calls: list[tuple[str, str]] = []
        self.reachable = True
        self._faults: list[_Fault] = []
        self._ids = iter(range(1000, 10**6))
        self._lock = threading.RLock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self.port = 0
        for host in portal_hosts:
            FakeQumulo.peers[host] = self

    # ----- lifecycle and faults -----
    def __enter__(self) -> FakeQumulo:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()
        for host in [h for h, fake in FakeQumulo.peers.items() if fake is self]:
            del FakeQumulo.peers[host]

    def up(self) -> None:
        fake = self
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*_self_signed())

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request: Any, client_address: Any) -> None:
                request.settimeout(10)
                super().finish_request(context.wrap_socket(request, server_side=True), client_address)

        class Handler(_Handler):
            owner = fake

        self._server = Server(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self.reachable = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def down(self) -> None:
        """Refuse connections (and portal traffic) until up() is called again, on the same port."""
        self.reachable = False
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def fail(self, method: str | None, path: str, *, times: int = 1, status: int = 500,
             error_class: str = "fake_injected_error", description: str = "injected failure") -> None:  # fmt: skip
        """Answer the next `times` matching requests (path regex, searched) with a Qumulo error."""
        self._faults.append(_Fault(method, re.compile(path), times, status, error_class, description))

    def slow(self, seconds: float, method: str | None = None, path: str = "", *, times: int = 10**6) -> None:
        """Hold matching requests `seconds` before answering (the client's timeout fires first if shorter)."""
        self._faults.append(_Fault(method, re.compile(path), times, status=0, delay=seconds))

    def add_file(self, path: str, size: int) -> str:
        with self._lock:
            self._mkdirs(path.rsplit("/", 1)[0] or "/")
            file_id = str(next(self._ids))
            self.files[path] = {"id": file_id, "type": "FS_FILE_TYPE_FILE", "size": size}
            return file_id

    def called(self, method: str, path: str) -> int:
        return sum(1 for m, p in self.calls if m == method and re.search(path, p))

    # ----- request dispatch -----
    def handle(self, method: str, raw_path: str, headers: Any, body: Any) -> Reply:
        url = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        delay = 0.0
        with self._lock:
            self.calls.append((method, raw_path))
            for fault in self._faults:
                if fault.times > 0 and fault.method in (None, method) and fault.path.search(raw_path):
                    fault.times -= 1
                    if not fault.delay:
                        raise QumuloFault(fault.status, fault.error_class, fault.description)
                    delay = fault.delay
                    break
        time.sleep(delay)
        with self._lock:
            for route_method, pattern, action, public in self._routes():
                match = re.fullmatch(pattern, url.path)
                if match and route_method == method:
                    if not public and headers.get("Authorization", "")[len("Bearer ") :] not in self.tokens:
                        raise QumuloFault(401, "http_unauthorized_error", "Need to log in first")
                    return action(*[unquote(g) for g in match.groups()], body=body, query=query)
        raise QumuloFault(404, "http_not_found_error", f"no route {method} {url.path}")

    def _routes(self) -> list[tuple[str, str, Callable[..., Reply], bool]]:
        return [
            # Unconfigured/Configured Node Management, node_state (SDK: qumulo.rest.node_state)
            ("GET", r"/v1/node/state", self._node_state, True),
            # Cluster Creation, v5_cluster_object-backed_create (SDK: qumulo.rest.cluster)
            ("POST", r"/v5/cluster/object-backed/create", self._create, True),
            # Session Management, session_login (SDK: qumulo.rest.auth)
            ("POST", r"/v1/session/login", self._login, True),
            # Network Configuration, v2_network_interfaces_interface_id[_networks_network_id] (qumulo.rest.network)
            ("GET", r"/v2/network/interfaces/1", lambda **_: (200, self.interface), False),
            ("PATCH", r"/v2/network/interfaces/1", self._patch_interface, False),
            ("GET", r"/v2/network/interfaces/1/networks/1", lambda **_: (200, self.network), False),
            ("PATCH", r"/v2/network/interfaces/1/networks/1", self._patch_network, False),
            # NFS Methods, v3_nfs_exports and v3_nfs_exports_export_id (SDK: qumulo.rest.nfs)
            ("GET", r"/v3/nfs/exports/", lambda **_: (200, {"entries": list(self.exports.values())}), False),
            ("POST", r"/v3/nfs/exports/", self._add_export, False),
            ("PATCH", r"/v3/nfs/exports/([^/]+)", self._modify_export, False),
            # File System, files_ref_info_attributes and files_ref_fetch-data (SDK: qumulo.rest.fs)
            ("GET", r"/v1/files/([^/]+)/info/attributes", self._attributes, False),
            # files_ref_entries (SDK: qumulo.rest.fs.read_directory / read_entire_directory, which follow paging.next)
            ("GET", r"/v1/files/([^/]+)/entries/", self._entries, False),
            ("POST", r"/v1/files/([^/]+)/fetch-data", self._fetch_data, False),
            # Cloud Data Fabric V2, v2_portal_spokes[_id][_roots] (SDK: qumulo.rest.portal)
            (
                "GET",
                r"/v2/portal/spokes/",
                lambda **_: (200, {"entries": [self._spoke_view(s) for s in self.spokes.values()]}),
                False,
            ),
            ("POST", r"/v2/portal/spokes/", self._create_spoke, False),
            (
                "GET",
                r"/v2/portal/spokes/(\d+)",
                lambda i, **_: (200, self._spoke_view(self._spoke(i))),
                False,
            ),
            ("PATCH", r"/v2/portal/spokes/(\d+)", self._patch_spoke, False),
            ("DELETE", r"/v2/portal/spokes/(\d+)", self._delete_spoke, False),
            ("POST", r"/v2/portal/spokes/(\d+)/roots/", self._propose_root, False),
            # Cloud Data Fabric V2, v2_portal_hubs[_id][_accept][_roots_dir]
            (
                "GET",
                r"/v2/portal/hubs/",
                lambda **_: (200, {"entries": [self._hub_view(h) for h in self.hubs.values()]}),
                False,
            ),
            ("GET", r"/v2/portal/hubs/(\d+)", lambda i, **_: (200, self._hub_view(self._hub(i))), False),
            ("PATCH", r"/v2/portal/hubs/(\d+)", self._patch_hub, False),
            ("DELETE", r"/v2/portal/hubs/(\d+)", self._delete_hub, False),
            ("POST", r"/v2/portal/hubs/(\d+)/accept", self._accept, False),
            ("POST", r"/v2/portal/hubs/(\d+)/roots/([^/]+)", self._authorize_root, False),
            # Global Namespace, portal_spokes_eviction-settings (SDK: qumulo.rest.portal)
            (
                "GET",
                r"/v1/portal/spokes/eviction-settings",
                lambda **_: (200, {"free_threshold": self.free_threshold}),
                False,
            ),
            ("PUT", r"/v1/portal/spokes/eviction-settings", self._set_eviction, False),
        ]

    # ----- cluster -----
    def _node_state(self, **_: Any) -> Reply:
        if self.state == "FORMING":
            self.formation_polls -= 1
            if self.formation_polls <= 0:
                self.state = "ACTIVE"
            # ASSUMED: while the first quorum forms, a node reports STOPPED with its new cluster_id.
            return 200, {"node_id": 1, "state": "STOPPED", "cluster_id": self.cluster_id}
        return 200, {"node_id": 1, "state": self.state, "cluster_id": self.cluster_id}

    def _create(self, body: dict[str, Any], **_: Any) -> Reply:
        if self.state != "UNCONFIGURED":
            raise QumuloFault(
                400, "cluster_already_configured_error", "This node is already part of a cluster"
            )
        required = ("eula_accepted", "cluster_name", "admin_password", "host_instance_id", "object_storage_uris",
                    "usable_capacity_clamp", "product_type", "node_ips_and_fault_domains")  # fmt: skip
        missing = [k for k in required if k not in body]
        if missing or body["eula_accepted"] is not True or not body["object_storage_uris"]:
            raise QumuloFault(400, "api_validation_error", f"invalid create request (missing {missing})")
        self.create_requests.append({k: v for k, v in body.items() if k != "admin_password"})
        self.password, self.cluster_id, self.state = body["admin_password"], str(uuid.uuid4()), "FORMING"
        return 202, None

    def _login(self, body: dict[str, Any], **_: Any) -> Reply:
        if self.password is None or body.get("username") != "admin" or body.get("password") != self.password:
            raise QumuloFault(401, "authentication_failed_error", "Invalid username or password")
        token = uuid.uuid4().hex
        self.tokens.add(token)
        return 200, {"bearer_token": token}

    def _patch_interface(self, body: dict[str, Any], **_: Any) -> Reply:
        self.interface.update(
            {k: v for k, v in body.items() if k in ("mtu", "default_gateway", "bonding_mode")}
        )
        self.network["mtu"] = self.interface["mtu"]  # "applied to the untagged STATIC network as well"
        return 202, None

    def _patch_network(self, body: dict[str, Any], **_: Any) -> Reply:
        self.network.update({k: v for k, v in body.items() if k in self.network and k != "id"})
        return 200, self.network

    # ----- files and NFS -----
    def _mkdirs(self, path: str) -> str:
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            self.files.setdefault(
                sub, {"id": str(next(self._ids)), "type": "FS_FILE_TYPE_DIRECTORY", "size": 0}
            )
        return self.files[path.rstrip("/") or "/"]["id"]

    def _file(self, ref: str) -> tuple[str, dict[str, Any]]:
        for path, info in self.files.items():
            if ref in (path, info["id"]):
                return path, info
        raise QumuloFault(404, "fs_no_such_entry_error", f"{ref} does not exist")

    def _attributes(self, ref: str, **_: Any) -> Reply:
        path, info = self._file(ref)
        shown = path if info["type"] == "FS_FILE_TYPE_FILE" or path == "/" else path + "/"
        return 200, {"id": info["id"], "path": shown, "type": info["type"], "size": str(info["size"])}

    def _entries(self, ref: str, query: dict[str, str], **_: Any) -> Reply:
        """One page of a directory's children: {"files": [attributes...], "paging": {"next", "prev"}}.

        `next` is the URI of the following page, "" after the last (the SDK loops until it is empty).
        ASSUMED: children come in name order and `after` is the last name of the previous page; the real
        cursor is opaque to clients, which only follow `next`. Page size: `limit`, else `entries_page_size`.
        """
        path, info = self._file(ref if ref == "/" else ref.rstrip("/"))
        if info["type"] != "FS_FILE_TYPE_DIRECTORY":
            raise QumuloFault(400, "fs_not_a_directory_error", f"{ref} is not a directory")
        children = sorted(
            (child.rsplit("/", 1)[1], child)
            for child in self.files
            if child != "/" and (child.rsplit("/", 1)[0] or "/") == path
        )
        after, limit = query.get("after"), int(query.get("limit") or self.entries_page_size)
        remaining = [c for c in children if after is None or c[0] > after]
        page = remaining[:limit]
        files = [{**self._attributes(child)[1], "name": name} for name, child in page]
        more = len(remaining) > limit
        nxt = f"/v1/files/{quote(ref, safe='')}/entries/?{urlencode({'after': page[-1][0], 'limit': limit})}"
        return 200, {"files": files, "paging": {"next": nxt if more else "", "prev": ""}}

    def _fetch_data(self, ref: str, body: dict[str, Any], **_: Any) -> Reply:
        path, info = self._file(ref)
        offset, size = int(body["offset"]), info["size"]
        length = int(body.get("length") or size)
        # ASSUMED: the server fetches at most 64 MiB per call and reports where to continue.
        chunk = max(0, min(64 << 20, length, size - offset))
        self.fetched_bytes[path] = self.fetched_bytes.get(path, 0) + chunk
        nxt = offset + chunk if offset + chunk < size and chunk < length else None
        return 200, {"bytes_fetched": str(chunk), "next_offset": None if nxt is None else str(nxt)}

    def _add_export(self, body: dict[str, Any], query: dict[str, str], **_: Any) -> Reply:
        if any(e["export_path"] == body["export_path"] for e in self.exports.values()):
            raise QumuloFault(
                409, "nfs_export_path_exists_error", f"export {body['export_path']} already exists"
            )
        if body["fs_path"].rstrip("/") not in self.files and body["fs_path"] != "/":
            if query.get("allow-fs-path-create") != "true":
                raise QumuloFault(404, "fs_no_such_entry_error", f"{body['fs_path']} does not exist")
            self._mkdirs(body["fs_path"])
        export_id = str(next(self._ids))
        self.exports[export_id] = {"id": export_id, "tenant_id": 1, "fields_to_present_as_32_bit": [], **body}
        return 200, self.exports[export_id]

    def _modify_export(self, export_id: str, body: dict[str, Any], **_: Any) -> Reply:
        if export_id not in self.exports:
            raise QumuloFault(404, "nfs_export_doesnt_exist_error", f"export {export_id} does not exist")
        self.exports[export_id].update(body)
        return 200, self.exports[export_id]

    # ----- portals: spoke side -----
    def _peer(self, hosts: list[dict[str, Any]]) -> FakeQumulo | None:
        peer = next((FakeQumulo.peers[h["address"]] for h in hosts if h["address"] in FakeQumulo.peers), None)
        return peer if peer is not None and peer.reachable else None

    def _spoke(self, spoke_id: str) -> dict[str, Any]:
        if int(spoke_id) not in self.spokes:
            raise QumuloFault(404, "portal_not_found_error", f"spoke portal {spoke_id} not found")
        return self.spokes[int(spoke_id)]

    def _spoke_view(self, spoke: dict[str, Any]) -> dict[str, Any]:
        linked = spoke["state"] == "ACCEPTED"
        status = ("ACTIVE" if self._peer(spoke["hub_hosts"]) else "DEGRADED") if linked else "INACTIVE"
        return {**spoke, "status": status, "roots": [dict(r) for r in spoke["roots"]]}

    def _create_spoke(self, body: dict[str, Any], **_: Any) -> Reply:
        if self.spokes:
            raise QumuloFault(400, "portal_spoke_exists_error", "A cluster can host a single spoke portal")
        hub = self._peer(body["hub_hosts"])
        if hub is None:  # ASSUMED: creation proposes at once, so an unreachable hub fails the request
            raise QumuloFault(503, "portal_peer_unreachable_error", "Unable to connect to the hub cluster")
        spoke_id = next(self._ids)
        with hub._lock:
            hub_id = next(hub._ids)
            hub.hubs[hub_id] = {"id": hub_id, "type": body["type"], "state": "PENDING", "spoke_hosts": [],
                                "spoke_cluster_uuid": self.cluster_id, "spoke_cluster_name": self.name,
                                "pending_roots": [], "authorized_roots": [], "filesystem_uuid": hub.cluster_id,
                                "spoke_id": spoke_id, "spoke": self}  # fmt: skip
        self.spokes[spoke_id] = {"id": spoke_id, "type": body["type"], "state": "PENDING",
                                 "hub_hosts": body["hub_hosts"], "hub_id": hub_id, "hub_cluster_uuid": hub.cluster_id,
                                 "hub_cluster_name": hub.name, "filesystem_uuid": hub.cluster_id, "roots": []}  # fmt: skip
        return 200, self._spoke_view(self.spokes[spoke_id])

    def _patch_spoke(self, spoke_id: str, body: dict[str, Any], **_: Any) -> Reply:
        self._spoke(spoke_id)["hub_hosts"] = body["hub_hosts"]
        return 200, self._spoke_view(self._spoke(spoke_id))

    def _propose_root(self, spoke_id: str, body: dict[str, Any], **_: Any) -> Reply:
        spoke = self._spoke(spoke_id)
        hub = self._peer(spoke["hub_hosts"])
        if hub is None:
            raise QumuloFault(503, "portal_peer_unreachable_error", "Unable to connect to the hub cluster")
        if body["spoke_root_path"].rstrip("/") in self.files:
            raise QumuloFault(400, "fs_entry_exists_error", f"{body['spoke_root_path']} already exists")
        with hub._lock:
            hub_root = hub._file(body["hub_root_path"].rstrip("/") or "/")[1]["id"]
            hub.hubs[spoke["hub_id"]]["pending_roots"].append(hub_root)
        local = self._mkdirs(body["spoke_root_path"])
        spoke["roots"].append({"local_root": local, "remote_root": hub_root, "authorized": False})
        return 200, self._spoke_view(spoke)

    def _delete_spoke(self, spoke_id: str, query: dict[str, str], **_: Any) -> Reply:
        spoke = self._spoke(spoke_id)
        hub = self._peer(spoke["hub_hosts"])
        if hub is None and query.get("force") != "true":
            # "Requires connectivity with the hub portal host cluster" (v2_portal_spokes_id, DELETE)
            raise QumuloFault(503, "portal_peer_unreachable_error", "Unable to connect to the hub cluster")
        del self.spokes[int(spoke_id)]
        for root in spoke["roots"]:  # the spoke's root directory and its cache go with the portal
            path = self._file(root["local_root"])[0]
            for p in [p for p in self.files if p == path or p.startswith(path + "/")]:
                del self.files[p]
        if hub is not None and spoke["hub_id"] in hub.hubs:
            hub.hubs[spoke["hub_id"]]["state"] = "ENDED_BY_SPOKE"  # ASSUMED marker; shown as INACTIVE
        return 202, None

    # ----- portals: hub side -----
    def _hub(self, hub_id: str) -> dict[str, Any]:
        if int(hub_id) not in self.hubs:
            raise QumuloFault(404, "portal_not_found_error", f"hub portal {hub_id} not found")
        return self.hubs[int(hub_id)]

    def _hub_view(self, hub: dict[str, Any]) -> dict[str, Any]:
        ended = hub["state"] == "ENDED_BY_SPOKE"
        spoke_up = hub["spoke"].reachable and not ended
        status = ("ACTIVE" if spoke_up else "DEGRADED") if hub["state"] == "ACCEPTED" else "INACTIVE"
        view = {k: v for k, v in hub.items() if k not in ("spoke", "spoke_id")}
        return {**view, "state": "ACCEPTED" if ended else hub["state"], "status": status}

    def _accept(self, hub_id: str, body: dict[str, Any], **_: Any) -> Reply:
        hub = self._hub(hub_id)
        if hub["state"] != "PENDING":
            raise QumuloFault(400, "portal_invalid_state_error", f"hub portal {hub_id} is not pending")
        hub.update(state="ACCEPTED", spoke_hosts=body["spoke_hosts"])
        for root in body.get("authorized_roots", []):
            self._move_root(hub, root)
        hub["spoke"].spokes[hub["spoke_id"]]["state"] = "ACCEPTED"
        return 200, self._hub_view(hub)

    def _move_root(self, hub: dict[str, Any], root: str) -> None:
        if root not in hub["pending_roots"]:
            raise QumuloFault(400, "portal_root_not_pending_error", f"root {root} is not pending")
        hub["pending_roots"].remove(root)
        hub["authorized_roots"].append(root)
        for pair in hub["spoke"].spokes[hub["spoke_id"]]["roots"]:
            pair["authorized"] = pair["authorized"] or pair["remote_root"] == root

    def _authorize_root(self, hub_id: str, root: str, **_: Any) -> Reply:
        self._move_root(self._hub(hub_id), root)
        return 200, self._hub_view(self._hub(hub_id))

    def _patch_hub(self, hub_id: str, body: dict[str, Any], **_: Any) -> Reply:
        hub = self._hub(hub_id)
        hub.update({k: body[k] for k in ("spoke_hosts", "type") if k in body})
        if "type" in body and hub["spoke_id"] in hub["spoke"].spokes:
            hub["spoke"].spokes[hub["spoke_id"]]["type"] = body["type"]
        return 200, self._hub_view(hub)

    def _delete_hub(self, hub_id: str, **_: Any) -> Reply:
        del self.hubs[int(self._hub(hub_id)["id"])]
        return 202, None

    def _set_eviction(self, body: dict[str, Any], **_: Any) -> Reply:
        if not 0.0 <= float(body["free_threshold"]) <= 1.0:
            raise QumuloFault(400, "api_validation_error", "free_threshold must be in [0.0, 1.0]")
        self.free_threshold = float(body["free_threshold"])
        return 200, {"free_threshold": self.free_threshold}


class _Handler(http.server.BaseHTTPRequestHandler):
    owner: ClassVar[FakeQumulo]
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet: pytest shows failures, not access logs
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            status, data = self.owner.handle(
                self.command, self.path, self.headers, json.loads(raw) if raw else {}
            )
        except QumuloFault as fault:
            status, data = fault.status, fault.body()
        payload = b"" if data is None else json.dumps(data).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("ETag", f'"{abs(hash(payload))}"')
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (its timeout fired during a slow() fault)
            pass

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve
