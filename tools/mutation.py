"""`make mutation`: mutmut over each module against its own tests, with the score per module and file.

Each module runs in its own scratch directory (mutmut reads `[tool.mutmut]` from the pyproject.toml of its working
directory and writes `mutants/` there), so a mutant runs only the tests of its module, as mutmut's per-function
test selection picks them among those, never the whole suite. Left out on purpose: tests that run the CLI as a
subprocess (the installed entry point imports the unmutated package, so they can never kill) and tests that
synthesize whole environments where a module's own tests already cover it (minutes per mutant on 2 cores).
Surviving mutants reviewed as equivalent are listed, one line of why each, in tools/mutation_equivalents.txt,
keyed by the mutated function and a hash of the mutant's change (its original and mutated lines), never by
mutmut's index: a renumbering cannot make an entry excuse a different mutant. `--sample N --seed S` runs a
reproducible random subset of a module's mutants and reports the score with its sample size and a 95 % Wilson
interval.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import importlib.metadata
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "tools" / "mutation_equivalents.txt"
# The mutants mutmut generated for each definition an equivalents entry names, keyed by the definition's text
# (locked_table): the fast test of the entries generates only what changed. `--lock-equivalents` rewrites it.
EQUIVALENTS_LOCK = ROOT / "tools" / "mutation_equivalents.lock.json"
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
    # In the default set (`make mutation` with no MUTATION_MODULES, the weekly workflow); off for slices of a
    # module already in it and for modules a full run cannot finish (run them by name, with --sample).
    default: bool = True
    # The score under which a run fails: 90 %, or for a module published below it, that figure (a floor that
    # only rises; benchmarks/mutation.md) until its survivors are killed or argued equivalent.
    gate: float = 90.0
    # Further pytest options for every run of the module's tests (mutmut's stats, clean and mutant runs).
    pytest_args: tuple[str, ...] = ()


_VERIFY_TESTS = tuple(
    f"tests/cli/test_verify{f}.py"
    for f in ("", "_accounts", "_alarm_delivery", "_cli", "_kube", "_network", "_prewarm", "_runtime")
)
# The CNQ runtime's tests: every tests/constructs/cnq file that runs the runtime in-process. Left out: the ones
# that synthesize or bundle (test_cnq_template, test_cnq_bundling, test_cnq_provisioner_lambda: a sandboxed
# bundle cannot import mutmut's trampolined copy), which made each run's stats and clean passes about 10 minutes.
# verify's and preflight's slices run the fast tier only: their thorough tests are the same checks against a moto
# server (the server twin), which doubled each run's stats and clean passes (about 20 minutes before the first
# mutant at a load of 12).
_FAST_TIER = ("-m", "not thorough")
_CNQ_TESTS = tuple(
    f"tests/constructs/cnq/test_cnq_{f}.py"
    for f in (
        "capacity", "cluster", "contract", "converge", "exports", "floating", "formation", "identities",
        "portal", "protection", "provisioner", "request_paths", "session", "shape",
    )
)  # fmt: skip

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
            # storage-rules: published at 82.2 % (all 276 mutants), its floor until its survivors are dealt with.
            gate=82.2 if part == "storage-rules" else 90.0,
        )
        for part, files, extra in (
            ("quotas", ("hubspoke/config/quotas.py",), ()),
            # schema.py as published, split on 2026-12-06 (commit 726a3ae) into these four.
            (
                "schema",
                tuple(f"hubspoke/config/{f}.py" for f in ("schema", "fields", "cnq", "settings")),
                (),
            ),
            ("network-rules", ("hubspoke/config/rules.py", "hubspoke/config/network_rules.py"), ()),
            ("storage-rules", ("hubspoke/config/storage_rules.py",), ()),
            ("compute-rules", ("hubspoke/config/compute_rules.py",), ()),
            ("traffic-rules", ("hubspoke/config/traffic_rules.py",), ("tests/test_flow_logs.py",)),
            (
                "loader",
                (
                    "hubspoke/config/loader.py",
                    "hubspoke/config/sections.py",
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
    # Every policy test synthesizes (minutes per mutant here): measured only where there is time for it. The
    # unjudged-synth test checks the tests' own synth helper (tests/conftest.py), with two synths per mutant.
    Module(
        "policy",
        ("hubspoke/policy/*.py",),
        ("tests/policy",),
        (
            "tests/policy/test_acks.py",
            "tests/policy/test_control_tower.py::test_a_synth_left_unjudged_is_the_judged_synth_without_its_verdicts",
        ),
    ),
    # The pack's own rules against the tests that judge config/dev.yaml's templates (one synth of dev per mutant,
    # the synth cache being keyed by the mutant): no shape-wide synths, no checkov, no Control Tower module
    # (control_tower.py: its guard runs inside every synth and has its own tests).
    Module(
        "policy-dev",
        tuple(
            f"hubspoke/policy/{f}.py"
            for f in (
                "acks",
                "cnq",
                "deploy_facts",
                "hyperpod",
                "model",
                "network",
                "plugin",
                "rules",
                "waiters",
            )
        ),
        (
            "tests/policy/test_rules.py",
            "tests/policy/test_waiters.py",
            "tests/policy/test_cnq_rules.py",
            "tests/policy/test_hyperpod_rules.py",
            "tests/policy/test_deploy_facts.py",
            "tests/policy/test_plugin.py",
            "tests/policy/test_acks.py",
        ),
        (
            # checkov runs (about 10 s each); the fast test beside them checks the same Metadata.
            "tests/policy/test_acks.py::test_a_checkov_acknowledgment_is_a_skip_checkov_honours_on_the_named_resources_only",
            "tests/policy/test_acks.py::test_checkov_finds_nothing_unexplained_in_the_dev_templates",
            "tests/policy/test_rules.py::test_every_shapes_templates_pass",
            "tests/policy/test_rules.py::test_spoke_to_spoke_route_is_caught",
            "tests/policy/test_rules.py::test_a_peering_route_beyond_the_hub_is_caught",
            "tests/policy/test_rules.py::test_a_peering_route_into_the_hub_passes",
            "tests/policy/test_waiters.py::test_every_shapes_templates_wait_within_the_hour",
        ),
        default=False,
    ),
    # `hubspoke verify`: its tests run against a moto world built from a synthesized environment (one synth per
    # mutant), except the Kubernetes reader's, which talk to a local stand-in API server.
    Module(
        "verify",
        ("hubspoke/cli/verify/*.py",),
        (
            "tests/cli/test_verify.py",
            "tests/cli/test_verify_accounts.py",
            "tests/cli/test_verify_cli.py",
            "tests/cli/test_verify_kube.py",
            "tests/cli/test_verify_network.py",
            "tests/cli/test_verify_runtime.py",
        ),
        # About 4,500 mutants at a synth each: days on 2 cores, so sampled only.
        default=False,
    ),
    # Slices of verify and preflight for issue 45 item 3: a CLI mutant reuses the unmutated synth
    # (tests/conftest.py _cache_key), so each mutant costs its own tests only. Each slice against every test of
    # its command (mutmut runs only the tests that reach the mutated function).
    *(
        Module(
            f"verify-{part}",
            tuple(f"hubspoke/cli/verify/{f}.py" for f in files),
            _VERIFY_TESTS,
            default=False,
            pytest_args=_FAST_TIER,
        )
        for part, files in (
            ("network", ("network", "peering")),
            ("stacks", ("__init__", "stacks", "live", "alarms")),
            ("runtime", ("compute", "cache", "canary", "delivery", "ingress")),
        )
    ),
    Module(
        "preflight",
        ("hubspoke/cli/preflight/*.py",),
        tuple(
            f"tests/cli/test_preflight{f}.py" for f in ("", "_addons", "_checks", "_cnq", "_quotas", "_tools")
        ),
        default=False,
        pytest_args=_FAST_TIER,
    ),
    # The CNQ runtime's request layer, by file, against every CNQ runtime test.
    *(
        Module(f"cnq-{part}", (f"hubspoke/constructs/cnq/runtime/{part}.py",), _CNQ_TESTS, default=False)
        for part in ("session", "provisioner", "capacity")
    ),
    Module(
        "verify-kube",
        ("hubspoke/cli/verify/kube.py",),
        ("tests/cli/test_verify_kube.py",),
    ),
)
# The thorough tier's gate (tests/tools/test_mutation_gate.py): module -> (sample size, seed), a fixed draw the
# tier's time allows on 2 shared cores; the other published modules are gated in `make mutation` only.
THOROUGH_SAMPLES = {"mtu": (15, 1), "config-schema": (15, 1), "config-quotas": (15, 1), "topology": (15, 1)}


# Run inside a module's scratch directory: mutmut's own generation (what `mutmut run` does first, and skips when
# it finds the mutants already there), then every mutant's diff as `mutmut show` prints it, into a JSON file.
# With patterns after the file (no test will run): the mutated files only, nothing copied, and only the diffs of
# the mutants whose names match (an equivalents check needs a few functions' mutants).
_GENERATE = """
import fnmatch, json, os, sys
from mutmut.__main__ import create_mutants
from difflib import unified_diff
from mutmut.mutation.data import MutantLineSpans, SourceFileMutationData
from mutmut.mutation.diff_apply import generated_function_names
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, walk_mutatable_files
from mutmut.utils.format_utils import orig_function_and_class_names_from_key
patterns = sys.argv[2:]
if patterns:
    from mutmut.__main__ import create_file_mutants
    for path in walk_mutatable_files():
        result = create_file_mutants(path)
        if result.error:
            raise result.error
