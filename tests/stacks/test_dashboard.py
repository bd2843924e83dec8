"""The environment's dashboard: every Region side by side, every graphed metric published by something we deploy."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from hubspoke import canary_metrics, compute_metrics, names, training_metrics
from hubspoke.config import HubSpokeConfig
from hubspoke.constructs.canary.traffic import namespace as traffic_namespace
from hubspoke.constructs.hyperpod.addons import CLOUDWATCH_OBSERVABILITY
from hubspoke.k8s.job import training_job
from hubspoke.policy.rules import METADATA_KEY
from tests.conftest import Shape, Templates, minimal, properties, synth_dependencies, synth_regions
from tests.constructs.test_node_health import KEYS as NODE_HEALTH_KEYS
from tests.constructs.test_node_health import NODE_HEALTH_CLUSTER_SERIES
from tests.stacks.test_compute import with_dataset_pin
from tests.stacks.test_ops import alarm_metrics

# Any image pinned by digest: these tests read the job's arguments, not its image.
ANY_IMAGE = "registry.example/train@sha256:" + "ab" * 32

# A series: namespace, metric name, dimensions, and the Region it lives in.
Series = tuple[str, str, frozenset[tuple[str, str]], str]


def region_of(template: dict[str, Any]) -> str:
    return str(template["Metadata"][METADATA_KEY]["region"])


def dashboard_of(templates: Templates) -> tuple[str, dict[str, Any]]:
    [(sid, template)] = [(s, t) for s, t in templates.items() if s.startswith("dashboard-")]
    [(_, props)] = properties(template, "AWS::CloudWatch::Dashboard")
    body = props["DashboardBody"]
    assert isinstance(body, str), (
        "the body must not reference other stacks (no tokens, no cross-Region values)"
    )
    return sid, json.loads(body)


def graphed(body: dict[str, Any], home: str) -> Iterator[tuple[dict[str, Any], Series]]:
    """Every metric a widget draws (math inputs included, expressions skipped), with the Region it is read in."""
    for widget in body["widgets"]:
        if widget["type"] != "metric":
            continue
        for entry in widget["properties"]["metrics"]:
            options = entry[-1] if isinstance(entry[-1], dict) else {}
            if "expression" in options:
                continue
            fields = entry[:-1] if options else entry
            namespace, name, *dims = fields
            region = options.get("region", widget["properties"].get("region", home))
            yield widget, (namespace, name, frozenset(zip(dims[::2], dims[1::2], strict=True)), region)


def emf_series(document: dict[str, Any], region: str) -> set[Series]:
    """What CloudWatch extracts from one embedded-metric-format record."""
    found: set[Series] = set()
    for directive in document["_aws"]["CloudWatchMetrics"]:
        for dimension_set in directive["Dimensions"]:
            dims = frozenset((d, document[d]) for d in dimension_set)
            found |= {(directive["Namespace"], m["Name"], dims, region) for m in directive["Metrics"]}
    return found


def job_argument(manifest: Any, flag: str) -> str:
    """The value of `--flag=value` wherever the rendered training job passes it."""
    if isinstance(manifest, dict):
        values = [job_argument(v, flag) for v in manifest.values()]
    elif isinstance(manifest, list):
        values = [job_argument(v, flag) for v in manifest]
    else:
        prefix = f"--{flag}="
        return manifest[len(prefix) :] if isinstance(manifest, str) and manifest.startswith(prefix) else ""
    found = {v for v in values if v}
    assert len(found) <= 1, f"--{flag} passed with different values: {found}"
    return found.pop() if found else ""


def job_env(manifest: Any, name: str) -> str:
    """The value of environment variable `name` in every container of the rendered job ("" if unset)."""
    found: set[str] = set()
    stack = [manifest]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "image" in item and "command" in item:  # a container
                env = {e["name"]: e.get("value", "") for e in item.get("env", [])}
                found.add(env.get(name, ""))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    assert len(found) == 1, f"containers disagree on {name}: {found}"
    return found.pop()


def agent_receives(emf: dict[str, Any], endpoint: str) -> bool:
    """Whether the agent's EMF listener (`logs.metrics_collected.emf`) is where the job sends its records."""
    # An empty section listens on tcp and udp 25888, the agent's documented default.
    listen = urlsplit(emf.get("service_address", f"{urlsplit(endpoint).scheme}://:25888"))
    target = urlsplit(endpoint)
    return bool(target.hostname) and (target.scheme, target.port) == (listen.scheme, listen.port)


