"""The CloudWatch metrics that alarms and the dashboard read, each defined once (publishers: see each source)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from hubspoke import compute_metrics, names, training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.canary.traffic import INTER_REGION_IN, NFS_READ_BYTES_LOGGED, traffic_metric

# Flow-log records cover at most 1 minute and are timestamped at their start (hubspoke/constructs/vpc.py),
# so the hub bytes and NFS bytes of one read can land a minute apart: the ratio is judged over 5 minutes.
HIT_RATIO_PERIOD_MINUTES = 5
# The CloudWatch agent publishes node_gpu_utilization per GPU device (dimension sets [ClusterName],
# [ClusterName, NodeName, InstanceId] and [..., GpuDevice]: aws/amazon-cloudwatch-agent,
# translator/translate/otel/exporter/awsemf/kubernetes.go): the ClusterName series averages GPUs, not nodes.
GPU_UTILIZATION_LABEL = "GPU utilization, average over the cluster's GPUs (%)"


def gpu_utilization(
    config: HubSpokeConfig, region: RegionConfig, *, period: Duration, statistic: str = "Average"
) -> cloudwatch.Metric:
    """GPU utilization of the Region's HyperPod nodes, as Container Insights publishes it (compute_metrics)."""
    return cloudwatch.Metric(
        namespace=compute_metrics.NAMESPACE,
        metric_name=compute_metrics.NODE_GPU_UTILIZATION,
        dimensions_map=dict(
            zip(
                compute_metrics.CLUSTER_DIMENSIONS,
                (names.eks_cluster_name(config, region),),
                strict=True,
            )
        ),
        statistic=statistic,
        period=period,
        region=region.region,
    )


def training_metric(
    config: HubSpokeConfig,
    region: RegionConfig,
    name: str = training_metrics.SAMPLES_PER_SECOND,
    *,
    period: Duration,
    statistic: str = "Average",
) -> cloudwatch.Metric:
    """One of the job's series (samples/s by default): rank 0 reports every REPORT_SECONDS, 0 when no step
    finished, so a running job's minutes hold two records and an idle cluster's none."""
    return cloudwatch.Metric(
        namespace=training_metrics.NAMESPACE,
        metric_name=name,
        dimensions_map=dict(
            zip(training_metrics.DIMENSIONS, (config.environment, region.region), strict=True)
        ),
        statistic=statistic,
        period=period,
        region=region.region,
    )


# Presence guards: metric math reads missing values as 0 (CloudWatch User Guide, "Using metric math",
# awsdocs/amazon-cloudwatch-user-guide@b355497), so `sps >= 0` may hold with no report, while a SampleCount's
# `n > 0` is false either way (tests/fakes/cloudwatch_alarm.py evaluates both); IF drops false points ("Using
# IF expressions").


def throughput_vs_baseline(config: HubSpokeConfig, region: RegionConfig) -> cloudwatch.MathExpression:
    """Each minute's samples/s as a fraction of the run's own baseline, in minutes where the job reported both and
    did not report reading a version prewarm has not warmed whole (a cold pass is slow by design)."""
    period = Duration.minutes(1)
    return cloudwatch.MathExpression(
        # `cold` is 1 where the minute's record says prewarm warmed less than the whole version, 0 where all,
        # no point where none says (the hub): `guard > cold` keeps the guard unless cold is 1, since a missing
        # value counts as 0 (CloudWatch User Guide, "Using metric math").
        expression="IF((sps_n > 0 AND base_n > 0) > ((frac_n * frac) < frac_n), sps / base)",
        using_metrics={
            "frac": training_metric(
                config,
                region,
                training_metrics.DATASET_PREWARMED_FRACTION,
                period=period,
                statistic="Minimum",
            ),
            "frac_n": training_metric(
                config,
                region,
                training_metrics.DATASET_PREWARMED_FRACTION,
                period=period,
                statistic="SampleCount",
            ),
            "sps": training_metric(config, region, period=period),
            "sps_n": training_metric(config, region, period=period, statistic="SampleCount"),
            "base": training_metric(
                config, region, training_metrics.SAMPLES_PER_SECOND_BASELINE, period=period
            ),
            "base_n": training_metric(
                config,
                region,
                training_metrics.SAMPLES_PER_SECOND_BASELINE,
                period=period,
                statistic="SampleCount",
            ),
        },
        label=f"samples/s as a fraction of the run's best {training_metrics.BASELINE_SECONDS / 60:g} minutes",
        period=period,
    )


def gpu_while_training(config: HubSpokeConfig, region: RegionConfig) -> cloudwatch.MathExpression:
    """GPU utilization in the minutes where the training job reported samples/s (0 included) and GPUs reported."""
    # Both presences are required: IF gives 0 where the condition holds and the value has no point (same page),
    # so a guard on samples/s alone would turn a minute without a GPU datapoint into 0 %.
    period = Duration.minutes(1)
    return cloudwatch.MathExpression(
        expression="IF(sps_n > 0 AND gpu_n > 0, gpu)",
        using_metrics={
            "gpu": gpu_utilization(config, region, period=period),
            "gpu_n": gpu_utilization(config, region, period=period, statistic="SampleCount"),
            "sps_n": training_metric(config, region, period=period, statistic="SampleCount"),
        },
        label=GPU_UTILIZATION_LABEL,
        period=period,
    )


def hit_ratio(*, environment: str, region: str, min_read_gb: float) -> cloudwatch.MathExpression:
    """1 - bytes from the hub / NFS bytes served, in periods where the spoke served at least `min_read_gb`."""
    period = HIT_RATIO_PERIOD_MINUTES
    # Flow logs count NFS bytes twice (server and client ENI: traffic.py); below the minimum IF drops the
    # point (CloudWatch User Guide, "Using IF expressions") so background traffic makes no ratio.
    logged_minimum = round(2 * min_read_gb * 1e9)
    return cloudwatch.MathExpression(
        expression=f"IF(nfs >= {logged_minimum}, 1 - hub / (nfs / 2))",
        using_metrics={
            "hub": traffic_metric(
                INTER_REGION_IN, environment=environment, region=region, period_minutes=period
            ),
            "nfs": traffic_metric(
                NFS_READ_BYTES_LOGGED, environment=environment, region=region, period_minutes=period
            ),
        },
        label=f"derived cache hit ratio, {region}",
        period=Duration.minutes(period),
    )
