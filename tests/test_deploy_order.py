"""Weak references and the deploy: no reader can deploy alongside its producer, and the runbook names every reader.

CloudFormation User Guide, "Fn::GetStackOutput": the value is resolved when the consuming stack is created or
updated, and an output cannot be read while the producing stack's operation is in progress. So a reader must
depend on its producer (the CDK CLI then never deploys them at once, whatever --concurrency), and after a
producer's output changes its readers must be redeployed: docs/runbooks/deploy-environment.md says which.
"""

from __future__ import annotations

import re

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.outputs import references
from hubspoke.topology import plan_stacks
from tests.conftest import ROOT, synth
from tests.shapes import SHAPES


def _configs(dev_config: HubSpokeConfig, config_from: object) -> list[HubSpokeConfig]:
    return [dev_config, *(config_from(shape) for shape in SHAPES.values())]  # type: ignore[operator]


def _ancestors(config: HubSpokeConfig) -> dict[str, set[str]]:
    plans = {p.id: p for p in plan_stacks(config)}
    memo: dict[str, set[str]] = {}

    def up(sid: str) -> set[str]:
        if sid not in memo:
            memo[sid] = set()
            for dep in plans[sid].depends_on:
                memo[sid] |= {dep} | up(dep)
        return memo[sid]

    return {sid: up(sid) for sid in plans}


@pytest.mark.parametrize("shape", ["dev", *sorted(SHAPES)])
def test_every_reader_deploys_after_its_producer(
    shape: str, dev_config: HubSpokeConfig, config_from: object
) -> None:
    config = dev_config if shape == "dev" else config_from(SHAPES[shape])  # type: ignore[operator]
    ancestors = _ancestors(config)
    for ref in references(config, synth(config)):
        assert ref.producer in ancestors[ref.consumer], (
            f"{ref.consumer} reads {ref.carries} of {ref.producer} without depending on it: `cdk deploy "
            "--concurrency` could run them together"
        )


def _redeploy_table() -> list[tuple[str, str, str]]:
    """(producer, outputs, redeploy) cells of the runbook's 'After a change' table."""
    text = (ROOT / "docs" / "runbooks" / "deploy-environment.md").read_text()
    # The section ends at the next heading of any level ("### Keys fixed at the first deploy" has a table too).
    section = re.split(r"\n#{2,} ", text.split("## 6. After a change", 1)[1], maxsplit=1)[0]
    rows = [
        line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ") and "---" not in line
    ]
    return [(cells[1], cells[2], cells[3]) for cells in rows[1:]]


def test_the_runbook_names_the_readers_of_every_output(
    dev_config: HubSpokeConfig, config_from: object
) -> None:
    table = _redeploy_table()
    assert table, "docs/runbooks/deploy-environment.md lost its 'After a change' table"
    for config in _configs(dev_config, config_from):
        plans = {p.id: p for p in plan_stacks(config)}
        # CDK names the outputs it reads by (weak references); the runbook names the change, by producer.
        for ref in references(config, synth(config)):
            producer, consumer = plans[ref.producer], plans[ref.consumer]
            side = "hub" if producer.region == config.hub.region else "<spoke>"
            rows = [
                redeploy
                for who, _outputs, redeploy in table
                if producer.kind in who and (side == "hub") == ("hub" in who)
            ]
            assert rows, f"no runbook row for a {side} {producer.kind} stack"
            assert any(consumer.kind in r or "every stack" in r for r in rows), (
                f"the runbook does not say to redeploy {consumer.kind} after {ref.carries} of {producer.kind} changes"
            )