def published(config: HubSpokeConfig, templates: Templates) -> set[Series]:
    """Every series the deployed environment publishes, derived from its templates and the publishing code."""
    series: set[Series] = set()
    for template in templates.values():
        region = region_of(template)
        # The canary's EMF line, for the environment and spoke its function is configured with.
        for _, fn in properties(template, "AWS::Lambda::Function"):
            env = fn.get("Environment", {}).get("Variables", {})
            if "SPOKE_REGION" in env:
                line = canary_metrics.emf_line(
                    environment=env["HUBSPOKE_ENVIRONMENT"],
                    spoke=env["SPOKE_REGION"],
                    values=dict.fromkeys(canary_metrics.UNITS, 1.0),
                    timestamp_ms=0,
                )
                series |= emf_series(json.loads(line), region)
        # Flow-log metric filters: no dimensions.
        for _, flt in properties(template, "AWS::Logs::MetricFilter"):
            for t in flt["MetricTransformations"]:
                series.add((t["MetricNamespace"], t["MetricName"], frozenset(), region))
        # The CloudWatch observability add-on on an EKS cluster: GPU metrics per cluster, and the training
        # job's EMF records where the agent listens for EMF on the endpoint the rendered job sends to (stdout
        # shipped as container logs is not enough: Fluent Bit wraps each line, so nothing is extracted).
        clusters = dict(properties(template, "AWS::EKS::Cluster"))
        for _, addon in properties(template, "AWS::EKS::Addon"):
            if addon["AddonName"] != CLOUDWATCH_OBSERVABILITY:
                continue
            settings = json.loads(addon["ConfigurationValues"])
            cluster = clusters[addon["ClusterName"]["Ref"]]["Name"]
            kubernetes = settings["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
            if kubernetes.get("accelerated_compute_metrics"):
                series |= {
                    (compute_metrics.NAMESPACE, name, frozenset({("ClusterName", cluster)}), region)
                    for name in compute_metrics.GPU_METRICS
                }
                # Node and fabric health: the names the add-on's documentation gives for enhanced observability
                # with accelerated compute (tests/constructs/test_node_health.py says where).
                if kubernetes.get("enhanced_container_insights"):
                    series |= {
                        (compute_metrics.NAMESPACE, name, frozenset({("ClusterName", cluster)}), region)
                        for name in NODE_HEALTH_CLUSTER_SERIES
                    }
            emf = settings["agent"]["config"]["logs"]["metrics_collected"].get("emf")
            pinned = with_dataset_pin(config)
            job = training_job(pinned, pinned.region_config(region), image=ANY_IMAGE)
            if emf is not None and agent_receives(emf, job_env(job, training_metrics.AGENT_ENDPOINT_ENV)):
                record = training_metrics.emf_record(
                    dict.fromkeys(training_metrics.UNITS, 1.0),
                    environment=job_argument(job, "environment"),
                    region=job_argument(job, "region"),
                )
                series |= emf_series(record, region)
        # EventBridge's own metrics of every rule (EventBridge User Guide, "Monitoring Amazon EventBridge").
        for rule_id, _ in properties(template, "AWS::Events::Rule"):
            rule = json.dumps({"Ref": rule_id})
            series.add(("AWS/Events", "TriggeredRules", frozenset({("RuleName", rule)}), region))
    return series


def test_every_region_has_a_column_in_every_row(shape: Shape) -> None:
    """Over every shape: hubs with and without compute, spokes with everything, storage only or network only."""
    config, templates = shape.config, shape.templates
    regions = [r.region for r in config.regions()]
    _, body = dashboard_of(templates)
    rows: dict[int, list[dict[str, Any]]] = {}
    for widget in body["widgets"]:
        rows.setdefault(widget["y"], []).append(widget)
    assert len(rows) > 1
    for y, row in sorted(rows.items()):
        row.sort(key=lambda w: w["x"])
        assert len(row) == len(regions), f"row at y={y} has {len(row)} widgets for {len(regions)} Regions"
        assert len({w["width"] for w in row}) == 1 and sum(w["width"] for w in row) <= 24
        for region, widget in zip(regions, row, strict=True):
            if widget["type"] == "metric":
                assert widget["properties"]["region"] == region, (
                    f"row y={y}: {region}'s column reads elsewhere"
                )
            elif widget["type"] == "alarm":  # the Region's alarm states (tests/constructs/test_dashboard.py)
                assert all(f":cloudwatch:{region}:" in arn for arn in widget["properties"]["alarms"]), y
            else:
                assert region in widget["properties"]["markdown"]
    # Each spoke's own canary and traffic metrics, and each compute Region's GPUs, are graphed.
    shown = {s for _, s in graphed(body, config.hub.region)}
    for r in regions:
        publishes = f"ops-{r}" in templates or f"compute-{r}" in templates
        assert publishes == any(s[3] == r for s in shown), f"{r}: its own metrics are missing or invented"
    # GPUs are graphed exactly where compute is on (a Compute stack exists).
    computes = {r.region for r in config.regions() if r.compute.enabled}
    assert computes == {r for r in regions if f"compute-{r}" in templates}
    assert computes == {s[3] for s in shown if s[0] == compute_metrics.NAMESPACE}


def test_every_metric_a_widget_shows_is_published(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    sid, body = dashboard_of(templates)
    available = published(config, templates)
    namespaces = set()
    for widget, series in graphed(body, region_of(templates[sid])):
        assert series in available, (
            f"widget {widget['properties']['title']!r} graphs {series}: nothing publishes it"
        )
        namespaces.add(series[0])
    # Every source appears: where a spoke caches the hub (an Ops stack), its canary and flow-log filters; where
    # a cluster runs, Container Insights and the job.
    expected = set()
    if any(s.startswith("ops-") for s in templates):
        expected |= {canary_metrics.NAMESPACE, traffic_namespace(config.environment)}
    if any(s.startswith("compute-") for s in templates):
        expected |= {compute_metrics.NAMESPACE, training_metrics.NAMESPACE}
    assert namespaces == expected
    for _, alarm in properties(templates[sid], "AWS::CloudWatch::Alarm"):
        for metric in alarm_metrics(alarm):
            dims = frozenset(
                (d["Name"], d["Value"] if isinstance(d["Value"], str) else json.dumps(d["Value"]))
                for d in metric["Dimensions"]
            )
            assert (metric["Namespace"], metric["MetricName"], dims, region_of(templates[sid])) in available


def dashboard_alone(config: HubSpokeConfig) -> dict[str, Any]:
    """The dashboard stack of `config`, built by itself."""
    from aws_cdk import App, Stage
    from aws_cdk.assertions import Template

    from hubspoke.stacks.dashboard import DashboardStack
    from hubspoke.topology import plan_stacks

    [plan] = [p for p in plan_stacks(config) if p.kind == "dashboard"]
    stack = DashboardStack(Stage(App(), "env"), plan.id, config=config, plan=plan)
    return dict(Template.from_stack(stack).to_json())


def test_hub_training_alarms_live_with_the_dashboard(
    dev_config: HubSpokeConfig, config_from: Callable[[dict[str, Any]], HubSpokeConfig]
) -> None:
    template = dashboard_alone(dev_config)
    alarms = {
        p["AlarmName"].removeprefix("hubspoke-dev-dashboard-us-east-2-"): p
        for _, p in properties(template, "AWS::CloudWatch::Alarm")
    }
    # Samples/s first, GPUs second (docs/operations.md; tests/constructs/test_alarms.py judges the behaviour).
    assert set(alarms) == {"training-stalled", "training-throughput-low", "gpu-utilization-low"} | set(
        NODE_HEALTH_KEYS
    ) | {  # node and fabric health: tests/constructs/test_node_health.py; the job's life: test_job_alarms.py
        "training-job-unfinished",
        "training-reports-missing",
        "training-crash-loop",
    }
    gpu = alarms["gpu-utilization-low"]
    assert gpu["Threshold"] == dev_config.ops.gpu_utilization_floor_percent
    assert (gpu["DatapointsToAlarm"], gpu["EvaluationPeriods"]) == (8, 10)
    gpu_metrics = [m for m in alarm_metrics(gpu) if m["Namespace"] == compute_metrics.NAMESPACE]
    assert {d["Value"] for m in gpu_metrics for d in m["Dimensions"]} == {
        names.eks_cluster_name(dev_config, dev_config.hub)
    }
    topics = dict(properties(template, "AWS::SNS::Topic"))
    for name, alarm in alarms.items():
        if name in ("training-job-unfinished", "training-reports-missing"):
            assert "AlarmActions" not in alarm, name  # inputs of the composite training-job-dead, which pages
        else:
            assert {a["Ref"] for a in alarm["AlarmActions"]} == set(topics), name
        runbook = "checkpoints.md" if name == "checkpoint-too-old" else "compute.md"
        assert f"docs/runbooks/{runbook}" in alarm["AlarmDescription"], name
        training = [m for m in alarm_metrics(alarm) if m["Namespace"] == training_metrics.NAMESPACE]
        if not training and (name in NODE_HEALTH_KEYS or name == "training-crash-loop"):
            continue  # reads Container Insights or EventBridge only
        assert {(d["Name"], d["Value"]) for m in training for d in m["Dimensions"]} == {
            ("Environment", "dev"),
            ("Region", dev_config.hub.region),
        }, name
    assert all("KmsMasterKeyId" in t for t in topics.values())

    # Without a Compute stack in the hub Region there is nothing to watch, and no topic to pay for.
    no_hub_compute = minimal()
    no_hub_compute["hub"]["compute"] = {"enabled": False}
    template = dashboard_alone(config_from(no_hub_compute))
    assert not list(properties(template, "AWS::CloudWatch::Alarm"))
    assert not list(properties(template, "AWS::SNS::Topic"))


def test_dashboard_deploys_after_what_it_shows_and_references_no_stack(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    sid, _ = dashboard_of(dev_templates)
    assert synth_regions(dev_config)[sid] == dev_config.hub.region
    # Its direct dependencies, as the cloud assembly records them for `cdk deploy`.
    shown = {s for s in dev_templates if s.split("-", 1)[0] in ("ops", "compute")}
    assert shown and synth_dependencies(dev_config)[sid] == shown
    # Metrics are read by name and Region: the dashboard never blocks another stack's change or removal.
    text = json.dumps(dev_templates[sid])
    assert "Fn::GetStackOutput" not in text and "Fn::ImportValue" not in text


def test_gpu_and_samples_labels_say_what_the_series_average(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """The GPU series averages GPUs, not nodes: the CloudWatch agent publishes node_gpu_utilization per GPU
    device (dimension sets up to [ClusterName, NodeName, InstanceId, InstanceType, GpuDevice]:
    aws/amazon-cloudwatch-agent, translator/translate/otel/exporter/awsemf/kubernetes.go). Samples/s is the
    average of the job's records, whose interval is the one the rendered job passes."""
    _, body = dashboard_of(dev_templates)
    gpu_labels, samples_labels = [], []
    for widget in body["widgets"]:
        for entry in widget["properties"].get("metrics", []):
            options = entry[-1]
            if entry[:2] == [compute_metrics.NAMESPACE, compute_metrics.NODE_GPU_UTILIZATION]:
                gpu_labels.append(options["label"])
            elif entry[:2] == [training_metrics.NAMESPACE, training_metrics.SAMPLES_PER_SECOND]:
                samples_labels.append((options["label"], options["region"]))
    assert gpu_labels and all("average over the cluster's GPUs" in label for label in gpu_labels)
    assert samples_labels
    for label, region in samples_labels:
        seconds = job_argument(
            training_job(dev_config, dev_config.region_config(region), image=ANY_IMAGE), "metrics-seconds"
        )
        assert seconds and f"average of {seconds} s records" in label, (label, seconds)


def test_each_training_spoke_shows_how_much_of_its_dataset_is_warm(shape: Shape) -> None:
    """docs/operations.md, "Dashboard": the cached fraction beside the hit ratio in every spoke with a job."""
    config, templates = shape.config, shape.templates
    sid, body = dashboard_of(templates)
    shown = {
        series[3]
        for widget, series in graphed(body, region_of(templates[sid]))
        if series[1] == "DatasetPrewarmedFraction" and "hit ratio" in widget["properties"]["title"]
    }
    training_spokes = {
        s.region
        for s in config.spokes
        if s.compute.enabled and s.storage.enabled and f"ops-{s.region}" in templates
    }
    assert shown == training_spokes
