"""The CloudWatch metrics that alarms and the dashboard read, each defined once (publishers: see each source)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from hubspoke import compute_metrics, training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.canary.traffic import INTER_REGION_IN, NFS_READ_BYTES_LOGGED, traffic_metric

# Flow-log records cover at most 1 minute and are timestamped at their start (hubspoke/constructs/vpc.py),
# so the hub bytes and NFS bytes of one read can land a minute apart: the ratio is judged over 5 minutes.
HIT_RATIO_PERIOD_MINUTES = 5
# The CloudWatch agent publishes node_gpu_utilization per GPU device (dimension sets [ClusterName],
# [ClusterName, NodeName, InstanceId] and [..., GpuDevice]: aws/amazon-cloudwatch-agent,
# translator/translate/otel/exporter/awsemf/kubernetes.go): the ClusterName series averages GPUs, not nodes.
GPU_UTILIZATION_LABEL = "GPU utilization, average over the cluster's GPUs (%)"


def gpu_utilization(config: HubSpokeConfig, region: RegionConfig, *, period: Duration) -> cloudwatch.Metric:
    """GPU utilization of the Region's HyperPod nodes, as Container Insights publishes it (compute_metrics)."""
    return cloudwatch.Metric(
        namespace=compute_metrics.NAMESPACE,
        metric_name=compute_metrics.NODE_GPU_UTILIZATION,
        dimensions_map=dict(
            zip(
                compute_metrics.CLUSTER_DIMENSIONS,
                (compute_metrics.eks_cluster_name(config, region),),
                strict=True,
            )
        ),
        statistic="Average",
        period=period,
        region=region.region,
    )


def samples_per_second(
    config: HubSpokeConfig, region: RegionConfig, *, period: Duration
) -> cloudwatch.Metric:
    """The job's throughput: rank 0 reports a rate every REPORT_SECONDS; a period's value is their average."""
    return cloudwatch.Metric(
        namespace=training_metrics.NAMESPACE,
        metric_name=training_metrics.SAMPLES_PER_SECOND,
        dimensions_map=dict(
            zip(training_metrics.DIMENSIONS, (config.environment, region.region), strict=True)
        ),
        statistic="Average",
        period=period,
        region=region.region,
    )


def gpu_while_training(config: HubSpokeConfig, region: RegionConfig) -> cloudwatch.MathExpression:
    """GPU utilization in the minutes where the training job reported samples/s, 0 included."""
    # A running job reports every training_metrics.REPORT_SECONDS, 0 samples/s when no step finished
    # (workload/throughput.py), so each of its minutes counts, a stalled job's too; idle clusters' do not.
    # Both series are required: metric math treats a value one side of a comparison or AND lacks as 0, and
    # IF(condition, value) drops points where the condition is false but gives 0 where it is true and `value`
    # has no point (CloudWatch User Guide, "Using metric math", awsdocs/amazon-cloudwatch-user-guide@b355497,
    # doc_source/using-metric-math.md). `IF(sps >= 0, gpu)` alone would turn a minute without a GPU datapoint
    # (Container Insights late or down) into 0 %: a page about GPUs that may well be busy.
    period = Duration.minutes(1)
    return cloudwatch.MathExpression(
        expression="IF(sps >= 0 AND gpu >= 0, gpu)",
        using_metrics={
            "gpu": gpu_utilization(config, region, period=period),
            "sps": samples_per_second(config, region, period=period),
        },
        label=GPU_UTILIZATION_LABEL,
        period=period,
    )


def hit_ratio(*, environment: str, region: str, min_read_gb: float) -> cloudwatch.MathExpression:
    """1 - bytes from the hub / NFS bytes served, in periods where the spoke served at least `min_read_gb`."""
    period = HIT_RATIO_PERIOD_MINUTES
    # Flow logs count each NFS byte twice (server and client ENI: see traffic.py), so `nfs / 2` is what was
    # served. The condition compares `nfs` itself: metric math's precedence between arithmetic and comparison
    # is not documented. Below the minimum the point is dropped (IF without a false value, CloudWatch User
    # Guide, "Using IF expressions"), so a trickle of reads cannot turn background traffic into a ratio < 0.
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
