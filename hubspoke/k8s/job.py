"""The reference training run as a Kubeflow PyTorchJob or a HyperPodPyTorchJob, rendered for one Region.

Reference (AWS and Qumulo, 2026-09): LLaMA 3 of about 1B parameters on tokenized C4, 4096-token windows,
batch 24 per GPU, FSDP, prefetch_factor 4, 2 nodes x 8 GPUs; 16 ranks x 4 loader workers x prefetch 4
keep 256 batches in flight.
"""

from __future__ import annotations

from typing import Any, Literal

from hubspoke import training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s import auto_resume
from hubspoke.k8s.accelerators import accelerator
from hubspoke.k8s.cache_wait import cache_wait_containers, cache_wait_refusal_path, has_cache
from hubspoke.k8s.names import (
    CHECKPOINT_CLAIM,
    CHECKPOINT_MOUNT_PATH,
    DATASET_CLAIM,
    DATASET_MOUNT_PATH,
    NAMESPACE,
)
from hubspoke.k8s.run import (
    TRAIN_SCRIPT,
    PinnedDataset,
    TrainingSettings,
    image_for,
    pinned_dataset,
    status_path,
)
from hubspoke.k8s.storage import PART_OF, Manifest

JobKind = Literal["pytorchjob", "hyperpod"]
JOB_KINDS: tuple[JobKind, ...] = ("pytorchjob", "hyperpod")

# kubeflow.org/v1 as the pinned v1-855e096 validates it: a container named "pytorch", an image in each, Master
# and Worker types only, a Master of one replica (pkg/apis/kubeflow.org/v1/pytorch_validation.go
# ValidateV1PyTorchJob; v1.9.0's webhook too).
KUBEFLOW_API = "kubeflow.org/v1"
KUBEFLOW_CONTAINER = "pytorch"
# SageMaker HyperPod training operator (SageMaker developer guide, "Using the training operator to run jobs").
HYPERPOD_API = "sagemaker.amazonaws.com/v1"
HYPERPOD_AGENT_PORT = 8080  # the HyperPod elastic agent listens here
# train.py's progress line from local rank 0, the only stdout the HyperPod elastic agent watches
# (hyperpod-elastic-agent 1.1.3, HyperPodElasticAgent.start_log_monitoring, LogAgent._monitor_log_loop); a NaN
# loss ("nan") fails the match and restarts the job, as in the SageMaker developer guide ("Using the training
# operator to run jobs"); tests/workload/test_launch.py.
PROGRESS_LOG_PATTERN = r".*step \d+ loss \d+\.\d+.*"


def _script_args(
    config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings, dataset: PinnedDataset
) -> list[str]:
    return [
        # The mount; train.py reads <mount>/<name>/<version> and refuses it unless its manifest is sealed and
        # agrees with the token format below.
        f"--data-dir={DATASET_MOUNT_PATH}",
        f"--dataset-name={dataset.name}",
        f"--dataset-version={dataset.version}",
        f"--token-bytes={dataset.token_bytes}",
        f"--vocab-size={dataset.vocab_size}",
        *(["--allow-dataset-change"] if dataset.allow_change else []),
        f"--checkpoint-dir={CHECKPOINT_MOUNT_PATH}/{s.job_name}",
        f"--model={s.model}",
        f"--seq-len={s.seq_len}",
        f"--batch-size={s.batch_size}",
        f"--num-workers={s.num_workers}",
        f"--prefetch-factor={s.prefetch_factor}",
        f"--max-steps={s.max_steps}",
        f"--checkpoint-every={s.checkpoint_every}",
        f"--log-every={s.log_every}",
        # Explicit, so the interval the alarms and the dashboard rely on is the one the manifest shows.
        f"--metrics-seconds={training_metrics.REPORT_SECONDS:g}",
        "--backend=nccl",
        f"--environment={config.environment}",
        f"--region={region.region}",
        f"--job-name={s.job_name}",
        *_cache_args(config, region, s, dataset),
    ]


def _cache_args(
    config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings, dataset: PinnedDataset
) -> list[str]:
    """In a spoke with a CNQ cache: read prewarm's status (the cached fraction goes out with the job's records,
    for the cache alarms). The hub reads its own data: nothing is cached there."""
    if not has_cache(config, region):
        return []
    # The status of the version this job reads (prewarm writes one per version), so another version's never counts.
    refusal = (
        [f"--cache-wait-refusal={cache_wait_refusal_path(s, dataset)}"]
        if s.wait_for_cached_fraction is not None and s.wait_at_deadline == "fail"
        else []
    )
    return [f"--cache-status={status_path(region, dataset)}", *refusal]


