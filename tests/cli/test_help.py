"""Every command added here answers --help with a runnable example."""

from __future__ import annotations

import pytest

from hubspoke.cli.main import main


@pytest.mark.parametrize("command", ["plan", "preflight", "verify", "cost", "diagram"])
def test_help_has_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "Example:" in out
    assert f"hubspoke {command} --config" in out.split("Example:", 1)[1]
