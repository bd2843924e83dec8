"""The EKS add-ons every Compute stack installs, by name, with their pinned versions. No CDK: the CLI checks them.

Versions (Amazon EKS User Guide add-on version tables, read 2026-11-30). An add-on left out of a table
gets the version EKS picks as default for the cluster's Kubernetes version at create time; a change of
this table is a deliberate upgrade, reviewed in the snapshot diff.
"""

from __future__ import annotations

VPC_CNI = "vpc-cni"
KUBE_PROXY = "kube-proxy"
COREDNS = "coredns"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
CERT_MANAGER = "cert-manager"
# SageMaker developer guide, "Installing the training operator" (HyperPodPyTorchJob).
TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
CLOUDWATCH_OBSERVABILITY = "amazon-cloudwatch-observability"

# Networking, DNS and pod identity: installed before any node joins.
CORE_ADDONS: tuple[str, ...] = (VPC_CNI, KUBE_PROXY, COREDNS, POD_IDENTITY_AGENT)
# Controllers that run on the HyperPod nodes.
OPERATOR_ADDONS: tuple[str, ...] = (CERT_MANAGER, TRAINING_OPERATOR, CLOUDWATCH_OBSERVABILITY)
ADDONS: tuple[str, ...] = CORE_ADDONS + OPERATOR_ADDONS

# The Kubernetes versions HyperPod's EKS orchestration supports: SageMaker developer guide, "Getting started with
# Amazon EKS support in SageMaker HyperPod", Requirements 1 (docs.amazonaws.cn snapshot, translated, listing 1.28
# to 1.34; the English snapshots read 2026-12-01 list 1.28 to 1.32 and 1.28 to 1.33, older). A dated snapshot, so
# preflight warns outside it rather than refusing: HyperPod adds versions after EKS does.
HYPERPOD_KUBERNETES_VERSIONS: frozenset[str] = frozenset(
    {"1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34"}
)

# HyperPod needs the VPC CNI at 1.18.3 or newer (SageMaker developer guide, "Getting started with Amazon
# EKS support in SageMaker HyperPod"); this build is the EKS table's latest for Kubernetes 1.27 to 1.33.
VPC_CNI_VERSION = "v1.20.1-eksbuild.3"
# kube-proxy and CoreDNS follow the Kubernetes minor version, so they are pinned per version.
# The CloudWatch observability add-on is built from the aws-observability/helm-charts chart of the same
# version (its RELEASE_NOTES: "Upgrade CloudWatch Agent Addon to v3.7.0-eksbuild.1" in chart 3.7.0); 6.4.0 is
# the chart of 2026-07-21 (helm-charts@71a298ff). ASSUMED: build 1 of it is offered for Kubernetes 1.33; check
# as docs/runbooks/compute.md, "Pinned EKS add-on versions", shows.
VERSIONED: dict[str, dict[str, str]] = {
    "1.33": {
        KUBE_PROXY: "v1.33.0-eksbuild.2",
        COREDNS: "v1.12.1-eksbuild.2",
        CLOUDWATCH_OBSERVABILITY: "v6.4.0-eksbuild.1",
    },
}


def addon_version(name: str, kubernetes_version: str) -> str | None:
    """The pinned version of an add-on for this Kubernetes version, or None for EKS's default."""
    if name == VPC_CNI:
        return VPC_CNI_VERSION
    return VERSIONED.get(kubernetes_version, {}).get(name)