def _pod_template(
    *,
    region: RegionConfig,
    container_name: str,
    image: str,
    command: list[str],
    ports: list[dict[str, Any]],
    init_containers: list[dict[str, Any]],
) -> dict[str, Any]:
    group = region.compute.instance_groups[0]
    devices = accelerator(group.instance_type)
    # GPUs and EFA only, as AWS's EKS samples request (awsome-distributed-training, FSDP kubernetes/*.yaml): a
    # hugepages-2Mi request only schedules on nodes that pre-allocate huge pages, which hubspoke's lifecycle
    # script does not, so the pods would stay Pending. libfabric's EFA provider works without them.
    resources = {"nvidia.com/gpu": devices.gpus, "vpc.amazonaws.com/efa": devices.efa_interfaces}
    container: dict[str, Any] = {
        "name": container_name,
        "image": image,
        # IfNotPresent: the image is named by digest (or an immutable tag), so a node that holds it holds exactly
        # this image, and a restarted pod starts without a pull (Kubernetes docs, "Images": with a digest the
        # image never changes; Always would only add a registry round trip to every restart).
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "env": [
            {"name": "FI_PROVIDER", "value": "efa"},
            {"name": "FI_EFA_USE_DEVICE_RDMA", "value": "1"},
            # DataLoader workers fork after libfabric registered memory; AWS's samples set this for EFA.
            {"name": "FI_EFA_FORK_SAFE", "value": "1"},
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
    pod_spec: dict[str, Any] = {"initContainers": init_containers} if init_containers else {}
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
            **pod_spec,
            "containers": [container],
            "volumes": [
                {"name": "dataset", "persistentVolumeClaim": {"claimName": DATASET_CLAIM, "readOnly": True}},
                {"name": "checkpoints", "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM}},
                # DataLoader workers hand batches over in shared memory; the 64 MiB default is far too small.
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
            ],
        },
    }


def _metadata(
    config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings, dataset: PinnedDataset
) -> dict[str, Any]:
    return {
        "name": s.job_name,
        "namespace": NAMESPACE,
        "labels": {
            **PART_OF,
            "hubspoke/environment": config.environment,
            "hubspoke/region": region.region,
            # `kubectl get -l` finds the jobs reading a version (names and versions are valid label values:
            # hubspoke/dataset_manifest.py, SEGMENT_PATTERN).
            "hubspoke/dataset": dataset.name,
            "hubspoke/dataset-version": dataset.version,
        },
    }


def pytorch_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    image: str | None,
    settings: TrainingSettings,
    dataset_version: str | None,
    allow_dataset_change: bool,
) -> Manifest:
    """A Kubeflow PyTorchJob with an elastic c10d rendezvous: Workers only, torchrun inside each pod.

    Elastic c10d re-forms the world when a pod restarts, where a static rendezvous leaves the others in NCCL
    until the 30-minute timeout; min = max keeps the reference run's world size. The pinned operator
    (training-operator `v1-855e096`: aws/sagemaker-hyperpod-cli@a00b22d1 training-operators/values.yaml)
    rendezvouses on `<job>-worker-0:23456` (pytorch_defaults.go) and sets PET_NPROC_PER_NODE only with a
    Master replica (envvar.go setPodEnv, elastic.go Generate); torchrun defaults to one process
    (torch/distributed/run.py), so the command passes `--nnodes` and `--nproc-per-node`, which win over PET_*
    (torch/distributed/argparse_util.py `env`), as AWS's FSDP samples do
    (awsome-distributed-training@7217859f, llama3_2_1b-fsdp.yaml).
    """
    group = region.compute.instance_groups[0]
    gpus = accelerator(group.instance_type).gpus
    dataset = pinned_dataset(config.dataset, version=dataset_version, allow_change=allow_dataset_change)
    chosen = image_for(image, region)
    template = _pod_template(
        region=region,
        container_name=KUBEFLOW_CONTAINER,
        image=chosen,
        init_containers=cache_wait_containers(config, region, settings, dataset, chosen),
        command=[
            "torchrun",
            f"--nnodes={group.count}",
            f"--nproc-per-node={gpus}",
            TRAIN_SCRIPT,
            *_script_args(config, region, settings, dataset),
        ],
        ports=[],
    )
    metadata = _metadata(config, region, settings, dataset)
    metadata["annotations"] = auto_resume.job_annotations(max_job_retries=settings.max_job_retries)
    return {
        "apiVersion": KUBEFLOW_API,
        "kind": "PyTorchJob",
        "metadata": metadata,
        "spec": {
            "nprocPerNode": str(gpus),
            "elasticPolicy": {
                "rdzvBackend": "c10d",
                "minReplicas": group.count,
                "maxReplicas": group.count,
                "maxRestarts": settings.max_restarts,
            },
            "runPolicy": auto_resume.run_policy(
                nodes=group.count,
                max_job_retries=settings.max_job_retries,
                restarts_per_replacement=settings.restarts_per_node_replacement,
                limit=settings.container_restart_limit,
            ),
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": group.count, "restartPolicy": "OnFailure", "template": template}
            },
        },
    }


