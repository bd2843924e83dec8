"""What one training run is, for every manifest that serves it: its settings, the dataset version it pins, the
image it runs, and where prewarm keeps that version's state on the Region's checkpoint volume."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Literal

from hubspoke.config.schema import DatasetConfig, RegionConfig
from hubspoke.k8s.names import CHECKPOINT_MOUNT_PATH

# The training image's entry point; every workload/ program sits beside it (workload/Dockerfile).
TRAIN_SCRIPT = "/opt/hubspoke/train.py"


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
    # torchrun restarts of the whole worker group after a failure, before the pod itself fails.
    max_restarts: int = 3
    # Whole-job restarts after a node fault, each after HyperPod replaced the node: the PyTorchJob's
    # job-max-retry-count annotation, the HyperPodPyTorchJob's jobMaxRetryCount. ASSUMED budget: tune per run.
    max_job_retries: int = 10
    # The PyTorchJob's backoffLimit, which counts container restarts (None: derived from the node count and the
    # retry budget, hubspoke/k8s/auto_resume.py container_restart_limit).
    container_restart_limit: int | None = None
    # Container restarts per pod while one node is replaced. ASSUMED: kubelet's back-off over a ~30 min replacement.
    restarts_per_node_replacement: int = 10
    # Log monitoring: the first line waits for build, FSDP init, resume and cold-cache steps (docs/design.md
    # §1); later lines come every ~35 s, AWS allows 600 s (awsome-distributed-training,
    # llama3_1_8b-fsdp-hpto.yaml). ASSUMED margins: tune per run.
    progress_start_cutoff_s: int = 1800
    progress_hang_after_s: int = 600
    # Wait before the training process starts until prewarm reports this fraction of the dataset warm (None: start
    # at once), for at most wait_timeout_s counted from the job's first attempt.
    wait_for_cached_fraction: float | None = None
    wait_timeout_s: float = 6 * 3600.0
    # At the deadline: "start" on a cold cache after a warning, or "fail" (train.py refuses); see cache_wait.py.
    wait_at_deadline: Literal["start", "fail"] = "start"
    # Prewarm's status counts only this fresh (workload/cache_status.py DEFAULT_MAX_STATUS_AGE_S says why).
    cache_status_max_age_s: float = 3600.0
    # One per render: keys the wait's deadline, so a new submission of the same job name waits afresh.
    submission: str = field(default_factory=lambda: secrets.token_hex(6))


# The PyTorchJob's name must be an RFC 1035 label (training-operator@855e096 pytorch_validation.go
# NameIsDNS1035Label) and names Services `<job>-worker-<index>` (controller.v1/pytorch/envvar.go replicaName)
# of at most 63 characters (Kubernetes, "Service"). ASSUMED margin: 40 leaves room for that suffix and
# HyperPod's.
JOB_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
JOB_NAME_MAX = 40


def job_name_problem(name: str) -> str | None:
    """Why `name` cannot name the training job (and its checkpoint directory), or None."""
    if len(name) > JOB_NAME_MAX or not JOB_NAME.fullmatch(name):
        return (
            f"{name!r} is not a job name: use at most {JOB_NAME_MAX} lowercase letters, digits and '-', "
            "starting with a letter and ending with a letter or digit (for example hubspoke-run-2)"
        )
    return None


class DatasetNotPinned(ValueError):
    """The config names no dataset version for the job to read: a run always pins one."""


@dataclass(frozen=True)
class PinnedDataset:
    """The dataset version one job reads and the token format it expects of it."""

    name: str
    version: str
    token_bytes: int
    vocab_size: int
    # Resume checkpoints trained on another version (train.py refuses that otherwise).
    allow_change: bool = False


def pinned_dataset(
    dataset: DatasetConfig, *, version: str | None = None, allow_change: bool = False
) -> PinnedDataset:
    """The config's dataset pin (`version` overrides its version), or DatasetNotPinned naming the missing key."""
    chosen = version or dataset.version
    for key, value in (("name", dataset.name), ("version", chosen)):
        if value is None:
            raise DatasetNotPinned(
                f"dataset.{key}: a training job reads one sealed dataset version; set dataset.name and "
                "dataset.version in the config (docs/datasets.md)"
            )
    assert dataset.name is not None and chosen is not None
    return PinnedDataset(dataset.name, chosen, dataset.token_bytes, dataset.vocab_size, allow_change)


class NoTrainingImage(ValueError):
    """No image was given and the config names none: there is nothing immutable to run."""


def image_for(image: str | None, region: RegionConfig) -> str:
    """The image a job runs: the one given (`hubspoke render` passes the build it recorded), else the config's.

    Never a default tag such as `:latest`: a tag another push can move makes two pods of one job run different
    code. `hubspoke image build` pushes to the Region's own repository (pulls stay in the Region) and records the
    digest; `hubspoke render` passes it here.
    """
    chosen = image or region.compute.training_image
    if chosen is None:
        raise NoTrainingImage(
            f"no training image for {region.region}: run `hubspoke image build --config FILE --base "
            "IMAGE@sha256:DIGEST` (it records the digest that render uses), or set compute.training_image, or "
            "pass --image"
        )
    return chosen


STATE_DIR = f"{CHECKPOINT_MOUNT_PATH}/.hubspoke/prewarm"


def state_path(region: RegionConfig, dataset: PinnedDataset) -> str:
    """The journal path inside the pod: one per Region, dataset path and pinned version, so a new version's
    warm-up starts afresh (its files are other bytes, even where their paths match the old version's)."""
    slug = region.storage.dataset_path.strip("/").replace("/", "-") or "root"
    return f"{STATE_DIR}/{region.region}-{slug}-{dataset.name}-{dataset.version}.jsonl"


def status_path(region: RegionConfig, dataset: PinnedDataset) -> str:
    """prewarm's status file (workload/cache_status.py) inside the pods, per version: the training job pinned to
    that version reads it from here, and never finds another version's status under its name."""
    return f"{state_path(region, dataset)}.status.json"


def version_root(region: RegionConfig, dataset: PinnedDataset) -> str:
    """The pinned version's directory on the spoke (the hub's layout, seen through the portal)."""
    return f"{region.storage.dataset_path.rstrip('/')}/{dataset.name}/{dataset.version}"
