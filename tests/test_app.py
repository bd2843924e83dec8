"""app.py, as `cdk synth` runs it: the same validation and messages as `hubspoke validate`, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, Templates, minimal, write_config


@pytest.mark.long
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
    assert (
        f"{bad}: inter_region_mtu: input should be less than or equal to 8500, got 9001; expected MTU"
        in result.stderr
    )
    assert "Traceback" not in result.stderr
    # App() creates its output folder; nothing may be written into it.
    out = tmp_path / "out"
    assert not out.exists() or not any(out.iterdir())


# One function outside any VPC in a Stage, checked by the Control Tower plugin: CT.LAMBDA.PR.3 refuses it.
_APP_WITH_A_FINDING = """
import sys
from aws_cdk import App, Stack, Stage, Validations
from aws_cdk import aws_lambda as lambda_
from hubspoke.policy.control_tower import ControlTowerControls
from hubspoke.stage import new_app, synth_or_exit

app = new_app() if sys.argv[1] == "hubspoke" else App()
stage = Stage(app, "Env")
stack = Stack(stage, "S")
lambda_.Function(stack, "Outside", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
                 code=lambda_.Code.from_inline("def handler(event, context): pass"))
Validations.of(stage).add_plugins(ControlTowerControls())
synth_or_exit(app) if sys.argv[1] == "hubspoke" else app.synth()
"""


@pytest.mark.thorough
def test_cdk_synth_fails_on_an_unacknowledged_finding(tmp_path: Path) -> None:
    """Run by the pinned CDK CLI, as `make synth` runs app.py: the CLI passes the app
    "@aws-cdk/core:failSynthOnValidationErrors": false and then checks the validation report only for the stacks
    it selected, none when every stack is in a Stage (aws-cdk 2.1148.1, lib/index.js contextFromSettings and
    selectTopLevelOrMatchingStacks), so a plain App synthesizes with the finding; hubspoke's new_app fails."""
    program = tmp_path / "app_with_a_finding.py"
    program.write_text(_APP_WITH_A_FINDING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # run as a user would
    env["PYTHONPATH"] = str(ROOT)
    codes = {}
    for app in ("plain", "hubspoke"):
        result = subprocess.run(
            [str(ROOT / "node_modules" / ".bin" / "cdk"), "synth", "--quiet", "--app",
             f"{sys.executable} {program} {app}", "--output", str(tmp_path / f"out-{app}")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        codes[app] = result.returncode
        if app == "hubspoke":
            assert "CT.LAMBDA.PR.3" in result.stdout + result.stderr, result.stderr[-2000:]
            # The report is the message: no Python traceback after it.
            assert "synth stopped" in result.stderr and "Traceback" not in result.stderr, result.stderr[
                -2000:
            ]
    assert codes["plain"] == 0, "the CLI now fails plain apps too: FAIL_ON_FINDINGS may no longer be needed"
    assert codes["hubspoke"] != 0


# Both apps of the fast twin in one process (one Python and jsii start-up instead of two): the plain App first,
# which must synthesize under the CLI's context, then new_app, which must stop.
_BOTH_APPS_WITH_A_FINDING = """
import sys
from aws_cdk import App, Stack, Stage, Validations
from aws_cdk import aws_lambda as lambda_
from hubspoke.policy.control_tower import ControlTowerControls
from hubspoke.stage import new_app, synth_or_exit

def with_a_finding(app):
    stage = Stage(app, "Env")
    stack = Stack(stage, "S")
    lambda_.Function(stack, "Outside", runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler",
                     code=lambda_.Code.from_inline("def handler(event, context): pass"))
    Validations.of(stage).add_plugins(ControlTowerControls())
    return app

with_a_finding(App(outdir=sys.argv[1])).synth()
print("the plain app synthesized", file=sys.stderr)
synth_or_exit(with_a_finding(new_app(outdir=sys.argv[2])))
"""


@pytest.mark.long
def test_new_app_fails_on_a_finding_under_the_context_the_cdk_cli_passes(tmp_path: Path) -> None:
    """The fast tier's twin of the CLI test above, without the CLI: the app run as the pinned CDK CLI runs it,
    with "@aws-cdk/core:failSynthOnValidationErrors": false in CDK_CONTEXT_JSON (aws-cdk 2.1148.1,
    lib/index.js contextFromSettings; aws-cdk-lib's App reads CDK_CONTEXT_JSON when it is constructed). A plain
    App then synthesizes despite the finding; new_app must still stop."""
    program = tmp_path / "apps_with_a_finding.py"
    program.write_text(_BOTH_APPS_WITH_A_FINDING)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(ROOT)
    env["CDK_CONTEXT_JSON"] = '{"@aws-cdk/core:failSynthOnValidationErrors": false}'
    result = subprocess.run(
        [sys.executable, str(program), str(tmp_path / "out-plain"), str(tmp_path / "out-hubspoke")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "the plain app synthesized" in result.stderr, result.stderr[-2000:]
    assert result.returncode == 1, result.stderr[-2000:]
    assert "CT.LAMBDA.PR.3" in result.stderr and "Traceback" not in result.stderr, result.stderr[-2000:]


@pytest.mark.thorough
def test_the_tests_synthesize_what_cdk_synth_writes(tmp_path: Path, dev_templates: Templates) -> None:
    """The tests' in-process synth (tests/conftest.py cli_context) yields the templates the pinned CDK CLI
    writes for config/dev.yaml, metadata included: what `make synth` leaves in cdk.out is what the tests judge,
    and the Control Tower verdicts `make synth` cached for those templates are the ones the tests read."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cdk"), "synth", "--quiet", "-c", "config=config/dev.yaml",
         "--output", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    manifest = json.loads((out / "assembly-hubspoke-dev" / "manifest.json").read_text())
    written = {
        artifact["displayName"].split("/", 1)[1]: json.loads(
            (out / "assembly-hubspoke-dev" / artifact["properties"]["templateFile"]).read_text()
        )
        for artifact in manifest["artifacts"].values()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    assert sorted(written) == sorted(dev_templates)
    for stack_id, template in written.items():
        assert template == dev_templates[stack_id], stack_id
    assert any(
        "aws:cdk:path" in r.get("Metadata", {}) for r in written["storage-us-east-2"]["Resources"].values()
    )
