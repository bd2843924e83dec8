"""Config rules on compute: HyperPod only where SageMaker offers it, and only beside the Region's own CNQ."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.sections import ConfigView, Problem
from hubspoke.eks_addons import KUBECTL_LAYER_VERSION, KUBECTL_SKEW
from hubspoke.regions import HYPERPOD_REGIONS, REGIONS


def compute_only_where_hyperpod_runs(config: ConfigView) -> Iterator[Problem]:
    for region in config.regions():
        path, code = region.path, region.region
        if code is None or region.compute_on is None:
            continue
        if code not in REGIONS:
            yield Problem(
                f"{path}.compute",
                f"hubspoke does not know whether SageMaker HyperPod is offered in {code} (a Region newer than "
                "hubspoke/regions.py): `hubspoke preflight` checks the account's HyperPod quotas there before you "
                "deploy; set compute.enabled: false if it is not offered",
                severity="warning",
            )
        if code in REGIONS and code not in HYPERPOD_REGIONS:
            yield Problem(
                f"{path}.compute",
                f"SageMaker HyperPod is not offered in {code} (hubspoke/regions.py, 2026-11-30); "
                "set compute.enabled: false for this Region or train in another one",
            )


def compute_mounts_local_storage(config: ConfigView) -> Iterator[Problem]:
    """The dataset and checkpoint volumes point at the Region's own CNQ, so compute needs it there."""
    for region in config.regions():
        if region.compute_on is not None and region.storage is not None and not region.storage.enabled:
            yield Problem(
                f"{region.path}.compute",
                "compute mounts the dataset from this Region's own CNQ, but storage.enabled is false: "
                "enable storage here or set compute.enabled: false",
            )


def compute_needs_egress(config: ConfigView) -> Iterator[Problem]:
    """HyperPod nodes and the compute stack's in-VPC functions reach AWS APIs through the NAT gateway.

    The VPC has an S3 gateway endpoint only; without NAT, nodes cannot pull images from ECR nor reach the EKS,
    SageMaker and CloudWatch endpoints (SageMaker HyperPod developer guide, "Setting up SageMaker HyperPod
    clusters with a custom Amazon VPC": a VPC without internet access needs interface endpoints for each).
    """
    for region in config.regions():
        if region.compute_on is not None and region.nat == "none":
            yield Problem(
                f"{region.path}.nat",
                "none leaves the HyperPod nodes and the compute stack's functions without a route to ECR, EKS, "
                "SageMaker and CloudWatch (hubspoke adds no interface endpoints): set nat: single (or per_az), "
                "or compute.enabled: false for this Region",
            )


def connectivity_check_needs_two_nodes(config: ConfigView) -> Iterator[Problem]:
    """InstanceConnectivity runs NCCL tests across a group's nodes: a group of one has nothing to test against.

    SageMaker developer guide, "Deep health checks" for Slurm (docs.aws.eu/sagemaker/latest/dg/
    sagemaker-hyperpod-resiliency-slurm-deep-health-checks.html): InstanceConnectivity "requires at least 2
    nodes". The EKS page (sagemaker-hyperpod-eks-resiliency-deep-health-checks) says nothing of a minimum:
    ASSUMED the same for EKS, the same NCCL test. An omitted key is the schema's default (both checks, 2 nodes).
    """
    for region in config.regions():
        if (compute := region.compute_on) is None:
            continue
        for i, group in enumerate(compute.instance_groups):
            count = group.count
            if "InstanceConnectivity" in group.on_start_deep_health_checks and count < 2:
                field = f"{region.path}.compute.instance_groups[{i}].on_start_deep_health_checks"
                yield Problem(
                    field,
                    f"InstanceConnectivity runs NCCL tests across a group's nodes and requires at least 2 nodes "
                    f"(SageMaker developer guide, 'Deep health checks'), but this group has count: {count}: "
                    "remove InstanceConnectivity from the list (keep InstanceStress, or [] for no checks), "
                    "or set count: 2 or more",
                )


def kubernetes_version_within_kubectl_skew(config: ConfigView) -> Iterator[Problem]:
    """The kubectl layer that applies the manifests and charts works within one minor of the control plane
    (hubspoke.eks_addons.KUBECTL_SKEW): outside it, synth would stop, or a deploy would fail on its first apply."""
    for region in config.regions():
        if (compute := region.compute_on) is None:
            continue
        version = compute.kubernetes_version
        if version not in KUBECTL_SKEW:
            yield Problem(
                f"{region.path}.compute.kubernetes_version",
                f"{version}: hubspoke's kubectl {KUBECTL_LAYER_VERSION} Lambda layer works with Kubernetes "
                f"{', '.join(KUBECTL_SKEW)} only (one minor either side); set one of those (a deployed cluster "
                "moves one minor per deploy: docs/runbooks/compute.md, 'Upgrading Kubernetes')",
            )
