"""The reference training run as a Kubeflow PyTorchJob or a HyperPodPyTorchJob, rendered for one Region.

Reference (AWS and Qumulo, 2026-09): LLaMA 3 of about 1B parameters on tokenized C4, 4096-token windows,
batch 24 per GPU, FSDP, prefetch_factor 4, 2 nodes x 8 GPUs; 16 ranks x 4 loader workers x prefetch 4
keep 256 batches in flight.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

from hubspoke import training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.accelerators import accelerator
from hubspoke.k8s.names import (
    CHECKPOINT_CLAIM,
    CHECKPOINT_MOUNT_PATH,
    DATASET_CLAIM,
    DATASET_MOUNT_PATH,
    NAMESPACE,
)
from hubspoke.k8s.storage import PART_OF, Manifest

JobKind = Literal["pytorchjob", "hyperpod"]
JOB_KINDS: tuple[JobKind, ...] = ("pytorchjob", "hyperpod")

# Kubeflow training operator v1 (kubeflow.org/v1 PyTorchJob); its webhook requires a container named
# "pytorch" and a Master with exactly one replica.
KUBEFLOW_API = "kubeflow.org/v1"
KUBEFLOW_CONTAINER = "pytorch"
# SageMaker HyperPod training operator (SageMaker developer guide, "Using the training operator to run jobs").
HYPERPOD_API = "sagemaker.amazonaws.com/v1"
HYPERPOD_AGENT_PORT = 8080  # the HyperPod elastic agent listens here
TRAIN_SCRIPT = "/opt/hubspoke/train.py"
IMAGE_REPOSITORY = "hubspoke-training"


@dataclass(frozen=True)
class TrainingSettings:
    """The reference run's knobs; defaults reproduce the published measurements."""

    model: str = "llama3-1b"
    seq_len: int = 4096
    batch_size: int = 24
    num_workers: int = 4
    prefetch_factor: int = 4
    max_steps: int = 999
    checkpoint_every: int = 500
    log_every: int = 10
    job_name: str = "hubspoke-reference"


def default_image(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The image in the Region's own ECR registry: pulls stay in the Region."""
    return f"{config.account_of(region)}.dkr.ecr.{region.region}.amazonaws.com/{IMAGE_REPOSITORY}:latest"


def _script_args(config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings) -> list[str]:
    return [
        f"--data-dir={DATASET_MOUNT_PATH}",
        f"--checkpoint-dir={CHECKPOINT_MOUNT_PATH}/{s.job_name}",
        f"--model={s.model}",
        f"--seq-len={s.seq_len}",
        f"--batch-size={s.batch_size}",
        f"--num-workers={s.num_workers}",
        f"--prefetch-factor={s.prefetch_factor}",
        f"--max-steps={s.max_steps}",
        f"--checkpoint-every={s.checkpoint_every}",
        f"--log-every={s.log_every}",
        "--backend=nccl",
        f"--environment={config.environment}",
        f"--region={region.region}",
        f"--job-name={s.job_name}",
    ]


def _pod_template(
    *,
    region: RegionConfig,
    container_name: str,
    image: str,
    command: list[str],
    ports: list[dict[str, Any]],
) -> dict[str, Any]:
    group = region.compute.instance_groups[0]
    devices = accelerator(group.instance_type)
    resources = {
        "nvidia.com/gpu": devices.gpus,
        "vpc.amazonaws.com/efa": devices.efa_interfaces,
        # The EFA libfabric provider registers memory in 2 MiB huge pages.
        "hugepages-2Mi": "5120Mi",
    }
    container: dict[str, Any] = {
        "name": container_name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "env": [
            {"name": "FI_PROVIDER", "value": "efa"},
            {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"},
            {"name": "NCCL_DEBUG", "value": "WARN"},
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            # samples/s as metrics via the add-on's CloudWatch agent, not stdout (hubspoke/training_metrics.py).
            {"name": training_metrics.AGENT_ENDPOINT_ENV, "value": training_metrics.AGENT_ENDPOINT},
        ],
        "resources": {"limits": dict(resources), "requests": {**resources, "memory": "32Gi"}},
        "volumeMounts": [
            {"name": "dataset", "mountPath": DATASET_MOUNT_PATH, "readOnly": True},
            {"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    }
    if ports:
        container["ports"] = ports
    return {
        "metadata": {"labels": {**PART_OF, "hubspoke/job": "reference"}},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "node.kubernetes.io/instance-type",
                                        "operator": "In",
                                        "values": [group.instance_type],
                                    },
                                    # HyperPod's resilience label: only nodes that passed health checks.
                                    {
                                        "key": "sagemaker.amazonaws.com/node-health-status",
                                        "operator": "In",
                                        "values": ["Schedulable"],
                                    },
                                ]
                            }
                        ]
                    }
                }
            },
            "containers": [container],
            "volumes": [
                {"name": "dataset", "persistentVolumeClaim": {"claimName": DATASET_CLAIM, "readOnly": True}},
                {"name": "checkpoints", "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM}},
                # DataLoader workers hand batches over in shared memory; the 64 MiB default is far too small.
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
            ],
        },
    }


