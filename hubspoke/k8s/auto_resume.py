"""HyperPod job auto-resume for the Kubeflow PyTorchJob: what the job carries so a node fault resumes it.

Two string annotations, Worker restartPolicy OnFailure, Schedulable nodes and Training Operator 1.7.0 to 1.8.1
(SageMaker developer guide, "Running jobs using kubectl"; the pinned v1-855e096 is v1.7.0's image:
kubeflow/training-operator v1.7.0 manifests/overlays/standalone/kustomization.yaml newTag), in the kubeflow
namespace or one prefixed hyperpod ("Running jobs using the SageMaker HyperPod CLI"; names.py NAMESPACE).
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
