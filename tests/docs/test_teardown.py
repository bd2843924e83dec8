"""teardown.md tells an operator what `cdk destroy` leaves behind: its table must list exactly what the
templates retain, and its volume count must be the one config/dev.yaml's nodes leave.

CloudFormation, DeletionPolicy attribute: a resource with `Retain` is kept when its stack is deleted (and when
an update removes it); it keeps existing and being billed. EC2, block device mapping `DeleteOnTermination`:
false keeps an instance's volume when the instance is terminated. A retained resource missing from the
table is one an operator would neither know about nor pay attention to; a listed one the templates delete
would be promised and gone.
"""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import ROOT, Templates, resources

PAGE = ROOT / "docs" / "runbooks" / "teardown.md"


def _kind(stack_id: str) -> str:
    """The stack kind of a stack ID (`storage-us-west-2` -> storage): the Region is its last three parts."""
    return stack_id.rsplit("-", 3)[0]


def _family(logical_id: str) -> str:
    """A logical ID without CDK's 8-character hash, its numbers written `<n>` (a bucket's, also inside its bucket
    policy's ID: CnqPersistentStorage3Policy since 147db9a)."""
    return re.sub(r"\d+", "<n>", re.sub(r"[0-9A-F]{8}$", "", logical_id))


def _documented() -> set[tuple[str, str]]:
    """(stack kind, template resource) for every backticked name in the third column of the page's table."""
    text = PAGE.read_text()
    table = text.split("## What stays, and what it costs", 1)[1].split("\n\n")[2]
    rows = [line.split("|")[1:-1] for line in table.splitlines()[2:]]
    assert rows and all(len(cells) == 4 for cells in rows), table
    return {
        (kind.strip(), name)
        for _, kinds, names, _ in rows
        for kind in kinds.split(",")
        for name in re.findall(r"`([A-Za-z<>]+)`", names)
        if not names.strip().startswith("none")
    }


def _retained(templates: Templates) -> set[tuple[str, str]]:
    return {
        (_kind(stack_id), _family(logical_id))
        for stack_id, template in templates.items()
        for logical_id, resource in template["Resources"].items()
        # RetainExceptOnCreate is kept by a stack delete too (CloudFormation, DeletionPolicy attribute).
        if resource.get("DeletionPolicy") in ("Retain", "RetainExceptOnCreate")
    }


def test_the_table_lists_exactly_what_the_templates_retain(dev_templates: Templates) -> None:
    retained = _retained(dev_templates)
    assert ("storage", "CnqPersistentStorage<n>") in retained  # the families are read as the page writes them
    assert _documented() == retained


def _node_volumes(template: dict[str, Any]) -> tuple[int, list[int]]:
    """(nodes, the sizes of the volumes each node keeps after termination) in a Storage template."""
    nodes = len(list(resources(template, "AWS::EC2::Instance")))
    (_, launch_template), *others = resources(template, "AWS::EC2::LaunchTemplate")
    assert not others
    mappings = launch_template["Properties"]["LaunchTemplateData"]["BlockDeviceMappings"]
    kept = [m["Ebs"]["VolumeSize"] for m in mappings if m["Ebs"]["DeleteOnTermination"] is False]
    return nodes, kept


def test_the_volume_count_and_size_are_what_dev_nodes_leave(dev_templates: Templates) -> None:
    text = " ".join(PAGE.read_text().split())
    for stack_id in (s for s in dev_templates if _kind(s) == "storage"):
        nodes, kept = _node_volumes(dev_templates[stack_id])
        stated = f"{nodes} nodes \N{MULTIPLICATION SIGN} {len(kept)} volumes = {nodes * len(kept)} volumes, {nodes * sum(kept):,} GiB"
        assert stated in text, stated
