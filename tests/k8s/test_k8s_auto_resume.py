"""A node fault resumes the default job: HyperPod job auto-resume as AWS documents it for a Kubeflow PyTorchJob.

Sources (the expected values below are written from them, not read from the code):
- SageMaker developer guide, "Running jobs using kubectl", To enable job auto-resume: the annotations
  `sagemaker.amazonaws.com/enable-job-auto-resume: "true"` and `sagemaker.amazonaws.com/job-max-retry-count`
  (a number, as a string), Worker `restartPolicy: OnFailure`, and nodes whose
  `sagemaker.amazonaws.com/node-health-status` is `Schedulable`.
- "Running jobs using the SageMaker HyperPod CLI", Enabling job auto-resume: "The job must be running under the
  kubeflow namespace or a namespace prefixed with hyperpod".
- Kubernetes docs, "Annotations": keys and values are strings.
- kubeflow/training-operator@855e096 (the pinned chart's operator), pkg/core/job.go PastBackoffLimit: with
  backoffLimit set and restartPolicy OnFailure, the job fails once the restart counts of the containers of its
  Running pods sum to backoffLimit; without backoffLimit it never fails for restarts (RunPolicy.BackoffLimit nil).
- config/dev.yaml and /work/shared/DESIGN.md: dev trains on 2 x ml.p5.48xlarge, so the job has 2 worker pods.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import jsonschema
import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.job import training_job
from hubspoke.k8s.run import TrainingSettings
from hubspoke.k8s.storage import storage_manifests
from tests.k8s.crd_schemas import HYPERPOD_JOB_SCHEMA, PYTORCHJOB_SCHEMA

REGIONS = ("us-east-2", "us-west-2")


def _default_job(config: HubSpokeConfig, code: str, **settings: Any) -> dict[str, Any]:
    """The job `hubspoke render job` writes without --kind (its default is the Kubeflow PyTorchJob)."""
    return training_job(config, config.region_config(code), settings=replace(TrainingSettings(), **settings))


@pytest.mark.parametrize("code", REGIONS)
def test_the_default_job_carries_hyperpods_auto_resume_settings(
    dev_config: HubSpokeConfig, code: str
) -> None:
    job = _default_job(dev_config, code)
    jsonschema.validate(job, PYTORCHJOB_SCHEMA)
    annotations = job["metadata"]["annotations"]
    assert annotations["sagemaker.amazonaws.com/enable-job-auto-resume"] == "true"
    retries = annotations["sagemaker.amazonaws.com/job-max-retry-count"]
    assert isinstance(retries, str) and retries.isdigit() and int(retries) >= 1
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in annotations.items())
    (worker,) = job["spec"]["pytorchReplicaSpecs"].values()
    assert worker["restartPolicy"] == "OnFailure"
    (term,) = worker["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    health = [e for e in term["matchExpressions"] if e["key"] == "sagemaker.amazonaws.com/node-health-status"]
    assert health == [
        {"key": "sagemaker.amazonaws.com/node-health-status", "operator": "In", "values": ["Schedulable"]}
    ]


@pytest.mark.parametrize("code", REGIONS)
def test_the_job_and_its_claims_are_in_a_namespace_auto_resume_serves(
    dev_config: HubSpokeConfig, code: str
) -> None:
    job = _default_job(dev_config, code)
    namespace = job["metadata"]["namespace"]
    assert namespace == "kubeflow" or namespace.startswith("hyperpod")
    # A pod mounts only claims of its own namespace: the claims the job names live there too.
    region = dev_config.region_config(code)
    claims = {
        m["metadata"]["name"]: m["metadata"]["namespace"]
        for m in storage_manifests(region, floating_ips=["10.0.0.1"])
        if m["kind"] == "PersistentVolumeClaim"
    }
    (worker,) = job["spec"]["pytorchReplicaSpecs"].values()
    for volume in worker["template"]["spec"]["volumes"]:
        if "persistentVolumeClaim" in volume:
            assert claims[volume["persistentVolumeClaim"]["claimName"]] == namespace


def _fails_for_restarts(job: dict[str, Any], restarts_per_running_pod: list[int]) -> bool:
    """training-operator@855e096 pkg/core/job.go PastBackoffLimit for a Worker-only OnFailure job."""
    limit = job["spec"]["runPolicy"].get("backoffLimit")
    if limit is None:
        return False
    total = sum(restarts_per_running_pod)
    return total > 0 if limit == 0 else total >= limit


# While HyperPod replaces worker-1's node, worker-0 keeps running and its container restarts on each failed
# rendezvous: at kubelet's back-off (10 s doubling to 5 min, Kubernetes docs "Pod Lifecycle", Container restarts)
# a 30-minute replacement is about 10 restarts. ASSUMED duration; the point is that it is more than a few.
RESTARTS_WHILE_A_NODE_IS_REPLACED = [10]


# Kubelet's crash back-off tops out at 5 minutes between restarts (Kubernetes docs, "Pod Lifecycle").
MAX_BACKOFF_MINUTES = 5


@pytest.mark.parametrize("code", REGIONS)
def test_restarts_during_a_node_replacement_do_not_fail_the_job(
    dev_config: HubSpokeConfig, code: str
) -> None:
    """Every node fault the retry budget allows (10 job retries, the run before them: 11 runs) costs the surviving
    worker about 10 restarts; their sum stays under the default limit."""
    job = _default_job(dev_config, code)
    assert not _fails_for_restarts(job, [sum(RESTARTS_WHILE_A_NODE_IS_REPLACED) * 11])
    # The model has teeth: the earlier limit (backoffLimit 3) failed the job mid-replacement, and an explicit
    # container_restart_limit still renders as given.
    earlier = {**job, "spec": {**job["spec"], "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3}}}
    assert _fails_for_restarts(earlier, RESTARTS_WHILE_A_NODE_IS_REPLACED)
    limited = _default_job(dev_config, code, container_restart_limit=50)
    assert limited["spec"]["runPolicy"]["backoffLimit"] == 50
    assert not _fails_for_restarts(limited, RESTARTS_WHILE_A_NODE_IS_REPLACED)


@pytest.mark.parametrize("code", REGIONS)
def test_a_crash_looping_job_fails_and_frees_the_gpus(dev_config: HubSpokeConfig, code: str) -> None:
    """Without a backoffLimit the operator never fails the job (RunPolicy.BackoffLimit nil), so a crash that is no
    node fault held both p5 nodes forever. The default is 2 nodes x 10 restarts x (10 retries + 1) = 220: one
    worker crash-looping at kubelet's 5-minute back-off fails the job in about 18 hours."""
    job = _default_job(dev_config, code)
    limit = job["spec"]["runPolicy"]["backoffLimit"]
    assert limit == 2 * 10 * (10 + 1)
    assert _fails_for_restarts(job, [limit]) and not _fails_for_restarts(job, [limit - 1])
    assert limit * MAX_BACKOFF_MINUTES / 60 < 24
    # It follows the retry budget: 4 retries give 2 x 10 x 5.
    assert _default_job(dev_config, code, max_job_retries=4)["spec"]["runPolicy"]["backoffLimit"] == 100


@pytest.mark.parametrize("code", REGIONS)
def test_both_kinds_spend_the_same_retry_budget(dev_config: HubSpokeConfig, code: str) -> None:
    """The HyperPodPyTorchJob counts whole-job retries in runPolicy.jobMaxRetryCount (SageMaker developer guide,
    "Using the training operator to run jobs"); one setting feeds both, so switching --kind keeps the budget."""
    region = dev_config.region_config(code)
    settings = replace(TrainingSettings(), max_job_retries=4)
    kubeflow = training_job(dev_config, region, settings=settings)
    hyperpod = training_job(dev_config, region, kind="hyperpod", settings=settings)
    jsonschema.validate(hyperpod, HYPERPOD_JOB_SCHEMA)
    assert kubeflow["metadata"]["annotations"]["sagemaker.amazonaws.com/job-max-retry-count"] == "4"
    assert hyperpod["spec"]["runPolicy"]["jobMaxRetryCount"] == 4
