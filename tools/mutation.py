"""`make mutation`: mutmut over each module against its own tests, with the score per module and file.

Each module runs in its own scratch directory (mutmut reads `[tool.mutmut]` from the pyproject.toml of its working
directory and writes `mutants/` there), so a mutant runs only the tests of its module, as mutmut's per-function
test selection picks them among those, never the whole suite. Left out on purpose: tests that run the CLI as a
subprocess (the installed entry point imports the unmutated package, so they can never kill) and tests that
synthesize whole environments where a module's own tests already cover it (minutes per mutant on 2 cores).
Surviving mutants reviewed as equivalent are listed, one line of why each, in tools/mutation_equivalents.txt.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "tools" / "mutation_equivalents.txt"
# What the tests read from the checkout besides the package and tests/ (mutmut copies tests/ itself).
SUPPORT = ("config", "docs", "README.md", "app.py", "cdk.json", "workload")
# mutmut 3.8's statuses (mutmut/stats.py, status_by_exit_code). A timeout is detected (the mutant hung the
# tests), as mutmut's own score counts it; "no tests" and "suspicious" are not.
DETECTED = {"killed", "timeout", "caught by type check"}


@dataclass(frozen=True)
class Module:
    """One measured module: the files mutated and the tests that are its own."""

    name: str
    mutate: tuple[str, ...]
    tests: tuple[str, ...]
    deselect: tuple[str, ...] = ()


MODULES = (
    Module("mtu", ("hubspoke/mtu.py",), ("tests/test_mtu.py",)),
    Module("topology", ("hubspoke/topology.py",), ("tests/test_topology.py", "tests/cli/test_plan.py")),
    # hubspoke/config in parts (about 1,500 mutants in all), each against tests/config (the traffic rules' tests
    # live beside the flow-log patterns they guard).
    *(
        Module(
            f"config-{part}",
            files,
            ("tests/config", *extra),
            # Runs `hubspoke validate` as a subprocess: the installed package, not the mutant.
            (
                "tests/config/test_storage_rules.py::test_cli_reports_missing_pins_with_exit_2_and_no_traceback",
            ),
        )
        for part, files, extra in (
            ("quotas", ("hubspoke/config/quotas.py",), ()),
            ("schema", ("hubspoke/config/schema.py",), ()),
            ("network-rules", ("hubspoke/config/rules.py", "hubspoke/config/network_rules.py"), ()),
            ("storage-rules", ("hubspoke/config/storage_rules.py",), ()),
            ("compute-rules", ("hubspoke/config/compute_rules.py",), ()),
            ("traffic-rules", ("hubspoke/config/traffic_rules.py",), ("tests/test_flow_logs.py",)),
            (
                "loader",
                (
                    "hubspoke/config/loader.py",
                    "hubspoke/config/raw.py",
                    "hubspoke/config/layout.py",
                    "hubspoke/config/cnq_volumes.py",
                ),
                (),
            ),
        )
    ),
    Module(
        "cnq-runtime",
        ("hubspoke/constructs/cnq/runtime/*.py",),
        (
            "tests/constructs/cnq/test_cnq_cluster.py",
            "tests/constructs/cnq/test_cnq_formation.py",
            "tests/constructs/cnq/test_cnq_portal.py",
            "tests/constructs/cnq/test_cnq_protection.py",
            "tests/constructs/cnq/test_cnq_request_paths.py",
            "tests/constructs/cnq/test_cnq_shape.py",
        ),
    ),
    Module(
        "canary-runtime",
        ("hubspoke/constructs/canary/runtime/*.py",),
        (
            "tests/constructs/canary/test_canary_handler.py",
            "tests/constructs/canary/test_canary_real_readers.py",
        ),
    ),
    # Every policy test synthesizes (minutes per mutant here): measured only where there is time for it.
    Module("policy", ("hubspoke/policy/*.py",), ("tests/policy",), ("tests/policy/test_acks.py",)),
)


def equivalents() -> dict[str, str]:
    """Mutant name -> why it is equivalent, from tools/mutation_equivalents.txt (`name  reason`, # comments)."""
    out: dict[str, str] = {}
    for line in EQUIVALENTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, why = line.partition(" ")
            if not why.strip():
                sys.exit(f"{EQUIVALENTS}: {name} has no reason; add one line of why it is equivalent")
            out[name] = why.strip()
    return out


def run_module(module: Module, max_children: int, show: bool) -> dict[str, str]:
    """Mutant name -> mutmut status for one module, run in a scratch directory that is removed afterwards.

    With `show`, prints the diff of every mutant no test detected (before the scratch directory goes).
    """
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "mutmut" not in project.get("tool", {}), "tools/mutation.py owns mutmut's configuration"
    settings = {
        "source_paths": ["hubspoke"],
        "only_mutate": list(module.mutate),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", *(f"--deselect={d}" for d in module.deselect)],
        "pytest_add_cli_args_test_selection": list(module.tests),
        "also_copy": [p for p in SUPPORT if (ROOT / p).exists()],
    }
    table = "\n[tool.mutmut]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in settings.items())
    with tempfile.TemporaryDirectory(prefix=f"hubspoke-mutation-{module.name}-") as scratch:
        work = Path(scratch)
        for entry in ("hubspoke", "tests", *SUPPORT):
            if (ROOT / entry).exists():
                (work / entry).symlink_to(ROOT / entry)
        (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + table)
        # Synth needs the pinned Node from node_modules (tests/conftest.py puts ROOT/node_modules/.bin on PATH,
        # and ROOT is mutants/ there); a link, not a copy of 300 MB.
        (work / "mutants").mkdir()
        if (ROOT / "node_modules").exists():
            (work / "mutants" / "node_modules").symlink_to(ROOT / "node_modules")
        mutmut = [sys.executable, "-m", "mutmut"]
        run = subprocess.run([*mutmut, "run", "--max-children", str(max_children)], cwd=work, check=False)
        if run.returncode != 0:
            sys.exit(f"mutation: mutmut failed on {module.name} (exit {run.returncode}); its output is above")
        results = subprocess.run(
            [*mutmut, "results", "--all", "true"], cwd=work, check=True, capture_output=True, text=True
        ).stdout
        statuses = dict(re.findall(r"^\s+(\S+): (.+)$", results, flags=re.MULTILINE))
        for name in sorted(n for n, s in statuses.items() if show and s not in DETECTED):
            subprocess.run([*mutmut, "show", name], cwd=work, check=False)
    return statuses


def _toml(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return f'"{value}"'


def report(module: Module, statuses: dict[str, str], equivalent: dict[str, str]) -> float:
    """Print one module's score (and per file), its survivors, and stale equivalence entries; return the score."""
    unchecked = sorted(n for n, s in statuses.items() if s == "not checked")
    if unchecked:
        sys.exit(f"mutation: {module.name} stopped with {len(unchecked)} mutants not checked; no score")
    mine = {n for n in equivalent if n in statuses}
    stale = sorted(n for n in mine if statuses[n] in DETECTED)
    counted = {n: s for n, s in statuses.items() if n not in mine}
    killed = sum(s in DETECTED for s in counted.values())
    score = 100.0 * killed / len(counted) if counted else 100.0
    print(
        f"\n== {module.name}: {len(statuses)} mutants, {killed} killed, {len(mine)} equivalent, "
        f"{len(counted) - killed} not killed: score {score:.1f} % of non-equivalent"
    )
    files: dict[str, list[str]] = {}
    for name, status in counted.items():
        files.setdefault(name.split(".x")[0], []).append(status)
    for path, sts in sorted(files.items()):
        hit = sum(s in DETECTED for s in sts)
        print(f"   {path}: {hit}/{len(sts)} ({100.0 * hit / len(sts):.1f} %)")
    for name, status in sorted(counted.items()):
        if status not in DETECTED:
            print(f"   {status}: {name}")
    for name in stale:
        print(f"   STALE equivalent entry, now killed: {name} (remove it from {EQUIVALENTS.name})")
    return score if not stale else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"default: all of {', '.join(m.name for m in MODULES)}")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", action="store_true", help="print the diff of every mutant not detected")
    parser.add_argument("--min-score", type=float, default=90.0, help="exit 1 if a module scores below it")
    args = parser.parse_args()
    by_name = {m.name: m for m in MODULES}
    unknown = [n for n in args.modules if n not in by_name]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {sorted(by_name)}")
    equivalent = equivalents()
    scores = {}
    for name in args.modules or list(by_name):
        module = by_name[name]
        scores[name] = report(module, run_module(module, args.max_children, args.show), equivalent)
    print("\n" + "\n".join(f"{n}: {s:.1f} %" for n, s in scores.items()))
    low = [n for n, s in scores.items() if s < args.min_score]
    if low:
        sys.exit(f"mutation score below {args.min_score} % in: {', '.join(low)}")


if __name__ == "__main__":
    main()
