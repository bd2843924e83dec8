"""Where a Region's GPU metrics land in CloudWatch: the namespace, metrics and dimensions the dashboard imports.

The Compute stack installs the Amazon CloudWatch Observability EKS add-on (Container Insights with
enhanced observability); it publishes NVIDIA GPU metrics from every HyperPod node into the
`ContainerInsights` namespace (CloudWatch User Guide, "Amazon EKS and Kubernetes Container Insights with
enhanced observability metrics", read 2026-11). No CDK here: the dashboard and the CLI import it as is.
"""

from __future__ import annotations

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
