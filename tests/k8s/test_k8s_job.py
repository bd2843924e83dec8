"""The reference job in both flavours: schema-valid, shaped like the reference run, mounting the right claims."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest

from hubspoke import training_metrics
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH, DATASET_CLAIM, DATASET_MOUNT_PATH, NAMESPACE
from hubspoke.k8s.accelerators import UnknownAccelerator
from hubspoke.k8s.job import JOB_KINDS, PROGRESS_LOG_PATTERN, training_job
from hubspoke.k8s.run import NoTrainingImage, TrainingSettings
from tests.k8s.crd_schemas import HYPERPOD_JOB_SCHEMA, PYTORCHJOB_SCHEMA, k8s_validate, pod_templates

SCHEMAS = {"pytorchjob": PYTORCHJOB_SCHEMA, "hyperpod": HYPERPOD_JOB_SCHEMA}
REGIONS = ("us-east-2", "us-west-2")


def _replica_counts(job: dict[str, Any]) -> int:
    specs = job["spec"].get("pytorchReplicaSpecs")
    if specs:
        return sum(r["replicas"] for r in specs.values())
    return sum(r["replicas"] for r in job["spec"]["replicaSpecs"])


def _args(container: dict[str, Any]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in container["command"] if a.startswith("--") and "=" in a)


@pytest.mark.parametrize("kind", JOB_KINDS)
@pytest.mark.parametrize("code", REGIONS)
def test_job_matches_its_crd_and_pods_are_valid_kubernetes(
    dev_config: HubSpokeConfig, kind: str, code: str
) -> None:
    region = dev_config.region_config(code)
    job = training_job(dev_config, region, kind=kind)  # type: ignore[arg-type]
    jsonschema.validate(job, SCHEMAS[kind])
    assert job["metadata"]["namespace"] == NAMESPACE
    for template in pod_templates(job):
        pod_template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": "t"},
            "template": template,
        }
        k8s_validate(pod_template, region.compute.kubernetes_version)


def test_schema_rejects_a_broken_pytorchjob(dev_config: HubSpokeConfig) -> None:
    """The derived schema has teeth: the webhook's rules fail a job that breaks them."""
    job = training_job(dev_config, dev_config.hub, kind="pytorchjob")
    worker = job["spec"]["pytorchReplicaSpecs"].pop("Worker")
    with pytest.raises(jsonschema.ValidationError):  # elastic without a Worker spec
        jsonschema.validate(job, PYTORCHJOB_SCHEMA)
    job["spec"]["pytorchReplicaSpecs"] = {"Worker": worker, "Master": {**worker, "replicas": 2}}
    with pytest.raises(jsonschema.ValidationError):  # Master must be exactly one
        jsonschema.validate(job, PYTORCHJOB_SCHEMA)
    job = training_job(dev_config, dev_config.hub, kind="pytorchjob")
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = "trainer"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(job, PYTORCHJOB_SCHEMA)


def test_pytorchjob_rendezvous_is_elastic_c10d_over_every_node(dev_config: HubSpokeConfig) -> None:
    """A restarted pod re-forms the world (torchrun's elastic agent) instead of hanging its peers in NCCL."""
    region = dev_config.region_config("us-west-2")
    job = training_job(dev_config, region, kind="pytorchjob")
    nodes = region.compute.instance_groups[0].count
    assert job["spec"]["elasticPolicy"]["rdzvBackend"] == "c10d"
    assert job["spec"]["elasticPolicy"]["minReplicas"] == job["spec"]["elasticPolicy"]["maxReplicas"] == nodes
    assert job["spec"]["elasticPolicy"]["maxRestarts"] >= 1
    assert set(job["spec"]["pytorchReplicaSpecs"]) == {"Worker"}
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == nodes


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_every_pod_starts_one_process_per_gpu(dev_config: HubSpokeConfig, kind: str) -> None:
    """The launcher gets the node count and GPUs per node on its command line: the pinned training operator
    does not set PET_NPROC_PER_NODE for a Worker-only elastic PyTorchJob (tests/workload/test_launch.py runs
    torchrun under its environment), and torchrun's default is one process."""
    region = dev_config.region_config("us-west-2")
    (template,) = pod_templates(training_job(dev_config, region, kind=kind))  # type: ignore[arg-type]
    args = _args(template["spec"]["containers"][0])
    # 2 x ml.p5.48xlarge with 8 H100 each (config/dev.yaml; EC2 P5 instance page).
    assert (args["nnodes"], args["nproc-per-node"]) == ("2", "8")


