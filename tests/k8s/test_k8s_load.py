"""The dataset load Job: schema-valid, on the hub, read-only on the dataset claim, AWS through its service account."""

from __future__ import annotations

import re
from typing import Any

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.load import SERVICE_ACCOUNT, SETTINGS, job_name, load_job
from tests.k8s.crd_schemas import k8s_validate

# A DNS-1123 label (Kubernetes API, "Object Names and IDs": at most 63 lowercase alphanumerics or '-', starting
# and ending alphanumeric), which the Job name must be to serve as its pods' `job-name` label value.
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def _job(config: HubSpokeConfig, **options: Any) -> dict[str, Any]:
    return load_job(
        config, name="c4-llama3", version="v2", source="s3://hubspoke-datasets/c4/llama3/",
        bucket_region="us-east-2", token_bytes=4, vocab_size=128256, **options,
    )  # fmt: skip


def test_the_load_job_is_valid_kubernetes(dev_config: HubSpokeConfig) -> None:
    k8s_validate(_job(dev_config), dev_config.hub.compute.kubernetes_version)


def test_it_mounts_the_hubs_dataset_claim_read_only_and_nothing_else(dev_config: HubSpokeConfig) -> None:
    spec = _job(dev_config)["spec"]["template"]["spec"]
    (volume,) = spec["volumes"]
    (container,) = spec["containers"]
    (mount,) = container["volumeMounts"]
    # The claim the hub's Compute stack creates (hubspoke/k8s/storage.py), read-only in volume and mount.
    assert volume["persistentVolumeClaim"]["readOnly"] is True and mount["readOnly"] is True
    assert volume["persistentVolumeClaim"]["claimName"].startswith("hubspoke-dataset")
    assert f"--mount={mount['mountPath']}" in container["command"]
    assert f"--dataset-path={dev_config.hub.storage.dataset_path}" in container["command"]


def test_aws_and_the_hubs_addresses_come_from_the_stacks_service_account_and_configmap(
    dev_config: HubSpokeConfig,
) -> None:
    job = _job(dev_config)
    spec = job["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == SERVICE_ACCOUNT
    (container,) = spec["containers"]
    env = {e["name"]: e for e in container["env"]}
    refs = {n: e["valueFrom"]["configMapKeyRef"] for n, e in env.items() if "valueFrom" in e}
    assert {r["name"] for r in refs.values()} == {SETTINGS}
    # Every $(VAR) in the command is defined in the container's env, or the kubelet passes it verbatim.
    used = {m for a in container["command"] for m in re.findall(r"\$\((\w+)\)", a)}
    assert used == set(refs) and len(used) == 3
    assert env["AWS_DEFAULT_REGION"]["value"] == "us-east-2" == dev_config.hub.region
    assert job["metadata"]["labels"]["hubspoke/region"] == "us-east-2"
    assert not any("password" in e["name"].lower() for e in container["env"])


def test_a_refusal_fails_the_job_and_the_name_is_one_per_version(dev_config: HubSpokeConfig) -> None:
    job = _job(dev_config)
    (rule,) = job["spec"]["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["values"] == [2]
    names = {job_name("c4-llama3", v) for v in ("v2", "V2", "v2.1", "v2-1")}
    assert len(names) == 4 and all(DNS_LABEL.match(n) for n in names)
    long = job_name("a" * 63, "b" * 63)
    assert DNS_LABEL.match(long) and job["metadata"]["name"] == job_name("c4-llama3", "v2")
