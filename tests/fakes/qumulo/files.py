"""Files and NFS exports of the Qumulo contract fake (REST API guide: File System, NFS Methods).

Shapes follow the routes' SDK modules (qumulo.rest.fs, qumulo.rest.nfs, qumulo-api 7.10.2.1); what no
source states is marked ASSUMED.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from tests.fakes.qumulo.server import QumuloFault, Reply


class FilesMixin:
    """The cluster's file tree (paths to attributes), NFS exports, fetch-data accounting, and what its cache holds.

    Holding (a spoke portal's cache): a region is held once fetch-data or a read has brought it in, until
    `evict` drops it. Qumulo documents eviction only as capacity-driven ("removes cached data in the background
    until it meets its configured free threshold") or an operator's portal_evict_tree (docs, "Configuring cache
    management for spoke portals"); `evict` stands for either, with no claim about which blocks go first.
    fetch-data answers `bytes_fetched`, "The number of bytes fetched into the cache" (REST API guide,
    files_ref_fetch-data). ASSUMED: that counts only bytes the spoke had to fetch (held bytes count 0), the
    reading `fetch_reports = "missing"` serves; the SDK's own fetch_data_loop (qumulo-api 7.10.2.1,
    commands/fs.py) counts it against --max-bytes as if it were every byte covered, the reading
    `fetch_reports = "covered"` serves. prewarm's residency check finds out which one a cluster follows.
    """

    files: dict[str, dict[str, Any]]
    exports: dict[str, dict[str, Any]]
    # Bytes fetch-data brought into the cache, per path: what crossed from the hub (test accounting, not an answer).
    fetched_bytes: dict[str, int]
    # Byte ranges [start, end) the cache holds, per path.
    held: dict[str, list[tuple[int, int]]]
    fetch_reports: str
    entries_page_size: int
    _lock: threading.RLock
    _inherit_acl: Callable[[str], None]  # AuthMixin's: a new entry's ACL from its parent's inheritable ACEs

    def _new_id(self) -> str:
        raise NotImplementedError

    def _init_files(self) -> None:
        self.files = {"/": {"id": "2", "type": "FS_FILE_TYPE_DIRECTORY", "size": 0}}
        self.exports = {}
        self.fetched_bytes = {}
        self.held = {}
        self.fetch_reports = "missing"
        self.entries_page_size = 1000  # ASSUMED server default when the client sends no `limit`

    def _file_routes(self) -> list[tuple[str, str, Any]]:
        return [
            # NFS Methods, v3_nfs_exports and v3_nfs_exports_export_id (SDK: qumulo.rest.nfs)
            ("GET", r"/v3/nfs/exports/", lambda **_: (200, {"entries": list(self.exports.values())})),
            ("POST", r"/v3/nfs/exports/", self._add_export),
            ("PATCH", r"/v3/nfs/exports/([^/]+)", self._modify_export),
            # File System, files_ref_info_attributes and files_ref_fetch-data (SDK: qumulo.rest.fs)
            ("GET", r"/v1/files/([^/]+)/info/attributes", self._attributes),
            # files_ref_entries (SDK: qumulo.rest.fs.read_directory / read_entire_directory, which follow paging.next)
            ("GET", r"/v1/files/([^/]+)/entries/", self._entries),
            ("POST", r"/v1/files/([^/]+)/fetch-data", self._fetch_data),
            # files_ref_entries POST (SDK: fs.create_directory, create_file, rename: an `action` each)
            ("POST", r"/v1/files/([^/]+)/entries/", self._create_entry),
            # files_ref_data (SDK: fs.read_file with offset/length; fs.write_file PUT replaces the content)
            ("GET", r"/v1/files/([^/]+)/data", self._read_data),
            ("PUT", r"/v1/files/([^/]+)/data", self._write_data),
            # files_ref DELETE (SDK: fs.delete): a file, or an empty directory
            ("DELETE", r"/v1/files/([^/]+)", self._delete),
            # files_ref_file-lock (SDK: fs.modify_file_lock): a legal hold or a retention period on a file
            ("PATCH", r"/v1/files/([^/]+)/file-lock", self._file_lock),
        ]

    def _file_lock(self, ref: str, body: dict[str, Any], **_: Any) -> Reply:
        """ "Apply a permanent retention period or removable legal hold preventing deletion or modification of a
        file. The target file must already exist." (REST API guide, files_ref_file-lock). ASSUMED: a directory is
        refused (the administrator guide: "A file lock can prevent a regular file from being modified")."""
        path, info = self._file(ref)
        if info["type"] != "FS_FILE_TYPE_FILE":
            raise QumuloFault(400, "fs_not_a_file_error", f"{ref} is not a file")  # ASSUMED class
        if "legal_hold" in body:
            info["legal_hold"] = bool(body["legal_hold"])
        if body.get("retention_period"):
            info["retention_period"] = str(body["retention_period"])
        return 200, self._attributes(path)[1]

    def _refuse_if_locked(self, path: str, info: dict[str, Any]) -> None:
        """Under a legal hold or a retention period a file "cannot be deleted or modified" (REST API guide,
        files_ref_file-lock). ASSUMED status and class of the refusal (the guide lists no error bodies)."""
        if info.get("legal_hold") or info.get("retention_period"):
            raise QumuloFault(403, "fs_file_locked_error", f"{path} is locked")

    def add_file(self, path: str, size: int, data: bytes | None = None) -> str:
        """A file of `size` bytes; with `data`, its content (size is then len(data)), readable over REST."""
        with self._lock:
            self._mkdirs(path.rsplit("/", 1)[0] or "/")
            file_id = self._new_id()
            self.files[path] = {"id": file_id, "type": "FS_FILE_TYPE_FILE", "size": size}
            self._inherit_acl(path)
            if data is not None:
                self.files[path].update(size=len(data), data=data)
            return file_id

    def held_bytes(self, prefix: str = "/") -> int:
        """Bytes the cache holds in files under `prefix`."""
        with self._lock:
            return sum(e - s for p, spans in self.held.items() if p.startswith(prefix) for s, e in spans)

    def evict(self, prefix: str = "/", *, keep_every: int = 0) -> int:
        """Drop what the cache holds under `prefix` (every file, or all but every `keep_every`-th in path order);
        returns the bytes dropped."""
        with self._lock:
            paths = sorted(p for p in self.held if p.startswith(prefix))
            dropped = 0
            for index, path in enumerate(paths):
                if keep_every and index % keep_every == 0:
                    continue
                dropped += sum(e - s for s, e in self.held.pop(path))
            return dropped

    def _hold(self, path: str, start: int, end: int) -> int:
        """Mark [start, end) held; the bytes that were not held before."""
        spans = self.held.setdefault(path, [])
        before = sum(e - s for s, e in spans)
        merged: list[tuple[int, int]] = []
        for s, e in sorted([*spans, (start, end)]):
            if merged and s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        self.held[path] = merged
        return sum(e - s for s, e in merged) - before

    def read_back(self, path: str) -> bytes:
        """A file's content as a test sees it on the cluster."""
        return bytes(self.files[path].get("data", b"\0" * self.files[path]["size"]))

    def _create_entry(self, ref: str, body: dict[str, Any], **_: Any) -> Reply:
        parent, info = self._file(ref if ref == "/" else ref.rstrip("/"))
        if info["type"] != "FS_FILE_TYPE_DIRECTORY":
            raise QumuloFault(400, "fs_not_a_directory_error", f"{ref} is not a directory")
        name = str(body["name"]).rstrip("/")
        target = (parent.rstrip("/") + "/" + name) if parent != "/" else "/" + name
        action = body.get("action")
        if action == "RENAME":
            source, _ = self._file(str(body["old_path"]).rstrip("/"))
            # ASSUMED class and status: rename without clobber refuses an existing target, as POSIX link does.
            if target in self.files and not body.get("clobber"):
                raise QumuloFault(409, "fs_entry_exists_error", f"{target} already exists")
            if target in self.files:
                self._refuse_if_locked(target, self.files[target])  # a clobber deletes the target
            moved = {p: v for p, v in self.files.items() if p == source or p.startswith(source + "/")}
            acls: dict[str, Any] = getattr(self, "acls", {})
            for old, value in moved.items():
                del self.files[old]
                self.files[target + old[len(source) :]] = value
                if old in acls:  # an entry keeps its own ACL when renamed
                    acls[target + old[len(source) :]] = acls.pop(old)
            return 200, self._attributes(target)[1]
        if action not in ("CREATE_DIRECTORY", "CREATE_FILE"):
            raise QumuloFault(400, "http_bad_request_error", f"unknown action {action!r}")
        # ASSUMED class and status of creating a name that exists (the REST guide lists no error bodies).
        if target in self.files:
            raise QumuloFault(409, "fs_entry_exists_error", f"{target} already exists")
        kind = "FS_FILE_TYPE_DIRECTORY" if action == "CREATE_DIRECTORY" else "FS_FILE_TYPE_FILE"
        self.files[target] = {"id": self._new_id(), "type": kind, "size": 0}
        self._inherit_acl(target)
        if kind == "FS_FILE_TYPE_FILE":
            self.files[target]["data"] = b""
        return 200, self._attributes(target)[1]

    def _delete(self, ref: str, **_: Any) -> Reply:
        path, info = self._file(ref if ref == "/" else ref.rstrip("/"))
        self._refuse_if_locked(path, info)
        if any(p.startswith(path.rstrip("/") + "/") for p in self.files):
            # ASSUMED class and status (POSIX rmdir refuses a non-empty directory too).
            raise QumuloFault(409, "fs_directory_not_empty_error", f"{path} is not empty")
        del self.files[path]
        getattr(self, "acls", {}).pop(path, None)
        return 200, None

    def _read_data(self, ref: str, query: dict[str, str], **_: Any) -> Reply:
        path, info = self._file(ref)
        if info["type"] != "FS_FILE_TYPE_FILE":
            raise QumuloFault(400, "fs_not_a_file_error", f"{ref} is not a file")
        data = self.read_back(path)
        offset = int(query.get("offset") or 0)
        end = len(data) if query.get("length") is None else offset + int(query["length"])
        # A read through the spoke caches what it read ("recaches data on spoke portals upon access").
        self._hold(path, offset, min(end, len(data)))
        return 200, data[offset:end]

    def _write_data(self, ref: str, body: Any, **_: Any) -> Reply:
        path, info = self._file(ref)
        self._refuse_if_locked(path, info)
        data = body if isinstance(body, bytes) else b""
        info.update(size=len(data), data=data)
        return 200, self._attributes(path)[1]

    def _mkdirs(self, path: str) -> str:
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:i])
            if sub not in self.files:
                self.files[sub] = {"id": self._new_id(), "type": "FS_FILE_TYPE_DIRECTORY", "size": 0}
                self._inherit_acl(sub)
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
        nxt = ""  # the last page (an empty directory's only page too)
        if len(remaining) > limit:
            nxt = f"/v1/files/{quote(ref, safe='')}/entries/?{urlencode({'after': page[-1][0], 'limit': limit})}"
        return 200, {"files": files, "paging": {"next": nxt, "prev": ""}}

    def _fetch_data(self, ref: str, body: dict[str, Any], **_: Any) -> Reply:
        path, info = self._file(ref)
        offset, size = int(body["offset"]), info["size"]
        length = int(body.get("length") or size)
        # ASSUMED: the server fetches at most 64 MiB per call and reports where to continue.
        chunk = max(0, min(64 << 20, length, size - offset))
        brought_in = self._hold(path, offset, offset + chunk)
        self.fetched_bytes[path] = self.fetched_bytes.get(path, 0) + brought_in
        reported = brought_in if self.fetch_reports == "missing" else chunk
        nxt = offset + chunk if offset + chunk < size and chunk < length else None
        return 200, {"bytes_fetched": str(reported), "next_offset": None if nxt is None else str(nxt)}

    def _add_export(self, body: dict[str, Any], query: dict[str, str], **_: Any) -> Reply:
        if any(e["export_path"] == body["export_path"] for e in self.exports.values()):
            raise QumuloFault(
                409, "nfs_export_path_exists_error", f"export {body['export_path']} already exists"
            )
        if body["fs_path"].rstrip("/") not in self.files and body["fs_path"] != "/":
            if query.get("allow-fs-path-create") != "true":
                raise QumuloFault(404, "fs_no_such_entry_error", f"{body['fs_path']} does not exist")
            self._mkdirs(body["fs_path"])
        export_id = self._new_id()
        self.exports[export_id] = {"id": export_id, "tenant_id": 1, "fields_to_present_as_32_bit": [], **body}
        return 200, self.exports[export_id]

    def _modify_export(self, export_id: str, body: dict[str, Any], **_: Any) -> Reply:
        if export_id not in self.exports:
            raise QumuloFault(404, "nfs_export_doesnt_exist_error", f"export {export_id} does not exist")
        self.exports[export_id].update(body)
        return 200, self.exports[export_id]
