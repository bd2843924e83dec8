"""Cloud Data Fabric portals of the Qumulo contract fake (REST API guide: Cloud Data Fabric V2).

Shapes: qumulo.rest.portal (MultiRootSpokePortal, MultiRootHubPortal, qumulo-api 7.10.2.1). Behaviour from
Qumulo's docs (_includes/content-reuse/admin-guides/cloud-data-fabric/, Qumulo/docs):
- states PENDING, ACCEPTED, DELETING: the v2 API's whole enum (rest-api-guide/cloud-data-fabric-v2/
  v2_portal_spokes_id.md @ bcb748d2); the guide's Unlinked belongs to the v1 API. A create that cannot
  reach the hub "displays an error message and configuration can be attempted again"
  (configuring-portal-relationship.md, "Step 1: Create the Spoke Portal"): nothing is left behind. Its
  status code is not documented: `unreachable_status` (ASSUMED 400 by default, 503 possible);
- accepting, changing or deleting a portal "makes both clusters in the portal relationship unavailable
  for less than 30 seconds" (Qumulo/docs _config.yml, gns.quorumBounce, the caution on those steps):
  modelled as the next `bounce_requests` authenticated requests on each cluster answering 503 (ASSUMED
  shape and length);
- up to 32 spoke portals per cluster (7.5.0.3 and higher), one relationship per remote cluster;
- deleting a spoke portal: with the hub reachable, outstanding changes sync first (state Deleting), then
  Qumulo removes both records itself and deletes the spoke root with its cache; a forced delete does not
  wait. Without the hub, "You can delete a spoke portal in any state ... and without connectivity to the
  hub portal" (configuring-portal-relationship.md, "Step 1: Delete the Spoke Portal", the version the
  index stores); the hub's record stays (only a hub that "can connect" notices). Another version of the
  page (@ 9b95eefa) says a portal with connectivity issues "can cause the deletion ... to stall in the
  Deleting state", ended with --force. Both are modelled: `stall_delete_without_hub` picks the second;
  ASSUMED which one a given release does. The v2 REST guide's DELETE /v2/portal/spokes/{id} takes `force`
  and answers 202 (rest-api-guide/cloud-data-fabric-v2/v2_portal_spokes_id.md @ bcb748d2);
- a hub portal can be deleted "in any state ... and without connectivity to the spoke portal" (same page,
  "Step 2: Delete the Hub Portal");
- a spoke portal is inaccessible when the two clusters run different releases.
- changing a portal's type: "Setting read-only or paused drains the spoke first; the portal reports
  Quiescing or Pausing until the drain finishes" (qumulo-api 7.10.2.1, qumulo/commands/portal.py
  TYPE_HELP, portal_modify_hub --type); read-write takes effect at once. Modelled as the hub record taking
  the new type, while the spoke keeps its old type and reports status QUIESCING (PAUSING) for
  `drain_polls` reads of it (ASSUMED: the field, its spelling and the pace). Whether the spoke's record
  then shows the new type is not documented either: `spoke_reflects_type` serves both readings.
Portal traffic (TCP 3713, "Network connectivity on TCP port 3713" in the page's prerequisites) is never
sent: a fake finds its peer in FakeQumulo.peers by portal-host address; `portal_port_open` False stands
for that port blocked while the REST API answers.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from tests.fakes.qumulo.server import QumuloFault, Reply

if TYPE_CHECKING:
    from tests.fakes.qumulo.cluster import FakeQumulo

MAX_SPOKE_PORTALS = 32
UNREACHABLE = ("portal_peer_unreachable_error", "Unable to connect to the hub cluster")  # ASSUMED text


class PortalMixin:
    """Spoke-side and hub-side portal records of one fake cluster."""

    name: str
    cluster_id: str
    version: str
    reachable: bool
    files: dict[str, dict[str, Any]]
    free_threshold: float
    spokes: dict[int, dict[str, Any]]
    hubs: dict[int, dict[str, Any]]
    # The status of the error answering a create or root proposal that cannot reach the hub (ASSUMED).
    unreachable_status: int
    # False: TCP 3713 to this cluster is blocked (its REST API may still answer).
    portal_port_open: bool
    # Authenticated requests answered 503 after a portal accept, change or delete (ASSUMED count).
    bounce_requests: int
    _bounce_left: int
    # GET polls a deleting spoke portal stays in DELETING while it syncs (ASSUMED count).
    deleting_polls: int
    # A delete without the hub stays DELETING until forced (the @ 9b95eefa reading) instead of finishing.
    stall_delete_without_hub: bool
    # Reads of a spoke portal that still show QUIESCING/PAUSING after a change to read-only/paused (ASSUMED).
    drain_polls: int
    # False: the spoke's record keeps its old type after a type change set on the hub, and only the hub's
    # record shows it (ASSUMED: Qumulo documents neither reading; both are served).
    spoke_reflects_type: bool
    _lock: threading.RLock

    def _new_id(self) -> str:
        raise NotImplementedError

    def _file(self, ref: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _mkdirs(self, path: str) -> str:
        raise NotImplementedError

    def _init_portals(self) -> None:
        self.spokes, self.hubs = {}, {}
        self.unreachable_status = 400
        self.portal_port_open = True
        self.bounce_requests, self._bounce_left = 1, 0
        self.deleting_polls = 1
        self.stall_delete_without_hub = False
        self.drain_polls = 2
        self.spoke_reflects_type = True
        self.free_threshold = (
            0.05  # "maintains a minimum of 5% free capacity" by default (cache management page)
        )

    def _portal_routes(self) -> list[tuple[str, str, Any]]:
        return [
            (
                "GET",
                r"/v2/portal/spokes/",
                lambda **_: (200, {"entries": [self._spoke_view(s) for s in self._live_spokes()]}),
            ),
            ("POST", r"/v2/portal/spokes/", self._create_spoke),
            ("GET", r"/v2/portal/spokes/(\d+)", lambda i, **_: (200, self._spoke_view(self._draining(i)))),
            ("PATCH", r"/v2/portal/spokes/(\d+)", self._patch_spoke),
            ("DELETE", r"/v2/portal/spokes/(\d+)", self._delete_spoke),
            ("POST", r"/v2/portal/spokes/(\d+)/roots/", self._propose_root),
            (
                "GET",
                r"/v2/portal/hubs/",
                lambda **_: (200, {"entries": [self._hub_view(h) for h in self.hubs.values()]}),
            ),
            ("GET", r"/v2/portal/hubs/(\d+)", lambda i, **_: (200, self._hub_view(self._hub(i)))),
            ("PATCH", r"/v2/portal/hubs/(\d+)", self._patch_hub),
            ("DELETE", r"/v2/portal/hubs/(\d+)", self._delete_hub),
            ("POST", r"/v2/portal/hubs/(\d+)/accept", self._accept),
            ("POST", r"/v2/portal/hubs/(\d+)/roots/([^/]+)", self._authorize_root),
            # Global Namespace, portal_spokes_eviction-settings (SDK: qumulo.rest.portal)
            (
                "GET",
                r"/v1/portal/spokes/eviction-settings",
                lambda **_: (200, {"free_threshold": self.free_threshold}),
            ),
            ("PUT", r"/v1/portal/spokes/eviction-settings", self._set_eviction),
        ]

    def stale_hub_record(self, spoke: FakeQumulo) -> int:
        """A hub record of an earlier portal from `spoke` that is still DELETING (it matches by cluster UUID)."""
        with self._lock:
            hub_id = int(self._new_id())
            self.hubs[hub_id] = {"id": hub_id, "type": "PORTAL_READ_ONLY", "state": "DELETING", "spoke_hosts": [],
                                 "spoke_cluster_uuid": spoke.cluster_id, "spoke_cluster_name": spoke.name,
                                 "pending_roots": [], "authorized_roots": [], "filesystem_uuid": self.cluster_id,
                                 "spoke_id": -1, "spoke": spoke}  # fmt: skip
            return hub_id

    # ----- spoke side
    def _peer(self, hosts: list[dict[str, Any]]) -> FakeQumulo | None:
        from tests.fakes.qumulo.cluster import FakeQumulo

        peer = next((FakeQumulo.peers[h["address"]] for h in hosts if h["address"] in FakeQumulo.peers), None)
        return peer if peer is not None and peer.reachable and peer.portal_port_open else None

    def _bounce(self, *clusters: Any) -> None:
        """Both clusters of the relationship re-form their quorum (the docs' "less than 30 seconds")."""
        for cluster in (self, *clusters):
            if cluster is not None:
                cluster._bounce_left = cluster.bounce_requests

    def bouncing(self) -> bool:
        """True (and one request used up) while the quorum re-forms after a portal change."""
        if self._bounce_left > 0:
            self._bounce_left -= 1
            return True
        return False

    def _spoke(self, spoke_id: str) -> dict[str, Any]:
        spoke = self.spokes.get(int(spoke_id))
        if spoke is None or spoke.get("gone"):
            raise QumuloFault(404, "portal_not_found_error", f"spoke portal {spoke_id} not found")
        return spoke

    def _live_spokes(self) -> list[dict[str, Any]]:
        """Deleting portals finish their sync as they are read (ASSUMED pace: `deleting_polls` reads);
        one whose hub is unreachable stalls when `stall_delete_without_hub` is set."""
        for spoke in list(self.spokes.values()):
            if spoke["state"] == "DELETING" and not spoke.get("gone"):
                if self.stall_delete_without_hub and self._peer(spoke["hub_hosts"]) is None:
                    continue
                spoke["deleting_left"] -= 1
                if spoke["deleting_left"] < 0:
                    self._finish_delete(spoke)
        return [s for s in self.spokes.values() if not s.get("gone")]

    def _draining(self, spoke_id: str) -> dict[str, Any]:
        """The spoke record, one read further into a drain towards read-only or paused (if one runs)."""
        spoke = self._spoke(spoke_id)
        if spoke.get("drain"):
            target, left = spoke["drain"]
            spoke["drain"] = (target, left - 1) if left > 0 else None
            if left <= 0 and self.spoke_reflects_type:
                spoke["type"] = target
        return spoke

    def _spoke_view(self, spoke: dict[str, Any]) -> dict[str, Any]:
        hub = self._peer(spoke["hub_hosts"])
        linked = spoke["state"] in ("ACCEPTED", "DELETING")
        same_release = hub is not None and hub.version == self.version
        status = ("ACTIVE" if hub and same_release else "DEGRADED") if linked else "INACTIVE"
        if spoke.get("drain"):
            status = "PAUSING" if spoke["drain"][0] == "PORTAL_PAUSED" else "QUIESCING"
        view = {k: v for k, v in spoke.items() if k not in ("deleting_left", "gone", "drain")}
        return {**view, "status": status, "roots": [dict(r) for r in spoke["roots"]]}

    def _create_spoke(self, body: dict[str, Any], **_: Any) -> Reply:
        live = self._live_spokes()
        if len(live) >= MAX_SPOKE_PORTALS:
            raise QumuloFault(
                400, "portal_limit_exceeded_error", f"at most {MAX_SPOKE_PORTALS} spoke portals"
            )  # ASSUMED class
        hub = self._peer(body["hub_hosts"])
        spoke_id = int(self._new_id())
        record = {"id": spoke_id, "type": body["type"], "state": "PENDING", "hub_hosts": body["hub_hosts"],
                  "hub_id": 0, "hub_cluster_uuid": "", "hub_cluster_name": None, "filesystem_uuid": "",
                  "roots": [], "deleting_left": 0}  # fmt: skip
        if hub is None:
            raise QumuloFault(self.unreachable_status, *UNREACHABLE)
        if any(s["hub_cluster_uuid"] == hub.cluster_id for s in live):
            # "Qumulo Core doesn't support a single cluster establishing two portal relationships with the
            # same remote cluster" (known limits); the class name is ASSUMED.
            raise QumuloFault(
                400, "portal_relationship_exists_error", "a portal relationship with this cluster exists"
            )
        with hub._lock:
            hub_id = int(hub._new_id())
            hub.hubs[hub_id] = {"id": hub_id, "type": body["type"], "state": "PENDING", "spoke_hosts": [],
                                "spoke_cluster_uuid": self.cluster_id, "spoke_cluster_name": self.name,
                                "pending_roots": [], "authorized_roots": [], "filesystem_uuid": hub.cluster_id,
                                "spoke_id": spoke_id, "spoke": self}  # fmt: skip
        record.update(state="PENDING", hub_id=hub_id, hub_cluster_uuid=hub.cluster_id, hub_cluster_name=hub.name,
                      filesystem_uuid=hub.cluster_id)  # fmt: skip
        self.spokes[spoke_id] = record
        return 200, self._spoke_view(record)

    def _patch_spoke(self, spoke_id: str, body: dict[str, Any], **_: Any) -> Reply:
        self._spoke(spoke_id)["hub_hosts"] = body["hub_hosts"]
        return 200, self._spoke_view(self._spoke(spoke_id))

    def _propose_root(self, spoke_id: str, body: dict[str, Any], **_: Any) -> Reply:
        spoke = self._spoke(spoke_id)
        hub = self._peer(spoke["hub_hosts"])
        if hub is None:
            raise QumuloFault(self.unreachable_status, *UNREACHABLE)
        if body["spoke_root_path"].rstrip("/") in self.files:
            # "If this directory exists already, the system outputs an error" (qq portal help, SPOKE_ROOT_HELP)
            raise QumuloFault(400, "fs_entry_exists_error", f"{body['spoke_root_path']} already exists")
        with hub._lock:
            hub_root = hub._file(body["hub_root_path"].rstrip("/") or "/")[1]["id"]
            hub.hubs[spoke["hub_id"]]["pending_roots"].append(hub_root)
        local = self._mkdirs(body["spoke_root_path"])
        spoke["roots"].append({"local_root": local, "remote_root": hub_root, "authorized": False})
        return 200, self._spoke_view(spoke)

    def _delete_spoke(self, spoke_id: str, query: dict[str, str], **_: Any) -> Reply:
        spoke = self._spoke(spoke_id)
        force = query.get("force") == "true"
        hub = self._peer(spoke["hub_hosts"])
        self._bounce(hub)
        if force:  # "--force ... delete a spoke portal with any status and in any state"
            self._finish_delete(spoke)
            return 202, None
        if hub is None and not self.stall_delete_without_hub:
            # "in any state ... and without connectivity to the hub portal": deleted, capacity reclaimed
            self._finish_delete(spoke)
            return 202, None
        spoke.update(state="DELETING", deleting_left=self.deleting_polls)
        return 202, None

    def _finish_delete(self, spoke: dict[str, Any]) -> None:
        spoke["gone"] = True
        for root in spoke["roots"]:  # the spoke's root directory and its cache go with the portal
            path = self._file(root["local_root"])[0]
            for p in [p for p in self.files if p == path or p.startswith(path + "/")]:
                del self.files[p]
        hub = self._peer(spoke["hub_hosts"])
        if hub is not None and spoke["hub_id"] in hub.hubs and hub.hubs[spoke["hub_id"]]["spoke"] is self:
            del hub.hubs[spoke["hub_id"]]  # a clean end removes both records (docs, deletion step 3)

    # ----- hub side
    def _hub(self, hub_id: str) -> dict[str, Any]:
        if int(hub_id) not in self.hubs:
            raise QumuloFault(404, "portal_not_found_error", f"hub portal {hub_id} not found")
        return self.hubs[int(hub_id)]

    def _hub_view(self, hub: dict[str, Any]) -> dict[str, Any]:
        spoke = hub["spoke"]
        record = spoke.spokes.get(hub["spoke_id"])
        spoke_up = spoke.reachable and record is not None and not record.get("gone")
        status = ("ACTIVE" if spoke_up else "DEGRADED") if hub["state"] == "ACCEPTED" else "INACTIVE"
        view = {k: v for k, v in hub.items() if k not in ("spoke", "spoke_id")}
        return {**view, "status": status}

    def _accept(self, hub_id: str, body: dict[str, Any], **_: Any) -> Reply:
        hub = self._hub(hub_id)
        if hub["state"] != "PENDING":
            raise QumuloFault(400, "portal_invalid_state_error", f"hub portal {hub_id} is not pending")
        hub.update(state="ACCEPTED", spoke_hosts=body["spoke_hosts"])
        for root in body.get("authorized_roots", []):
            self._move_root(hub, root)
        hub["spoke"].spokes[hub["spoke_id"]]["state"] = "ACCEPTED"
        view = self._hub_view(hub)
        self._bounce(hub["spoke"])
        return 200, view

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
        record = hub["spoke"].spokes.get(hub["spoke_id"])
        if "type" in body and record is not None and record["type"] != body["type"]:
            if body["type"] == "PORTAL_READ_WRITE":  # nothing to drain
                record.update(drain=None)
                if hub["spoke"].spoke_reflects_type:
                    record["type"] = body["type"]
            else:
                record["drain"] = (body["type"], hub["spoke"].drain_polls)
        view = self._hub_view(hub)
        self._bounce(hub["spoke"])
        return 200, view

    def _delete_hub(self, hub_id: str, **_: Any) -> Reply:
        hub = self._hub(hub_id)
        # "You can delete a hub portal in any state ... and without connectivity to the spoke portal".
        del self.hubs[int(hub["id"])]
        self._bounce(hub["spoke"] if hub["spoke"].reachable else None)
        return 202, None

    def _set_eviction(self, body: dict[str, Any], **_: Any) -> Reply:
        if not 0.0 <= float(body["free_threshold"]) <= 1.0:
            raise QumuloFault(400, "api_validation_error", "free_threshold must be in [0.0, 1.0]")
        self.free_threshold = float(body["free_threshold"])
        return 200, {"free_threshold": self.free_threshold}
