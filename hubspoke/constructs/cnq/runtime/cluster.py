"""Form a Cloud Native Qumulo cluster and converge its membership, one bounded step per is_complete poll.

Every step reads the cluster first, does only what is missing, and raises Pending while Qumulo works.
The steps follow Qumulo's own provisioner (Qumulo/qumulo-terraform-gcp @ a30b449c,
compute/module/sub-modules/qprovisioner/scripts/provision.py: wait for every node's REST API, check the
installed version, create the object-backed cluster, wait for ACTIVE; add or remove nodes with
modify_object_backed_cluster_membership and wait for the new quorum). REST calls go through the
qumulo-api 7.10.2.1 SDK; the module and route each call uses is named beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from qumulo.lib.request import RequestError

from .contract import create_sent_tag
from .session import Deadline, Pending, ProvisioningError, anonymous_client, describe

log = logging.getLogger(__name__)

# Qumulo's provisioner gives `qq create_object_backed_cluster` 300 s (qumulo-terraform-gcp @ a30b449c,
# provision.py qq_command timeout=300): creating the cluster answers slowly, unlike the calls around it.
CREATE_REQUEST_SECONDS = 300.0
# ASSUMED error class (the contract fake's): the answer to a create sent to a node that is already
# configured. After our own create it means "accepted, still switching modes", never a failure.
ALREADY_CONFIGURED = "cluster_already_configured_error"
# REST guide, /v1/node/state: "REMOVED - Configured node that has been removed from its cluster".
REMOVED = "REMOVED"


@dataclass(frozen=True)
class ClusterSpec:
    """What the stack asks of one cluster (the custom resource's properties, parsed)."""

    cluster_name: str
    node_ips: tuple[str, ...]
    node_instance_ids: tuple[str, ...]
    floating_ips: tuple[str, ...]
    floating_netmask: str
    object_storage_uris: tuple[str, ...]
    usable_capacity_bytes: int
    product_type: str
    version: str
    rest_port: int


class CreateLedger(Protocol):
    """Where a create, once sent, is written down (runtime/nodes.py: a tag on the first node's instance)."""

    def sent(self) -> str | None:
        """When the create was sent to this first node, None if never."""

    def record(self) -> None:
        """Write down that the create was sent (or may have been: no answer came)."""


@dataclass(frozen=True)
class NodeView:
    """One node as its unauthenticated endpoints show it: GET /v1/node/state and GET /v1/version."""

    ip: str
    instance_id: str
    state: str
    cluster_id: str
    version: str

    @property
    def removed(self) -> bool:
        return self.state == REMOVED

    @property
    def configured(self) -> bool:
        """A member of a cluster: configured (it has a cluster_id) and not removed from it."""
        return self.state not in ("UNCONFIGURED", REMOVED) and bool(self.cluster_id)


def numeric_version(revision_id: str) -> str:
    """'Qumulo Core 7.10.2.1' -> '7.10.2.1' (the format qumulo.rest.version.numeric_version parses)."""
    return revision_id.rsplit(" ", 1)[-1]


def survey(spec: ClusterSpec, deadline: Deadline) -> list[NodeView]:
    """Every node's state and installed release; Pending until all of them answer.

    Qumulo's provisioner polls https://<node>:8000/v1/node/state until each node answers, then reads the
    version (`qq version`, unauthenticated) before anything else.
    """
    views = []
    for ip, instance_id in zip(spec.node_ips, spec.node_instance_ids, strict=True):
        client = anonymous_client(ip, spec.rest_port, deadline)
        try:
            state = dict(client.node_state.get_node_state())
            version = numeric_version(str(client.version.version()["revision_id"]))
        except Exception as error:  # the SDK raises socket, TLS and HTTP errors alike while a node boots
            raise Pending(
                f"node {ip} ({instance_id}) does not answer on {spec.rest_port} yet ({describe(error)}): it is "
                f"booting or installing Qumulo Core {spec.version}; its console and the stack's install log "
                "group show HUBSPOKE-CNQ lines"
            ) from error
        views.append(
            NodeView(ip, instance_id, str(state.get("state")), str(state.get("cluster_id") or ""), version)
        )
    return views


def _check_versions(spec: ClusterSpec, views: Sequence[NodeView]) -> None:
    members = [v for v in views if v.configured]
    running = {v.version for v in members}
    if len(running) > 1:
        raise ProvisioningError(
            f"cluster {spec.cluster_name}: members run different releases {sorted(running)}; finish the "
            "upgrade with Qumulo's procedure before deploying"
        )
    expected = running.pop() if running else spec.version
    if members and expected != spec.version:
        raise ProvisioningError(
            f"cluster {spec.cluster_name} runs Qumulo Core {expected}, the config says {spec.version}: after an "
            f"in-place upgrade set storage.qumulo_core.version to {expected} and stage that release "
            "(docs/runbooks/qumulo-core.md), so that nodes added later install the release the cluster runs"
        )
    for view in views:
        if not view.configured and view.version != expected:
            # Qumulo's provisioner refuses the same way: "Can't add nodes running ver=...".
            raise ProvisioningError(
                f"node {view.ip} ({view.instance_id}) installed Qumulo Core {view.version}, the cluster needs "
                f"{expected}: the package staged for {spec.version} is another release; re-stage it "
                "(docs/runbooks/qumulo-core.md) and replace the node"
            )


def _refuse_removed(spec: ClusterSpec, views: Sequence[NodeView]) -> None:
    """A REMOVED node keeps its cluster_id and cannot join again: waiting for it would only run out the clock."""
    removed = [v for v in views if v.removed]
    if removed:
        names = ", ".join(f"{v.ip} ({v.instance_id})" for v in removed)
        raise ProvisioningError(
            f"cluster {spec.cluster_name}: node(s) {names} were removed from the cluster and stay REMOVED "
            "(Qumulo REST guide, node_state: 'configured node that has been removed from its cluster'); a removed "
            "node cannot join again and must be rebuilt: lower storage.node_count to drop it, deploy, then raise "
            "it again so that a new instance installs and joins (docs/runbooks/qumulo-core.md, 'A removed node')"
        )


def _create(spec: ClusterSpec, password: str, deadline: Deadline, ledger: CreateLedger) -> None:
    """POST /v5/cluster/object-backed/create to node 1, once: written down before any answer is read.

    Qumulo's provisioner sends it once, then waits for ACTIVE (qumulo-terraform-gcp @ a30b449c, provision.py
    create_new_cluster), and the SDK warns of "disconnects and errors" as the API switches mode
    (qumulo/commands/cluster.py, wait_for_first_quorum_following_cluster_create). Only a refused connection
    (may be resent) or a 4xx other than "already configured" (final) leaves no record.
    """
    first = anonymous_client(spec.node_ips[0], spec.rest_port, deadline, cap=CREATE_REQUEST_SECONDS)
    try:
        first.cluster.create_object_backed_cluster(
            cluster_name=spec.cluster_name,
            admin_password=password,
            host_instance_id=spec.node_instance_ids[0],
            object_storage_uris=list(spec.object_storage_uris),
            usable_capacity_clamp=spec.usable_capacity_bytes,
            product_type=spec.product_type,
            node_ips_and_fault_domains=[{"node_ip": ip, "fault_domain_id": None} for ip in spec.node_ips],
            eula_accepted=True,
        )
    except RequestError as error:
        if error.status_code < 500 and error.error_class != ALREADY_CONFIGURED:
            raise ProvisioningError(f"cluster {spec.cluster_name}: create: {describe(error)}") from error
        ledger.record()
        raise Pending(
            f"cluster {spec.cluster_name}: create answered {describe(error)}; the nodes are switching to "
            "configured mode"
        ) from error
    except ConnectionRefusedError as error:  # nothing reached the node: it may be sent at the next poll
        raise Pending(f"cluster {spec.cluster_name}: node 1 refused the create's connection") from error
    except OSError as error:  # reset, or our timeout: the create may have landed
        ledger.record()
        raise Pending(
            f"cluster {spec.cluster_name}: no answer to create ({describe(error)}); checking the nodes again"
        ) from error
    ledger.record()
    raise Pending(f"cluster {spec.cluster_name}: creation requested, first quorum forming")


def ensure_formed(
    spec: ClusterSpec, password: str, deadline: Deadline, ledger: CreateLedger
) -> tuple[str, list[NodeView]]:
    """Create the object-backed cluster if every node is still unconfigured and no create was sent; return
    its UUID once its members are ACTIVE, with every node's view.

    POST /v5/cluster/object-backed/create (qumulo.rest.cluster.create_object_backed_cluster), sent to the
    first node with that node's EC2 instance ID, as Qumulo's provisioner does; Pending until its quorum
    is ACTIVE (GET /v1/node/state on every member).
    """
    views = survey(spec, deadline)
    _refuse_removed(spec, views)
    _check_versions(spec, views)
    cluster_ids = {v.cluster_id for v in views if v.configured}
    if len(cluster_ids) > 1:
        raise ProvisioningError(
            f"cluster {spec.cluster_name}: nodes belong to different clusters {sorted(cluster_ids)}; "
            "replace the stray nodes or remove them from the configuration"
        )
    if not cluster_ids:
        sent = ledger.sent()
        if sent:
            raise Pending(
                f"cluster {spec.cluster_name}: create sent at {sent}, the nodes still answer UNCONFIGURED while "
                f"they switch modes; it is not sent again (if they never switch, the create did not take: "
                f"remove the tag {create_sent_tag()} from {spec.node_instance_ids[0]} and deploy again)"
            )
        log.info("forming cluster %s from %d nodes", spec.cluster_name, len(spec.node_ips))
        _create(spec, password, deadline, ledger)
    not_active = [v.ip for v in views if v.configured and v.state != "ACTIVE"]
    if not_active:
        raise Pending(
            f"cluster {spec.cluster_name}: quorum forming (not ACTIVE yet: {', '.join(not_active)})"
        )
    return cluster_ids.pop(), views


def require_active(spec: ClusterSpec, deadline: Deadline) -> None:
    """Pending unless every node answers ACTIVE as a member of one cluster (a quorum re-forming after
    add_object_storage_uris or capacity_clamp_set: Qumulo's provisioner waits for ACTIVE after each,
    qumulo-terraform-gcp @ a30b449c, provision.py update_capacity_limit -> wait_for_active_quorum)."""
    views = survey(spec, deadline)
    waiting = [v.ip for v in views if v.state != "ACTIVE"]
    if waiting or len({v.cluster_id for v in views}) != 1:
        raise Pending(
            f"cluster {spec.cluster_name}: quorum re-forming (not ACTIVE yet: {', '.join(waiting)})"
        )


def _membership(client: Any) -> list[str]:
    """GET /v2/cluster/object-backed/nodes (qumulo.rest.cluster.get_object_backed_nodes): member IPs."""
    membership = client.cluster.get_object_backed_nodes()["membership"]
    return [str(n["node_ip"]) for n in membership.get("node_ips_and_fault_domains") or []]


def ensure_membership(client: Any, spec: ClusterSpec, views: Sequence[NodeView]) -> None:
    """Add or remove nodes so that the members are exactly spec.node_ips, each of them ACTIVE.

    One POST /v2/cluster/object-backed/nodes (qumulo.rest.cluster.modify_object_backed_nodes) with the target
    membership, then Pending until every target node reports ACTIVE in `views` (this poll's survey of GET
    /v1/node/state), as Qumulo's provisioners wait (qumulo-terraform-gcp @ a30b449c, provision.py
    add_cluster_nodes; Qumulo/aws-terraform-cloud-q @ 2333002, modules/qprovisioner/scripts/provision.sh).
    """
    current = _membership(client)
    if set(current) == set(spec.node_ips):
        waiting = [v.ip for v in views if v.ip in current and v.state != "ACTIVE"]
        if waiting:
            raise Pending(
                f"cluster {spec.cluster_name}: member(s) {', '.join(waiting)} not ACTIVE in the quorum yet"
            )
        return
    if len(current) == 1 or len(spec.node_ips) == 1:
        # ASSUMED: Qumulo documents no path between a single-node cluster and a multi-node one.
        raise ProvisioningError(
            f"cluster {spec.cluster_name}: {len(current)} -> {len(spec.node_ips)} nodes is not a membership change "
            "Qumulo documents; keep storage.node_count at "
            f"{len(current)}, or build a new cluster and move the data (docs/runbooks/qumulo-core.md)"
        )
    log.info("cluster %s: membership %s -> %s", spec.cluster_name, current, list(spec.node_ips))
    client.cluster.modify_object_backed_nodes(
        target_membership={
            "node_ips_and_fault_domains": [{"node_ip": ip, "fault_domain_id": None} for ip in spec.node_ips],
            "node_uuids_and_fault_domains": None,
        }
    )
    raise Pending(f"cluster {spec.cluster_name}: membership change to {len(spec.node_ips)} nodes requested")
