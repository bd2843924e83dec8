"""HyperPod job auto-resume for the Kubeflow PyTorchJob: what the job carries so a node fault resumes it.

SageMaker developer guide, "Running jobs using kubectl" (To enable job auto-resume): two annotations, Worker
restartPolicy OnFailure, and nodes labelled Schedulable; annotation values are strings, as Kubernetes requires.
"Running jobs using the SageMaker HyperPod CLI" (Enabling job auto-resume): the job must run in the kubeflow
namespace or one prefixed with hyperpod (hubspoke/k8s/names.py NAMESPACE is such a name).
"""

from __future__ import annotations

from typing import Any

AUTO_RESUME_ANNOTATION = "sagemaker.amazonaws.com/enable-job-auto-resume"
MAX_RETRY_ANNOTATION = "sagemaker.amazonaws.com/job-max-retry-count"


def job_annotations(*, max_job_retries: int) -> dict[str, str]:
    """The PyTorchJob's auto-resume annotations: on, and at most `max_job_retries` whole-job restarts."""
    return {AUTO_RESUME_ANNOTATION: "true", MAX_RETRY_ANNOTATION: str(max_job_retries)}


def run_policy(*, container_restart_limit: int | None) -> dict[str, Any]:
    """The PyTorchJob's runPolicy: no backoffLimit unless one is asked for.

    The Kubeflow operator counts every container restart of the job's running pods against backoffLimit
    (training-operator@855e096, pkg/core/job.go PastBackoffLimit; the version the pinned chart deploys). While
    HyperPod replaces one node, the other pods' containers restart on every failed rendezvous, so a small limit
    fails the job before the node is back, and a failed job is not resumed. Without it, whole-job retries are
    counted per node fault by the max-retry annotation, as AWS's auto-resume examples leave it
    (aws-samples/awsome-distributed-training@7217859, 1.architectures/7.sagemaker-hyperpod-eks/task-governance/
    1-imagenet-gpu-team-a.yaml: no backoffLimit). A crash that is no node fault then restarts under kubelet's
    back-off until someone stops the job.
    """
    policy: dict[str, Any] = {"cleanPodPolicy": "None"}
    if container_restart_limit is not None:
        policy["backoffLimit"] = container_restart_limit
    return policy
