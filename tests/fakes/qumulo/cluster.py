"""A contract fake of one Qumulo cluster: its nodes (one REST listener each), formation, membership, network.

Shapes follow the qumulo-api 7.10.2.1 SDK module named beside each route and Qumulo's REST API guide; the
behaviour follows Qumulo's own provisioner and node script (Qumulo/qumulo-terraform-gcp @ a30b449c). What
no source states is marked ASSUMED. Clusters have Qumulo's default of 4 nodes unless a test says otherwise.

Installs are host-managed (QUMULO_NETWORK_MANAGED_BY_HOST=true, as Qumulo's node script installs them):
GET /v3/network shows no managed interfaces, floating IPs live in a HOST network, and interface changes are
refused. Faults: down()/up() (connection refused), down_node(ip), fail(...) (Qumulo error N times), slow(...),
drop_reply(...) (the request takes effect, then the connection closes without an answer).

Right after a create's 202 each member still answers GET /v1/node/state as UNCONFIGURED `api_switch_reads`
times: the SDK warns of "disconnects and errors as the API switches from unconfigured to configured mode"
(qumulo/commands/cluster.py, wait_for_first_quorum_following_cluster_create); ASSUMED how it shows.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fakes.qumulo.auth import AuthMixin
from tests.fakes.qumulo.files import FilesMixin
from tests.fakes.qumulo.portal import PortalMixin
from tests.fakes.qumulo.server import DropReply, Fault, Listener, QumuloFault, Reply, etag, free_port
from tests.fakes.qumulo.shift import ShiftMixin

DEFAULT_VERSION = "7.10.2.1"
# ASSUMED: the persistent-store granularity the capacity clamp is rounded down to ("the actual stored value
# will be a pstore count that produces a byte count closest to the requested bytes without going over").
PSTORE_BYTES = 3 * 10**11
_CREATE_KEYS = ("eula_accepted", "cluster_name", "admin_password", "host_instance_id", "object_storage_uris",
                "usable_capacity_clamp", "product_type", "node_ips_and_fault_domains")  # fmt: skip


def _prefix_length(netmask: str) -> int:
    """'255.255.192.0', '10.10.0.0/18' or '/18' style masks -> 18; ValueError for anything else."""
    if "/" in netmask:
        return ipaddress.ip_network(netmask if not netmask.startswith("/") else f"0.0.0.0{netmask}",
                                    strict=False).prefixlen  # fmt: skip
    return ipaddress.IPv4Network(f"0.0.0.0/{netmask}").prefixlen


def _expand(text: str) -> list[ipaddress.IPv4Address]:
    """'10.0.0.5' or '10.0.0.5-7' (the SDK's "1.1.1.1-4" form) -> the addresses; ValueError otherwise."""
    first, _, last = text.partition("-")
    start = ipaddress.IPv4Address(first)
    if not last:
        return [start]
    end = (
        ipaddress.IPv4Address(last)
        if "." in last
        else ipaddress.IPv4Address(f"{first.rsplit('.', 1)[0]}.{last}")
    )
    if end < start:
        raise ValueError(f"range {text} ends before it starts")
    return [ipaddress.IPv4Address(int(start) + i) for i in range(int(end) - int(start) + 1)]


def _fold(addresses: list[ipaddress.IPv4Address]) -> list[str]:
    """Consecutive addresses within one /24 folded into 'a.b.c.d-e' ranges."""
    ranges: list[list[ipaddress.IPv4Address]] = []
    for address in addresses:
        if (
            ranges
            and int(address) == int(ranges[-1][-1]) + 1
            and int(address) >> 8 == int(ranges[-1][0]) >> 8
        ):
            ranges[-1].append(address)
        else:
            ranges.append([address])
    return [str(r[0]) if len(r) == 1 else f"{r[0]}-{str(r[-1]).rsplit('.', 1)[1]}" for r in ranges]


class PeerRef:
    """A snapshot's stand-in for a cluster it referred to, by the cluster's name (FakeQumulo.restore's peers)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise AttributeError(
            f"the snapshot referred to the cluster {self.name!r}: pass its fake to restore(peers=...)"
        )


@dataclass
class FakeNode:
    """One node: its address, the release its package installed, and whether it is a cluster member."""

    ip: str
    version: str
    node_id: int = -1  # ASSUMED value for a node no cluster has enlisted yet
    member: bool = False
    # REST guide, /v1/node/state: REMOVED is a "configured node that has been removed from its cluster".
    removed: bool = False
    unconfigured_reads: int = 0
    reachable: bool = True
    listener: Listener | None = None


class FakeQumulo(FilesMixin, PortalMixin, ShiftMixin, AuthMixin):
    """One Qumulo cluster (hub or spoke): its nodes on 127.0.0.2..N+1, all on one port."""

    peers: ClassVar[dict[str, FakeQumulo]] = {}

    def __init__(self, *, name: str, node_count: int = 4, version: str = DEFAULT_VERSION,
                 portal_hosts: tuple[str, ...] = (), formation_polls: int = 1, host_managed: bool = True,
                 api_switch_reads: int = 1, first_node: int = 2, port: int = 0) -> None:  # fmt: skip
        self.name, self.version, self.formation_polls, self.host_managed = (
            name,
            version,
            formation_polls,
            host_managed,
        )
        self.api_switch_reads = api_switch_reads
        # Nodes on 127.0.0.<first_node>...: two clusters with disjoint numbers may share one port. Never on
        # 127.0.0.1: the SDK connects to that address, as root, through its local-root backdoor (qumulo-api,
        # qumulo/lib/request.py user_is_local_root: a host in LOCALHOSTS and euid 0), binding a privileged
        # source port; no deployed caller is on a node, and the Listener refuses such connections.
        if first_node < 2:
            raise ValueError("fake Qumulo nodes start at 127.0.0.2 (127.0.0.1 takes the SDK's root backdoor)")
        numbers = range(first_node, first_node + node_count)
        self.nodes = {f"127.0.0.{i}": FakeNode(f"127.0.0.{i}", version) for i in numbers}
        self._password: str | None = None
        self.cluster_id, self.tokens = "", set[str]()
        self._forming_left = 0
        self.create_requests: list[dict[str, Any]] = []
        self.membership_requests: list[list[str]] = []
        self.object_storage_uris: list[str] = []
        self.capacity_clamp = 0
        # The clamp the quorum a PUT abandoned still shows until the new one forms ("the change will appear in the
        # new quorum", qumulo-api 7.10.2.1, qumulo/commands/capacity.py, CapacityLimitSetCommand.SYNOPSIS).
        self._clamp_before: int | None = None
        # The quorum state (`state`) at each PUT /v1/capacity/clamp: what a test checks ordering against.
        self.clamp_put_states: list[str] = []
        self.frontend_networks: list[dict[str, Any]] = []
        self.network_apply_polls, self._network_left = 1, 0
        self.echo_network_normalized = True
        # Bucket URIs that hold objects already (the fake cannot see S3; a test names them).
        self.nonempty_uris: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.reachable = True
        self.port = port  # 0: a port free on every node's address, chosen when the nodes come up
        self._faults: list[Fault] = []
        self._ids = iter(range(1000, 10**6))
        self._lock = threading.RLock()
        self._init_auth()
        self._init_files()
        self._init_portals()
        self._init_shift()
        for host in portal_hosts:
            FakeQumulo.peers[host] = self
        FakeQumulo._alive.add(self)

    # ----- lifecycle, shortcuts and faults
    @property
    def node_ips(self) -> list[str]:
        return list(self.nodes)

    @property
    def members(self) -> list[str]:
        return [ip for ip, node in self.nodes.items() if node.member]

    @property
    def state(self) -> str:
        """The cluster's quorum as a whole: UNCONFIGURED, FORMING or ACTIVE."""
        return "UNCONFIGURED" if not self.cluster_id else "FORMING" if self._forming_left > 0 else "ACTIVE"

    @property
    def password(self) -> str | None:
        return self._password

    @password.setter
    def password(self, value: str) -> None:
        """Test shortcut: a cluster already formed from every node with this admin password."""
        with self._lock:
            self._password, self.cluster_id, self._forming_left = (
                value,
                self.cluster_id or str(uuid.uuid4()),
                0,
            )
            for number, node in enumerate(self.nodes.values(), start=1):
                node.member, node.node_id = True, number

    # What belongs to the running fake (its listeners' port and lock), not to the cluster it stands for.
    _RUNNING = ("_lock", "port")
    # Every fake alive, so a snapshot can tell a reference to another cluster (a portal's peer) from data.
    _alive: ClassVar[weakref.WeakSet[FakeQumulo]] = weakref.WeakSet()
    # The snapshot's key for the stand-ins of the clusters it referred to.
    _PEERS = "_peer_refs"

    def snapshot(self) -> dict[str, Any]:
        """A copy of the cluster (nodes, quorum, exports, portals, files, calls seen), without its listeners; a
        reference to a cluster (a portal's record of its peer, or this one) is kept as that cluster's name."""
        with self._lock:
            listeners = {ip: node.listener for ip, node in self.nodes.items()}
            for node in self.nodes.values():
                node.listener = None
            refs: dict[int, Any] = {id(fake): PeerRef(fake.name) for fake in list(FakeQumulo._alive)}
            try:
                state = copy.deepcopy(
                    {k: v for k, v in vars(self).items() if k not in self._RUNNING}, dict(refs)
                )
            finally:
                for ip, listener in listeners.items():
                    self.nodes[ip].listener = listener
            return {**state, self._PEERS: list(refs.values())}

    def restore(self, snapshot: dict[str, Any], peers: tuple[FakeQumulo, ...] = ()) -> None:
        """Become a copy of the snapshotted cluster, answering on this fake's own listeners; a cluster the
        snapshot referred to by name becomes the fake of that name among `peers` and this one."""
        with self._lock:
            if list(snapshot["nodes"]) != list(self.nodes):
                raise ValueError("a snapshot restores only into a fake with the same nodes")
            listeners = {ip: node.listener for ip, node in self.nodes.items()}
            named = {fake.name: fake for fake in (*peers, self)}
            memo: dict[int, Any] = {id(r): named[r.name] for r in snapshot[self._PEERS] if r.name in named}
            vars(self).update(copy.deepcopy({k: v for k, v in snapshot.items() if k != self._PEERS}, memo))
            for ip, listener in listeners.items():
                self.nodes[ip].listener = listener

    def __enter__(self) -> FakeQumulo:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.down()
        finally:
            for host in [h for h, fake in FakeQumulo.peers.items() if fake is self]:
                del FakeQumulo.peers[host]

    def up(self) -> None:
        self.port = self.port or free_port(self.node_ips)
        for node in self.nodes.values():
            self._start(node)
        self.reachable = True

    def _start(self, node: FakeNode) -> None:
        if node.listener is None:
            node.listener = Listener(node.ip, self.port, self.handle)
        node.reachable = True

    def down(self) -> None:
        """Refuse connections on every node (and portal traffic) until up() is called, on the same port."""
        self.reachable = False
        # Every node goes down even when one of them names a refused connection; the first such error is raised.
        errors = []
        for ip in list(self.nodes):
            try:
                self.down_node(ip)
            except AssertionError as error:
                errors.append(error)
        if errors:
            raise errors[0]

    def down_node(self, ip: str) -> None:
        node = self.nodes[ip]
        node.reachable = False
        if node.listener is not None:
            node.listener.close()
            refused, node.listener = node.listener.backdoor_connections, None
            if refused:
                raise AssertionError(
                    f"node {ip} refused {len(refused)} connection(s) from privileged source ports {refused}: "
                    "the path of the Qumulo SDK's local-root backdoor (qumulo/lib/request.py "
                    "get_backdoor_connection), which only a root process on a node takes; connect from an "
                    "ordinary port, as a Lambda or a pod reaches a node's private address"
                )

    def add_nodes(self, count: int, *, version: str | None = None) -> list[str]:
        """Boot `count` more nodes with Qumulo Core installed (as a larger node_count makes the stack do)."""
        first = int(list(self.nodes)[-1].rsplit(".", 1)[1]) + 1
        added = [FakeNode(f"127.0.0.{i}", version or self.version) for i in range(first, first + count)]
        for node in added:
            self.nodes[node.ip] = node
            if self.port:
                self._start(node)
        return [n.ip for n in added]

    def fail(self, method: str | None, path: str, *, times: int = 1, status: int = 500,
             error_class: str = "fake_injected_error", description: str = "injected failure") -> None:  # fmt: skip
        """Answer the next `times` matching requests (path regex, searched) with a Qumulo error."""
        self._faults.append(Fault(method, re.compile(path), times, status, error_class, description))

    def slow(self, seconds: float, method: str | None = None, path: str = "", *, times: int = 10**6) -> None:
        """Hold matching requests `seconds` before answering (the client's timeout fires first if shorter)."""
        self._faults.append(Fault(method, re.compile(path), times, status=0, delay=seconds))

    def drop_reply(self, method: str | None, path: str, *, times: int = 1) -> None:
        """Carry out matching requests, then close the connection without answering (a reset mid-switch)."""
        self._faults.append(Fault(method, re.compile(path), times, status=0, drop=True))

    def called(self, method: str, path: str) -> int:
        return sum(1 for m, p in self.calls if m == method and re.search(path, p))

    def _new_id(self) -> str:
        return str(next(self._ids))

    # ----- dispatch
    def handle(self, node_ip: str, method: str, raw_path: str, headers: Any, body: Any) -> Reply:
        url = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        delay, drop = 0.0, False
        with self._lock:
            self.calls.append((method, raw_path))
            for fault in self._faults:
                if fault.times > 0 and fault.method in (None, method) and fault.path.search(raw_path):
                    fault.times -= 1
                    if fault.drop:
                        drop = True
                    elif not fault.delay:
                        raise QumuloFault(fault.status, fault.error_class, fault.description)
                    delay = fault.delay
                    break
        time.sleep(delay)
        reply = self._dispatch(node_ip, method, url.path, query, headers, body)
        if drop:
            raise DropReply()
        return reply

    def _dispatch(self, node_ip: str, method: str, path: str, query: dict[str, str], headers: Any,
                  body: Any) -> Reply:  # fmt: skip
        with self._lock:
            for route_method, pattern, action, public in self._routes():
                match = re.fullmatch(pattern, path)
                if match and route_method == method:
                    token = headers.get("Authorization", "")[len("Bearer ") :]
                    if not public and token not in self.tokens:
                        raise QumuloFault(401, "http_unauthorized_error", "Need to log in first")
                    if not public and self.bouncing():  # ASSUMED shape of a quorum re-forming
                        raise QumuloFault(503, "quorum_not_ready_error", "The cluster is re-forming quorum")
                    if not public:
                        self._authorize(token, method, path, body)  # auth.py: the identity's rights
                    args = [unquote(g) for g in match.groups()]
                    return action(*args, body=body, query=query, node=self.nodes[node_ip], headers=headers)
        raise QumuloFault(404, "http_not_found_error", f"no route {method} {path}")

    def _routes(self) -> list[tuple[str, str, Any, bool]]:
        public = [
            # Unconfigured/Configured Node Management, node_state (SDK: qumulo.rest.node_state)
            ("GET", r"/v1/node/state", self._node_state),
            # Version, GET /v1/version (SDK: qumulo.rest.version; ApiVersionInfo); qq version runs before login
            ("GET", r"/v1/version", self._version),
            # Cluster Creation, v5_cluster_object-backed_create (SDK: qumulo.rest.cluster)
            ("POST", r"/v5/cluster/object-backed/create", self._create),
            # Session Management, session_login (SDK: qumulo.rest.auth)
            ("POST", r"/v1/session/login", self._login),
        ]
        private = [
            # Object-backed membership (SDK: qumulo.rest.cluster.get/modify_object_backed_nodes)
            ("GET", r"/v2/cluster/object-backed/nodes", self._get_membership),
            ("POST", r"/v2/cluster/object-backed/nodes", self._modify_membership),
            # Network v3 (SDK: qumulo.rest.network_v3.NetworkV3)
            ("GET", r"/v3/network", lambda **_: (200, self._network_config())),
            ("PUT", r"/v3/network", self._put_network),
            ("GET", r"/v3/network/status", self._network_status),
            # The v2 interface API in host mode (qumulo.rest.network_v3.CannotModifyInterfaceInHostNetworks)
            ("PATCH", r"/v2/network/interfaces/(\d+)", self._patch_interface),
            # Object storage (REST guide, object-storage_uris: the response is an array of strings; the
            # SDK's add_uris posts {"uris": [...], "maybe_credentials": ...} to the v2 route)
            ("GET", r"/v1/object-storage/uris", lambda **_: (200, list(self.object_storage_uris))),
            ("POST", r"/v2/object-storage/add-uris", self._add_uris),
            # Capacity (SDK: qumulo.rest.capacity)
            ("GET", r"/v1/capacity/clamp", self._get_clamp),
            ("PUT", r"/v1/capacity/clamp", self._put_clamp),
            *self._file_routes(),
            *self._portal_routes(),
            *self._shift_routes(),
            *self._auth_routes(),
        ]
        return [(*r, True) for r in public] + [(*r, False) for r in private]

    # ----- nodes and formation
    def _node_state(self, node: FakeNode, **_: Any) -> Reply:
        if node.removed:  # REST guide: REMOVED keeps its cluster_id ("'' if the node is unconfigured")
            return 200, {"node_id": node.node_id, "state": "REMOVED", "cluster_id": self.cluster_id}
        if node.member and node.unconfigured_reads > 0:
            node.unconfigured_reads -= 1
            return 200, {"node_id": -1, "state": "UNCONFIGURED", "cluster_id": ""}
        if not node.member:
            return 200, {"node_id": node.node_id, "state": "UNCONFIGURED", "cluster_id": ""}
        if self._forming_left > 0:
            self._forming_left -= 1
            # ASSUMED: while a quorum forms, a member reports STOPPED with its cluster_id.
            return 200, {"node_id": node.node_id, "state": "STOPPED", "cluster_id": self.cluster_id}
        return 200, {"node_id": node.node_id, "state": "ACTIVE", "cluster_id": self.cluster_id}

    def _version(self, node: FakeNode, **_: Any) -> Reply:
        # revision_id as qumulo.rest.version.numeric_version parses it: "Qumulo Core 1.2.3".
        return 200, {"revision_id": f"Qumulo Core {node.version}", "build_id": "fake", "flavor": "release",
                     "build_date": "2026-10-01T00:00:00Z"}  # fmt: skip

    def _enlistable(self, ips: list[str], version: str) -> list[FakeNode]:
        nodes = []
        for ip in ips:
            node = self.nodes.get(ip)
            if node is None or not node.reachable:  # ASSUMED refusal shape for an unknown or silent node
                raise QumuloFault(400, "node_unreachable_error", f"node {ip} is not reachable")
            if node.removed:  # configured for its old cluster: ASSUMED the same refusal as a member's
                raise QumuloFault(
                    400, "cluster_already_configured_error", f"node {ip} was removed from a cluster"
                )
            if (
                node.version != version
            ):  # Qumulo's provisioner: "Can't add nodes running ver=..." (ASSUMED class)
                raise QumuloFault(
                    400, "version_mismatch_error", f"node {ip} runs {node.version}, not {version}"
                )
            nodes.append(node)
        return nodes

    def _create(self, node: FakeNode, body: dict[str, Any], **_: Any) -> Reply:
        # ASSUMED error class: the create of an already configured node is refused, not repeated.
        if node.member or node.removed or self.cluster_id:
            raise QumuloFault(
                400, "cluster_already_configured_error", "This node is already part of a cluster"
            )
        missing = [k for k in _CREATE_KEYS if k not in body]
        if missing or body["eula_accepted"] is not True or not body["object_storage_uris"]:
            raise QumuloFault(400, "api_validation_error", f"invalid create request (missing {missing})")
        self._check_create(body)
        ips = [n["node_ip"] for n in body["node_ips_and_fault_domains"]]
        enlisted = self._enlistable(ips, node.version)
        self.create_requests.append({k: v for k, v in body.items() if k != "admin_password"})
        self._password, self.cluster_id = body["admin_password"], str(uuid.uuid4())
        for number, member in enumerate(enlisted, start=1):
            member.member, member.node_id, member.unconfigured_reads = True, number, self.api_switch_reads
        self.object_storage_uris = list(body["object_storage_uris"])
        self.capacity_clamp = int(body["usable_capacity_clamp"]) // PSTORE_BYTES * PSTORE_BYTES
        self._forming_left = self.formation_polls
        return 202, None

    def _check_create(self, body: dict[str, Any]) -> None:
        """Refuse what Qumulo's own AWS deployment refuses; server-side refusal and class are ASSUMED.

        - node count 1 or 3-24 and the admin password rules (8-128 characters, an upper-case and a
          lower-case letter, a character that is not a letter): Qumulo/qumulo-terraform-aws @ 8a6e4d57,
          variables.tf node_count and admin_pwd_or_secrets_arn;
        - host_instance_id an EC2 instance ID (the node's own, as Qumulo's provisioner sends it; EC2 IDs
          are "i-" and 8 or 17 hex digits);
        - object-storage URIs https://<bucket>.s3.<region>.amazonaws.com/ (the provisioner's
          "https://${newBucketURIs[m]}/" form, aws-terraform-cnq provision.sh), each an empty bucket
          ("Ensure that the new URIs point to empty S3 buckets", qq add_object_storage_uris).
        """
        count, password = len(body["node_ips_and_fault_domains"]), str(body["admin_password"])
        problems = []
        if count != 1 and not 3 <= count <= 24:
            problems.append(f"{count} nodes (1, or 3 to 24)")
        if not (8 <= len(password) <= 128 and re.search("[A-Z]", password) and re.search("[a-z]", password)
                and re.search("[^a-zA-Z]", password)):  # fmt: skip
            problems.append("the admin password does not meet the rules")
        if not re.fullmatch(r"i-(?:[0-9a-f]{8}|[0-9a-f]{17})", str(body["host_instance_id"])):
            problems.append(f"host_instance_id {body['host_instance_id']!r} is not an EC2 instance ID")
        problems += self._uri_problems(body["object_storage_uris"])
        if problems:
            raise QumuloFault(400, "api_validation_error", "; ".join(problems))

    def _uri_problems(self, uris: list[str]) -> list[str]:
        shape = r"https://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\.s3\.[a-z0-9-]+\.amazonaws\.com/"
        return [f"{u} is not an S3 bucket URI" for u in uris if not re.fullmatch(shape, str(u))] + [
            f"{u} is not empty" for u in uris if u in self.nonempty_uris
        ]

    def _login(self, body: dict[str, Any], **_: Any) -> Reply:
        # REST guide, session_login, lists only its 200; a failed authentication answers 401 Unauthorized (RFC
        # 9110 15.5.2; the guide documents it for session_retrieve-saml-login), the status qumulo.lib.request
        # singles out (RequestError, NEED_LOGIN_MESSAGE). The error class and text are ASSUMED.
        token = self.authenticate(str(body.get("username")), str(body.get("password")), self._password)
        if self._password is None or token is None:
            raise QumuloFault(401, "authentication_failed_error", "Invalid username or password")
        self.tokens.add(token)
        return 200, {"bearer_token": token}

    def _get_membership(self, **_: Any) -> Reply:
        ips = [{"node_ip": ip, "fault_domain_id": None} for ip in self.members]
        return 200, {"membership": {"node_ips_and_fault_domains": ips, "node_uuids_and_fault_domains": None}}

    def _modify_membership(self, body: dict[str, Any], **_: Any) -> Reply:
        target = [n["node_ip"] for n in body["target_membership"]["node_ips_and_fault_domains"] or []]
        if not target:
            raise QumuloFault(400, "api_validation_error", "the target membership is empty")  # ASSUMED
        new = [ip for ip in target if ip not in self.members]
        joining = self._enlistable(new, self.version)
        if any(n.member for n in joining):
            raise QumuloFault(400, "cluster_already_configured_error", "node already in a cluster")
        self.membership_requests.append(target)
        next_id = max((n.node_id for n in self.nodes.values()), default=0) + 1
        for offset, node in enumerate(joining):  # node ids go to new nodes in request order (qq's warning)
            # A joining node switches modes as a created one does (ASSUMED the same lag): it answers
            # UNCONFIGURED for a while, and only its own ACTIVE shows it in quorum (Qumulo's provisioner waits for
            # that: qumulo-terraform-gcp @ a30b449c, provision.py add_cluster_nodes).
            node.member, node.node_id, node.unconfigured_reads = True, next_id + offset, self.api_switch_reads
        for ip in self.members:
            if ip not in target:  # REST guide: REMOVED, still configured for this cluster
                self.nodes[ip].member, self.nodes[ip].removed = False, True
        self._forming_left = self.formation_polls
        return 202, None

    # ----- host-managed network
    def _network_config(self) -> dict[str, Any]:
        managed: dict[str, Any] | None = None if self.host_managed else {
            "frontend_bond_config": {"interface_name": "bond0", "bonding_mode": "ACTIVE_BACKUP", "mtu": 9001,
                                     "networks": [1]}, "frontend_vlans": [], "backend_bond_config": None}  # fmt: skip
        return {"managed_interfaces": managed, "frontend_networks": [dict(n) for n in self.frontend_networks]}

    def _put_network(self, body: dict[str, Any], headers: Any, **_: Any) -> Reply:
        if headers.get("If-Match") not in (None, etag(self._network_config())):
            raise QumuloFault(412, "http_precondition_failed_error", "The configuration changed")  # ASSUMED
        if self.host_managed and body.get("managed_interfaces") is not None:
            raise QumuloFault(
                400,
                "api_validation_error",
                "No managed interfaces to modify, cannot modify interfaces for host managed networks",
            )  # SDK text; ASSUMED server-side
        wrong = [
            n["addresses"]["type"] for n in body["frontend_networks"] if n["addresses"]["type"] != "HOST"
        ]
        if self.host_managed and wrong:  # SDK: ConflictingNetworkTypesError; ASSUMED server-side too
            raise QumuloFault(
                400, "api_validation_error", f"{wrong[0]} network cannot be mixed with HOST network"
            )
        self.frontend_networks = [self._stored_network(n) for n in body["frontend_networks"]]
        self._network_left = self.network_apply_polls
        return 200, None

    def _stored_network(self, network: dict[str, Any]) -> dict[str, Any]:
        """A network as GET /v3/network shows it back. The SDK takes a netmask as "Ip addr or CIDR format"
        and floating IPs as "IP ranges, "1.1.1.1-4"" (qumulo-api 7.10.2.1, qumulo/commands/network_v3.py,
        the network_v3_put_config help, and --netmask "eg. 255.255.255.0 or 10.1.1.0/24"); anything else
        is refused (ASSUMED class). ASSUMED how Qumulo echoes them: with `echo_network_normalized` (the
        default) as a dotted-quad netmask and consecutive addresses folded into ranges, else verbatim."""
        stored = json.loads(json.dumps(network))
        host = (stored.get("addresses") or {}).get("host_addresses")
        if not host:
            return dict(stored)
        try:
            prefix = _prefix_length(str(host["netmask"]))
            addresses = sorted({a for r in host.get("floating_ip_ranges") or [] for a in _expand(str(r))})
        except ValueError as error:
            raise QumuloFault(400, "api_validation_error", f"invalid host addresses: {error}") from error
        if self.echo_network_normalized:
            host["netmask"] = str(ipaddress.IPv4Network(f"0.0.0.0/{prefix}").netmask)
            host["floating_ip_ranges"] = _fold(addresses)
        return dict(stored)

    def _network_status(self, **_: Any) -> Reply:
        floating = [str(ip) for n in self.frontend_networks
                    for r in ((n["addresses"].get("host_addresses") or {}).get("floating_ip_ranges") or [])
                    for ip in _expand(r)]  # fmt: skip
        members = [self.nodes[ip] for ip in self.members]
        if self._network_left > 0:
            self._network_left -= 1
            return 200, [{"node_id": n.node_id} for n in members]  # ASSUMED: no floating addresses yet
        # ASSUMED shape: each node lists the floating addresses it holds, spread round robin.
        return 200, [{"node_id": n.node_id, "floating_addresses": floating[i :: len(members)]}
                     for i, n in enumerate(members)]  # fmt: skip

    def _patch_interface(self, interface_id: str, body: dict[str, Any], **_: Any) -> Reply:
        if self.host_managed:  # ASSUMED server-side twin of the SDK's CannotModifyInterfaceInHostNetworks
            raise QumuloFault(400, "network_host_managed_error", "No managed interfaces to modify, cannot "
                              "modify interfaces for host managed networks")  # fmt: skip
        return 202, None

    # ----- persistent storage and capacity
    def _add_uris(self, body: dict[str, Any], **_: Any) -> Reply:
        # REST guide, object-storage_add-uris: "adds new URIs to the list ... and ignores the existing URIs".
        new = [u for u in body["uris"] if u not in self.object_storage_uris]
        problems = self._uri_problems(new)
        if problems:
            raise QumuloFault(400, "api_validation_error", "; ".join(problems))  # ASSUMED server-side
        self.object_storage_uris += new
        if new:
            # Qumulo's AWS provisioner waits for ACTIVE and for every node in quorum after
            # add_object_storage_uris (aws-terraform-cnq, modules/qprovisioner/scripts/provision.sh, bucket
            # add): ASSUMED that the add re-forms quorum, as capacity_clamp_set says the clamp does.
            self._forming_left = self.formation_polls
        return 200, None

    def _get_clamp(self, **_: Any) -> Reply:
        if self._clamp_before is not None and self.state == "ACTIVE":
            self._clamp_before = None
        shown = self.capacity_clamp if self._clamp_before is None else self._clamp_before
        return 200, {"capacity_clamp": str(shown)}

    def _put_clamp(self, body: dict[str, Any], **_: Any) -> Reply:
        self.clamp_put_states.append(self.state)
        wanted = body["capacity_clamp"]
        stored = None if wanted is None else int(wanted) // PSTORE_BYTES * PSTORE_BYTES
        # "A value below the current provisioned capacity has no effect" (qq capacity_clamp_set).
        if stored is not None and stored > self.capacity_clamp:
            self._clamp_before = self.capacity_clamp if self._clamp_before is None else self._clamp_before
            self.capacity_clamp = stored
            self._forming_left = self.formation_polls  # "quorum will be abandoned"
        return 200, None
