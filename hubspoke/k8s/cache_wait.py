"""The training pods' init container that waits for prewarm to warm the job's dataset version in a spoke cache.

`hubspoke render job --wait-for-cached-fraction F` adds it; workload/cache_status.py is the program it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.names import CHECKPOINT_MOUNT_PATH

if TYPE_CHECKING:
    from hubspoke.k8s.job import PinnedDataset, TrainingSettings

# workload/cache_status.py, copied beside train.py (/opt/hubspoke) by workload/Dockerfile.
CACHE_WAIT_SCRIPT = "/opt/hubspoke/cache_status.py"
CACHE_WAIT_CONTAINER = "wait-for-cache"


def has_cache(config: HubSpokeConfig, region: RegionConfig) -> bool:
    """Whether the Region reads the dataset through a spoke cache (the hub reads its own data)."""
    return region.region != config.hub.region and region.storage.enabled


def cache_wait_deadline_path(s: TrainingSettings) -> str:
    """Where a job's wait keeps the deadline its first attempt set: on the checkpoint volume, keyed by the job name
    (the run: the same name resumes it), so a recreated pod or a resubmitted job waits only what is left."""
    return f"{CHECKPOINT_MOUNT_PATH}/.hubspoke/cache-wait/{s.job_name}.json"


def cache_wait_containers(
    config: HubSpokeConfig, region: RegionConfig, s: TrainingSettings, dataset: PinnedDataset, image: str
) -> list[dict[str, Any]]:
    """The init container that waits for prewarm's status, when the job is told to wait; none otherwise.

    Why an init container: HyperPod's log monitoring times the job's first progress line from when the elastic
    agent starts watching local rank 0's log (hyperpod-elastic-agent 1.1.3, LogAgent rules created by
    HyperPodElasticAgent.start_log_monitoring, LogRule._start_timestamp; "expectedStartCutOffInSeconds: Time to
    first match for LogPattern, beyond which the rule evaluates to HANGING"), and that agent is the main
    container's hyperpodrun, which Kubernetes starts only after every init container has completed
    (Kubernetes docs, "Init Containers"). A wait inside train.py printed no progress line and was restarted as
    hung after the start cut-off; out here it is not monitored, prints a line every poll, and an in-place
    process restart (hyperpodrun, torchrun) does not repeat it at all."""
    from hubspoke.k8s.prewarm import status_path

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
                f"--deadline-file={cache_wait_deadline_path(s)}",
                f"--timeout-seconds={s.wait_timeout_s:g}",
            ],
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "128Mi"}},
            # The status and the deadline both live on the checkpoint volume; the dataset is not needed.
            "volumeMounts": [{"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH}],
        }
    ]
