"""Environment-wide rules on compute: HyperPod only where SageMaker offers it."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem
from hubspoke.regions import HYPERPOD_REGIONS, REGIONS


def compute_only_where_hyperpod_runs(config: HubSpokeConfig) -> Iterator[Problem]:
    for region in config.regions():
        path, code = region.path, region.region
        if region.compute_on is None:
            continue
        if code not in REGIONS:
            yield Problem(
                f"{path}.compute",
                f"hubspoke does not know whether SageMaker HyperPod is offered in {code} (a Region newer than "
                "hubspoke/regions.py): `hubspoke preflight` checks the account's HyperPod quotas there before you "
                "deploy; set compute.enabled: false if it is not offered",
                severity="warning",
            )
        elif code not in HYPERPOD_REGIONS:
            yield Problem(
                f"{path}.compute",
                f"SageMaker HyperPod is not offered in {code} (hubspoke/regions.py, 2026-11-30); "
                "set compute.enabled: false for this Region or train in another one",
            )
