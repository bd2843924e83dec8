"""The cold/warm read benchmark Job: workload/bench_reader.py on a training node, through the dataset claim.

It runs on the training instance type (no GPU requested) so it reads through the same NFS mount options and
network path as the data loader, and replays what one node of the rendered training job reads: the pinned
version, the job's seq_len windows, batch size, loader workers and prefetch, as ranks 0 .. GPUs-1 of a world of
nodes x GPUs (hubspoke/k8s/job.py passes the same numbers to train.py). Results go to the Region's checkpoint
volume, out of the portal.
"""

from __future__ import annotations

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.dataset_manifest import dataset_root
from hubspoke.k8s.accelerators import accelerator
from hubspoke.k8s.cpu_job import cpu_job, image_for
from hubspoke.k8s.names import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH, DATASET_CLAIM, DATASET_MOUNT_PATH
from hubspoke.k8s.run import TrainingSettings, pinned_dataset
from hubspoke.k8s.storage import Manifest

RESULTS_DIR = f"{CHECKPOINT_MOUNT_PATH}/.hubspoke/bench"


def results_path(run: str) -> str:
    return f"{RESULTS_DIR}/{run}.jsonl"


def bench_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    run: str,
    phases: str = "cold,warm",
    max_seconds: int | None = None,
    image: str | None = None,
) -> Manifest:
    """The Job for one Region and one named run (the run names the Job and its results file).

    Raises DatasetNotPinned when the config pins no dataset version: the bench reads the one a job would.
    """
    dataset = pinned_dataset(config.dataset)
    settings = TrainingSettings()  # the knobs `hubspoke render job` renders train.py with
    group = region.compute.instance_groups[0]
    gpus = accelerator(group.instance_type).gpus
    args = [
        f"--root={dataset_root(DATASET_MOUNT_PATH, dataset.name, dataset.version)}",
        f"--out={results_path(run)}",
        f"--token-bytes={dataset.token_bytes}",
        f"--seq-len={settings.seq_len}",
        f"--batch-size={settings.batch_size}",
        f"--num-workers={settings.num_workers}",
        f"--prefetch-factor={settings.prefetch_factor}",
        f"--world-size={group.count * gpus}",
        f"--ranks=0-{gpus - 1}",
        f"--phases={phases}",
    ]
    if max_seconds is not None:
        args.append(f"--max-seconds={max_seconds}")
    instance_type = group.instance_type
    readers = gpus * max(1, settings.num_workers)  # one thread per loader worker of every played rank
    return cpu_job(
        config=config,
        region=region,
        name=f"hubspoke-bench-{run}",
        tool="bench_reader",
        image=image_for(config, region, image),
        args=args,
        env=[],
        volume_mounts=[
            {"name": "dataset", "mountPath": DATASET_MOUNT_PATH, "readOnly": True},
            {"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH},
        ],
        volumes=[
            {"name": "dataset", "persistentVolumeClaim": {"claimName": DATASET_CLAIM, "readOnly": True}},
            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM}},
        ],
        cpu=str(max(2, readers // 8)),  # ASSUMED: reads wait on NFS, a core keeps 8 threads busy
        memory="2Gi",
        # A rerun of a benchmark is a new run: a second cold phase would not be cold.
        backoff_limit=0,
        node_affinity={
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "node.kubernetes.io/instance-type",
                                "operator": "In",
                                "values": [instance_type],
                            }
                        ]
                    }
                ]
            }
        },
    )
