"""Policy runs inside synth: a violation of cdk-nag or of our pack stops synth; acknowledgments need reasons."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_ec2 as ec2

from hubspoke.config import HubSpokeConfig
from hubspoke.policy.acks import acknowledge
from hubspoke.stage import HubSpokeStage, new_app


def test_world_open_security_group_stops_synth(dev_config: HubSpokeConfig, tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = new_app(outdir=str(tmp_path))
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