else:
    copy_src_dir()
    copy_also_copy_files()
    create_mutants(1)
def diff(name, path, spans):
    # mutmut's own diff (get_diff_for_mutant) as text: the two generated functions its line-span index locates,
    # both renamed to the original function, without libcst's parse and render of each (a twentieth of the
    # time). HUBSPOKE_MUTMUT_DIFF=1 uses mutmut's, which tests/tools/test_mutation.py compares with this one.
    if os.environ.get("HUBSPOKE_MUTMUT_DIFF"):
        from mutmut.mutation.diff_apply import get_diff_for_mutant
        return get_diff_for_mutant(name, path=path)
    generated = generated_function_names(name)
    function = orig_function_and_class_names_from_key(name)[0]
    texts = []
    for old, text in zip(generated, spans.read_function_sources(generated)):
        # mutmut checks its index by parsing (read_functions_from_index); a span that does not hold exactly
        # this one function means the index is off, and no key is made from it.
        if text.count(f"def {old}(") != 1:
            raise SystemExit(f"mutmut's line-span index of {path} does not hold {old} once")
        texts.append(text.replace(f"def {old}(", f"def {function}(").strip().split("\\n"))
    return "\\n".join(unified_diff(*texts, fromfile=str(path), tofile=str(path), lineterm=""))
