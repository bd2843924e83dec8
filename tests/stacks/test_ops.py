"""Invariants over the synthesized Ops stacks: every spoke watched, every alarm on a metric something publishes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hubspoke import canary_metrics, compute_metrics, training_metrics
from hubspoke.config import HubSpokeConfig, SpokeConfig
from hubspoke.constructs.canary.traffic import namespace as traffic_namespace
from hubspoke.stacks.ops import CANARY_PORTS
from hubspoke.topology import stack_name
from tests.conftest import Shape, options, properties, synth, varied
from tests.constructs.test_node_health import DOCUMENTED as NODE_HEALTH_DOCUMENTED

ROOT = Path(__file__).resolve().parents[2]


def alarm_metrics(props: dict[str, Any]) -> list[dict[str, Any]]:
    """Every MetricStat an alarm reads, whether it alarms on one metric or on metric math."""
    if "MetricName" in props:
        return [{"Namespace": props["Namespace"], "MetricName": props["MetricName"],
                 "Dimensions": props.get("Dimensions", [])}]  # fmt: skip
    return [q["MetricStat"]["Metric"] for q in props.get("Metrics", []) if "MetricStat" in q]


def published_by_filters(template: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (t["MetricNamespace"], t["MetricName"])
        for _, p in properties(template, "AWS::Logs::MetricFilter")
        for t in p["MetricTransformations"]
    }


def watched_spokes(config: HubSpokeConfig) -> list[SpokeConfig]:
    """Spokes with a CNQ caching a CNQ hub: what the canary watches (README `ops`); network-only spokes have
    no portal to lose and no Ops stack."""
    return [s for s in config.spokes if s.storage.enabled and config.hub.storage.enabled]


def test_exactly_the_caching_spokes_have_an_ops_stack(shape: Shape) -> None:
    ops = {sid.removeprefix("ops-") for sid in shape.templates if sid.startswith("ops-")}
    assert ops == {s.region for s in watched_spokes(shape.config)}


def test_every_spoke_has_a_scheduled_canary_in_its_vpc(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for spoke in watched_spokes(config):
        ops = templates[f"ops-{spoke.region}"]
        [(fn_id, fn)] = properties(ops, "AWS::Lambda::Function")
        assert fn["VpcConfig"]["SubnetIds"], "the canary must probe from inside the spoke VPC"
        env = fn["Environment"]["Variables"]
        assert env["SPOKE_REGION"] == spoke.region
        assert env["HUB_PORTS"] == ",".join(map(str, CANARY_PORTS)) and set(CANARY_PORTS) == {2049, 3713}
        [rule] = [r for _, r in properties(ops, "AWS::Events::Rule") if "ScheduleExpression" in r]
        assert rule["ScheduleExpression"] == "rate(1 minute)"
        assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_id, "Arn"]}
        # The canary may only reach the hub on the probed ports, the local REST API and HTTPS.
        [(_, sg)] = properties(ops, "AWS::EC2::SecurityGroup")
        hub_rules = [r for r in sg["SecurityGroupEgress"] if r["CidrIp"] in config.hub.all_cidrs]
        assert {r["FromPort"] for r in hub_rules} == set(CANARY_PORTS)


def canary_page(template: dict[str, Any], prefix: str, key: str) -> tuple[dict[str, Any], list[str], str]:
    """A canary page (composite): its properties, its rule's inputs by AlarmName, and the rule with those names."""
    metric_alarms = dict(properties(template, "AWS::CloudWatch::Alarm"))
    [page] = [
        p
        for _, p in properties(template, "AWS::CloudWatch::CompositeAlarm")
        if p["AlarmName"] == f"{prefix}-{key}"
    ]
    parts = page["AlarmRule"]["Fn::Join"][1]
    names = [metric_alarms[p["Fn::GetAtt"][0]]["AlarmName"] for p in parts if not isinstance(p, str)]
    rule = "".join(p if isinstance(p, str) else metric_alarms[p["Fn::GetAtt"][0]]["AlarmName"] for p in parts)
    return page, names, rule


