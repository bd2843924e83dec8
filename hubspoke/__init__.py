"""hubspoke: train where the GPUs are while the dataset stays in its hub Region."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    __version__: str
else:

    def __getattr__(name: str) -> str:
        """`hubspoke.__version__`: pyproject.toml's `[project] version` (its one home) as installed, read only when
        asked, since the Lambda bundles and the training image import this package without its metadata. Hidden
        from type checkers, which would otherwise take every unknown attribute of the package for a string."""
        if name != "__version__":
            raise AttributeError(f"module 'hubspoke' has no attribute {name!r}")
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("hubspoke")
        except (
            PackageNotFoundError
        ):  # a copy of the sources that pip never installed (`make setup` installs it)
            return "0+not-installed"
