"""Deterministic figures the docs quote equal what the command that produced them reports now.

Timings carry their date and machine and are never asserted; these figures do not depend on the machine: the
run-rate and first-deploy duration `hubspoke plan --config <file> --json` reports, and the template count and
sizes of the dev synth that benchmarks/results.md quotes.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hubspoke.cli.main import main
from tests.conftest import ROOT, Templates

# Where the plan's figures are quoted (README "Deploy one environment", docs/cli.md "plan", the deploy runbook,
# getting-started's deploy step).
PLAN_DOCS = ("README.md", "docs/cli.md", "docs/runbooks/deploy-environment.md", "docs/getting-started.md")


def _plan(config: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["plan", "--config", str(ROOT / config), "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def _clock(minutes: float) -> str:
    """The docs' spelling of a duration (2 h 06 min)."""
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def _quoted(text: str) -> tuple[set[str], set[str], set[str]]:
    """The run-rates (`$N/hour`), durations (`N h MM min`) and `--concurrency N` values a page quotes."""
    return (
        set(re.findall(r"(\$[\d,]+\.\d\d)/hour", text)),
        set(re.findall(r"\b\d+ h \d\d min\b", text)),
        set(re.findall(r"--concurrency (\d+)", text)),
    )


def test_quoted_run_rates_and_durations_are_what_plan_reports(capsys: pytest.CaptureFixture[str]) -> None:
    """Every `$N/hour`, first-deploy duration and `--concurrency` in the deploy docs is one `hubspoke plan` reports
    today for dev or smoke, and the README, the page a new user reads first, quotes both run-rates (what they are
    billed) and both profiles' expected and longest first deploys."""
    dev, smoke = _plan("config/dev.yaml", capsys), _plan("config/smoke.yaml", capsys)
    rates = {f"${plan['run_rate']['usd_per_hour']:,.2f}" for plan in (dev, smoke)}
    durations = {
        _clock(plan["deploy_time"][k]) for plan in (dev, smoke) for k in ("expected_minutes", "bound_minutes")
    }
    concurrency = {str(dev["deploy_time"]["concurrency"])}
    for doc in PLAN_DOCS:
        quoted_rates, quoted_durations, quoted_concurrency = _quoted((ROOT / doc).read_text())
        assert quoted_rates <= rates, (
            f"{doc} quotes {sorted(quoted_rates - rates)}; plan reports {sorted(rates)}"
        )
        assert quoted_durations <= durations, f"{doc} quotes {sorted(quoted_durations - durations)}"
        # The concurrency the docs tell users to pass is the one the plan computes.
        assert quoted_concurrency <= concurrency, f"{doc} passes --concurrency {sorted(quoted_concurrency)}"
    readme = _quoted((ROOT / "README.md").read_text())
    # hubspoke deploy passes the plan's --concurrency itself: the README need not quote it.
    assert (readme[0], readme[1]) == (rates, durations) and readme[2] <= concurrency


def test_benchmark_template_figures_are_the_dev_synths(dev_templates: Templates) -> None:
    """benchmarks/results.md, "Synth time": dev's template count, the most resources in one template and the
    largest template in KB (1000 bytes) as the CDK writes it (JSON with one-space indentation, which is what
    cdk.out holds)."""
    results = (ROOT / "benchmarks" / "results.md").read_text()
    rows = re.findall(
        r"^\| `config/dev\.yaml`.*\| (\d+) \| (\d+) resources, (\d+) KB \|$", results, flags=re.M
    )
    assert rows, "benchmarks/results.md's synth table has no config/dev.yaml row"
    sizes = [len(json.dumps(t, indent=1, ensure_ascii=False).encode()) for t in dev_templates.values()]
    actual = (
        str(len(dev_templates)),
        str(max(len(t.get("Resources", {})) for t in dev_templates.values())),
        str(round(max(sizes) / 1000)),
    )
    for row in rows:
        assert row == actual, f"benchmarks/results.md says {row}; the dev synth is {actual}"
