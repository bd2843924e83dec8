"""Dataset config rules: source buckets (loads) need the hub's cluster, where the load Job runs.

The load Job (hubspoke/k8s/load.py) needs the hub's REST API (port 8000) and its dataset export, both reachable
only inside the hub VPC; hubspoke deploys no other host there, so without hub compute a load cannot run.
"""

from __future__ import annotations

from pathlib import Path

from hubspoke.config import load
from tests.config.test_loader import problems
from tests.conftest import minimal, with_pins, write_config

REFUSAL = (
    "dataset.source_buckets: `hubspoke dataset load` runs as a Job on the hub's cluster, but hub.compute.enabled "
    "is false: set hub.compute.enabled: true, or remove dataset.source_buckets (and load versions some other way)"
)


def _config(*, hub_compute: bool, buckets: list[str]) -> dict[str, object]:
    data = minimal()
    data["hub"]["compute"] = {"enabled": hub_compute}  # type: ignore[index]
    data["dataset"] = {"name": "c4-llama3", "version": "v1", "source_buckets": buckets}
    return data


def test_source_buckets_without_hub_compute_are_refused_naming_the_field_and_both_fixes(
    tmp_path: Path,
) -> None:
    assert REFUSAL in problems(tmp_path, _config(hub_compute=False, buckets=["c4-tokenized"]))


def test_the_refusal_comes_with_every_other_problem_of_the_file(tmp_path: Path) -> None:
    """All errors at once: a spoke CIDR overlapping the hub's is reported in the same run."""
    data = _config(hub_compute=False, buckets=["c4-tokenized"])
    data["spokes"] = [{"region": "us-west-2", "cidr": "10.10.0.0/16"}]
    lines = problems(tmp_path, with_pins(data))
    assert REFUSAL in lines and len(lines) >= 2


def test_hub_compute_or_no_buckets_is_accepted(tmp_path: Path) -> None:
    assert load(
        write_config(tmp_path, _config(hub_compute=True, buckets=["c4-tokenized"]))
    ).config.hub.compute.enabled
    assert not load(
        write_config(tmp_path, _config(hub_compute=False, buckets=[]))
    ).config.dataset.source_buckets
