"""One acknowledgment mechanism for cdk-nag, Control Tower and checkov, each checked against the tool itself.

Oracles: the Control Tower rule files shipped in cdklabs-cdk-validator-cfnguard (the control ID in each rule's
message, the rule name the plugin reports); checkov 3.3.30 run on a template (what it skips and what it fails);
CDK's policy-validation report (synth fails on an unacknowledged finding).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import cdklabs.cdk_validator_cfnguard as cfnguard_package
import pytest
from aws_cdk import App, CfnResource, Stack, Stage, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_lambda as lambda_

from hubspoke.policy.acks import CONTROL_TOWER_RULES, acknowledge, acknowledge_lambdas_in_vpc, applied_at_end
from hubspoke.policy.control_tower import ControlTowerControls
from tests.conftest import Templates

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".tools" / "checkov" / "bin" / "checkov"
LONG_REASON = "a reason long enough for a reviewer to check, naming what makes this acceptable"


def _guard_rules() -> dict[str, str]:
    """Control ID -> rule name, read from the plugin's bundled Control Tower rule files."""
    [tgz] = (Path(cfnguard_package.__file__).parent / "_jsii").glob("*.jsii.tgz")
    found: dict[str, str] = {}
    with tarfile.open(tgz) as archive:
        for member in archive.getmembers():
            if not member.name.endswith(".guard") or "control-tower" not in member.name:
                continue
            text = archive.extractfile(member).read().decode()  # type: ignore[union-attr]
            control = re.search(r"\[(CT\.[A-Z0-9]+\.PR\.\d+)\]", text)
            rule = re.search(r"^rule (\w+) when", text, re.M)
            if control and rule:
                found[control.group(1)] = rule.group(1)
    return found


def test_every_control_tower_id_maps_to_the_rule_the_plugin_reports() -> None:
    shipped = _guard_rules()
    assert len(shipped) > 100  # the bundled rule set, not an empty directory
    for control, rule in CONTROL_TOWER_RULES.items():
        assert shipped.get(control) == rule, control


# What each refusal must say: a short reason asks for one a reviewer can check; a rule or shape no tool takes
# names the shapes that are accepted.
_NEEDS_REASON = "needs a reason a reviewer can check"
_NAMES_SHAPES = "or a checkov ID with the resource_types it applies to"


@pytest.mark.parametrize(
    ("rule", "kwargs", "says"),
    [
        ("CT.LAMBDA.PR.3", {"reason": "ok"}, _NEEDS_REASON),
        ("CT.NOPE.PR.1", {"reason": LONG_REASON}, _NAMES_SHAPES),
        ("CT.LAMBDA.PR.3", {"reason": LONG_REASON, "findings": ["x"]}, _NAMES_SHAPES),
        ("CKV_AWS_116", {"reason": LONG_REASON, "findings": ["x"]}, _NAMES_SHAPES),
        ("CKV_AWS_116", {"reason": LONG_REASON}, _NAMES_SHAPES),
        ("Whatever-1", {"reason": LONG_REASON}, _NAMES_SHAPES),
    ],
)
def test_acknowledgments_without_a_reason_or_a_known_rule_are_refused(
    rule: str, kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValueError) as refused:
        acknowledge(Stack(App(), "S"), rule, **kwargs)
    # Each refusal its own words (the short reason's at its middle, the shapes' at its end), so swapped or
    # case-changed messages fail.
    text = str(refused.value)
    assert text.endswith(says) if says == _NAMES_SHAPES else says in text, text
    assert rule in text


def _stage_with_functions(*, acknowledged: bool, at_end: bool = False) -> tuple[App, Stage]:
    """Two functions, one in a VPC; `at_end` builds them as HubSpokeStage does (acks.applied_at_end)."""
    app = App()
    stage = Stage(app, "Env")
    with applied_at_end(stage) if at_end else contextlib.nullcontext():
        stack = Stack(stage, "Fns", env={"account": "123456789012", "region": "us-west-2"})
        isolated = ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0, subnet_configuration=[isolated])
        code = lambda_.Code.from_inline("def handler(event, context): pass")
        runtime = lambda_.Runtime.PYTHON_3_12
        in_vpc = lambda_.Function(
            stack, "InVpc", runtime=runtime, handler="index.handler", code=code, vpc=vpc
        )
        # Subnet IDs read from another stack, as our stacks read them (the rule cannot follow them).
        weak = {
            "Fn::GetStackOutput": {
                "StackName": "hubspoke-dev-network-us-west-2",
                "OutputName": "PrivateSubnet",
            }
        }
        in_vpc.node.default_child.add_property_override("VpcConfig.SubnetIds", [weak])  # type: ignore[union-attr]
        lambda_.Function(stack, "Outside", runtime=runtime, handler="index.handler", code=code)
        if acknowledged:
            acknowledge_lambdas_in_vpc(stage)
    Validations.of(stage).add_plugins(ControlTowerControls())
    return app, stage


