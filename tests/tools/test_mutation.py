"""tools/mutation.py: equivalents are matched by the mutated function and change, never by mutmut's index.

The diffs below are written out as `mutmut show` (mutmut 3.8.1) printed them for real mutants of
hubspoke/config/quotas.py; the renumbered and moved copies differ only where a renumbering or an edit elsewhere
in the file changes them (the index in the name, the hunk's line numbers, the indentation).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("hubspoke_mutation_tool", ROOT / "tools" / "mutation.py")
assert _spec and _spec.loader
tool = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tool
_spec.loader.exec_module(tool)

FUNCTION = "hubspoke.config.quotas.x_peer_path_rules"
# mutmut_15 of peer_path_rules as mutmut 3.8.1 printed it.
XXHUBXX = """--- hubspoke/config/quotas.py
+++ hubspoke/config/quotas.py
@@ -4,6 +4,6 @@
     if "hub" not in by_path:
         return {}
     spoke_cidrs = sum(len(vpc_cidrs(r)) for path, r in by_path.items() if path != "hub")
-    counts = {path: len(vpc_cidrs(by_path["hub"])) * len(FROM_HUB) for path in by_path if path != "hub"}
+    counts = {path: len(vpc_cidrs(by_path["hub"])) * len(FROM_HUB) for path in by_path if path != "XXhubXX"}
     counts["hub"] = spoke_cidrs * len(FROM_SPOKE)
     return counts"""
# The same change after an edit above it moved the line and re-indented the function (and mutmut renumbered it).
XXHUBXX_MOVED = """--- hubspoke/config/quotas.py
+++ hubspoke/config/quotas.py
@@ -9,6 +9,6 @@
         if "hub" not in by_path:
             return {}
         spoke_cidrs = sum(len(vpc_cidrs(r)) for path, r in by_path.items() if path != "hub")
-        counts = {path: len(vpc_cidrs(by_path["hub"])) * len(FROM_HUB) for path in by_path if path != "hub"}
+        counts = {path: len(vpc_cidrs(by_path["hub"])) * len(FROM_HUB) for path in by_path if path != "XXhubXX"}
         counts["hub"] = spoke_cidrs * len(FROM_SPOKE)
         return counts"""
# mutmut_16: the same line, mutated differently.
UPPER_HUB = XXHUBXX.replace('path != "XXhubXX"', 'path != "HUB"')
# Another line of the same function (the hub's own count), mutated.
HUB_COUNT = """--- hubspoke/config/quotas.py
+++ hubspoke/config/quotas.py
@@ -5,5 +5,5 @@
         return {}
     spoke_cidrs = sum(len(vpc_cidrs(r)) for path, r in by_path.items() if path != "hub")
     counts = {path: len(vpc_cidrs(by_path["hub"])) * len(FROM_HUB) for path in by_path if path != "hub"}
