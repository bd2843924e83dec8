"""A job told to wait for the cache waits in an init container, before the process HyperPod monitors starts.

HyperPod's log monitoring flags a job whose first progress line does not match within
expectedStartCutOffInSeconds of the elastic agent starting to watch local rank 0's log (hyperpod-elastic-agent
1.1.3, LogRule.evaluate and HyperPodElasticAgent.start_log_monitoring); the agent is the main container's
hyperpodrun, and Kubernetes starts app containers only after every init container has completed (Kubernetes
docs, "Init Containers"). So the wait belongs in an init container, and train.py gets no wait flag.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s import CHECKPOINT_MOUNT_PATH, DATASET_CLAIM
from hubspoke.k8s.job import JOB_KINDS, training_job
from hubspoke.k8s.run import TrainingSettings, status_path
from tests.k8s.crd_schemas import HYPERPOD_JOB_SCHEMA, PYTORCHJOB_SCHEMA, k8s_validate, pod_templates

SCHEMAS = {"pytorchjob": PYTORCHJOB_SCHEMA, "hyperpod": HYPERPOD_JOB_SCHEMA}
WAIT = TrainingSettings(wait_for_cached_fraction=1.0, wait_timeout_s=7200)


def _args(container: dict[str, Any]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in container["command"] if a.startswith("--") and "=" in a)


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_the_wait_is_an_init_container_valid_for_the_crd_and_kubernetes(
    dev_config: HubSpokeConfig, kind: str
) -> None:
    spoke = dev_config.region_config("us-west-2")
    job = training_job(dev_config, spoke, kind=kind, settings=WAIT)  # type: ignore[arg-type]
    jsonschema.validate(job, SCHEMAS[kind])
    for template in pod_templates(job):
        k8s_validate(
            {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template},
            spoke.compute.kubernetes_version,
        )
        (init,) = template["spec"]["initContainers"]
        (main,) = template["spec"]["containers"]
        # The same image as the job (it carries workload/cache_status.py beside train.py, workload/Dockerfile).
        assert init["image"] == main["image"]
        assert init["command"][:2] == ["python", "/opt/hubspoke/cache_status.py"]
        args = _args(init)
        assert args["status"] == _args(main)["cache-status"] == status_path(spoke, _pin(dev_config))
        assert args["wait-for-cached-fraction"] == "1" and args["timeout-seconds"] == "7200"
        assert (args["dataset-name"], args["dataset-version"]) == ("c4-llama3", "v1")
        # The deadline lives on the checkpoint volume, keyed by the job name, version and submission: a recreated
        # pod of this submission waits only what is left of the first attempt's.
        assert args["deadline-file"].startswith(CHECKPOINT_MOUNT_PATH + "/")
        assert all(key in args["deadline-file"] for key in (WAIT.job_name, "v1", WAIT.submission))
        assert args["at-deadline"] == "start" and "refusal-file" not in args
        assert {m["mountPath"] for m in init["volumeMounts"]} == {CHECKPOINT_MOUNT_PATH}
        assert not any(
            (v.get("persistentVolumeClaim") or {}).get("claimName") == DATASET_CLAIM
            for v in template["spec"]["volumes"]
            if v["name"] in {m["name"] for m in init["volumeMounts"]}
        )
        # The monitored process no longer waits (train.py refuses the flag: tests/workload/test_train.py).
        assert not any("wait-for-cached-fraction" in a for a in main["command"])


def _pin(config: HubSpokeConfig) -> Any:
    from hubspoke.k8s.run import pinned_dataset

    return pinned_dataset(config.dataset)


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_no_wait_no_init_container(dev_config: HubSpokeConfig, kind: str) -> None:
    for code in ("us-east-2", "us-west-2"):
        job = training_job(dev_config, dev_config.region_config(code), kind=kind)  # type: ignore[arg-type]
        assert all("initContainers" not in t["spec"] for t in pod_templates(job))


def test_the_hub_has_no_cache_to_wait_for(dev_config: HubSpokeConfig) -> None:
    with pytest.raises(ValueError, match="no spoke cache"):
        training_job(dev_config, dev_config.hub, settings=WAIT)


def test_the_waiting_pytorchjob_is_valid_under_the_pinned_operators_crd(dev_config: HubSpokeConfig) -> None:
    """The operator the cluster really runs (training-operator v1-855e096, the stored CRD that
    tests/k8s/test_k8s_job_upstream.py checks against) keeps the init container: nothing pruned."""
    from tests.k8s.test_k8s_job_upstream import _pytorchjob_validator

    job = training_job(dev_config, dev_config.region_config("us-west-2"), kind="pytorchjob", settings=WAIT)
    _pytorchjob_validator().validate(job)


def _deadline_files(job: dict[str, Any]) -> set[str]:
    return {_args(t["spec"]["initContainers"][0])["deadline-file"] for t in pod_templates(job)}


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_each_submission_waits_afresh_and_its_pods_share_one_deadline(
    dev_config: HubSpokeConfig, kind: str
) -> None:
    """The job name is the same for every submission (hubspoke-reference by default): a deadline keyed by it alone
    made a later submission start past an old deadline. Each render is a submission of its own."""
    spoke = dev_config.region_config("us-west-2")
    renders = [
        training_job(dev_config, spoke, kind=kind, settings=TrainingSettings(wait_for_cached_fraction=1.0))  # type: ignore[arg-type]
        for _ in range(2)
    ]
    first, again = renders
    assert len(_deadline_files(first)) == 1 and _deadline_files(first) != _deadline_files(again)


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_at_deadline_fail_renders_the_refusal_train_py_reads(dev_config: HubSpokeConfig, kind: str) -> None:
    spoke = dev_config.region_config("us-west-2")
    settings = TrainingSettings(
        wait_for_cached_fraction=1.0, wait_at_deadline="fail", cache_status_max_age_s=600
    )
    for template in pod_templates(training_job(dev_config, spoke, kind=kind, settings=settings)):  # type: ignore[arg-type]
        init, main = _args(template["spec"]["initContainers"][0]), _args(template["spec"]["containers"][0])
        assert init["at-deadline"] == "fail" and init["max-status-age"] == "600"
        assert init["refusal-file"] == main["cache-wait-refusal"]
        assert init["refusal-file"].startswith(CHECKPOINT_MOUNT_PATH + "/")
