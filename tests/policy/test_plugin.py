"""Policy runs inside synth: a violation of cdk-nag or of our pack stops synth; acknowledgments need reasons."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.acks import acknowledge
from hubspoke.stage import HubSpokeStage
from tests.conftest import cli_app


def _network_only_stage(config: HubSpokeConfig, outdir: str) -> tuple[App, HubSpokeStage]:
    """dev's Stage with its real network, peer-access and link stacks and every other stack empty: the plugins
    judge what the Stage holds, and the network stacks alone cost a third of a whole synth."""
    from hubspoke import stage

    real = dict(stage.BUILDERS)
    for kind in ("storage", "compute", "ops", "dashboard"):
        stage.BUILDERS[kind] = lambda scope, plan, *, config: Stack(scope, plan.id)
    try:
        app = cli_app(outdir)
        return app, HubSpokeStage(app, config=config)
    finally:
        stage.BUILDERS.update(real)


def test_world_open_security_group_stops_synth_of_the_network_stacks(
    dev_config: HubSpokeConfig, tmp_path: Path
) -> None:
    """The fast tier's twin of the whole-environment test below: the same Stage, plugins and planted rule over
    dev's network stacks. Every violation the report lists is on the planted group, so it alone stops synth."""
    app, stage = _network_only_stage(dev_config, str(tmp_path / "open"))
    sg = stage.stacks["network-us-east-2"].node.find_child("PeerPath")
    assert isinstance(sg, ec2.SecurityGroup)
    sg.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "open" / "validation-report.json").read_text())
    violations = [v for plugin in report["pluginReports"] for v in plugin["violations"]]
    assert {"AwsSolutions-EC23", "HubSpoke-NoWorldIngress"} <= {v["ruleName"] for v in violations}
    paths = {c["constructPath"] for v in violations for c in v["violatingConstructs"]}
    assert paths == {f"{stage.stage_name}/network-us-east-2/PeerPath/Resource"}, paths


@pytest.mark.thorough
def test_world_open_security_group_stops_synth(dev_config: HubSpokeConfig, tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = cli_app(str(tmp_path))
    stage = HubSpokeStage(app, config=dev_config)
    net = stage.stacks["network-us-east-2"]
    sg = net.node.find_child("PeerPath")
    assert isinstance(sg, ec2.SecurityGroup)
    sg.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = (tmp_path / "validation-report.json").read_text()
    assert "AwsSolutions-EC23" in report
    assert "HubSpoke-NoWorldIngress" in report


def test_acknowledgment_without_a_real_reason_is_refused() -> None:
    stack = Stack(App(), "s")
    with pytest.raises(ValueError, match="needs a reason"):
        acknowledge(stack, "AwsSolutions-IAM5", reason="needed")


def _report_of(
    dev_config: HubSpokeConfig, templates: dict[str, Any], tmp_path: Path
) -> tuple[Any, dict[str, str]]:
    """HubSpokePolicy.validate over `templates` written as files, the way CDK hands a plugin its templates."""
    from hubspoke.policy.plugin import HubSpokePolicy

    tmp_path.mkdir()
    paths = {}
    for stack_id, body in templates.items():
        paths[stack_id] = tmp_path / f"{stack_id}.template.json"
        paths[stack_id].write_text(json.dumps(body))

    context = SimpleNamespace(template_paths=[str(p) for p in paths.values()])
    return HubSpokePolicy(dev_config).validate(context), {str(p): s for s, p in paths.items()}


def test_the_plugins_report_fails_synth_and_points_at_the_violating_resource(
    dev_config: HubSpokeConfig, dev_templates: dict[str, Any], tmp_path: Path
) -> None:
    """What CDK reads of a plugin's report (aws-cdk-lib 2.275.0 core/lib/private/synthesis-validation.js and
    validation/report.d.ts): `success` false fails synth; after any acknowledgment a report's success is
    recomputed as "no violation of severity error or fatal"; each violating resource names its logical ID, its
    template's path and locations in that resource. A clean set of templates reports success and no violation."""
    clean, _ = _report_of(dev_config, dev_templates, tmp_path / "a")
    assert clean.success is True and clean.violations == []

    templates = json.loads(json.dumps(dev_templates))
    broken = templates["network-us-east-2"]
    broken["Resources"]["Injected"] = {
        "Type": "AWS::EC2::SecurityGroupIngress",
        "Properties": {
            "CidrIp": "0.0.0.0/0",
            "IpProtocol": "tcp",
            "FromPort": 22,
            "ToPort": 22,
            "GroupId": "sg-1",
        },
    }
    report, stacks = _report_of(dev_config, templates, tmp_path / "b")
    assert report.success is False
    [world] = [v for v in report.violations if v.rule_name == "HubSpoke-NoWorldIngress"]
    assert world.severity in ("error", "fatal")
    assert "0.0.0.0/0" in world.description and world.fix
    [resource] = world.violating_resources
    assert resource.resource_logical_id == "Injected"
    assert stacks[resource.template_path] == "network-us-east-2"
    assert resource.locations and all(loc in broken["Resources"]["Injected"] for loc in resource.locations)


def test_every_checkov_acknowledgment_in_dev_is_a_skip_with_its_reason(dev_templates: dict[str, Any]) -> None:
    """checkov reads a resource's `Metadata.checkov.skip` as a list of `{id, comment}` (checkov 3.3.30,
    checkov/cloudformation/context_parser.py, ContextParser.collect_skip_comments); each acknowledgment dev's
    synth writes there names a checkov check (CKV_AWS_n or CKV2_AWS_n) and carries its reason, once per check."""
    skips = [
        (stack, logical_id, resource["Metadata"]["checkov"])
        for stack, template in dev_templates.items()
        for logical_id, resource in template["Resources"].items()
        if "checkov" in resource.get("Metadata", {})
    ]
    assert skips, "dev acknowledges checkov checks (docs/policy.md, Accepted findings: Metadata.checkov.skip)"
    for stack, logical_id, metadata in skips:
        where = f"{stack}/{logical_id}"
        assert isinstance(metadata, dict) and list(metadata) == ["skip"], where
        assert isinstance(metadata["skip"], list) and metadata["skip"], where
        ids = [s["id"] for s in metadata["skip"]]
        assert len(ids) == len(set(ids)), where
        for skip in metadata["skip"]:
            assert set(skip) == {"id", "comment"} and re.fullmatch(r"CKV2?_AWS_\d+", skip["id"]), where
            assert isinstance(skip["comment"], str) and skip["comment"].strip(), where


def test_the_plugin_lists_the_rule_ids_docs_policy_md_documents(dev_config: HubSpokeConfig) -> None:
    """CDK's IPolicyValidationPlugin.ruleIds (aws-cdk-lib 2.275.0 core/lib/validation/validation.d.ts: "The list
    of rule IDs that the plugin will evaluate"): the ids a finding can carry, each a row of docs/policy.md."""
    from hubspoke.policy.plugin import HubSpokePolicy
    from tests.policy.test_rules import _readme_rules

    ids = HubSpokePolicy(dev_config).rule_ids
    assert sorted(ids) == sorted(_readme_rules()) and len(set(ids)) == len(ids), ids
