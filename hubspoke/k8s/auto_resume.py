"""HyperPod job auto-resume for the Kubeflow PyTorchJob: what the job carries so a node fault resumes it.

SageMaker developer guide, "Running jobs using kubectl" (To enable job auto-resume): two annotations, Worker
restartPolicy OnFailure, and nodes labelled Schedulable; annotation values are strings, as Kubernetes requires.
"Running jobs using the SageMaker HyperPod CLI" (Enabling job auto-resume): the job must run in the kubeflow
namespace or one prefixed with hyperpod (hubspoke/k8s/names.py NAMESPACE is such a name).
"Running jobs using kubectl" requires Kubeflow Training Operator release 1.7.0, 1.8.0 or 1.8.1: the pinned chart's
image v1-855e096 is release 1.7.0's (kubeflow/training-operator v1.7.0, manifests/overlays/standalone/
kustomization.yaml newTag; no pkg/ or cmd/ change between commit 855e096 and the tag).
"""

from __future__ import annotations

from typing import Any

AUTO_RESUME_ANNOTATION = "sagemaker.amazonaws.com/enable-job-auto-resume"
MAX_RETRY_ANNOTATION = "sagemaker.amazonaws.com/job-max-retry-count"


def job_annotations(*, max_job_retries: int) -> dict[str, str]:
    """The PyTorchJob's auto-resume annotations: on, and at most `max_job_retries` whole-job restarts."""
    return {AUTO_RESUME_ANNOTATION: "true", MAX_RETRY_ANNOTATION: str(max_job_retries)}


def container_restart_limit(*, nodes: int, max_job_retries: int, restarts_per_replacement: int) -> int:
    """The default backoffLimit: enough container restarts for every node fault the retry budget allows.

    The Kubeflow operator fails the job once the restarts of its running pods' containers sum to backoffLimit
    (training-operator@855e096, pkg/core/job.go PastBackoffLimit), and without one a crash-looping job holds its
    GPUs forever. Every pod may restart on each failed rendezvous while one node is replaced, for each of the
    max_job_retries node faults plus the first run, so the limit is their product.
    """
    # nodes x restarts_per_replacement (ASSUMED ~10: kubelet's 10 s..5 min back-off over a ~30 min replacement)
    # x (max_job_retries + 1 runs); dev: 2 x 10 x 11 = 220.
    return nodes * restarts_per_replacement * (max_job_retries + 1)


def run_policy(
    *, nodes: int, max_job_retries: int, restarts_per_replacement: int, limit: int | None = None
) -> dict[str, Any]:
    """The PyTorchJob's runPolicy: pods kept for their logs, and a finite container-restart limit (`limit`, else
    container_restart_limit's), which must outlive a node replacement: a job failed by its limit is not resumed.
    """
    backoff = limit
    if backoff is None:
        backoff = container_restart_limit(
            nodes=nodes, max_job_retries=max_job_retries, restarts_per_replacement=restarts_per_replacement
        )
    if backoff < 1:
        raise ValueError(f"backoffLimit {backoff}: give 1 or more container restarts")
    return {"cleanPodPolicy": "None", "backoffLimit": backoff}
