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


CROSS_REGION_PORTS: tuple[PeerPort, ...] = (
    PeerPort("tcp", NFS, "NFS"),
    PeerPort("tcp", RPCBIND, "rpcbind (NFSv3)"),
    PeerPort("tcp", QUMULO_PORTAL, "Qumulo portal (both directions, every node)"),
    # The spoke's provisioning Lambda accepts the portal on the hub through the hub's REST API.
    PeerPort("tcp", QUMULO_REST, "Qumulo REST API"),
    PeerPort(
        "icmp",
        ICMP_DESTINATION_UNREACHABLE,
        "path-MTU discovery (fragmentation needed)",
        icmp_code=ICMP_FRAGMENTATION_NEEDED,
    ),
)
