"""HyperPod lifecycle scripts: on_create.sh, the same for every Region, staged as the asset HyperPod downloads.

No CDK here: the Compute stack ships the staged directory as an asset, and tests run the script against stubs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ON_CREATE = "on_create.sh"
TEMPLATE = Path(__file__).with_name(ON_CREATE)


def write_lifecycle_scripts(directory: Path) -> Path:
    """Copy the lifecycle scripts into `directory` (the asset HyperPod downloads, nothing else) and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / ON_CREATE
    shutil.copyfile(TEMPLATE, target)
    target.chmod(0o755)
    return directory
