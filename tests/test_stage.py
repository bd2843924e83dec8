"""Adding or removing a spoke adds or removes only that spoke's stacks: no other template changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig, load
from tests.cli.verify_fixtures import TWO_SPOKES
from tests.conftest import ROOT, synth, write_config


def topology(*spokes: tuple[str, str]) -> dict[str, Any]:
    return {
        "environment": "grow",
        "account": "123456789012",
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
        "spokes": [{"region": r, "cidr": c} for r, c in spokes],
    }


@pytest.mark.thorough
def test_adding_and_removing_a_spoke_changes_no_other_template(config_from: Any) -> None:
    one = synth(config_from(topology(("us-west-2", "10.20.0.0/16"))))
    two = synth(config_from(topology(("us-west-2", "10.20.0.0/16"), ("eu-west-1", "10.30.0.0/16"))))
    # Removing us-west-2 from the pair leaves eu-west-1 alone: compare the three-way case as well.
    other = synth(config_from(topology(("eu-west-1", "10.30.0.0/16"))))
    added = set(two) - set(one)
    assert added and all(sid.endswith("eu-west-1") for sid in added)
    # The environment-wide dashboard shows every Region by design (hubspoke.topology); nothing else may change.
    for sid in (s for s in one if not s.startswith("dashboard-")):
        assert one[sid] == two[sid], f"{sid} changed when a spoke was added"
    for sid in (s for s in other if not s.startswith("dashboard-")):
        assert other[sid] == two[sid], f"{sid} changed when a spoke was removed"


@pytest.mark.long
def test_adding_a_spoke_changes_no_other_template(tmp_path: Any) -> None:
    """The fast tier's twin of the test above, one synth instead of three: the verify tests' two-spoke
    environment (synthesized once per run for them) against the same environment without its second spoke."""
    two = synth(load(write_config(tmp_path, TWO_SPOKES, "two.yaml")).config)
    first = {**TWO_SPOKES, "spokes": TWO_SPOKES["spokes"][:1]}
    assert first["spokes"][0]["region"] == "us-west-2"
    one = synth(load(write_config(tmp_path, first, "one.yaml")).config)
    added = set(two) - set(one)
    assert added and all(sid.endswith("eu-west-1") for sid in added) and not set(one) - set(two)
    for sid in (s for s in one if not s.startswith("dashboard-")):
        assert one[sid] == two[sid], f"{sid} changed when a spoke was added"


def test_a_planned_kind_without_a_builder_is_an_error(
    dev_config: HubSpokeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Silently skipping it (and the dependencies on it) would synthesize a partial environment."""
    from aws_cdk import App

    from hubspoke import stage

    monkeypatch.delitem(stage.BUILDERS, "link")
    with pytest.raises(ValueError, match=r"plans a link stack, but stage\.BUILDERS cannot build one"):
        stage.HubSpokeStage(App(), config=dev_config)


def _refreshed(config: HubSpokeConfig, token: str | None) -> dict[str, set[str]]:
    import json
    import tempfile
    from pathlib import Path

    from hubspoke.stage import HubSpokeStage, new_app

    with tempfile.TemporaryDirectory(prefix="hubspoke-refresh-") as outdir:
        # The app every synth runs in (its context and validation), with the token as `-c refresh=` sets it.
        app = new_app(outdir=outdir)
        if token:
            app.node.set_context("refresh", token)
        stage = HubSpokeStage(app, config=config)
        assembly = app.synth().get_nested_assembly(f"assembly-{stage.stage_name}")
        handles: dict[str, set[str]] = {}
        for sid, stack in stage.stacks.items():
            body = json.loads(
                Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path).read_text()
            )
            handles[sid] = {
                k
                for k, r in body["Resources"].items()
                if r["Type"] == "AWS::CloudFormation::WaitConditionHandle"
            }
    return handles