def _metadata(config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings) -> dict[str, Any]:
    return {
        "name": s.job_name,
        "namespace": NAMESPACE,
        "labels": {**PART_OF, "hubspoke/environment": config.environment, "hubspoke/region": region.region},
    }


def pytorch_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    image: str | None = None,
    settings: TrainingSettings = TrainingSettings(),
) -> Manifest:
    """A Kubeflow PyTorchJob: one Master and (nodes - 1) Workers, torchrun inside each pod."""
    group = region.compute.instance_groups[0]
    gpus = accelerator(group.instance_type).gpus
    # torchrun takes nnodes, rank and rendezvous from the PET_* variables the operator sets.
    template = _pod_template(
        region=region,
        container_name=KUBEFLOW_CONTAINER,
        image=image or region.compute.training_image or default_image(config, region),
        command=["torchrun", TRAIN_SCRIPT, *_script_args(config, region, settings)],
        ports=[],
    )
    replicas: dict[str, Any] = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
    if group.count > 1:
        replicas["Worker"] = {
            "replicas": group.count - 1,
            "restartPolicy": "OnFailure",
            "template": copy.deepcopy(template),
        }
    return {
        "apiVersion": KUBEFLOW_API,
        "kind": "PyTorchJob",
        "metadata": _metadata(config, region, settings),
        "spec": {
            "nprocPerNode": str(gpus),
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3},
            "pytorchReplicaSpecs": replicas,
        },
    }


def hyperpod_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    image: str | None = None,
    settings: TrainingSettings = TrainingSettings(),
) -> Manifest:
    """A HyperPodPyTorchJob: the HyperPod operator restarts failed processes in place via hyperpodrun."""
    group = region.compute.instance_groups[0]
    gpus = accelerator(group.instance_type).gpus
    template = _pod_template(
        region=region,
        container_name=KUBEFLOW_CONTAINER,
        image=image or region.compute.training_image or default_image(config, region),
        command=[
            "hyperpodrun",
            f"--nnodes={group.count}",
            f"--nproc-per-node={gpus}",
            TRAIN_SCRIPT,
            *_script_args(config, region, settings),
        ],
        ports=[{"containerPort": HYPERPOD_AGENT_PORT, "name": "elastic-agent"}],
    )
    return {
        "apiVersion": HYPERPOD_API,
        "kind": "HyperPodPyTorchJob",
        "metadata": _metadata(config, region, settings),
        "spec": {
            "nprocPerNode": str(gpus),
            "replicaSpecs": [{"name": "pods", "replicas": group.count, "template": template}],
            "runPolicy": {
                "jobMaxRetryCount": 10,
                "restartPolicy": {
                    "numRestartBeforeFullJobRestart": 3,
                    "evalPeriodSeconds": 3600,
                    "maxFullJobRestarts": 1,
                },
                "cleanPodPolicy": "All",
            },
        },
    }


def training_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    kind: JobKind = "pytorchjob",
    image: str | None = None,
    settings: TrainingSettings = TrainingSettings(),
) -> Manifest:
    render = pytorch_job if kind == "pytorchjob" else hyperpod_job
    return render(config, region, image=image, settings=settings)
