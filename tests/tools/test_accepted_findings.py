"""docs/policy.md's accepted-findings table is what the acknowledgments make (tools/accepted_findings.py).

The full check builds dev and its variants (about 30 s: thorough tier). The fast tier checks the table against
the source instead: every rule an `acknowledge(...)` call names in a file is listed with that file, and nothing
else is, so a new or moved acknowledgment fails here before the thorough tier runs.
"""

from __future__ import annotations

import ast
import importlib.util
import re

import pytest

from hubspoke.policy.acks import Accepted
from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location(
    "hubspoke_accepted_findings", ROOT / "tools" / "accepted_findings.py"
)
assert _spec and _spec.loader
accepted_findings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(accepted_findings)
BEGIN, END, render, rows, splice = (
    accepted_findings.BEGIN, accepted_findings.END, accepted_findings.render, accepted_findings.rows, accepted_findings.splice
)  # fmt: skip

POLICY = ROOT / "docs" / "policy.md"
ROW = re.compile(r"^\| `([^`]+)` \| (.*) \| (.*) \|$", flags=re.M)


def _committed() -> dict[str, tuple[str, set[str]]]:
    """rule -> (where, files under hubspoke/) of the committed table."""
    text = POLICY.read_text()
    table = text[text.index(BEGIN) : text.index(END)]
    return {rule: (where, set(re.findall(r"`([^`]+)`", files))) for rule, where, files in ROW.findall(table)}


def _loop_values(function: ast.AST, name: str) -> list[str]:
    """The string constants a `for name in (...)` loop of `function` gives `name`."""
    values: list[str] = []
    for node in ast.walk(function):
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
            and isinstance(node.iter, (ast.Tuple, ast.List))
        ):
            values += [
                e.value for e in node.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return values


def _acknowledged_in_source() -> dict[str, set[str]]:
    """File (relative to hubspoke/) -> the rules its `acknowledge(scope, RULE, ...)` calls name."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "hubspoke").rglob("*.py")):
        relative = str(path.relative_to(ROOT / "hubspoke"))
        if relative == "policy/acks.py":
            continue
        tree = ast.parse(path.read_text())
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name == "acknowledge_lambdas_in_vpc":
                found.setdefault(relative, set()).add("CT.LAMBDA.PR.3")
            if name != "acknowledge" or len(node.args) < 2 or isinstance(node.func, ast.Attribute):
                continue
            rule = node.args[1]
            if isinstance(rule, ast.Constant):
                found.setdefault(relative, set()).add(str(rule.value))
            elif isinstance(rule, ast.Name):
                enclosing = [f for f in functions if f.lineno <= node.lineno <= (f.end_lineno or 0)][-1]
                values = _loop_values(enclosing, rule.id)
                assert values, f"{relative}:{node.lineno}: cannot tell which rule {rule.id} is"
                found.setdefault(relative, set()).update(values)
    return found


def test_every_acknowledging_file_is_listed_with_the_rules_it_acknowledges() -> None:
    listed: dict[str, set[str]] = {}
    for rule, (_where, files) in _committed().items():
        for file in files:
            listed.setdefault(file, set()).add(rule)
    assert listed == _acknowledged_in_source(), (
        "docs/policy.md's accepted findings are out of date: run `make docs`"
    )


def test_a_place_names_the_stack_kind_and_the_construct_without_region_number_or_hash() -> None:
    made = [
        Accepted("CT.S3.PR.6", "r" * 40, "hubspoke-dev/storage-us-east-2/Cnq/PersistentStorage12", "hubspoke/a.py"),
        Accepted("CT.S3.PR.6", "r" * 40, "hubspoke-dev/storage-us-west-2/Cnq/PersistentStorage3", "hubspoke/a.py"),
        Accepted("AwsSolutions-L1", "r" * 40, "hubspoke-dev/compute-eu-west-1/Custom::CDKBucketDeployment8693BB64968944B69AAFB0CC9EB8756Cc8", "hubspoke/b.py"),
        Accepted("CKV_AWS_116", "r" * 40, "hubspoke-dev", "hubspoke/stage.py"),
    ]  # fmt: skip
    # Control Tower, then cdk-nag, then checkov; the Regions' two buckets are one place.
    assert rows({"": made}) == [
        ("`CT.S3.PR.6`", "storage: Cnq/PersistentStorage*", "`a.py`"),
        ("`AwsSolutions-L1`", "compute: Custom::CDKBucketDeployment", "`b.py`"),
        ("`CKV_AWS_116`", "every stack", "`stage.py`"),
    ]


def test_a_place_only_an_option_makes_says_so() -> None:
    base = Accepted("CT.EC2.PR.19", "r" * 40, "hubspoke-dev/compute-us-east-2/Access/Host", "hubspoke/x.py")
    extra = Accepted("CT.EC2.PR.19", "r" * 40, "hubspoke-dev/storage-us-east-2/Cnq", "hubspoke/y.py")
    [(_rule, where, files)] = rows({"": [base], "`option`": [base, extra]})
    assert where == "compute: Access/Host, storage: Cnq (only with `option`)"
    assert files == "`x.py`, `y.py`"


def test_splice_refuses_a_document_without_the_markers() -> None:
    with pytest.raises(ValueError, match="markers"):
        splice("no table here", render({"": []}))


@pytest.mark.thorough
def test_the_committed_table_is_what_the_acknowledgments_render() -> None:
    current = POLICY.read_text()
    assert current == splice(current, render(accepted_findings.acknowledgments())), (
        "docs/policy.md is out of date with the acknowledgments: run `make docs` and commit it"
    )


def test_make_docs_runs_the_tool() -> None:
    assert "tools/accepted_findings.py" in (ROOT / "Makefile").read_text()