-    counts["hub"] = spoke_cidrs * len(FROM_SPOKE)
+    counts["hub"] = None
     return counts"""


def entry_for(diff: str, why: str = "reviewed") -> object:
    function, change = tool.mutant_key(f"{FUNCTION}__mutmut_15", diff)
    return tool.Equivalent(function, change, why)


def test_a_renumbered_mutant_with_the_same_change_still_matches() -> None:
    entry = entry_for(XXHUBXX)
    keys = {
        f"{FUNCTION}__mutmut_15": tool.mutant_key(f"{FUNCTION}__mutmut_15", HUB_COUNT),
        f"{FUNCTION}__mutmut_19": tool.mutant_key(f"{FUNCTION}__mutmut_19", XXHUBXX_MOVED),
    }
    statuses = dict.fromkeys(keys, "survived")
    matching = tool.match_equivalents([entry], keys, statuses)
    assert matching.equivalent == {f"{FUNCTION}__mutmut_19": entry}
    assert matching.stale == [] and matching.ambiguous == []


def test_a_different_mutant_at_the_same_index_does_not_match() -> None:
    entry = entry_for(XXHUBXX)
    for other in (UPPER_HUB, HUB_COUNT):
        keys = {f"{FUNCTION}__mutmut_15": tool.mutant_key(f"{FUNCTION}__mutmut_15", other)}
        matching = tool.match_equivalents([entry], keys, {f"{FUNCTION}__mutmut_15": "survived"})
        assert matching.equivalent == {}
        # The reviewed change is gone from the module: the entry is reported, not silently kept.
        assert [e for e, _ in matching.stale] == [entry]


def test_the_same_change_in_another_function_does_not_match() -> None:
    entry = entry_for(XXHUBXX)
    other = "hubspoke.config.quotas.x_peer_path_rules_within_quota__mutmut_15"
    keys = {other: tool.mutant_key(other, XXHUBXX)}
    assert tool.match_equivalents([entry], keys, {other: "survived"}).equivalent == {}


def test_an_entry_whose_mutant_is_now_killed_is_stale_and_excuses_nothing() -> None:
    entry = entry_for(XXHUBXX)
    keys = {f"{FUNCTION}__mutmut_15": tool.mutant_key(f"{FUNCTION}__mutmut_15", XXHUBXX)}
    matching = tool.match_equivalents([entry], keys, {f"{FUNCTION}__mutmut_15": "killed"})
    assert matching.equivalent == {}
    assert [e for e, _ in matching.stale] == [entry]


def test_an_entry_for_a_mutant_a_sample_did_not_draw_is_neither_used_nor_stale() -> None:
    entry = entry_for(XXHUBXX)
    keys = {f"{FUNCTION}__mutmut_15": tool.mutant_key(f"{FUNCTION}__mutmut_15", XXHUBXX)}
    matching = tool.match_equivalents([entry], keys, {f"{FUNCTION}__mutmut_15": "not checked"})
    assert matching.stale == [] and matching.ambiguous == []


def test_a_change_that_occurs_twice_in_the_function_excuses_neither() -> None:
    entry = entry_for(XXHUBXX)
    keys = {
        f"{FUNCTION}__mutmut_15": tool.mutant_key(f"{FUNCTION}__mutmut_15", XXHUBXX),
        f"{FUNCTION}__mutmut_40": tool.mutant_key(f"{FUNCTION}__mutmut_40", XXHUBXX_MOVED),
    }
    matching = tool.match_equivalents([entry], keys, dict.fromkeys(keys, "survived"))
    assert matching.equivalent == {}
    assert [e for e, _ in matching.ambiguous] == [entry]


def test_entries_of_modules_the_run_did_not_mutate_are_not_judged() -> None:
    entry = entry_for(XXHUBXX)
    keys = {"hubspoke.mtu.x_peer_mtu__mutmut_1": ("hubspoke.mtu.x_peer_mtu", "0" * 16)}
    matching = tool.match_equivalents([entry], keys, {"hubspoke.mtu.x_peer_mtu__mutmut_1": "survived"})
    assert matching.equivalent == {} and matching.stale == [] and matching.ambiguous == []


def test_the_equivalents_file_refuses_index_keys_and_missing_reasons() -> None:
    with pytest.raises(ValueError, match="index"):
        tool.parse_equivalents(f"{FUNCTION}__mutmut_15 a reason\n")
    with pytest.raises(ValueError, match="no reason"):
        tool.parse_equivalents(f"{FUNCTION} 0123456789abcdef\n")
    with pytest.raises(ValueError, match="change hash"):
        tool.parse_equivalents(f"{FUNCTION} because it is\n")
    parsed = tool.parse_equivalents(
        f"# comment\n\n{FUNCTION} 0123456789abcdef  why it cannot be told apart\n"
    )
    assert parsed == [tool.Equivalent(FUNCTION, "0123456789abcdef", "why it cannot be told apart")]


def test_every_listed_equivalent_is_keyed_by_change() -> None:
    entries = tool.parse_equivalents((ROOT / "tools" / "mutation_equivalents.txt").read_text())
    assert entries and all("__mutmut_" not in e.function for e in entries)
    assert len({e.key for e in entries}) == len(entries)


@pytest.mark.parametrize(
    ("hits", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Stat. Med. 17:857-872,
        # Table II, method 3 (Wilson score interval without continuity correction), 95 %.
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_the_wilson_interval_matches_newcombes_table(hits: int, n: int, low: float, high: float) -> None:
    got = tool.wilson(hits, n)
    assert got == pytest.approx((low, high), abs=0.00006)


def test_a_sample_is_reproducible_and_a_subset() -> None:
    names = [f"{FUNCTION}__mutmut_{i}" for i in range(1, 201)]
    drawn = tool.sample(names, 30, seed=7)
    assert len(drawn) == len(set(drawn)) == 30 and set(drawn) <= set(names)
    assert tool.sample(list(reversed(names)), 30, seed=7) == drawn
    assert tool.sample(names, 30, seed=8) != drawn
    assert sorted(tool.sample(names, 500, seed=7)) == sorted(names)


def test_every_listed_equivalent_still_names_exactly_one_mutant_of_the_current_code() -> None:
    """Issue 45 item 1: an entry keyed to code that changed (or to a change that now occurs twice) fails here.

    The oracle is mutmut's own generation (tools/mutation.py runs it, no test), not a copy of the keys: of each
    definition whose text changed since tools/mutation_equivalents.lock.json recorded it, generated now; of the
    others, as recorded (the thorough test below generates them all and compares with the lock).
    """
    entries = tool.parse_equivalents((ROOT / "tools" / "mutation_equivalents.txt").read_text())
    matching = tool.unsound_equivalents(entries)
    problems = [f"stale: {e.function} {e.change} ({why})" for e, why in matching.stale] + [
        f"ambiguous: {e.function} {e.change} is {len(names)} mutants" for e, names in matching.ambiguous
    ]
    assert problems == [], "\n".join(
        [*problems, "`python tools/mutation.py MODULE --keys 'FUNCTION*'` prints the current keys"]
    )
    assert len(matching.equivalent) == len(entries)


def test_the_equivalents_lock_records_the_current_definitions() -> None:
    """A definition edited since the lock was written is generated afresh by every check (slow, not wrong);
    the lock must be brought up to date with the change that edits it."""
    entries = tool.parse_equivalents((ROOT / "tools" / "mutation_equivalents.txt").read_text())
    lock = tool.read_lock()
    assert tool.locked_table(entries, lock) == lock, "run `python tools/mutation.py --lock-equivalents`"


@pytest.mark.thorough
def test_the_equivalents_lock_is_what_mutmut_generates_now() -> None:
    """The fast checks above read the lock for every definition whose text it recorded; the oracle here is
    mutmut's generation of every named definition afresh (an empty lock), so a lock edited by hand, or written
    by another mutmut, fails."""
    entries = tool.parse_equivalents((ROOT / "tools" / "mutation_equivalents.txt").read_text())
    assert tool.locked_table(entries, {}) == tool.read_lock()


EDGE_ENTRY_HASH = "0123456789abcdef"


def _lock_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[list[str]]]:
    """A checkout holding two functions with one entry each, and a record of what each check generates: two
    mutants of `f` (the entry's change in the first), one of `g` (the entry's change in none)."""
    (tmp_path / "hubspoke").mkdir()
    (tmp_path / "hubspoke" / "edge.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    entries = [
        tool.Equivalent("hubspoke.edge.x_f", EDGE_ENTRY_HASH, "reviewed"),
        tool.Equivalent("hubspoke.edge.x_g", "fedcba9876543210", "reviewed"),
    ]
    generated: list[list[str]] = []

    def keys(wanted: list[Any], root: Path) -> dict[str, tuple[str, str]]:
        generated.append(sorted(e.function for e in wanted))
        made = {
            "hubspoke.edge.x_f__mutmut_1": ("hubspoke.edge.x_f", EDGE_ENTRY_HASH),
            "hubspoke.edge.x_f__mutmut_2": ("hubspoke.edge.x_f", "1111111111111111"),
            "hubspoke.edge.x_g__mutmut_1": ("hubspoke.edge.x_g", "2222222222222222"),
        }
        return {m: k for m, k in made.items() if any(k[0] == e.function for e in wanted)}

    monkeypatch.setattr(tool, "equivalent_keys", lambda wanted, *, root: keys(wanted, root))
    return entries, generated


def test_only_definitions_whose_text_changed_are_generated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries, generated = _lock_world(tmp_path, monkeypatch)
    lock = tool.locked_table(entries, {}, root=tmp_path)
    assert generated == [["hubspoke.edge.x_f", "hubspoke.edge.x_g"]]
    assert tool.locked_table(entries, lock, root=tmp_path) == lock
    assert generated[1:] == []  # nothing changed: nothing generated
    edge = tmp_path / "hubspoke" / "edge.py"
    edge.write_text(edge.read_text().replace("return 2", "return 3"))
    edited = tool.locked_table(entries, lock, root=tmp_path)
    assert generated[1:] == [["hubspoke.edge.x_g"]]
    assert edited != lock and edited["hubspoke/edge.py::f"] == lock["hubspoke/edge.py::f"]
    lock = edited
    # A new entry in an unchanged definition: its change was never looked for there.
    extra = tool.Equivalent("hubspoke.edge.x_f", "1111111111111111", "reviewed")
    tool.locked_table([*entries, extra], lock, root=tmp_path)
    assert generated[2:] == [["hubspoke.edge.x_f", "hubspoke.edge.x_f"]]


def test_the_judgement_from_a_lock_is_the_judgement_from_a_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`f`'s entry names one mutant (equivalent); `g`'s names none of g's (stale); a function the file lost has
    no mutant (stale) and costs no generation. The same verdicts from a fresh generation and from the lock."""
    entries, generated = _lock_world(tmp_path, monkeypatch)
    gone = tool.Equivalent("hubspoke.edge.x_gone", EDGE_ENTRY_HASH, "reviewed")
    lock = tool.locked_table([*entries, gone], {}, root=tmp_path)
    empty: dict[str, Any] = {}
    for given in (empty, lock):
        matching = tool.unsound_equivalents([*entries, gone], given, tmp_path)
        assert matching.equivalent == {"hubspoke.edge.x_f__mutmut_1": entries[0]}
        assert [(e, why) for e, why in matching.stale] == [
            (entries[1], "matches no mutant (the code it reviewed changed)"),
            (gone, "its function has no mutant (renamed, removed or no longer mutated)"),
        ]
    assert all("hubspoke.edge.x_gone" not in g for g in generated)


