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

# Node and fabric health, from the same add-on (CloudWatch User Guide, "Amazon EKS and Kubernetes Container
# Insights with enhanced observability metrics": the EFA table, add-on v1.5.2 and later with the EFA device
# plugin, which HyperPod's dependencies chart installs; the "Amazon SageMaker AI HyperPod metrics" table, add-on
# v2.0.1 and later). Each is published at [ClusterName] and per node; hubspoke reads the ClusterName series.
# node_efa_rx_dropped: packets received and then dropped by a node's EFA devices, unit Count/Second.
NODE_EFA_RX_DROPPED = "node_efa_rx_dropped"
NODE_EFA_RX_BYTES = "node_efa_rx_bytes"
NODE_EFA_TX_BYTES = "node_efa_tx_bytes"
# One series per HyperPod node-health label value (sagemaker.amazonaws.com/node-health-status): 1 on a node in
# that state, 0 otherwise, unit Count (same page; amazon-cloudwatch-agent's HyperPod scraper emits every state per
# node, statusToMetricName).
HYPERPOD_SCHEDULABLE = "hyperpod_node_health_status_schedulable"
HYPERPOD_UNSCHEDULABLE = "hyperpod_node_health_status_unschedulable"
HYPERPOD_PENDING_REBOOT = "hyperpod_node_health_status_unschedulable_pending_reboot"
HYPERPOD_PENDING_REPLACEMENT = "hyperpod_node_health_status_unschedulable_pending_replacement"
HYPERPOD_HEALTH_METRICS: tuple[str, ...] = (
    HYPERPOD_SCHEDULABLE,
    HYPERPOD_UNSCHEDULABLE,
    HYPERPOD_PENDING_REBOOT,
    HYPERPOD_PENDING_REPLACEMENT,
)
# "The number of GPU(s) being used by the running pods on the node" (same page, node metrics, [ClusterName] and
# per node): GPUs a running pod holds, whether or not it computes; 0 when no pod holds one.
NODE_GPU_USAGE_TOTAL = "node_gpu_usage_total"
# "The total number of GPU(s) available on the node" (same page, node metrics, [ClusterName] and per node).
NODE_GPU_LIMIT = "node_gpu_limit"
# "The total number of container restarts in a pod", dimensions [PodName, Namespace, ClusterName] only (same
# page): no cluster-wide series, so the dashboard searches the training namespace's pods.
POD_NUMBER_OF_CONTAINER_RESTARTS = "pod_number_of_container_restarts"
POD_DIMENSIONS: tuple[str, ...] = ("ClusterName", "Namespace", "PodName")
# A pod's containers waiting in CrashLoopBackOff (the kubelet's back-off between restarts), a count per pod. Published
# with enhanced observability at [PodName, Namespace, ClusterName] and [ClusterName] (and two finer sets), not per
# namespace (aws/amazon-cloudwatch-agent@0316fb69, translator/translate/otel/exporter/awsemf/kubernetes.go,
# getPodMetricDeclarations): an alarm on one namespace aggregates its pods with a Metrics Insights query.
POD_CRASH_LOOP_BACK_OFF = "pod_container_status_waiting_reason_crash_loop_back_off"