def test_hub_outage_is_detected_within_three_minutes(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    for spoke in watched_spokes(config):
        ops = templates[f"ops-{spoke.region}"]
        alarms = {p["AlarmName"]: p for _, p in properties(ops, "AWS::CloudWatch::Alarm")}
        prefix = stack_name(config, "ops", spoke.region)
        hub = alarms[f"{prefix}-hub-probes-failing"]
        assert [m["MetricName"] for m in alarm_metrics(hub)] == [canary_metrics.HUB_REACHABLE]
        # docs/operations.md, "Hub unreachable": three failing records in a row, written here, not imported.
        assert hub["Period"] * hub["EvaluationPeriods"] <= 3 * 60
        assert hub["DatapointsToAlarm"] == hub["EvaluationPeriods"]
        # Judged on real records only: late or missing ones neither page nor resolve (tests/constructs/
        # test_canary_alarms.py judges the timing); canary-failing watches the canary itself.
        assert hub["TreatMissingData"] == "ignore" and "AlarmActions" not in hub
        for key, probes in (
            ("hub-unreachable-page", hub),
            ("portal-not-active-page", alarms[f"{prefix}-portal-probes-not-active"]),
        ):
            page, names, _ = canary_page(ops, prefix, key)
            assert names == [probes["AlarmName"]], key
            assert page["AlarmActions"] and page["OKActions"], key
        portal = alarms[f"{prefix}-portal-probes-not-active"]
        # Its status, its record count and PortalUnreadable (the guard that drops failed reads: review item 5).
        assert {m["MetricName"] for m in alarm_metrics(portal)} == {
            canary_metrics.PORTAL_STATUS,
            canary_metrics.PORTAL_UNREADABLE,
        }
        assert portal["Threshold"] == canary_metrics.PORTAL_STATUS_ACTIVE
        assert portal["ComparisonOperator"] == "LessThanThreshold"


def test_every_alarm_notifies_an_encrypted_topic(shape: Shape) -> None:
    """Except the hit ratio's metric alarm, which every cold first pass trips: only the composite over it and
    the throughput alarm notifies (docs/operations.md)."""
    for spoke in watched_spokes(shape.config):
        ops = shape.templates[f"ops-{spoke.region}"]
        topics = dict(properties(ops, "AWS::SNS::Topic"))
        assert all("KmsMasterKeyId" in t for t in topics.values())
        silent = []
        for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm"):
            for _, alarm in properties(ops, kind):
                name = alarm["AlarmName"]
                if "AlarmActions" not in alarm:
                    silent.append(name)
                    continue
                assert {a["Ref"] for a in alarm["AlarmActions"]} == set(topics), name
                assert {a["Ref"] for a in alarm["OKActions"]} == set(topics), name
        # The hit-ratio alarms watch a training job's reads: only where the spoke trains (alarms.planned_alarms).
        prefix = stack_name(shape.config, "ops", spoke.region)
        canary = [f"{prefix}-{k}" for k in ("hub-probes-failing", "portal-probes-not-active")]
        quiet = [f"{prefix}-cache-hit-ratio-below-floor", f"{prefix}-dataset-not-fully-cached"]
        # The dead-job page's inputs (tests/constructs/test_job_alarms.py): only where the spoke trains.
        quiet += [f"{prefix}-training-job-unfinished", f"{prefix}-training-reports-missing"]
        assert sorted(silent) == sorted(canary + (quiet if spoke.compute.enabled else []))
        for _, key in properties(ops, "AWS::KMS::Key"):
            assert key["EnableKeyRotation"] is True


def test_every_alarm_reads_a_metric_that_something_publishes(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    train = (ROOT / "workload" / "train.py").read_text()
    for spoke in watched_spokes(config):
        ops = templates[f"ops-{spoke.region}"]
        filters = published_by_filters(ops)
        seen = set()
        for _, alarm in properties(ops, "AWS::CloudWatch::Alarm"):
            for metric in alarm_metrics(alarm):
                ns, name = metric["Namespace"], metric["MetricName"]
                seen.add(ns)
                if ns == canary_metrics.NAMESPACE:
                    assert name in canary_metrics.UNITS  # the handler's EMF line declares exactly these
                elif ns == traffic_namespace(config.environment):
                    assert (ns, name) in filters
                elif ns == training_metrics.NAMESPACE:
                    assert name in training_metrics.UNITS and "training_metrics" in train
                elif ns == compute_metrics.NAMESPACE:
                    # the CloudWatch observability add-on (Compute stack); node and fabric health: the names its
                    # documentation gives, written in tests/constructs/test_node_health.py
                    assert name in compute_metrics.GPU_METRICS or (ns, name) in NODE_HEALTH_DOCUMENTED
                elif (ns, name) in NODE_HEALTH_DOCUMENTED:
                    pass  # EventBridge's TriggeredRules of the node-health rule (test_node_health.py)
                elif ns == "AWS/Lambda":
                    # Lambda's own per-function metrics (Lambda Developer Guide, "Types of metrics for Lambda
                    # functions"), of the canary's function: canary-failing.
                    [dimension] = metric["Dimensions"]
                    assert dimension["Name"] == "FunctionName" and name in (
                        "AsyncEventsReceived",
                        "Errors",
                        "Throttles",
                    )
                    assert dimension["Value"]["Ref"] in dict(properties(ops, "AWS::Lambda::Function"))
                elif (ns, name) == ("AWS/Events", "FailedInvocations"):
                    # EventBridge's per-rule metric, dimension RuleName (EventBridge User Guide, "Monitoring Amazon
                    # EventBridge"), of the canary's schedule: canary-failing.
                    [dimension] = metric["Dimensions"]
                    assert dimension["Name"] == "RuleName"
                    assert dimension["Value"]["Ref"] in dict(properties(ops, "AWS::Events::Rule"))
                else:
                    pytest.fail(f"alarm reads {ns}/{name}, which nothing in hubspoke publishes")
        # The training signals (GPUs, the traffic-derived hit ratio) are watched where the spoke trains.
        training = {traffic_namespace(config.environment), compute_metrics.NAMESPACE}
        assert {canary_metrics.NAMESPACE} | (training if spoke.compute.enabled else set()) <= seen


def test_alarm_emails_subscribe_and_floors_come_from_config(config_from: Any) -> None:
    data = varied()  # the storage tests' synth (tests/conftest.py), with these options
    assert data["ops"] == {
        "alarm_emails": ["oncall@example.com"],
        "gpu_utilization_floor_percent": 70,
        "cache_hit_ratio_floor": 0.8,
        "throughput_floor_fraction": 0.6,
    }
    assert [(s["region"], s.get("compute")) for s in data["spokes"]] == [
        ("us-west-2", None),
        ("eu-west-1", {"enabled": False}),
    ]
    config = config_from(data)
    templates = synth(config)
    for spoke in ("us-west-2", "eu-west-1"):
        ops = templates[f"ops-{spoke}"]
        subs = [p for _, p in properties(ops, "AWS::SNS::Subscription")]
        assert [(s["Protocol"], s["Endpoint"]) for s in subs] == [("email", "oncall@example.com")]
        alarms = {
            p["AlarmName"].split(f"ops-{spoke}-", 1)[1]: p
            for _, p in properties(ops, "AWS::CloudWatch::Alarm")
        }
        if spoke == "us-west-2":
            assert alarms["cache-hit-ratio-below-floor"]["Threshold"] == 0.8
            assert alarms["gpu-utilization-low"]["Threshold"] == 70
            assert alarms["training-throughput-low"]["Threshold"] == 0.6
        else:
            # No training job to slow down: a low ratio alone is every cold first pass, so nothing pages on it
            # here; the dashboard still graphs it.
            assert set(alarms) == {
                "canary-failing",
                "hub-probes-failing",
                "portal-probes-not-active",
            }, "no job to watch where compute is off"
        assert len(list(properties(ops, "AWS::Lambda::Function"))) == 1


@pytest.mark.long
def test_canary_asset_carries_the_sdk_and_its_handler() -> None:
    from aws_cdk import App, Stack
    from aws_cdk import aws_lambda as lambda_

    from hubspoke.constructs.canary.infrastructure import runtime_code

    app = App()
    stack = Stack(app, "S")
    fn = lambda_.Function(stack, "F", runtime=lambda_.Runtime.PYTHON_3_14, handler="runtime.handler.handler",
                          code=runtime_code())  # fmt: skip
    assembly = app.synth()
    template = assembly.get_stack_artifact(stack.artifact_id).template
    asset = next(iter(properties(template, "AWS::Lambda::Function")))[1]["Code"]["S3Key"]
    folder = Path(assembly.directory) / f"asset.{asset.split('.')[0]}"
    assert (folder / "runtime" / "handler.py").is_file()
    assert (folder / "qumulo" / "rest_client.py").is_file()
    assert not list(folder.rglob("__pycache__"))
    del fn


def test_existing_topics_receive_the_alarms_of_their_own_region(config_from: Any) -> None:
    """ops.alarm_topic_arns: each notifying alarm's ALARM and OK actions name the config's topic of its own Region
    (and the environment's own topic), never another Region's (config/ops_rules.py; ASSUMED there)."""
    data = options()  # the shared synth of several options (tests/conftest.py)
    east, west = "arn:aws:sns:us-east-2:111122223333:on-call", "arn:aws:sns:us-west-2:111122223333:on-call"
    assert data["ops"]["alarm_topic_arns"] == [east, west] and not data["ops"].get("alarm_emails")
    config = config_from(data)
    templates = synth(config)
    for sid, mine, other in (("ops-us-west-2", west, east), ("dashboard-us-east-2", east, west)):
        template = templates[sid]
        assert not list(properties(template, "AWS::SNS::Subscription"))  # no address: no email subscription
        notifying = [
            p
            for kind in ("AWS::CloudWatch::Alarm", "AWS::CloudWatch::CompositeAlarm")
            for _, p in properties(template, kind)
            if p.get("AlarmActions")
        ]
        assert notifying, sid
        for alarm in notifying:
            for actions in (alarm["AlarmActions"], alarm["OKActions"]):
                assert mine in actions and other not in actions, (sid, alarm["AlarmName"])
                assert any(isinstance(a, dict) and "Ref" in a for a in actions)  # the environment's topic too