@pytest.mark.thorough
def test_the_equivalents_check_keys_every_mutant_as_mutmuts_own_whole_file_generation_does() -> None:
    """The fast check above generates from copies holding only the named definitions and diffs the generated
    functions' text; the oracle here is mutmut's own path (the whole files, mutmut.mutation.diff_apply's
    get_diff_for_mutant), which a mutation run took before those shortcuts. Every mutant of every named function
    must get the same name and key both ways, or the shortcuts would call a sound entry stale (or the reverse).
    """
    entries = tool.parse_equivalents((ROOT / "tools" / "mutation_equivalents.txt").read_text())
    shortcut = tool.equivalent_keys(entries)
    assert len(shortcut) > len(entries)
    assert shortcut == tool.equivalent_keys(entries, reference=True)


def test_an_entry_whose_function_has_no_mutant_is_stale_even_alone_in_its_module() -> None:
    """A renamed or removed function leaves its entries excusing nothing; no other entry names hubspoke/mtu.py, so
    the run has no mutant of that module at all (review of 1ad756d: such an entry once went unjudged)."""
    entry = tool.Equivalent("hubspoke.mtu.x_no_such_function", "0123456789abcdef", "reviewed once")
    matching = tool.unsound_equivalents([entry])
    assert [e for e, _ in matching.stale] == [entry] and matching.ambiguous == []


