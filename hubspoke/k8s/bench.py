"""The cold/warm read benchmark Job: workload/bench_reader.py on a training node, through the dataset claim.

It runs on the training instance type (no GPU requested) so it reads through the same NFS mount options and
network path as the data loader; results go to the Region's checkpoint volume, out of the portal.
"""

from __future__ import annotations

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.cpu_job import cpu_job, image_for
from hubspoke.k8s.names import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH, DATASET_CLAIM, DATASET_MOUNT_PATH
from hubspoke.k8s.storage import Manifest

RESULTS_DIR = f"{CHECKPOINT_MOUNT_PATH}/.hubspoke/bench"


def results_path(run: str) -> str:
    return f"{RESULTS_DIR}/{run}.jsonl"


def bench_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    run: str,
    readers: int = 8,
    block_size: str = "1MiB",
    phases: str = "cold,warm",
    max_seconds: int | None = None,
    image: str | None = None,
) -> Manifest:
    """The Job for one Region and one named run (the run names the Job and its results file)."""
    args = [
        f"--root={DATASET_MOUNT_PATH}",
        f"--out={results_path(run)}",
        f"--readers={readers}",
        f"--block-size={block_size}",
        f"--phases={phases}",
    ]
    if max_seconds is not None:
        args.append(f"--max-seconds={max_seconds}")
    instance_type = region.compute.instance_groups[0].instance_type
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
        cpu=str(max(2, readers // 2)),
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
