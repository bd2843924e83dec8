"""The Region-local NFS exports of a cluster (GET/POST/PATCH /v3/nfs/exports/, qumulo.rest.nfs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qumulo.rest.nfs import NFSExportRestriction


@dataclass(frozen=True)
class ExportSpec:
    """One NFS export: a filesystem path, published under the same name, for the given client CIDRs."""

    path: str
    client_cidrs: tuple[str, ...]
    read_only: bool
    # The hub creates its dataset directory; a spoke's portal root must not exist before the portal does.
    create_path: bool


def _restriction(spec: ExportSpec) -> dict[str, Any]:
    return {
        "host_restrictions": sorted(spec.client_cidrs),
        "read_only": spec.read_only,
        "require_privileged_port": False,
        # Training jobs run as arbitrary UIDs and expect to see their own files: no squashing.
        "user_mapping": "NFS_MAP_NONE",
    }


def _matches(export: dict[str, Any], spec: ExportSpec) -> bool:
    restrictions = export.get("restrictions") or []
    if export.get("fs_path") != spec.path or len(restrictions) != 1:
        return False
    have, want = restrictions[0], _restriction(spec)
    return all(
        sorted(have.get(k) or []) == want[k] if k == "host_restrictions" else have.get(k) == want[k]
        for k in want
    )


def ensure_export(client: Any, spec: ExportSpec) -> bool:
    """One NFS export of `spec.path` for the VPC CIDRs (GET/POST/PATCH /v3/nfs/exports/); True if changed."""
    exports = client.nfs.nfs_list_exports()["entries"]
    existing = next((e for e in exports if e.get("export_path") == spec.path), None)
    restrictions = [NFSExportRestriction(_restriction(spec))]
    if existing is None:
        client.nfs.nfs_add_export(
            export_path=spec.path,
            fs_path=spec.path,
            description="hubspoke: managed by the Storage stack",
            restrictions=restrictions,
            allow_fs_path_create=spec.create_path,
        )
        return True
    if _matches(existing, spec):
        return False
    client.nfs.nfs_modify_export(
        existing["id"], fs_path=spec.path, restrictions=restrictions, allow_fs_path_create=spec.create_path
    )
    return True