def test_a_file_with_a_mutmut_pragma_is_not_copied_in_part(tmp_path: Path) -> None:
    """mutmut 3.8's `# pragma: no mutate block` and `start`/`end` reach past their own definition
    (mutmut/mutation/pragma_handling.py), so a copy of only the named definitions could change their mutants."""
    (tmp_path / "hubspoke").mkdir()
    (tmp_path / "hubspoke" / "edge.py").write_text("# pragma: no mutate start\ndef f():\n    return 1\n")
    entry = tool.Equivalent("hubspoke.edge.x_f", "0123456789abcdef", "reviewed once")
    with pytest.raises(ValueError, match=r"hubspoke/edge\.py has a mutmut pragma"):
        tool.equivalent_keys([entry], root=tmp_path)


# Shapes a named function can take that hubspoke may not have today (review of 1ad756d): a module docstring and
# imports above, a comment above a function, a multi-line signature with defaults, a decorated function (which
# mutmut leaves unmutated), async, a nested function, methods of every kind, and a decorated class.
_EDGE_MODULE = '''"""Edge cases for the equivalents check."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

LIMIT = 3


# a comment above a function
def plain(a: int, b: int = 2) -> int:
    return a + b * LIMIT


def multi_line(
    first: str = "x",
    second: int = 1,
) -> str:
    return first * (second + 1)


@functools.cache
def decorated(n: int) -> int:
    return n - 1


async def later(n: int) -> int:
    return n * 2


def outer(n: int) -> bool:
    def inner(m: int) -> int:
        return m + 1

    return inner(n) > 3


class Shape:
    """A class."""

    size = 2

    def area(self, k: int) -> int:
        return self.size * k

    @staticmethod
    def twice(n: int) -> int:
        return n + n

    @classmethod
    def make(cls) -> Shape:
        return cls()

    @property
    def half(self) -> float:
        return self.size / 2


@functools.total_ordering
class Ordered:
    def __lt__(self, other: object) -> bool:
        return id(self) < id(other)


def after_class(x: int) -> bool:
    return x >= 0 and x != 4
'''


