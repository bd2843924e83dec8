"""The EMF contract the Ops dashboard relies on, and the image's assumption that the module is stdlib-only."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from hubspoke import training_metrics as tm

ROOT = Path(__file__).resolve().parents[2]


def test_record_follows_the_embedded_metric_format() -> None:
    record = json.loads(
        tm.emf_line({tm.SAMPLES_PER_SECOND: 116.5}, environment="dev", region="us-west-2", Step=10)
    )
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == tm.NAMESPACE
    # Every dimension and metric named in the directive is a top-level member of the event.
    for dimension_set in directive["Dimensions"]:
        assert all(isinstance(record[d], str) for d in dimension_set)
    assert [m["Name"] for m in directive["Metrics"]] == [tm.SAMPLES_PER_SECOND]
    assert record[tm.SAMPLES_PER_SECOND] == 116.5
    assert record["Step"] == 10
    # The agent files it in the group the Compute stack creates with a retention, not a default one.
    assert record["_aws"]["LogGroupName"] == tm.log_group_name("dev")


def test_unknown_metric_is_refused() -> None:
    with pytest.raises(ValueError, match=r"training_metrics\.py"):
        tm.emf_record({"Typo": 1.0}, environment="dev", region="us-west-2")


def test_module_is_stdlib_only_so_the_image_can_copy_it_alone() -> None:
    for path in (ROOT / "hubspoke" / "training_metrics.py", ROOT / "hubspoke" / "__init__.py"):
        tree = ast.parse(path.read_text())
        imported = {
            (node.module or "").split(".")[0]
            if isinstance(node, ast.ImportFrom)
            else alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        imported.discard("__future__")
        assert imported <= set(sys.stdlib_module_names), (
            f"{path.name} imports {imported - set(sys.stdlib_module_names)}"
        )