diffs = {}
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    spans = MutantLineSpans.load(path)
    for name in data.exit_code_by_key:
        if not patterns or any(fnmatch.fnmatch(name, p) for p in patterns):
            diffs[name] = diff(name, path, spans)
with open(sys.argv[1], "w") as out:
    json.dump(diffs, out)
"""


# "file::definition" -> its text's fingerprint, the functions named in it, and their mutants' change hashes.
Lock = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Equivalent:
    """One reviewed equivalent mutant: the function it mutates, the hash of its change, and why."""

    function: str
    change: str
    why: str

    @property
    def key(self) -> tuple[str, str]:
        return self.function, self.change


def function_of(mutant: str) -> str:
    """`hubspoke.mtu.x_peer_mtu__mutmut_3` -> `hubspoke.mtu.x_peer_mtu` (mutmut's mangled function name)."""
    function, sep, index = mutant.rpartition("__mutmut_")
    if not sep or not index.isdigit():
        raise ValueError(f"not a mutmut mutant name: {mutant}")
    return function


def module_of(function: str) -> str:
    """The dotted module of a mangled function name: what is left before `.x_name` or `.xǁClassǁname`."""
    found = re.match(r"(.+?)\.x(?:_|ǁ)", function)
    if not found:
        raise ValueError(f"not a mutmut function name: {function}")
    return found.group(1)


def change_hash(diff: str) -> str:
    """A hash of what a mutant changes: its original lines and its mutated lines, as `mutmut show` diffs them.

    Indentation and the diff's headers and line numbers are left out, so the hash follows the change, not
    where mutmut numbered it or where the function sits in its file.
    """
    removed: list[str] = []
    added: list[str] = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("-"):
            removed.append(line[1:].strip())
        elif in_hunk and line.startswith("+"):
            added.append(line[1:].strip())
    if not removed and not added:
        raise ValueError(f"a mutant's diff with no change:\n{diff}")
    return hashlib.sha256(json.dumps([removed, added]).encode()).hexdigest()[:16]


def mutant_key(mutant: str, diff: str) -> tuple[str, str]:
    """(function, change hash): what an equivalents entry names; never mutmut's index."""
    return function_of(mutant), change_hash(diff)


def parse_equivalents(text: str) -> list[Equivalent]:
    """Entries of `<function> <change hash> <why>` lines (`#` comments and blank lines skipped).

    Raises ValueError on a line that names a mutant by mutmut's index, has no change hash, or gives no reason.
    """
    out: list[Equivalent] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        function, change, why = [*line.split(None, 2), "", ""][:3]
        if "__mutmut_" in function:
            raise ValueError(
                f"line {number}: {function} is mutmut's index; name the function and the change hash"
            )
        if not re.fullmatch(r"[0-9a-f]{16}", change):
            raise ValueError(
                f"line {number}: {change!r} is not a change hash (16 hex digits; --keys prints them)"
            )
        if not why.strip():
            raise ValueError(f"line {number}: {function} {change} has no reason; add one line of why")
        module_of(function)
        out.append(Equivalent(function, change, why.strip()))
    return out


def equivalents() -> list[Equivalent]:
    try:
        return parse_equivalents(EQUIVALENTS.read_text())
    except ValueError as e:
        sys.exit(f"{EQUIVALENTS}: {e}")


# Why an entry excuses nothing when its function still has mutants but none makes its change.
NO_MUTANT = "matches no mutant (the code it reviewed changed)"


@dataclass
class Matching:
    """Which mutants the equivalents entries excuse, and the entries that excuse nothing (or too much)."""

    equivalent: dict[str, Equivalent] = field(default_factory=dict)
    stale: list[tuple[Equivalent, str]] = field(default_factory=list)
    ambiguous: list[tuple[Equivalent, list[str]]] = field(default_factory=list)


def match_equivalents(
    entries: list[Equivalent], keys: dict[str, tuple[str, str]], statuses: dict[str, str]
) -> Matching:
    """Match entries to this run's mutants by (function, change hash) only.

    `keys` holds every mutant generated (name -> key), `statuses` mutmut's status of each (a sampled run leaves
    most "not checked"). Only entries for a module this run mutated are judged. An entry is stale when no mutant
    has its key any more, or when its mutant was checked and detected; it is ambiguous (and excuses nothing)
    when the same change occurs in more than one mutant of the function, so a review of one cannot excuse
    another.
    """
    result = Matching()
    modules = {module_of(function) for function, _ in keys.values()}
    by_key: dict[tuple[str, str], list[str]] = {}
    for name, key in keys.items():
        by_key.setdefault(key, []).append(name)
    for entry in entries:
        if module_of(entry.function) not in modules:
            continue
        names = by_key.get(entry.key, [])
        if not names:
            result.stale.append((entry, NO_MUTANT))
        elif len(names) > 1:
            result.ambiguous.append((entry, sorted(names)))
        elif statuses.get(names[0]) in DETECTED:
            result.stale.append((entry, f"its mutant is now {statuses[names[0]]}"))
        else:
            result.equivalent[names[0]] = entry
    return result


def _source_file(module: str, root: Path = ROOT) -> str:
    """The checkout-relative file of a dotted hubspoke module (a package's is its __init__.py)."""
    path = module.replace(".", "/")
    return f"{path}/__init__.py" if (root / path).is_dir() else f"{path}.py"


def _top_level_name(function: str) -> str:
    """The top-level definition a mangled name lives in: `x_name` -> `name`, `xǁClassǁmethod` -> `Class`."""
    mangled = function[len(module_of(function)) + 1 :]
    return mangled.split("ǁ")[1] if mangled.startswith("xǁ") else mangled[len("x_") :]


def _named_definitions(entries: list[Equivalent], root: Path = ROOT) -> dict[str, dict[str, str]]:
    """file -> {name -> source text, decorators included} of each top-level function and class the entries name
    that the file still holds.

    A `# pragma: no mutate` reaches past its own definition (a `block` or `start`/`end` pair: mutmut 3.8,
    mutmut/mutation/pragma_handling.py), and a copy of some definitions would drop it, so a file with one is
    refused.
    """
    wanted: dict[str, set[str]] = {}
    for entry in entries:
        file = _source_file(module_of(entry.function), root)
        wanted.setdefault(file, set()).add(_top_level_name(entry.function))
    found: dict[str, dict[str, str]] = {}
    for file, names in sorted(wanted.items()):
        source = (root / file).read_text()
        if "no mutate" in source:
            raise ValueError(f"{file} has a mutmut pragma, which a copy of some definitions would drop")
        lines = source.splitlines()
        found[file] = {
            n.name: "\n".join(
                lines[min([n.lineno, *(d.lineno for d in n.decorator_list)]) - 1 : n.end_lineno]
            )
            for n in ast.parse(source).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name in names
        }
    return found


def _write_named_definitions(entries: list[Equivalent], package: Path, root: Path = ROOT) -> tuple[str, ...]:
    """Write under `package` a copy of each file the entries name that holds only the top-level functions and
    classes they name, and return those files.

    mutmut (3.8, mutmut/mutation/file_mutation.py) numbers and mutates each top-level function and each method
    of a top-level class from that definition's own nodes, so a named function's mutants and their diffs are the
    ones its whole file gives, without rendering every other function's mutants: about a tenth of the time.
    tests/tools/test_mutation.py's thorough tests compare the two generations.
    """
    for file, kept in _named_definitions(entries, root).items():
        target = package.parent / file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n\n\n".join(kept.values()) + "\n")
    return tuple(sorted({_source_file(module_of(e.function), root) for e in entries}))


def equivalent_keys(
    entries: list[Equivalent], *, reference: bool = False, root: Path = ROOT
) -> dict[str, tuple[str, str]]:
    """The key of every mutant of each function an entry names, generated by mutmut (no test run) from copies of
    the files holding only the named definitions; with `reference`, as a mutation run did before that shortcut
    and the text diff: from the whole files, each diff mutmut's own (get_diff_for_mutant), several times slower.
    `root` is the checkout whose hubspoke/ holds the files (a test's own, for cases the code has none of)."""
    patterns = tuple(sorted({f"{e.function}__mutmut_*" for e in entries}))
    with tempfile.TemporaryDirectory(prefix="hubspoke-equivalents-") as scratch:
        package = Path(scratch) / "hubspoke"
        if reference:
            files, package = (
                tuple(sorted({_source_file(module_of(e.function), root) for e in entries})),
                root / "hubspoke",
            )
        else:
            files = _write_named_definitions(entries, package, root)
        module = Module("equivalents", files, ())
        return run_module(
            module, 1, None, 0, test=False, only=patterns, package=package, mutmut_diff=reference
        ).keys


def _fingerprint(text: str) -> str:
    """A hash of what a definition's mutants and their change hashes are made from: its text, mutmut and libcst
    (which parses and renders each mutant; both pinned in pyproject.toml), and this tool's generation and diff
    (_GENERATE). mutmut's settings that reach generation (do_not_mutate, mutate_only_covered_lines) are never
    set: run_module writes the only [tool.mutmut] table and refuses one in pyproject.toml."""
    made_by = [importlib.metadata.version(p) for p in ("mutmut", "libcst")] + [_GENERATE]
    return hashlib.sha256(json.dumps([made_by, text]).encode()).hexdigest()[:16]


def locked_table(entries: list[Equivalent], lock: Lock, root: Path = ROOT) -> Lock:
    """For each definition the entries name: its fingerprint and, per named function, how many mutants mutmut
    makes of it and which of them (by index) make each change an entry names; the lock as it should now read.

    A definition's record comes from `lock` when its fingerprint (_fingerprint: its text, the tools' versions) is
    the one the lock generated it from and it records every named function and change: mutmut 3.8 mutates a
    definition from its own nodes (see _write_named_definitions), so the same text gives the same mutants. Every other definition is generated
    afresh (equivalent_keys). A function its file no longer holds has no mutant and needs no generation.
    """
    definitions = _named_definitions(entries, root)
    named: dict[str, dict[str, set[str]]] = {}
    for entry in entries:
        ident = f"{_source_file(module_of(entry.function), root)}::{_top_level_name(entry.function)}"
        named.setdefault(ident, {}).setdefault(entry.function, set()).add(entry.change)
    table: Lock = {}
    fresh: list[Equivalent] = []
    for ident, changes in sorted(named.items()):
        file, name = ident.split("::")
        text = definitions[file].get(name)
        if text is None:
            continue
        stored = lock.get(ident, {})
        if stored.get("source") == _fingerprint(text) and all(
            function in stored["functions"] and wanted <= set(stored["functions"][function]["changes"])
            for function, wanted in changes.items()
        ):
            table[ident] = {
                "source": stored["source"],
                "functions": {
                    function: {
                        "mutants": stored["functions"][function]["mutants"],
                        "changes": {c: stored["functions"][function]["changes"][c] for c in sorted(wanted)},
                    }
                    for function, wanted in sorted(changes.items())
                },
            }
        else:
            fresh += [e for e in entries if e.function in changes]
    if fresh:
        keys = equivalent_keys(fresh, root=root)
        for ident in {i for i, changes in named.items() if any(e.function in changes for e in fresh)}:
            file, name = ident.split("::")
            functions = {}
            for function, wanted in sorted(named[ident].items()):
                mine = {int(m.rpartition("_")[2]): c for m, (f, c) in keys.items() if f == function}
                functions[function] = {
                    "mutants": len(mine),
                    "changes": {w: sorted(i for i, c in mine.items() if c == w) for w in sorted(wanted)},
                }
            table[ident] = {"source": _fingerprint(definitions[file][name]), "functions": functions}
    return dict(sorted(table.items()))


def read_lock(path: Path = EQUIVALENTS_LOCK) -> Lock:
    return json.loads(path.read_text()) if path.exists() else {}


def write_lock(lock: Lock, path: Path = EQUIVALENTS_LOCK) -> None:
    text = json.dumps(lock, indent=1)
    # A change's mutant indices on one line: a reviewer reads the lock's diff by definition and change.
    text = re.sub(
        r"\[\s+([\d,\s]+?)\s+\]", lambda m: "[" + ", ".join(re.findall(r"\d+", m.group(1))) + "]", text
    )
    path.write_text(text + "\n")


def unsound_equivalents(entries: list[Equivalent], lock: Lock | None = None, root: Path = ROOT) -> Matching:
    """Judge every entry against the mutants of the function it names (generated, no test run; see locked_table).

    What a mutation run would report as stale (no mutant has the key) or ambiguous, without its minutes of tests;
    an entry whose mutant a test now kills shows only in a run. An entry whose function has no mutant at all
    (renamed, removed, or no longer mutated) is stale too, also when no other entry names its module.
    """
    functions = {
        function: record
        for held in locked_table(entries, read_lock() if lock is None else lock, root).values()
        for function, record in held["functions"].items()
    }
    result = Matching()
    for entry in entries:
        record = functions.get(entry.function, {"mutants": 0})
        names = [f"{entry.function}__mutmut_{i}" for i in record.get("changes", {}).get(entry.change, [])]
        if not record["mutants"]:
            result.stale.append((entry, "its function has no mutant (renamed, removed or no longer mutated)"))
        elif not names:
            result.stale.append((entry, NO_MUTANT))
        elif len(names) > 1:
            result.ambiguous.append((entry, names))
        else:
            result.equivalent[names[0]] = entry
    return result


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % with z = 1.96) of a proportion hits/n."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def sample(names: list[str], size: int, seed: int) -> list[str]:
    """A reproducible random subset: the same names, size and seed always draw the same mutants."""
    ordered = sorted(names)
    return sorted(random.Random(seed).sample(ordered, min(size, len(ordered))))


