"""A fake Qumulo cluster whose tree under one export path is also a real local directory: an NFS mount stand-in.

The contract fake keeps files in memory (files.py: path -> attributes, `data` when a test or a write gave
content, else zeros of `size`, as read_back shows). An NFS export presents the directory it exports as the root
of the mount, with the same names, sizes and bytes (Qumulo's NFS export guide: an export's `fs_path` is what
the client mounts). After every REST request this fake writes that subtree into `directory` (files and
directories the cluster has, nothing it does not), so a program reading the mount sees what the cluster holds.

With `nfs_acl`, a file is mirrored mode 0444 when the cluster's ACL lets an unmapped NFS reader (a pod's UID, no
local user: Everyone's ACEs only) READ it, else mode 0000, and `as_pod` runs a call as a reader the kernel holds
to those bits (Qumulo enforces its ACL on NFS: "Managing NFSv4.1 ACLs", Qumulo/docs@0765db6d).
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tests.fakes.qumulo.cluster import FakeQumulo


class MountedQumulo(FakeQumulo):
    """FakeQumulo with `fs_path` of the cluster mirrored into `directory` after each request."""

    def __init__(self, *, fs_path: str, directory: Path, nfs_acl: bool = False, **fake: Any) -> None:
        super().__init__(**fake)
        self.fs_path, self.directory, self.nfs_acl = fs_path.rstrip("/") or "/", directory, nfs_acl
        directory.mkdir(parents=True, exist_ok=True)

    def _dispatch(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super()._dispatch(*args, **kwargs)
        finally:
            self.sync()

    def sync(self) -> None:
        """Make the directory hold exactly the cluster's tree under fs_path."""
        with self._lock:
            prefix = self.fs_path.rstrip("/") + "/"
            wanted: dict[Path, dict[str, Any]] = {
                self.directory / path[len(prefix) :]: info
                for path, info in self.files.items()
                if path.startswith(prefix)
            }
            for local, info in sorted(wanted.items()):
                if info["type"] == "FS_FILE_TYPE_DIRECTORY":
                    local.mkdir(parents=True, exist_ok=True)
                    continue
                local.parent.mkdir(parents=True, exist_ok=True)
                data = bytes(info.get("data", b"\0" * int(info["size"])))
                if local.is_file():
                    os.chmod(local, 0o600)
                if not local.is_file() or local.read_bytes() != data:
                    local.write_bytes(data)
                if self.nfs_acl:
                    os.chmod(
                        local, 0o444 if self.may_read(prefix + str(local.relative_to(self.directory))) else 0
                    )
            for root, dirs, names in os.walk(self.directory, topdown=False):
                for name in names:
                    if Path(root, name) not in wanted:
                        Path(root, name).unlink()
                for name in dirs:
                    if Path(root, name) not in wanted:
                        shutil.rmtree(Path(root, name))


T = TypeVar("T")
# capability(7): CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2) let root read a mode-0000 file; capset(2) with
# _LINUX_CAPABILITY_VERSION_3 changes only the calling thread's sets.
_DAC_CAPS = (1 << 1) | (1 << 2)
_CAP_V3 = 0x20080522


def _drop_dac_capabilities() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(_CAP_V3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[0] &= ~_DAC_CAPS  # effective set of the first 32 capabilities
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def as_pod(call: Callable[[], T]) -> T:
    """call() in a new thread whose file access the mode bits decide, as a pod's non-root UID (for root: the thread
    drops its DAC capabilities; the threads it starts inherit that, the fake's server threads do not)."""
    result: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            if os.geteuid() == 0:
                _drop_dac_capabilities()
            result.append(call())
        except BaseException as exc:  # handed to the caller's thread
            error.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]
