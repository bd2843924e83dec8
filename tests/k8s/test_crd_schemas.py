"""The pod-name checks k8s_validate adds to the schemas refuse what the API server refuses, and only that.

The oracle: Kubernetes docs, "Object Names and IDs", RFC 1123 Label Names (at most 63 characters; lowercase
alphanumeric characters or '-'; start and end with an alphanumeric character), which the Container and Volume
names must be (their v1.35 schema descriptions say DNS_LABEL); a VolumeMount names a Volume of the pod; a Job's
podFailurePolicy containerName names one of the pod template's containers or initContainers.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.bench import bench_job
from tests.k8s.crd_schemas import k8s_validate


def _job(dev_config: HubSpokeConfig) -> dict[str, Any]:
    return bench_job(dev_config, dev_config.region_config("us-west-2"), run="names")


def _rename_container(job: dict[str, Any], name: str) -> dict[str, Any]:
    changed = copy.deepcopy(job)
    changed["spec"]["template"]["spec"]["containers"][0]["name"] = name
    changed["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["containerName"] = name
    return changed


@pytest.mark.parametrize("name", ["a", "0", "bench-reader", "a" * 63, "9-lives"])
def test_dns_labels_pass(dev_config: HubSpokeConfig, name: str) -> None:
    k8s_validate(_rename_container(_job(dev_config), name), "1.35")


@pytest.mark.parametrize("name", ["bench_reader", "Bench", "-a", "a-", "a.b", "a" * 64, ""])
def test_names_that_are_not_dns_labels_are_refused(dev_config: HubSpokeConfig, name: str) -> None:
    with pytest.raises(AssertionError, match="not a DNS label"):
        k8s_validate(_rename_container(_job(dev_config), name), "1.35")


def test_a_mount_of_no_volume_is_refused(dev_config: HubSpokeConfig) -> None:
    job = _job(dev_config)
    job["spec"]["template"]["spec"]["volumes"] = job["spec"]["template"]["spec"]["volumes"][:1]
    with pytest.raises(AssertionError, match="which is no volume"):
        k8s_validate(job, "1.35")


def test_a_failure_rule_for_another_container_is_refused(dev_config: HubSpokeConfig) -> None:
    job = _job(dev_config)
    job["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["containerName"] = "trainer"
    with pytest.raises(AssertionError, match="podFailurePolicy names container 'trainer'"):
        k8s_validate(job, "1.35")


def test_repeated_container_names_are_refused(dev_config: HubSpokeConfig) -> None:
    job = _job(dev_config)
    containers = job["spec"]["template"]["spec"]["containers"]
    containers.append(copy.deepcopy(containers[0]))
    with pytest.raises(AssertionError, match="container names repeat"):
        k8s_validate(job, "1.35")