@dataclass
class Run:
    statuses: dict[str, str]
    keys: dict[str, tuple[str, str]]
    diffs: dict[str, str]
    drawn: list[str] | None = None


def run_module(
    module: Module,
    max_children: int,
    size: int | None,
    seed: int,
    *,
    test: bool = True,
    only: tuple[str, ...] = (),
    package: Path = ROOT / "hubspoke",
    mutmut_diff: bool = False,
) -> Run:
    """Every mutant's key and diff, and the mutmut status of the mutants run (all, or a sample of `size`).

    Runs in a scratch directory that is removed afterwards. Without `test`, only generates the mutants, and with
    `only` (fnmatch patterns of mutant names) keys only the mutants that match. `package` is what the scratch
    directory's hubspoke/ links to (the checkout's, or copies holding only some definitions); `mutmut_diff` has
    each diff made by mutmut's get_diff_for_mutant instead of from the generated functions' text.
    """
    assert test or only, "a run without tests keys only the mutants it is asked about"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "mutmut" not in project.get("tool", {}), "tools/mutation.py owns mutmut's configuration"
    settings = {
        "source_paths": ["hubspoke"],
        "only_mutate": list(module.mutate),
        "pytest_add_cli_args": [
            "-p",
            "no:cacheprovider",
            *module.pytest_args,
            *(f"--deselect={d}" for d in module.deselect),
        ],
        "pytest_add_cli_args_test_selection": list(module.tests),
        "also_copy": [p for p in SUPPORT if (ROOT / p).exists()],
    }
    table = "\n[tool.mutmut]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in settings.items())
    with tempfile.TemporaryDirectory(prefix=f"hubspoke-mutation-{module.name}-") as scratch:
        work = Path(scratch)
        (work / "hubspoke").symlink_to(package)
        for entry in ("tests", *SUPPORT):
            if (ROOT / entry).exists():
                (work / entry).symlink_to(ROOT / entry)
        (work / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + table)
        # Synth needs the pinned Node from node_modules (tests/conftest.py puts ROOT/node_modules/.bin on PATH,
        # and ROOT is mutants/ there); a link, not a copy of 300 MB.
        (work / "mutants").mkdir()
        if (ROOT / "node_modules").exists():
            (work / "mutants" / "node_modules").symlink_to(ROOT / "node_modules")
        diffs_file = work / "mutant-diffs.json"
        subprocess.run(
            [sys.executable, "-c", _GENERATE, str(diffs_file), *(() if test else only)],
            cwd=work,
            env={**os.environ, "HUBSPOKE_MUTMUT_DIFF": "1" if mutmut_diff else ""},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        diffs: dict[str, str] = json.loads(diffs_file.read_text())
        drawn = sample(list(diffs), size, seed) if size is not None else None
        keys = {name: mutant_key(name, diff) for name, diff in diffs.items()}
        if not test:
            return Run({}, keys, diffs, drawn)
        mutmut = [sys.executable, "-m", "mutmut"]
        run = subprocess.run(
            [*mutmut, "run", "--max-children", str(max_children), *(drawn or [])], cwd=work, check=False
        )
        if run.returncode != 0:
            sys.exit(f"mutation: mutmut failed on {module.name} (exit {run.returncode}); its output is above")
        results = subprocess.run(
            [*mutmut, "results", "--all", "true"], cwd=work, check=True, capture_output=True, text=True
        ).stdout
        statuses = dict(re.findall(r"^\s+(\S+): (.+)$", results, flags=re.MULTILINE))
    return Run(statuses, keys, diffs, drawn)


def _toml(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f'"{v}"' for v in value) + "]"
    return f'"{value}"'


def report(module: Module, run: Run, entries: list[Equivalent], show: bool) -> tuple[float, bool]:
    """Print one module's score (and per file), its survivors, and stale or ambiguous entries.

    Returns the score held to the gate and whether the equivalents list is sound for this module (no stale or
    ambiguous entry). A full run's score is held to the gate; a sample's is the top of its 95 % interval, so a
    sample fails only when it shows the module below its gate (a module at its gate fails about 1 draw in 40).
    """
    measured = run.drawn if run.drawn is not None else sorted(run.statuses)
    statuses = {n: run.statuses.get(n, "not checked") for n in measured}
    unchecked = sorted(n for n, s in statuses.items() if s == "not checked")
    if unchecked:
        sys.exit(f"mutation: {module.name} stopped with {len(unchecked)} mutants not checked; no score")
    matching = match_equivalents(entries, run.keys, run.statuses)
    mine = {n for n in matching.equivalent if n in statuses}
    counted = {n: s for n, s in statuses.items() if n not in mine}
    killed = sum(s in DETECTED for s in counted.values())
    score = 100.0 * killed / len(counted) if counted else 100.0
    drawn = (
        f" (a sample of {len(measured)} of {len(run.keys)} mutants)" if run.drawn is not None else " mutants"
    )
    print(
        f"\n== {module.name}: {len(measured)}{drawn}, {killed} killed, {len(mine)} equivalent, "
        f"{len(counted) - killed} not killed: score {score:.1f} % of non-equivalent"
    )
    gated = score
    if run.drawn is not None:
        low, high = wilson(killed, len(counted))
        gated = 100 * high
        print(
            f"   95 % Wilson interval over the {len(counted)} non-equivalent drawn: {100 * low:.1f} to {100 * high:.1f} %"
            f" (its top, {gated:.1f} %, is held to the gate)"
        )
    files: dict[str, list[str]] = {}
    for name, status in counted.items():
        files.setdefault(module_of(function_of(name)), []).append(status)
    for path, sts in sorted(files.items()):
        hit = sum(s in DETECTED for s in sts)
        print(f"   {path}: {hit}/{len(sts)} ({100.0 * hit / len(sts):.1f} %)")
    for name, status in sorted(counted.items()):
        if status not in DETECTED:
            function, change = run.keys[name]
            print(f"   {status}: {name}  (equivalents key: {function} {change})")
            if show:
                print(run.diffs[name])
    for entry, why in matching.stale:
        print(
            f"   STALE equivalent entry {entry.function} {entry.change}: {why} (remove it from {EQUIVALENTS.name})"
        )
    for entry, names in matching.ambiguous:
        print(
            f"   AMBIGUOUS equivalent entry {entry.function} {entry.change}: the same change is {len(names)} "
            f"mutants ({', '.join(names)}); it excuses none of them"
        )
    return gated, not (matching.stale or matching.ambiguous)


def below_gate(scores: dict[str, float], min_score: float | None = None) -> list[str]:
    """The modules scored under `min_score`, or where it is None, under their own gate (e.g. `mtu 85.0 % < 90.0 %`)."""
    gates = {m.name: m.gate if min_score is None else min_score for m in MODULES}
    return [f"{n} {s:.1f} % < {gates[n]:.1f} %" for n, s in scores.items() if s < gates[n]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "modules",
        nargs="*",
        help=f"default: {', '.join(m.name for m in MODULES if m.default)}; also "
        f"{', '.join(m.name for m in MODULES if not m.default)}",
    )
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--show", action="store_true", help="print the diff of every mutant not detected")
    parser.add_argument(
        "--min-score", type=float, help="exit 1 if a module scores below it (default: each module's gate)"
    )
    parser.add_argument("--sample", type=int, metavar="N", help="run N mutants drawn at random per module")
    parser.add_argument("--seed", type=int, default=0, help="the random draw's seed (default 0)")
    parser.add_argument(
        "--keys",
        metavar="PATTERN",
        help="run no test: print the equivalents key and diff of each mutant whose name matches PATTERN (fnmatch)",
    )
    parser.add_argument(
        "--lock-equivalents",
        action="store_true",
        help=f"run no test: bring {EQUIVALENTS_LOCK.name} up to date (generates only the definitions that changed)",
    )
    args = parser.parse_args()
    if args.lock_equivalents:
        write_lock(locked_table(equivalents(), read_lock()))
        print(f"{EQUIVALENTS_LOCK.relative_to(ROOT)}: up to date")
        return
    by_name = {m.name: m for m in MODULES}
    unknown = [n for n in args.modules if n not in by_name]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {sorted(by_name)}")
    if args.sample is not None and args.sample < 1:
        parser.error("--sample needs at least 1 mutant")
    if args.keys is not None:
        for name in args.modules or [m.name for m in MODULES if m.default]:
            generated = run_module(
                by_name[name], args.max_children, None, args.seed, test=False, only=(args.keys,)
            )
            for mutant in sorted(n for n in generated.keys if fnmatch.fnmatch(n, args.keys)):
                print(f"{mutant}: {' '.join(generated.keys[mutant])}\n{generated.diffs[mutant]}\n")
        return
    entries = equivalents()
    scores, unsound = {}, []
    for name in args.modules or [m.name for m in MODULES if m.default]:
        module = by_name[name]
        scores[name], sound = report(
            module, run_module(module, args.max_children, args.sample, args.seed), entries, args.show
        )
        if not sound:
            unsound.append(name)
    print(
        "\n"
        + "\n".join(f"{n}: {s:.1f} % (held to its gate, {by_name[n].gate:.1f} %)" for n, s in scores.items())
    )
    low = below_gate(scores, args.min_score)
    if low or unsound:
        sys.exit(
            "mutation: "
            + "; ".join(
                [f"score below its gate in: {', '.join(low)}"] * bool(low)
                + [f"stale or ambiguous equivalents in: {', '.join(unsound)}"] * bool(unsound)
            )
        )


if __name__ == "__main__":
    main()
