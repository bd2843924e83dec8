"""The training pods' init container that waits for prewarm to warm the job's dataset version in a spoke cache.

`hubspoke render job --wait-for-cached-fraction F` adds it; workload/cache_status.py is the program it runs.
"""

from __future__ import annotations

from typing import Any

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.names import CHECKPOINT_MOUNT_PATH
from hubspoke.k8s.run import PinnedDataset, TrainingSettings, status_path

# workload/cache_status.py, copied beside train.py (/opt/hubspoke) by workload/Dockerfile.
CACHE_WAIT_SCRIPT = "/opt/hubspoke/cache_status.py"
CACHE_WAIT_CONTAINER = "wait-for-cache"


def has_cache(config: HubSpokeConfig, region: RegionConfig) -> bool:
    """Whether the Region reads the dataset through a spoke cache (the hub reads its own data)."""
    return region.region != config.hub.region and region.storage.enabled


def cache_wait_deadline_path(s: TrainingSettings, dataset: PinnedDataset) -> str:
    """Where a submission's wait keeps the deadline its first attempt set: on the checkpoint volume, keyed by the job
    name, the dataset version and the submission (a value made at each render), so a recreated or restarted pod of
    one submission waits only what is left, and a new submission (a new render) waits afresh."""
    return f"{CHECKPOINT_MOUNT_PATH}/.hubspoke/cache-wait/{s.job_name}-{dataset.version}-{s.submission}.json"


def cache_wait_refusal_path(s: TrainingSettings, dataset: PinnedDataset) -> str:
    """Where a submission's wait, run with --at-deadline fail, leaves the refusal train.py then exits 2 on."""
    return cache_wait_deadline_path(s, dataset).removesuffix(".json") + ".refused"


def cache_wait_containers(
    config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings, dataset: PinnedDataset, image: str
) -> list[dict[str, Any]]:
    """The init container that waits for prewarm's status, when the job is told to wait; none otherwise.

    An init container, since HyperPod's log monitoring times the first progress line from when hyperpodrun
    starts (hyperpod-elastic-agent 1.1.3, HyperPodElasticAgent.start_log_monitoring, LogRule._start_timestamp,
    "expectedStartCutOffInSeconds") and Kubernetes starts it after every init container ("Init Containers"): a
    wait in train.py was restarted as hung. At the deadline it exits 0, since a failed init container restarts
    under OnFailure and Always ("Init Containers") and would idle the GPUs forever; with wait_at_deadline
    "fail" train.py refuses (exit 2) instead."""
    if s.wait_for_cached_fraction is None:
        return []
    if not has_cache(config, region):
        raise ValueError(f"{region.region} has no spoke cache to wait for")
    return [
        {
            "name": CACHE_WAIT_CONTAINER,
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": [
                "python",
                CACHE_WAIT_SCRIPT,
                f"--status={status_path(region, dataset)}",
                f"--wait-for-cached-fraction={s.wait_for_cached_fraction:g}",
                f"--dataset-name={dataset.name}",
                f"--dataset-version={dataset.version}",
                f"--deadline-file={cache_wait_deadline_path(s, dataset)}",
                f"--timeout-seconds={s.wait_timeout_s:g}",
                f"--max-status-age={s.cache_status_max_age_s:g}",
                f"--at-deadline={s.wait_at_deadline}",
                *(
                    [f"--refusal-file={cache_wait_refusal_path(s, dataset)}"]
                    if s.wait_at_deadline == "fail"
                    else []
                ),
            ],
            "env": [
                {"name": "PYTHONUNBUFFERED", "value": "1"},
                {"name": "HUBSPOKE_SUBMISSION", "value": s.submission},
            ],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "128Mi"}},
            # The status and the deadline both live on the checkpoint volume; the dataset is not needed.
            "volumeMounts": [{"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH}],
        }
    ]
