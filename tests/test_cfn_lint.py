"""cfn-lint over every template of every topology shape (config/dev.yaml and tests/shapes.py): zero errors and zero
warnings, except the checks .cfnlintrc.yaml ignores with its reason (CDK's own schema check is off, see new_app).
One cfn-lint run for all of them: its start-up is most of its time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, load_shape, shape_names


@pytest.mark.parametrize(
    "names",
    [
        # `make synth` runs the same cfn-lint, configuration and exit rule over config/dev.yaml's and
        # config/smoke.yaml's templates (Makefile, lint-templates) before `make test` in CI and on a fresh
        # machine, so the fast tier leaves dev to it (one cfn-lint run, about 6 s, fewer).
        pytest.param(["dev"], id="dev", marks=pytest.mark.thorough),
        pytest.param(shape_names(), id="every-shape", marks=pytest.mark.thorough),
    ],
)
def test_every_shapes_templates_have_no_cfn_lint_errors_or_warnings(
    names: list[str], tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    paths = []
    for name in names:
        for stack_id, template in load_shape(name, tmp_path_factory).templates.items():
            path = tmp_path / f"{name}-{stack_id}.template.json"
            path.write_text(json.dumps(template))
            paths.append(str(path))
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "cfn-lint"),
            "--config-file",
            str(ROOT / ".cfnlintrc.yaml"),
            "--format",
            "parseable",
            "--",
            *paths,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = [
        line for line in result.stdout.splitlines() if ":E" in line or line.split(":")[-2:-1] == ["error"]
    ]
    # cfn-lint exit codes are a bit mask: 2 means at least one error, 4 a warning; info (8) is allowed.
    assert not result.returncode & 2 and not errors, result.stdout + result.stderr
    assert not result.returncode & 4, result.stdout
    assert result.returncode & 1 == 0, result.stderr  # 1: cfn-lint itself failed
