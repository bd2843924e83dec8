"""Synth time and template size as spokes are added, measured in one run on this machine.

Reports ratios, not seconds: these machines are shared and noisy. Each synth runs in its own Python
process as the CDK CLI runs an app (hubspoke's case is app.py itself; jsii start-up and exit included),
REPEATS times, round-robin over the cases; the median counts. Every hubspoke case runs with cdk-nag, Control Tower's controls and our pack: warm (after one
uncounted synth has filled hubspoke's cache of Control Tower verdicts and Lambda bundles, as on every synth
after a user's first) and, for config/dev.yaml, cold too (an empty cache each time).
    .venv/bin/python benchmarks/synth_scaling.py [--repeats N] [--json OUT]
`--quick` (the thorough tier's check that it still runs): loads every config it would write, synthesizes the empty
app and one spoke once each, prints the table; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hubspoke import stage  # noqa: E402
from hubspoke.config.quotas import DEFAULT_SECURITY_GROUP_RULES, peer_path_rules  # noqa: E402
from hubspoke.config.schema import HubSpokeConfig  # noqa: E402
from hubspoke.regions import HYPERPOD_REGIONS, REGIONS  # noqa: E402

# CloudFormation quotas: 500 resources per stack, 1 MB template body (via S3). Goal: half of each.
MAX_RESOURCES, MAX_BYTES = 500, 1_000_000

# Each case is a Python program run as the CDK CLI runs an app: the output directory in CDK_OUTDIR, context in
# CDK_CONTEXT_JSON (aws-cdk-lib core/lib/app.js reads both).
EMPTY_APP = """
from aws_cdk import App, Stack
app = App()
Stack(app, "Empty")
app.synth()
"""

# The same empty app as our app.py builds it: CDK's built-in template validation off (see new_app).
EMPTY_APP_LIKE_OURS = """
from aws_cdk import App, Stack
app = App(builtin_cloud_formation_validation=False)
Stack(app, "Empty")
app.synth()
"""

# hubspoke: app.py itself, with `-c config=PATH` as the CLI passes it.
HUBSPOKE_APP = (ROOT / "app.py").read_text()

# The context every case gets, as the pinned CDK CLI passes it to an app: cdk.json's, then the CLI's own.
CLI_CONTEXT = {**json.loads((ROOT / "cdk.json").read_text()).get("context", {}), **stage.CLI_CONTEXT}


def topology(spokes: int) -> dict[str, Any]:
    others = [code for code in sorted(REGIONS) if code != "us-east-2"]
    others.remove("us-west-2")
    chosen = ["us-west-2", *others][:spokes]

    def region(code: str, i: int) -> dict[str, Any]:
        # Storage needs a pinned image and a staged release; synth never looks either up, so any
        # well-formed ID per Region will do for timing.
        storage = {"ami_id": f"ami-0{i:016x}", "qumulo_core": {"version": "7.10.2.1",
                   "install_uri": "s3://hubspoke-bench-staging/cnq/qumulo-core-install/"}}  # fmt: skip
        entry: dict[str, Any] = {"region": code, "cidr": f"10.{i}.0.0/16", "storage": storage}
        if code not in HYPERPOD_REGIONS:
            entry["compute"] = {"enabled": False}
        return entry

    hub = region("us-east-2", 250)
    spoke_entries = [region(code, i + 1) for i, code in enumerate(chosen)]
    # Alarms must name a recipient (hubspoke/config/ops_rules.py); an address adds its subscription, as a user's
    # would. example.com is reserved for examples (RFC 2606).
    ops = {"alarm_emails": ["bench@example.com"]}
    counted = {
        "environment": "bench",
        "account": "123456789012",
        "hub": hub,
        "spokes": spoke_entries,
        "ops": ops,
    }
    rules = peer_path_rules(HubSpokeConfig.model_validate(counted))["hub"]
    if rules > DEFAULT_SECURITY_GROUP_RULES:
        # What a deploy of this many spokes needs (README, Scaling): the config states the raised quota.
        hub["quotas"] = {"security_group_rules": rules}
    return {
        "environment": f"bench{spokes}",
        "account": "123456789012",
        "hub": hub,
        "spokes": spoke_entries,
        "ops": ops,
    }


def children_cpu_seconds() -> float:
    """User and system seconds of every child process this one has waited for (a step's cost is the difference)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_synth(
    program: str, workdir: Path, *, config: Path | None = None, cold: bool = False
) -> tuple[float, float, Path]:
    """One synth in its own process: (wall seconds, CPU seconds of it and its jsii node process, outdir).
    `cold` gives it an empty hubspoke cache (a first synth)."""
    outdir = Path(tempfile.mkdtemp(dir=workdir))
    env = {**os.environ, "PATH": f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"}
    # Every warm case shares one cache that starts empty, so the first repeat fills it as a user's first synth.
    env["HUBSPOKE_CACHE_DIR"] = str(Path(tempfile.mkdtemp(dir=workdir)) if cold else workdir / "cache")
    env["CDK_OUTDIR"] = str(outdir)
    env["CDK_CONTEXT_JSON"] = json.dumps({**CLI_CONTEXT, **({"config": str(config)} if config else {})})
    before = children_cpu_seconds()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=1800,
    )
    wall = time.perf_counter() - start
    cpu = children_cpu_seconds() - before
    return wall, cpu, outdir


