"""Every port this project opens or probes, in one place: security groups, the canary, the policy pack and the diagram.

Sources: Qumulo "Required networking ports" (NFS 2049, rpcbind 111, portal 3713 in both directions on every
node, REST 8000); EC2 User Guide "Path MTU Discovery" (ICMP type 3 code 4). Qumulo's replication port 3712
is not here: portals do not use it and nothing in hubspoke replicates, so it stays closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NFS = 2049
RPCBIND = 111
QUMULO_REPLICATION = 3712
QUMULO_PORTAL = 3713
QUMULO_REST = 8000
SSH = 22
# ICMP "destination unreachable / fragmentation needed": what path-MTU discovery listens for.
ICMP_DESTINATION_UNREACHABLE = 3
ICMP_FRAGMENTATION_NEEDED = 4


@dataclass(frozen=True)
class PeerPort:
    """One protocol and port (or ICMP type/code) that the cross-Region path must allow from a peer CIDR."""

    protocol: Literal["tcp", "udp", "icmp"]
    port: int
    purpose: str
    # For ICMP, `port` is the type and this is the code.
    icmp_code: int | None = None

    @property
    def label(self) -> str:
        if self.protocol == "icmp":
            return f"ICMP {self.port}/{self.icmp_code}"
        return f"{self.protocol.upper()} {self.port}"


# Only what crosses the peering, per direction, one security-group rule per peer CIDR each: every rule counts
# against the "Inbound or outbound rules per security group" quota (60 by default; config/quotas.py counts them).
_NFS_PROBE = PeerPort("tcp", NFS, "NFS (the spoke's hub canary probes it)")
_PORTAL = PeerPort("tcp", QUMULO_PORTAL, "Qumulo portal (both directions, every node)")
_REST = PeerPort(
    "tcp", QUMULO_REST, "Qumulo REST API (the spoke's provisioner accepts its portal on the hub)"
)
_PMTUD = PeerPort(
    "icmp",
    ICMP_DESTINATION_UNREACHABLE,
    "path-MTU discovery (fragmentation needed)",
    icmp_code=ICMP_FRAGMENTATION_NEEDED,
)
# Ingress on the hub's cross-Region security group from each spoke CIDR (the spoke's Link stack adds it):
# - TCP 2049: the hub canary in the spoke probes the hub's NFS port (stacks/ops.py CANARY_PORTS);
# - TCP 3713: portal traffic from the spoke's CNQ nodes (and the canary's probe of it);
# - TCP 8000: the spoke's provisioning Lambda calls the hub's REST API (cnq/runtime/portal.py, accept);
# - ICMP 3/4: path-MTU discovery over the 8500-byte path.
FROM_SPOKE: tuple[PeerPort, ...] = (_NFS_PROBE, _PORTAL, _REST, _PMTUD)
# Ingress on a spoke's cross-Region security group from each hub CIDR: the hub's CNQ nodes open portal
# connections too (3713 in both directions), and PMTUD. Nothing on the hub calls a spoke's NFS or REST.
FROM_HUB: tuple[PeerPort, ...] = (_PORTAL, _PMTUD)
# Not allowed across at all: rpcbind 111 (NFSv3 clients mount their own Region's CNQ, never a peer's) and
# replication 3712 (no replication relationship is configured; portals use 3713).
CROSS_REGION_PORTS: tuple[PeerPort, ...] = tuple(dict.fromkeys((*FROM_SPOKE, *FROM_HUB)))
