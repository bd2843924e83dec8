"""Refuse a base image whose PyTorch the training image cannot use: run by workload/Dockerfile during the build.

Two bounds, both on the installed torch:
- hyperpod-elastic-agent 1.1.3 (hyperpodrun, the launcher of HyperPodPyTorchJob) declares
  `Requires-Dist: torch<2.12.0,>=2.4.0` (its PKG-INFO on PyPI; pyproject.toml `torch>=2.4.0,<2.12.0`). pip
  would otherwise replace the base image's CUDA build of torch with another one from PyPI, or fail.
- train.py imports `fully_shard` from `torch.distributed.fsdp` (public there since PyTorch 2.6: the page
  "torch.distributed.fsdp.fully_shard" of the PyTorch docs was created 2024-12-04 for 2.6; before, FSDP2
  lived in the private torch.distributed._composable.fsdp) and llama.py calls
  `F.scaled_dot_product_attention(..., enable_gqa=True)` (documented signature `..., scale=None,
  enable_gqa=False`). So >= 2.6.
The version bounds are compared on (major, minor): a local or pre-release build of 2.6 (2.6.0a0+git..., as
NVIDIA's containers carry) counts as 2.6; any 2.12 build, pre-releases included, is refused, as pip's
`<2.12.0` refuses 2.12 pre-releases. Because the docs date is the only source for the 2.6 bound, the script
also imports what train.py imports and looks for `enable_gqa`, so a build without them fails here, not on
the cluster.

Exit 0 and one line on stdout when the image fits; exit 1 and the reason on stderr otherwise.
"""

from __future__ import annotations

import re
import sys

# Inclusive lower bound, exclusive upper bound, on (major, minor).
LOWEST = (2, 6)
ABOVE_HIGHEST = (2, 12)
_VERSION = re.compile(r"^(\d+)\.(\d+)")


def minor_version(version: str) -> tuple[int, int]:
    """(major, minor) of a torch version string such as 2.7.1+cu128 or 2.6.0a0+gitabc."""
    match = _VERSION.match(version)
    if match is None:
        raise ValueError(f"torch reports version {version!r}, which is not MAJOR.MINOR...")
    return int(match.group(1)), int(match.group(2))


def problem(version: str) -> str | None:
    """Why torch `version` cannot run the training image, or None when it can."""
    found = minor_version(version)
    if found < LOWEST:
        return (
            f"torch {version} is older than 2.6: train.py needs torch.distributed.fsdp.fully_shard and "
            "scaled_dot_product_attention(enable_gqa=...); choose a base image with PyTorch 2.6 to 2.11"
        )
    if found >= ABOVE_HIGHEST:
        return (
            f"torch {version} is 2.12 or newer: hyperpod-elastic-agent 1.1.3 requires torch>=2.4.0,<2.12.0; "
            "choose a base image with PyTorch 2.6 to 2.11"
        )
    return None


def _features_missing() -> str | None:
    """What train.py uses that the installed torch lacks (checked only where torch is installed)."""
    import torch.nn.functional as functional

    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError:
        return "torch.distributed.fsdp has no fully_shard"
    doc = functional.scaled_dot_product_attention.__doc__ or ""
    if "enable_gqa" not in doc:
        return "scaled_dot_product_attention takes no enable_gqa"
    return None


def main(argv: list[str]) -> int:
    if argv:
        version = argv[0]  # a version to judge, for trying a candidate base image's version without it
    else:
        import torch

        version = str(torch.__version__)
    why = problem(version)
    if why is None and not argv:
        missing = _features_missing()
        if missing:
            why = f"torch {version}: {missing}, which train.py needs"
    if why is not None:
        print(f"torch_check: {why}", file=sys.stderr)
        return 1
    print(f"torch_check: torch {version} fits (>= 2.6 for train.py, < 2.12 for hyperpod-elastic-agent 1.1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
