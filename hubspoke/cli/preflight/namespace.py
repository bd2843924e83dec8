"""Preflight row: what the next Compute deploy deletes in the namespace the workloads left (`training`).

Commit 95314a1 moved every manifest hubspoke applies from namespace `training` to `hyperpod-training` (HyperPod
resumes jobs only in kubeflow or a hyperpod-prefixed namespace). On a cluster deployed before it, the old
Namespace object carries the manifest's prune label (hubspoke/k8s/storage.py puts it in the storage manifest),
and the next Compute deploy's `kubectl apply --prune` deletes it (aws_cdk.aws_eks KubernetesManifestProps.prune,
default true: resources removed from the manifest are pruned); deleting a namespace deletes everything in it
(Kubernetes docs, "Namespaces"). Jobs, pods and secrets someone made there by hand go with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import CheckResult, error_code
from hubspoke.cli.verify.kube import KubeUnavailable, connect, default_kubeconfig
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.k8s.names import NAMESPACE
from hubspoke.names import eks_cluster_name

CHECK = "old training namespace"
# The namespace every workload ran in before 95314a1.
OLD_NAMESPACE = "training"
HOW_TO_LOOK = f"kubectl get jobs,pods,secrets -n {OLD_NAMESPACE}"
# What is listed, as GET paths of the Kubernetes API reference (core/v1 Pod and Secret, batch/v1 Job).
LISTS = {
    "jobs": f"/apis/batch/v1/namespaces/{OLD_NAMESPACE}/jobs",
    "pods": f"/api/v1/namespaces/{OLD_NAMESPACE}/pods",
    "secrets": f"/api/v1/namespaces/{OLD_NAMESPACE}/secrets",
}
_FIX = (
    f"before deploying Compute, look with `{HOW_TO_LOOK}` (through `hubspoke connect`); export what you keep "
    f"(`hubspoke render export`) and re-create secrets you need in {NAMESPACE}"
)


def check_old_namespace(
    eks: Any,
    *,
    config: HubSpokeConfig,
    region: RegionConfig,
    kubeconfig: Sequence[Path] | None = None,
) -> CheckResult:
    """Pass when there is no cluster or nothing in `training`; warn with what the next deploy deletes, or, when the
    cluster cannot be read from here, that it may delete something."""
    code = region.region
    name = eks_cluster_name(config, region)
    try:
        # EKS DescribeCluster (botocore eks 2017-11-01): ResourceNotFoundException when no such cluster.
        cluster = eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        return CheckResult(
            code, CHECK, "pass", f"no cluster {name} yet: nothing in namespace {OLD_NAMESPACE}"
        )
    deletes = (
        f"the next Compute deploy deletes namespace {OLD_NAMESPACE} of {name} (the workloads moved to "
        f"{NAMESPACE}) and every job, pod and secret in it"
    )
    try:
        api = connect(
            default_kubeconfig() if kubeconfig is None else kubeconfig,
            arn=str(cluster.get("arn", "")),
            endpoint=str(cluster.get("endpoint", "")),
            name=name,
            region=code,
        )
        found = {kind: len(api.items(path)) for kind, path in LISTS.items()}
    except KubeUnavailable as exc:
        return CheckResult(code, CHECK, "warn", f"{deletes}; not looked at: {exc.reason}", _FIX)
    held = ", ".join(f"{n} {kind}" for kind, n in found.items() if n)
    if not held:
        return CheckResult(
            code, CHECK, "pass", f"namespace {OLD_NAMESPACE} of {name} holds no jobs, pods or secrets"
        )
    return CheckResult(code, CHECK, "warn", f"{deletes}: it holds {held}", _FIX)
