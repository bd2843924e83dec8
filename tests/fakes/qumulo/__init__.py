"""A contract fake of Qumulo clusters on 127.0.0.x, answering in Qumulo's shapes and refusing what it refuses.

cluster.py holds one cluster (nodes, formation, membership, host-managed network, capacity), files.py its
files and NFS exports, portal.py its portals, shift.py its Shift-From object relationships, server.py the TLS
listeners and Qumulo's error shape.
"""

from tests.fakes.qumulo.cluster import DEFAULT_VERSION, PSTORE_BYTES, FakeQumulo
from tests.fakes.qumulo.server import QumuloFault

__all__ = ["DEFAULT_VERSION", "PSTORE_BYTES", "FakeQumulo", "QumuloFault"]
