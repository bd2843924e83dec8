"""Where a Region's GPU metrics and training logs land in CloudWatch, and its training image: physical names.

The Compute stack installs the Amazon CloudWatch Observability EKS add-on (Container Insights with
enhanced observability); it publishes NVIDIA GPU metrics from every HyperPod node into the
`ContainerInsights` namespace (CloudWatch User Guide, "Amazon EKS and Kubernetes Container Insights with
enhanced observability metrics", read 2026-11). No CDK here: the dashboard and the CLI import it as is.
"""

from __future__ import annotations

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.topology import environment_prefix

NAMESPACE = "ContainerInsights"
NODE_GPU_UTILIZATION = "node_gpu_utilization"
NODE_GPU_MEMORY_UTILIZATION = "node_gpu_memory_utilization"
NODE_GPU_POWER_DRAW = "node_gpu_power_draw"
NODE_GPU_TEMPERATURE = "node_gpu_temperature"
GPU_METRICS: tuple[str, ...] = (
    NODE_GPU_UTILIZATION,
    NODE_GPU_MEMORY_UTILIZATION,
    NODE_GPU_POWER_DRAW,
    NODE_GPU_TEMPERATURE,
)
# Cluster-wide series (one per cluster) and per-node series; a dashboard graphs the first, alarms on it.
CLUSTER_DIMENSIONS: tuple[str, ...] = ("ClusterName",)
NODE_DIMENSIONS: tuple[str, ...] = ("ClusterName", "InstanceId", "NodeName")


def eks_cluster_name(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The EKS cluster's name, which is also the value of the `ClusterName` dimension."""
    return f"{environment_prefix(config.environment)}-{region.region}"


def hyperpod_cluster_name(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The SageMaker HyperPod cluster's name (its node logs go to /aws/sagemaker/Clusters/<name>/<id>)."""
    return eks_cluster_name(config, region)


def training_image_repository(config: HubSpokeConfig) -> str:
    """The ECR repository (same name in every compute Region) that `hubspoke image build` pushes the training image to."""
    return f"{environment_prefix(config.environment)}-training"


def application_log_group(config: HubSpokeConfig, region: RegionConfig) -> str:
    """Container stdout and stderr as the add-on's Fluent Bit ships them (EMF lines here are not metrics)."""
    return f"/aws/containerinsights/{eks_cluster_name(config, region)}/application"
