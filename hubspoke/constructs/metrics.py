"""The CloudWatch metrics that alarms and the dashboard read, each defined once (publishers: see each source)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from hubspoke import compute_metrics, training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.constructs.canary.traffic import INTER_REGION_IN, NFS_READ_BYTES_LOGGED, traffic_metric

# Flow logs arrive in up-to-10-minute aggregates: the hit ratio is judged over 5-minute periods.
HIT_RATIO_PERIOD_MINUTES = 5


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
    """The job's throughput: rank 0 reports a rate every few steps, so a period's value is their average."""
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
    """GPU utilization only in minutes where the training job reports samples/s: idle clusters do not alarm."""
    period = Duration.minutes(1)
    return cloudwatch.MathExpression(
        expression="IF(sps > 0, gpu)",
        using_metrics={
            "gpu": gpu_utilization(config, region, period=period),
            "sps": samples_per_second(config, region, period=period),
        },
        label=f"GPU utilization while training, {region.region} (%)",
        period=period,
    )


def hit_ratio(*, environment: str, region: str) -> cloudwatch.MathExpression:
    """1 - bytes from the hub / NFS bytes served (flow logs count each NFS byte twice: see traffic.py)."""
    period = HIT_RATIO_PERIOD_MINUTES
    return cloudwatch.MathExpression(
        expression="IF(nfs > 0, 1 - hub / (nfs / 2))",
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