@pytest.mark.thorough
def test_a_refresh_token_makes_every_stack_an_update_and_no_token_leaves_templates_alone(
    dev_config: HubSpokeConfig,
) -> None:
    """Fn::GetStackOutput is resolved when the reading stack is created or updated (CloudFormation Template
    Reference); an unchanged template is not deployed at all, so `-c refresh=<token>` adds a resource whose
    logical ID follows the token, and a new token is always a change."""
    plain, first, second = (_refreshed(dev_config, t) for t in (None, "1764500000", "1764500060"))
    assert all(not ids for ids in plain.values())
    assert all(len(ids) == 1 for ids in first.values()), first
    assert first.keys() == plain.keys()
    assert all(first[sid] != second[sid] for sid in first)


def test_a_refresh_token_gives_every_planned_stack_one_handle_named_after_it(
    dev_config: HubSpokeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast tier's twin of the test above, without synthesizing: every builder replaced by one that makes an
    empty stack, so what is left is the Stage's own loop and its refresh (the whole synth's oracle holds for
    the resources it adds)."""
    from aws_cdk import CfnResource, Stack

    from hubspoke import stage

    for kind in list(stage.BUILDERS):
        monkeypatch.setitem(stage.BUILDERS, kind, lambda scope, plan, *, config: Stack(scope, plan.id))

    def handles(token: str | None) -> dict[str, set[str]]:
        app = stage.new_app()
        if token:
            app.node.set_context("refresh", token)
        built = stage.HubSpokeStage(app, config=dev_config)
        return {
            sid: {
                c.node.id
                for c in s.node.children
                if isinstance(c, CfnResource)
                and c.cfn_resource_type == "AWS::CloudFormation::WaitConditionHandle"
            }
            for sid, s in built.stacks.items()
        }

    plain, first, second = (handles(t) for t in (None, "1764500000", "1764500060"))
    assert len(plain) > 1 and all(not ids for ids in plain.values())
    assert all(len(ids) == 1 for ids in first.values()), first
    assert first.keys() == plain.keys()
    assert all(first[sid] != second[sid] for sid in first)


# app.py's ending, on the smallest app new_app builds: one stack with one resource.
_ONE_STACK_APP = """
import sys
from aws_cdk import Stack, aws_sns as sns
from hubspoke.process import exit_without_teardown
from hubspoke.stage import new_app
app = new_app(outdir=sys.argv[1])
sns.Topic(Stack(app, "S"), "T")
app.synth()
print("synthesized", file=sys.stderr, end="")
exit_without_teardown()
"""


def _run_one_stack_app(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    out, tmp = tmp_path / "cdk.out", tmp_path / "tmp"
    tmp.mkdir()
    # TMPDIR: Python's tempfile and Node's os.tmpdir() both make their scratch directories there.
    result = subprocess.run(
        [sys.executable, "-c", _ONE_STACK_APP, str(out)],
        cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp), **env}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return result, out, tmp


@pytest.mark.long
def test_the_exit_after_synth_stops_jsii_and_leaves_no_trace_but_the_assembly(tmp_path: Path) -> None:
    """exit_without_teardown skips the interpreter's teardown, not the exit handlers: jsii's (which stops the
    kernel and removes the temporary directory it unpacked its runtime into, jsii/_kernel/providers/process.py
    `stop`) runs, output is flushed, the exit code is 0. The cloud assembly holds no creation stack traces
    (hubspoke.stage.CONTEXT): aws-cdk-lib writes them as `aws:cdk:creationStack` metadata."""
    result, out, tmp = _run_one_stack_app(tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.endswith("synthesized"), result.stderr[-2000:]
    assert sorted(p.name for p in tmp.iterdir()) == [], "a temporary directory outlived the app"
    assert (out / "S.template.json").exists()
    assert "aws:cdk:creationStack" not in "".join(p.read_text() for p in out.rglob("*.json"))


@pytest.mark.thorough
def test_cdk_debug_still_records_creation_stack_traces(tmp_path: Path) -> None:
    """`cdk synth --debug` sets CDK_DEBUG=true for the app (aws-cdk 2.1148.1, lib/index.js
    synthParametersFromSettings); aws-cdk-lib records creation stacks in debug mode whatever the context says
    (core/lib/cfn-element.js: `!tryGetContext(DISABLE_CREATION_STACK_TRACES) || debugModeEnabled()`)."""
    result, out, _ = _run_one_stack_app(tmp_path, CDK_DEBUG="true")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "aws:cdk:creationStack" in "".join(p.read_text() for p in out.rglob("*.json"))
