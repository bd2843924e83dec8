"""A fake Qumulo cluster whose tree under one export path is also a real local directory: an NFS mount stand-in.

The contract fake keeps files in memory (files.py: path -> attributes, `data` when a test or a write gave
content, else zeros of `size`, as read_back shows). An NFS export presents the directory it exports as the root
of the mount, with the same names, sizes and bytes (Qumulo's NFS export guide: an export's `fs_path` is what
the client mounts). After every REST request this fake writes that subtree into `directory` (files and
directories the cluster has, nothing it does not), so a program reading the mount sees what the cluster holds.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tests.fakes.qumulo.cluster import FakeQumulo


class MountedQumulo(FakeQumulo):
    """FakeQumulo with `fs_path` of the cluster mirrored into `directory` after each request."""

    def __init__(self, *, fs_path: str, directory: Path, **fake: Any) -> None:
        super().__init__(**fake)
        self.fs_path, self.directory = fs_path.rstrip("/") or "/", directory
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
                if not local.is_file() or local.read_bytes() != data:
                    local.write_bytes(data)
            for root, dirs, names in os.walk(self.directory, topdown=False):
                for name in names:
                    if Path(root, name) not in wanted:
                        Path(root, name).unlink()
                for name in dirs:
                    if Path(root, name) not in wanted:
                        shutil.rmtree(Path(root, name))
