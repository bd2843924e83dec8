"""The cache-prewarm Job for a spoke Region: workload/prewarm.py driving Qumulo fetch-data over one pinned version.

It talks to the spoke cluster's REST API only, without mounting the dataset; its resume journal lives on the
Region's checkpoint volume, not in a ConfigMap (1 MiB cap, an etcd write per update: docs/decisions.md,
"Prewarm's journal").
"""

from __future__ import annotations

from hubspoke import training_metrics
from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.k8s.cpu_job import cpu_job, image_for
from hubspoke.k8s.names import CHECKPOINT_CLAIM, CHECKPOINT_MOUNT_PATH
from hubspoke.k8s.run import pinned_dataset, state_path, status_path, version_root
from hubspoke.k8s.storage import Manifest

JOB_NAME = "hubspoke-prewarm"
# Created by the operator from the spoke Storage stack's PrewarmSecretArn (docs/runbooks/cache-warm-up.md): a Qumulo
# user that may only read and fetch (hubspoke/constructs/cnq/identity.py), not the cluster's admin.
QUMULO_SECRET = "hubspoke-qumulo-prewarm"
# Keeps the 70 ms, 1 GB/s cross-Region path >= 0.9 busy where 8 did not (benchmarks/prewarm_path.py, README
# "Benchmarks"); workload/prewarm.py's own default is the same (tests/k8s/test_k8s_ops_jobs.py).
DEFAULT_PARALLEL = 16


def prewarm_job(
    config: HubSpokeConfig,
    region: RegionConfig,
    *,
    rest_address: str,
    dataset_version: str | None = None,
    parallel: int = DEFAULT_PARALLEL,
    image: str | None = None,
    max_bytes_per_second: float | None = None,
    rewarm_on_missing: bool = False,
) -> Manifest:
    """The Job for one spoke Region, warming the config's pinned dataset version (`dataset_version` overrides
    the version, as for `render job`); `rest_address` is one of the spoke CNQ's floating IPs. DatasetNotPinned
    when the config pins no dataset."""
    dataset = pinned_dataset(config.dataset, version=dataset_version)
    return cpu_job(
        config=config,
        region=region,
        name=JOB_NAME,
        tool="prewarm",
        image=image_for(config, region, image),
        args=[
            f"--host={rest_address}",
            # Only the pinned version, its file list and sizes from its MANIFEST.json read through the REST API
            # (the pod mounts no dataset); the status then names the version.
            f"--root={version_root(region, dataset)}",
            "--version-manifest",
            f"--state={state_path(region, dataset)}",
            f"--status={status_path(region, dataset)}",
            f"--parallel={parallel}",
            f"--environment={config.environment}",
            f"--region={region.region}",
            *([] if max_bytes_per_second is None else [f"--max-bytes-per-second={max_bytes_per_second:.0f}"]),
            # The closing sample's eviction verdict re-warms only when asked (workload/prewarm.py: ASSUMED rule).
            *(["--rewarm-on-missing"] if rewarm_on_missing else []),
        ],
        env=[
            {
                "name": "QUMULO_USERNAME",
                "valueFrom": {"secretKeyRef": {"name": QUMULO_SECRET, "key": "username"}},
            },
            {
                "name": "QUMULO_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": QUMULO_SECRET, "key": "password"}},
            },
            # DatasetPrewarmedFraction goes to the add-on's CloudWatch agent, as the training job's metrics do: stdout
            # EMF never becomes a metric (where the endpoint comes from: hubspoke/training_metrics.py).
            {"name": training_metrics.AGENT_ENDPOINT_ENV, "value": training_metrics.AGENT_ENDPOINT},
        ],
        volume_mounts=[{"name": "checkpoints", "mountPath": CHECKPOINT_MOUNT_PATH}],
        volumes=[{"name": "checkpoints", "persistentVolumeClaim": {"claimName": CHECKPOINT_CLAIM}}],
        # The work is the spoke's (server-side reads); the pod only issues REST calls.
        cpu="500m",
        memory="512Mi",
        # Every retry resumes from the journal, so a few pod failures (node drain, spot loss) cost little.
        backoff_limit=6,
    )