@pytest.mark.thorough
def test_the_shortcut_keys_every_shape_of_function_as_mutmuts_own_generation_does(tmp_path: Path) -> None:
    """The comparison above, on a module holding each shape in _EDGE_MODULE; the oracle is again mutmut's own
    whole-file generation and get_diff_for_mutant."""
    (tmp_path / "hubspoke").mkdir()
    (tmp_path / "hubspoke" / "edge.py").write_text(_EDGE_MODULE)
    functions = [
        *(f"x_{f}" for f in ("plain", "multi_line", "decorated", "later", "outer", "after_class")),
        *(f"xǁShapeǁ{m}" for m in ("area", "twice", "make", "half")),
        "xǁOrderedǁ__lt__",
    ]
    entries = [tool.Equivalent(f"hubspoke.edge.{f}", "0123456789abcdef", "a shape") for f in functions]
    shortcut = tool.equivalent_keys(entries, root=tmp_path)
    mutated = {function.rpartition(".")[2] for function, _ in shortcut.values()}
    assert {"x_plain", "x_multi_line", "x_later", "x_outer", "xǁShapeǁarea", "x_after_class"} <= mutated, (
        mutated
    )
    assert shortcut == tool.equivalent_keys(entries, root=tmp_path, reference=True)


def test_a_lock_record_is_not_reused_under_another_mutmut_or_libcst(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both make the mutants and render the lines a change hash is made of (review of the lock)."""
    text = "def f():\n    return 1\n"
    installed = tool._fingerprint(text)
    for package in ("mutmut", "libcst"):
        with monkeypatch.context() as patched:
            real = tool.importlib.metadata.version
            patched.setattr(
                tool.importlib.metadata,
                "version",
                lambda p, real=real, o=package: "0.0.0" if p == o else real(p),
            )
            assert tool._fingerprint(text) != installed, package
    assert tool._fingerprint(text.replace("1", "2")) != installed