@pytest.mark.long
def test_only_functions_in_a_vpc_are_acknowledged_for_ct_lambda_pr_3(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """CT.LAMBDA.PR.3's local rule rejects cross-stack subnet IDs; the acknowledgment covers functions that have
    a VpcConfig and nothing else, so a function outside any VPC still stops synth. The same whether an aspect
    applies it or the Stage's walk at the end of its build (which hands CDK the acknowledgment it kept)."""
    cases = ((False, False, ["InVpc", "Outside"]), (True, False, ["Outside"]), (True, True, ["Outside"]))
    for acknowledged, at_end, failing in cases:
        app, _ = _stage_with_functions(acknowledged=acknowledged, at_end=at_end)
        # An acknowledged finding must not turn the others into printed-only warnings: synth raises. The
        # report is in the exception (in-memory apps) or printed before it (CLI-run apps).
        with pytest.raises(Exception, match="ValidationFailed") as caught:
            app.synth()
        report = str(caught.value) + capsys.readouterr().err
        assert "CT.LAMBDA.PR.3" in report
        for name in ("InVpc", "Outside"):
            assert (f"Env/Fns/{name}/Resource" in report) == (name in failing), (acknowledged, name, report)


def _checkov(templates: dict[str, dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    """checkov's CloudFormation results over `templates` (name -> template), in one run."""
    assert CHECKOV.exists(), f"{CHECKOV} missing: `make setup` installs checkov into .tools/checkov"
    for name, template in templates.items():
        (tmp_path / f"{name}.template.json").write_text(json.dumps(template))
    result = subprocess.run(
        [
            str(CHECKOV),
            "--directory",
            str(tmp_path),
            "--framework",
            "cloudformation",
            "--skip-download",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    results: dict[str, Any] = (report[0] if isinstance(report, list) else report)["results"]
    return results


def _checkov_acknowledged_function() -> dict[str, Any]:
    """A stack of two functions, one of them acknowledged for CKV_AWS_116, synthesized."""
    app = App()
    stack = Stack(app, "S")
    code = lambda_.Code.from_inline("def handler(event, context): pass")
    for name in ("Acked", "Plain"):
        lambda_.Function(stack, name, runtime=lambda_.Runtime.PYTHON_3_12, handler="index.handler", code=code)
    acknowledge(
        stack.node.find_child("Acked"),
        "CKV_AWS_116",
        reason=LONG_REASON,
        resource_types=["AWS::Lambda::Function"],
    )
    template: dict[str, Any] = json.loads(
        Path(app.synth().get_stack_artifact("S").template_full_path).read_text()
    )
    return template


def test_a_checkov_acknowledgment_lands_on_the_named_resources_only() -> None:
    """The fast tier's half of the checkov test below (which runs checkov, about 10 s): the skip is written
    in the resource's Metadata where checkov reads it (checkov 3.3.30, tools/checkov-requirements.txt:
    checkov/cloudformation/context_parser.py, ContextParser.collect_skip_comments reads `Metadata.checkov.skip`,
    a list of {id, comment}), on the acknowledged function and not on its role or the other function."""
    template = _checkov_acknowledged_function()
    acked = {k: r for k, r in template["Resources"].items() if r.get("Metadata", {}).get("checkov")}
    assert [r["Type"] for r in acked.values()] == ["AWS::Lambda::Function"]  # not its role
    [(logical_id, resource)] = acked.items()
    assert logical_id.startswith("Acked")
    assert resource["Metadata"]["checkov"] == {"skip": [{"id": "CKV_AWS_116", "comment": LONG_REASON}]}


@pytest.mark.thorough
def test_a_checkov_acknowledgment_is_a_skip_checkov_honours_on_the_named_resources_only(
    tmp_path: Path,
) -> None:
    template = _checkov_acknowledged_function()
    acked = [r for r in template["Resources"].values() if r.get("Metadata", {}).get("checkov")]
    assert [r["Type"] for r in acked] == ["AWS::Lambda::Function"]  # not its role
    report = _checkov({"S": template}, tmp_path)
    skipped = {(c["check_id"], c["resource"].split(".")[-1][:5]) for c in report["skipped_checks"]}
    failed = {(c["check_id"], c["resource"].split(".")[-1][:5]) for c in report["failed_checks"]}
    assert ("CKV_AWS_116", "Acked") in skipped and ("CKV_AWS_116", "Plain") in failed
    assert all(c["check_result"]["suppress_comment"] == LONG_REASON for c in report["skipped_checks"])


@pytest.mark.thorough
def test_checkov_finds_nothing_unexplained_in_the_dev_templates(
    dev_templates: Templates, tmp_path: Path
) -> None:
    results = _checkov(dev_templates, tmp_path)
    assert [(c["check_id"], c["resource"]) for c in results["failed_checks"]] == []
    assert results["skipped_checks"], (
        "the dev templates carry acknowledged checks; none found means none read"
    )
    for skip in results["skipped_checks"]:
        assert len(skip["check_result"]["suppress_comment"]) >= 40, skip["check_id"]


def test_a_stage_that_applies_its_acknowledgments_at_the_end_adds_no_aspect_and_refuses_a_late_one() -> None:
    """HubSpokeStage's way (hubspoke.stage): the skips land where an aspect would have put them, without an
    aspect, and an acknowledgment made after the walk would be silently lost, so it is refused."""
    from aws_cdk import Aspects
    from aws_cdk import aws_logs as logs

    stage = Stage(App(), "Env")
    stack = Stack(stage, "S")
    with applied_at_end(stage):
        group = logs.CfnLogGroup(stack, "Logs")
        acknowledge(stack, "CKV_AWS_158", reason=LONG_REASON, resource_types=["AWS::Logs::LogGroup"])
        acknowledge(stack, "CKV_AWS_115", reason=LONG_REASON, resource_types=["AWS::Lambda::Function"])
        assert group.get_metadata("checkov") is None, "nothing is applied before the block ends"
    assert group.get_metadata("checkov") == {"skip": [{"id": "CKV_AWS_158", "comment": LONG_REASON}]}
    assert not Aspects.of(stage).all
    with pytest.raises(RuntimeError, match="after its Stage applied"):
        acknowledge(stack, "CKV_AWS_116", reason=LONG_REASON, resource_types=["AWS::Lambda::Function"])


def test_a_stage_whose_build_fails_leaves_later_acknowledgments_immediate() -> None:
    """An exception inside the block applies nothing and leaves no Stage 'being built' behind: the next
    acknowledgment, in another app, reaches CDK at once instead of a dead Stage's queue."""
    from aws_cdk import aws_logs as logs

    stage = Stage(App(), "Broken")
    with pytest.raises(ValueError, match="boom"), applied_at_end(stage):
        raise ValueError("boom")
    other = Stack(Stage(App(), "Env"), "S")
    group = logs.CfnLogGroup(other, "Logs")
    acknowledge(other, "CKV_AWS_158", reason=LONG_REASON, resource_types=["AWS::Logs::LogGroup"])
    App.of(other).synth()  # type: ignore[union-attr]
    assert group.get_metadata("checkov") == {"skip": [{"id": "CKV_AWS_158", "comment": LONG_REASON}]}


def test_a_stage_built_outside_the_block_gets_one_aspect_for_all_its_acknowledgments() -> None:
    """Any other Stage gets one aspect, made the first time an acknowledgment needs it (acks._Acknowledgments:
    a dozen aspects over an environment's constructs were a third of synth); CDK carries no app's aspects into
    its Stages, so each Stage gets its own. The skips land as before, in the order acknowledged."""
    from aws_cdk import Aspects
    from aws_cdk import aws_logs as logs

    app = App()
    stages = [Stage(app, "One"), Stage(app, "Two")]
    groups = []
    for stage in stages:
        stack = Stack(stage, "S")
        groups.append(logs.CfnLogGroup(stack, "Logs"))
        acknowledge(stack, "CKV_AWS_158", reason=LONG_REASON, resource_types=["AWS::Logs::LogGroup"])
        acknowledge(stack, "CKV_AWS_66", reason=LONG_REASON + ".", resource_types=["AWS::Logs::LogGroup"])
    assert [len(Aspects.of(s).all) for s in stages] == [1, 1]
    assert not Aspects.of(app).all
    app.synth()
    for group in groups:
        assert group.get_metadata("checkov") == {
            "skip": [
                {"id": "CKV_AWS_158", "comment": LONG_REASON},
                {"id": "CKV_AWS_66", "comment": LONG_REASON + "."},
            ]
        }


class _UntypedClass(CfnResource):
    """A CfnResource subclass that is no generated L1 class: no CFN_RESOURCE_TYPE_NAME of its own."""


@pytest.mark.parametrize("resource_first", [False, True])
@pytest.mark.parametrize("at_end", [False, True])
def test_skips_follow_the_resource_type_and_the_innermost_acknowledgment_wins(
    at_end: bool, resource_first: bool
) -> None:
    """checkov reads one `{id, comment}` per skipped check (checkov 3.3.30, context_parser.py,
    collect_skip_comments): a check acknowledged on a stack and again on one of its resources leaves that
    resource one skip, with the resource's own reason; the stack's other checks stay beside it. A resource
    whose class is not a generated L1 one is judged by the type it was given (CfnResource `type`). Innermost,
    not latest: CDK applies an ancestor's aspects before a descendant's (aws-cdk-lib Aspects), whichever
    acknowledgment was made first."""
    from aws_cdk import aws_logs as logs

    stage = Stage(App(), "Env")
    with applied_at_end(stage) if at_end else contextlib.nullcontext():
        stack = Stack(stage, "S")
        untyped = _UntypedClass(stack, "Untyped", type="AWS::Logs::LogGroup")
        group = logs.CfnLogGroup(stack, "Logs")
        own = ("CKV_AWS_158", LONG_REASON + " (own)")
        for scope, (rule, reason) in [
            *([(group, own)] if resource_first else []),
            (stack, ("CKV_AWS_158", LONG_REASON)),
            (stack, ("CKV_AWS_66", LONG_REASON)),
            *([] if resource_first else [(group, own)]),
        ]:
            acknowledge(scope, rule, reason=reason, resource_types=["AWS::Logs::LogGroup"])
    if not at_end:
        App.of(stack).synth()  # type: ignore[union-attr]
    stacks = [{"id": "CKV_AWS_158", "comment": LONG_REASON}, {"id": "CKV_AWS_66", "comment": LONG_REASON}]
    assert untyped.get_metadata("checkov") == {"skip": stacks}
    assert group.get_metadata("checkov") == {
        "skip": [
            {"id": "CKV_AWS_66", "comment": LONG_REASON},
            {"id": "CKV_AWS_158", "comment": LONG_REASON + " (own)"},
        ]
    }


def test_an_aspect_keeps_the_skips_a_resource_already_carries() -> None:
    """Visited as an aspect, a resource may already carry skips (checkov's `Metadata.checkov.skip` list): the
    acknowledgment adds its own and replaces only a skip of the same check."""
    from aws_cdk import aws_logs as logs

    stack = Stack(Stage(App(), "Env"), "S")
    group = logs.CfnLogGroup(stack, "Logs")
    earlier = [{"id": "CKV_AWS_66", "comment": "earlier"}, {"id": "CKV_AWS_158", "comment": "earlier"}]
    group.add_metadata("checkov", {"skip": earlier})
    acknowledge(stack, "CKV_AWS_158", reason=LONG_REASON, resource_types=["AWS::Logs::LogGroup"])
    App.of(stack).synth()  # type: ignore[union-attr]
    assert group.get_metadata("checkov") == {
        "skip": [{"id": "CKV_AWS_66", "comment": "earlier"}, {"id": "CKV_AWS_158", "comment": LONG_REASON}]
    }


def test_an_acknowledgment_is_recorded_as_made() -> None:
    """docs/policy.md's accepted-findings table (tools/accepted_findings.py) is built from these records: each
    row carries the rule, the reason a reviewer reads, the acknowledged construct's path, and the findings or
    resource types it is limited to. (The file that made it is checked by tests/tools/test_accepted_findings.py:
    under mutmut's trampoline the caller's frame is another.)"""
    from hubspoke.policy.acks import recorded

    stack = Stack(App(), "S")
    with recorded() as found:
        acknowledge(stack, "AwsSolutions-IAM5", reason=LONG_REASON, findings=["Resource::*"])
        acknowledge(stack, "CKV_AWS_116", reason=LONG_REASON, resource_types=["AWS::Lambda::Function"])
    assert [(a.rule, a.reason, a.path, a.findings, a.resource_types) for a in found] == [
        ("AwsSolutions-IAM5", LONG_REASON, "S", ("Resource::*",), ()),
        ("CKV_AWS_116", LONG_REASON, "S", (), ("AWS::Lambda::Function",)),
    ]
