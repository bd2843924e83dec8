"""Deterministic figures the docs quote equal what the command that produced them reports now.

Timings carry their date and machine and are never asserted; these figures do not depend on the machine: the
run-rate and first-deploy duration `hubspoke plan --config <file> --json` reports, and the template count and
sizes of the dev synth that README "Benchmarks" quotes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hubspoke.cli.main import main
from tests.conftest import ROOT, Templates

# Where the plan's figures are quoted (README "Deploy one environment", docs/cli.md "plan", the deploy runbook).
PLAN_DOCS = ("README.md", "docs/cli.md", "docs/runbooks/deploy-environment.md")


def _plan(config: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["plan", "--config", str(ROOT / config), "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def _clock(minutes: float) -> str:
    """The docs' spelling of a duration (2 h 06 min)."""
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def test_quoted_run_rates_and_durations_are_what_plan_reports(capsys: pytest.CaptureFixture[str]) -> None:
    """Every `$N/hour` in the deploy docs is dev's or smoke's run-rate as `hubspoke plan` prints it today, both
    are quoted, and so are their first deploys' expected and longest durations, and nothing else."""
    dev, smoke = _plan("config/dev.yaml", capsys), _plan("config/smoke.yaml", capsys)
    rates = {f"${plan['run_rate']['usd_per_hour']:,.2f}" for plan in (dev, smoke)}
    text = "\n".join((ROOT / doc).read_text() for doc in PLAN_DOCS)
    quoted = set(re.findall(r"(\$[\d,]+\.\d\d)/hour", text))
    assert quoted == rates, f"the docs quote {sorted(quoted)}; plan reports {sorted(rates)}"
    durations = {
        _clock(plan["deploy_time"][k]) for plan in (dev, smoke) for k in ("expected_minutes", "bound_minutes")
    }
    assert set(re.findall(r"\b\d+ h \d\d min\b", text)) == durations
    # The concurrency the docs tell users to pass is the one the plan computes.
    assert set(re.findall(r"--concurrency (\d+)", text)) == {str(dev["deploy_time"]["concurrency"])}


def test_readme_template_figures_are_the_dev_synths(dev_templates: Templates) -> None:
    """README "Benchmarks": dev's template count, the most resources in one template and the largest template in
    KB (1000 bytes) as the CDK writes it (JSON with one-space indentation, which is what cdk.out holds)."""
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(
        r"^\| `config/dev\.yaml`.*\| (\d+) \| (\d+) resources, (\d+) KB \|$", readme, flags=re.M
    )
    assert rows, "README's Benchmarks table has no config/dev.yaml row"
    sizes = [len(json.dumps(t, indent=1, ensure_ascii=False).encode()) for t in dev_templates.values()]
    actual = (
        str(len(dev_templates)),
        str(max(len(t.get("Resources", {})) for t in dev_templates.values())),
        str(round(max(sizes) / 1000)),
    )
    for row in rows:
        assert row == actual, f"README says {row}; the dev synth is {actual}"
