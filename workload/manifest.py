"""Dataset version manifests for the workload (prewarm, train): hubspoke/dataset_manifest.py is their one home.

The image copies that module under PYTHONPATH (workload/Dockerfile), so `import manifest` beside train.py and
`hubspoke dataset load` on an operator's machine read and write the same format.
"""

from __future__ import annotations

from hubspoke.dataset_manifest import (
    FORMAT,
    MANIFEST_NAME,
    FileEntry,
    Manifest,
    ManifestError,
    check_files,
    create_version,
    dataset_root,
    load,
    parse,
    scan,
    sha256_file,
    to_json,
    validate,
    write,
)

__all__ = [
    "FORMAT",
    "MANIFEST_NAME",
    "FileEntry",
    "Manifest",
    "ManifestError",
    "check_files",
    "create_version",
    "dataset_root",
    "load",
    "parse",
    "scan",
    "sha256_file",
    "to_json",
    "validate",
    "write",
]