def hyperpod_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    image: str | None,
    settings: TrainingSettings,
    dataset_version: str | None,
    allow_dataset_change: bool,
) -> Manifest:
    """A HyperPodPyTorchJob: the HyperPod operator restarts failed processes in place via hyperpodrun."""
    group = region.compute.instance_groups[0]
    gpus = accelerator(group.instance_type).gpus
    dataset = pinned_dataset(config.dataset, version=dataset_version, allow_change=allow_dataset_change)
    chosen = image_for(image, region)
    template = _pod_template(
        region=region,
        container_name=KUBEFLOW_CONTAINER,
        image=chosen,
        init_containers=cache_wait_containers(config, region, settings, dataset, chosen),
        command=[
            "hyperpodrun",
            f"--nnodes={group.count}",
            f"--nproc-per-node={gpus}",
            # Tee each worker's output to `<log_dir>/<run>/attempt_<n>/<local rank>/stdout.log`, the file log
            # monitoring reads (torch DefaultLogsSpecs.reify), as AWS's sample does
            # (awsome-distributed-training, llama3_1_8b-fsdp-hpto.yaml).
            "--tee=3",
            "--log_dir=/tmp/hyperpod",
            TRAIN_SCRIPT,
            *_script_args(config, region, settings, dataset),
        ],
        ports=[{"containerPort": HYPERPOD_AGENT_PORT, "name": "elastic-agent"}],
    )
    return {
        "apiVersion": HYPERPOD_API,
        "kind": "HyperPodPyTorchJob",
        "metadata": _metadata(config, region, settings, dataset),
        "spec": {
            "nprocPerNode": str(gpus),
            "replicaSpecs": [{"name": "pods", "replicas": group.count, "template": template}],
            "runPolicy": {
                "jobMaxRetryCount": settings.max_job_retries,
                "restartPolicy": {
                    "numRestartBeforeFullJobRestart": 3,
                    "evalPeriodSeconds": 3600,
                    "maxFullJobRestarts": 1,
                },
                "cleanPodPolicy": "All",
                # Hang detection (SageMaker developer guide, "Using the training operator to run jobs").
                "logMonitoringConfiguration": [
                    {
                        "name": "JobStart",
                        "logPattern": PROGRESS_LOG_PATTERN,
                        "expectedStartCutOffInSeconds": settings.progress_start_cutoff_s,
                    },
                    {
                        "name": "JobHangingDetection",
                        "logPattern": PROGRESS_LOG_PATTERN,
                        "expectedStartCutOffInSeconds": settings.progress_start_cutoff_s,
                        "expectedRecurringFrequencyInSeconds": settings.progress_hang_after_s,
                    },
                ],
            },
        },
    }


def training_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    kind: JobKind = "pytorchjob",
    image: str | None = None,
    settings: TrainingSettings | None = None,
    dataset_version: str | None = None,
    allow_dataset_change: bool = False,
) -> Manifest:
    """The reference job of `kind`, reading the config's pinned dataset version (or `dataset_version` of it).

    Default settings are made per call: each carries a fresh submission (run.TrainingSettings.submission)."""
    render = pytorch_job if kind == "pytorchjob" else hyperpod_job
    return render(
        config,
        region,
        image=image,
        settings=settings or TrainingSettings(),
        dataset_version=dataset_version,
        allow_dataset_change=allow_dataset_change,
    )