def template_stats(outdir: Path) -> dict[str, Any]:
    templates = list(outdir.rglob("*.template.json"))
    sizes = [p.stat().st_size for p in templates]
    counts = [len(json.loads(p.read_text()).get("Resources", {})) for p in templates]
    return {"templates": len(templates), "max_resources": max(counts), "max_bytes": max(sizes)}


def quick(all_spokes: int) -> int:
    """Every config the full run writes passes hubspoke's own load; one synth of the empty app and of 1 spoke."""
    from hubspoke.config import load

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in (1, 10, all_spokes):
            path = work / f"spokes{n}.yaml"
            path.write_text(yaml.safe_dump(topology(n)))
            load(path)
        for name, (program, config) in {
            "empty app": (EMPTY_APP, None),
            "1 spoke(s)": (HUBSPOKE_APP, work / "spokes1.yaml"),
        }.items():
            elapsed, _, outdir = run_synth(program, work, config=config)
            print(f"{name}: {elapsed:.1f} s, {template_stats(outdir)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--dev-only",
        action="store_true",
        help="only the empty apps and config/dev.yaml (warm and cold cache)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="check it still runs: load every config, synthesize the empty app and 1 spoke once (no figures)",
    )
    args = parser.parse_args()
    all_spokes = len(REGIONS) - 1
    if args.quick:
        return quick(all_spokes)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dev = ROOT / "config" / "dev.yaml"
        # name -> (program, config it synthesizes)
        cases: dict[str, tuple[str, Path | None]] = {
            "empty app": (EMPTY_APP, None),
            "empty, no cfn-val": (EMPTY_APP_LIKE_OURS, None),
            "config/dev.yaml": (HUBSPOKE_APP, dev),
            "dev, cold cache": (HUBSPOKE_APP, dev),
        }
        for n in () if args.dev_only else (1, 10, all_spokes):
            path = work / f"spokes{n}.yaml"
            path.write_text(yaml.safe_dump(topology(n)))
            cases[f"{n} spoke(s)"] = (HUBSPOKE_APP, path)
        for name, (program, config) in cases.items():
            if name != "dev, cold cache" and "empty" not in name:
                # warm-up, not counted: fills the caches as a user's first synth does
                run_synth(program, work, config=config)
        # Round-robin: every case once per round, so a neighbour's load on this shared machine falls on all
        # cases alike and the ratios stay honest.
        times: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        outdirs: dict[str, Path] = {}
        for _ in range(args.repeats):
            for name, (program, config) in cases.items():
                elapsed, cpu, outdirs[name] = run_synth(
                    program, work, config=config, cold=name == "dev, cold cache"
                )
                times[name].append(elapsed)
                cpus[name].append(cpu)
        results: dict[str, dict[str, Any]] = {
            name: {
                "median_s": statistics.median(times[name]),
                "median_cpu_s": statistics.median(cpus[name]),
                **template_stats(outdirs[name]),
            }
            for name in cases
        }
    empty = results["empty app"]["median_s"]
    one = results["1 spoke(s)"]["median_s"] if "1 spoke(s)" in results else float("nan")
    print(
        f"{'case':<18}{'median s':>10}{'ratio':>18}{'cpu s':>8}{'cpu ratio':>10}{'templates':>11}"
        f"{'max res.':>10}{'max bytes':>11}"
    )
    empty_cpu = results["empty app"]["median_cpu_s"]
    for name, r in results.items():
        base, label = (
            (empty, "x empty")
            if name in ("empty app", "empty, no cfn-val", "config/dev.yaml", "dev, cold cache")
            else (one, "x 1 spoke")
        )
        print(
            f"{name:<18}{r['median_s']:>10.1f}{r['median_s'] / base:>9.2f} {label:<8}"
            f"{r['median_cpu_s']:>8.1f}{r['median_cpu_s'] / empty_cpu:>10.2f}"
            f"{r['templates']:>11}{r['max_resources']:>10}{r['max_bytes']:>11}"
        )
    dev_ratio = results["config/dev.yaml"]["median_s"] / empty
    if args.dev_only:
        print(
            f"goal: dev <= 2x empty: {dev_ratio:.2f}x (cold cache {results['dev, cold cache']['median_s'] / empty:.2f}x;"
            f" CPU time {results['config/dev.yaml']['median_cpu_s'] / empty_cpu:.2f}x, which a busy machine skews less)"
        )
        return 0
    biggest = results[f"{all_spokes} spoke(s)"]
    print(
        f"goals: dev <= 2x empty: {results['config/dev.yaml']['median_s'] / empty:.2f}x "
        f"(cold cache {results['dev, cold cache']['median_s'] / empty:.2f}x) "
        f"({results['config/dev.yaml']['median_s'] / results['empty, no cfn-val']['median_s']:.2f}x an empty app "
        "that also skips CDK's built-in template validation); "
        f"all spokes <= 5x one: {biggest['median_s'] / one:.2f}x; "
        f"largest template {biggest['max_resources']}/{MAX_RESOURCES // 2} resources, "
        f"{biggest['max_bytes']}/{MAX_BYTES // 2} bytes"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
