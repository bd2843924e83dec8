"""Environment-wide rules on datasets: where `hubspoke dataset load` runs must exist."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem


def loads_run_on_hub_compute(config: HubSpokeConfig) -> Iterator[Problem]:
    """Source buckets mean loads; a load is a Job on the hub's cluster (hubspoke/k8s/load.py), where the hub's REST
    API and dataset export answer, and hubspoke builds no other host there."""
    if config.dataset.source_buckets and config.hub.compute_on is None:
        yield Problem(
            "dataset.source_buckets",
            "`hubspoke dataset load` runs as a Job on the hub's cluster, but hub.compute.enabled is false: set "
            "hub.compute.enabled: true, or remove dataset.source_buckets (and load versions some other way)",
        )
