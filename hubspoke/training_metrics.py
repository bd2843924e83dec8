"""The training job's CloudWatch metric names and their embedded metric format (EMF) records: one place.

The workload (workload/train.py, inside the training image) writes these records on stdout; the Ops
dashboard reads the same names. Stdlib only: the image copies this file without the rest of hubspoke.
"""

from __future__ import annotations

import json
import time
from typing import Any

NAMESPACE = "HubSpoke/Training"
SAMPLES_PER_SECOND = "SamplesPerSecond"
TOKENS_PER_SECOND = "TokensPerSecond"
STEP_SECONDS = "StepSeconds"
# One dimension set, so a dashboard can name every series without knowing job names.
DIMENSIONS: tuple[str, ...] = ("Environment", "Region")
UNITS = {SAMPLES_PER_SECOND: "Count/Second", TOKENS_PER_SECOND: "Count/Second", STEP_SECONDS: "Seconds"}


def emf_record(
    values: dict[str, float],
    *,
    environment: str,
    region: str,
    properties: dict[str, Any] | None = None,
    timestamp_ms: int | None = None,
) -> dict[str, Any]:
    """One EMF log event: metric values and dimensions as top-level members, described under `_aws`."""
    unknown = set(values) - set(UNITS)
    if unknown:
        raise ValueError(
            f"unknown training metric(s) {sorted(unknown)}; add them to hubspoke/training_metrics.py"
        )
    return {
        "_aws": {
            "Timestamp": int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [list(DIMENSIONS)],
                    "Metrics": [{"Name": name, "Unit": UNITS[name]} for name in values],
                }
            ],
        },
        "Environment": environment,
        "Region": region,
        **(properties or {}),
        **values,
    }


def emf_line(values: dict[str, float], *, environment: str, region: str, **properties: Any) -> str:
    """The record as one JSON line, ready for stdout."""
    return json.dumps(emf_record(values, environment=environment, region=region, properties=properties))