def test_hyperpod_job_detects_hangs_from_the_progress_line(dev_config: HubSpokeConfig) -> None:
    job = training_job(dev_config, dev_config.hub, kind="hyperpod")
    rules = {r["name"]: r for r in job["spec"]["runPolicy"]["logMonitoringConfiguration"]}
    assert set(rules) == {"JobStart", "JobHangingDetection"}
    hang = rules["JobHangingDetection"]
    assert hang["logPattern"] == PROGRESS_LOG_PATTERN and hang["expectedRecurringFrequencyInSeconds"] > 0
    (container,) = pod_templates(job)[0]["spec"]["containers"]
    assert "--tee=3" in container["command"], "the workers' output must reach the log HyperPod watches"
    # A NaN loss is a hang too: the pattern wants a decimal. (The pattern against train.py's real output:
    # tests/workload/test_train.py.)
    assert re.fullmatch(PROGRESS_LOG_PATTERN, "[rank 0] step 10 loss 3.2189 115.2 samples/s")
    assert not re.fullmatch(PROGRESS_LOG_PATTERN, "[rank 0] step 10 loss nan 115.2 samples/s")


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_pods_ask_for_gpus_and_efa_only_and_set_efa_fork_safety(
    dev_config: HubSpokeConfig, kind: str
) -> None:
    """AWS's EKS samples request GPUs and EFA, nothing else, and set FI_EFA_FORK_SAFE=1 (awsome-distributed-training,
    3.test_cases/pytorch/FSDP/kubernetes/llama3_1_8b-fsdp-hpto.yaml)."""
    job = training_job(dev_config, dev_config.hub, kind=kind)  # type: ignore[arg-type]
    for template in pod_templates(job):
        (container,) = template["spec"]["containers"]
        assert set(container["resources"]["limits"]) == {"nvidia.com/gpu", "vpc.amazonaws.com/efa"}
        assert not [r for r in container["resources"]["requests"] if r.startswith("hugepages-")]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["FI_EFA_FORK_SAFE"] == "1"


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_two_p5_nodes_with_all_gpus_and_efa(dev_config: HubSpokeConfig, kind: str) -> None:
    region = dev_config.region_config("us-west-2")
    job = training_job(dev_config, region, kind=kind)  # type: ignore[arg-type]
    group = region.compute.instance_groups[0]
    assert _replica_counts(job) == group.count == 2
    assert job["spec"]["nprocPerNode"] == "8"
    for template in pod_templates(job):
        (container,) = template["spec"]["containers"]
        limits = container["resources"]["limits"]
        assert limits["nvidia.com/gpu"] == 8
        assert limits["vpc.amazonaws.com/efa"] == 32
        terms = template["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        exprs = {e["key"]: e["values"] for t in terms["nodeSelectorTerms"] for e in t["matchExpressions"]}
        assert exprs["node.kubernetes.io/instance-type"] == ["ml.p5.48xlarge"]


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_dataset_read_only_and_checkpoints_writable(dev_config: HubSpokeConfig, kind: str) -> None:
    job = training_job(dev_config, dev_config.hub, kind=kind)  # type: ignore[arg-type]
    for template in pod_templates(job):
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        (container,) = template["spec"]["containers"]
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        dataset, checkpoints = mounts[DATASET_MOUNT_PATH], mounts[CHECKPOINT_MOUNT_PATH]
        assert volumes[dataset["name"]]["persistentVolumeClaim"] == {
            "claimName": DATASET_CLAIM,
            "readOnly": True,
        }
        assert dataset["readOnly"] is True
        assert volumes[checkpoints["name"]]["persistentVolumeClaim"]["claimName"] == CHECKPOINT_CLAIM
        assert not checkpoints.get("readOnly", False)
        assert volumes[mounts["/dev/shm"]["name"]]["emptyDir"]["medium"] == "Memory"


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_script_gets_the_reference_settings_and_mount_paths(dev_config: HubSpokeConfig, kind: str) -> None:
    job = training_job(dev_config, dev_config.hub, kind=kind)  # type: ignore[arg-type]
    (container,) = pod_templates(job)[0]["spec"]["containers"]
    args = _args(container)
    reference = TrainingSettings()
    assert (args["seq-len"], args["batch-size"], args["prefetch-factor"]) == ("4096", "24", "4")
    assert args["model"] == reference.model
    assert args["data-dir"] == DATASET_MOUNT_PATH
    # The config's pin (config/dev.yaml: dataset c4-llama3, version v1) and the reference run's token format.
    assert (args["dataset-name"], args["dataset-version"]) == ("c4-llama3", "v1")
    assert (args["token-bytes"], args["vocab-size"]) == ("4", "128256")
    assert args["checkpoint-dir"].startswith(CHECKPOINT_MOUNT_PATH + "/")
    # 2 nodes x 8 ranks x workers x prefetch = the 256 batches in flight of the reference run.
    assert 2 * 8 * int(args["num-workers"]) * int(args["prefetch-factor"]) == 256


def test_image_is_the_given_one_else_the_configs_and_never_a_default_tag(dev_config: HubSpokeConfig) -> None:
    for code in REGIONS:
        job = training_job(dev_config, dev_config.region_config(code))
        container = pod_templates(job)[0]["spec"]["containers"][0]
        assert container["image"] == dev_config.region_config(code).compute.training_image
        # Named by digest, so a node that holds the image holds this one (Kubernetes docs, "Images").
        assert container["imagePullPolicy"] == "IfNotPresent"
    job = training_job(dev_config, dev_config.hub, image="registry.example/train@sha256:" + "cd" * 32)
    assert (
        pod_templates(job)[0]["spec"]["containers"][0]["image"]
        == "registry.example/train@sha256:" + "cd" * 32
    )
    bare = dev_config.hub.model_copy(
        update={"compute": dev_config.hub.compute.model_copy(update={"training_image": None})}
    )
    with pytest.raises(NoTrainingImage, match="hubspoke image build"):
        training_job(dev_config, bare)


def test_unknown_instance_type_is_refused_with_a_fix(dev_config: HubSpokeConfig) -> None:
    group = dev_config.hub.compute.instance_groups[0].model_copy(update={"instance_type": "ml.g9.mega"})
    hub = dev_config.hub.model_copy(
        update={"compute": dev_config.hub.compute.model_copy(update={"instance_groups": [group]})}
    )
    with pytest.raises(UnknownAccelerator, match=r"accelerators\.py"):
        training_job(dev_config, hub)


@pytest.mark.parametrize("kind", JOB_KINDS)
@pytest.mark.parametrize("code", REGIONS)
def test_every_container_sends_emf_to_the_cloudwatch_agent(
    dev_config: HubSpokeConfig, kind: str, code: str
) -> None:
    job = training_job(dev_config, dev_config.region_config(code), kind=kind)  # type: ignore[arg-type]
    for template in pod_templates(job):
        for container in template["spec"]["containers"]:
            env = {e["name"]: e["value"] for e in container["env"]}
            # Every rank's container gets it (rank 0 may land in any pod); the workload reads this variable.
            assert env[training_metrics.AGENT_ENDPOINT_ENV] == training_metrics.AGENT_ENDPOINT
    assert training_metrics.AGENT_ENDPOINT_ENV == "AWS_EMF_AGENT_ENDPOINT"  # the EMF libraries' convention
