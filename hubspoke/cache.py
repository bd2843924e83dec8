"""hubspoke's on-disk cache: where synth keeps what it can reuse across runs, keyed by content (no CDK)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Where `HUBSPOKE_CACHE_DIR` is unset: the XDG cache directory, as pip and the CDK CLI's own notices use it.
CACHE_ENV = "HUBSPOKE_CACHE_DIR"


def cache_dir() -> Path:
    """hubspoke's cache: `$HUBSPOKE_CACHE_DIR`, else `$XDG_CACHE_HOME/hubspoke`, else `~/.cache/hubspoke`."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hubspoke"


def writable(root: Path) -> Path:
    """`root`, created; where it cannot be (a read-only home), one temporary directory for this process,
    removed when it ends: nothing outlives the synth."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".probe-"):
            return root
    except OSError:
        global _FALLBACK
        _FALLBACK = _FALLBACK or tempfile.TemporaryDirectory(prefix="hubspoke-cache-")
        return Path(_FALLBACK.name)


_FALLBACK: tempfile.TemporaryDirectory[str] | None = None
