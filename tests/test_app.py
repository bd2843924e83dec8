"""app.py, as `cdk synth` runs it: the same validation and messages as `hubspoke validate`, exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, minimal, write_config


def test_bad_config_stops_synth_with_validate_messages(tmp_path: Path) -> None:
    data = minimal(inter_region_mtu=9001)
    bad = write_config(tmp_path, data)
    result = subprocess.run(
        [sys.executable, str(ROOT / "app.py")],
        cwd=ROOT,
        env={**os.environ, "CDK_CONTEXT_JSON": f'{{"config": "{bad}"}}', "CDK_OUTDIR": str(tmp_path / "out")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert f"{bad}: inter_region_mtu: 9001 exceeds 8500" in result.stderr
    assert "Traceback" not in result.stderr
    # App() creates its output folder; nothing may be written into it.
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())
