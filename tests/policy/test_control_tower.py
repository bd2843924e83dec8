"""The Control Tower plugin's verdicts, filtered by resource type and cached by content, are the plugin's own.

Oracles: the plugin's unfiltered run (CfnGuardValidator with its default rule set, one cfn-guard process over
every rule file), and the rule files it ships (ct-s3-pr-11.guard: CT.S3.PR.11 fails a bucket without
`VersioningConfiguration.Status: Enabled`, its "Scenarios" 2 and 4).
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aws_cdk import App, Stack, Stage, Validations
from aws_cdk import aws_lambda as lambda_
from cdklabs.cdk_validator_cfnguard import CfnGuardValidator

from hubspoke.config import HubSpokeConfig, load
from hubspoke.policy import control_tower
from hubspoke.policy.control_tower import ControlTowerControls, RuleSet, _Templates
from tests import conftest
from tests.cli.verify_fixtures import SPOKE_ACCOUNT, TWO_SPOKES, two_spokes_across_accounts
from tests.conftest import ROOT, load_shape, minimal, options, shape_names, varied, write_config

VERSIONING_RULE = "s3_bucket_versioning_enabled_check"  # ct-s3-pr-11.guard's rule name


def _bucket(versioned: bool) -> dict[str, Any]:
    props: dict[str, Any] = {"VersioningConfiguration": {"Status": "Enabled"}} if versioned else {}
    return {"Resources": {"Data": {"Type": "AWS::S3::Bucket", "Properties": props}}}


def _write(path: Path, template: dict[str, Any]) -> str:
    path.write_text(json.dumps(template))
    return str(path)


def _rules_hit(report: Any) -> set[tuple[str, str]]:
    return {(v.rule_name, r.resource_logical_id) for v in report.violations for r in v.violating_resources}


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every template cfn-guard really judges (a cache hit judges none)."""
    calls: list[str] = []
    real = control_tower.judge

    def spy(rules: Any, template_path: str) -> list[dict[str, Any]]:
        calls.append(Path(template_path).name)
        return real(rules, template_path)

    monkeypatch.setattr(control_tower, "judge", spy)
    return calls


def test_a_cached_verdict_is_never_reused_for_a_changed_template(tmp_path: Path, judged: list[str]) -> None:
    plugin = ControlTowerControls(rule_set=RuleSet.load(root=tmp_path / "cache"))
    bare = _write(tmp_path / "bare.template.json", _bucket(versioned=False))
    assert (VERSIONING_RULE, "Data") in _rules_hit(plugin.validate(_Templates([bare])))
    # Same name, one property changed: judged again, and the finding is gone.
    _write(tmp_path / "bare.template.json", _bucket(versioned=True))
    assert (VERSIONING_RULE, "Data") not in _rules_hit(plugin.validate(_Templates([bare])))
    # The first bytes again, from another path: the cached finding, reported against the new path.
    again = _write(tmp_path / "again.template.json", _bucket(versioned=False))
    report = plugin.validate(_Templates([again]))
    assert (VERSIONING_RULE, "Data") in _rules_hit(report)
    assert {r.template_path for v in report.violations for r in v.violating_resources} == {again}
    assert not report.success
    assert judged == ["bare.template.json", "bare.template.json"]


def test_a_cached_verdict_is_never_reused_under_a_changed_rule_set(tmp_path: Path, judged: list[str]) -> None:
    """A rule set whose CT.S3.PR.11 file is gone is another rule set: the bucket is judged again, and passes."""
    shipped = control_tower.plugin_tarball()
    edited = tmp_path / "edited.tgz"
    with tarfile.open(shipped) as source, tarfile.open(edited, "w:gz") as target:
        for member in source.getmembers():
            if member.name.startswith("package/rules/") and not member.name.endswith("ct-s3-pr-11.guard"):
                target.addfile(member, source.extractfile(member) if member.isfile() else None)
    cache = tmp_path / "cache"
    template = _write(tmp_path / "bare.template.json", _bucket(versioned=False))
    original = ControlTowerControls(rule_set=RuleSet.load(root=cache)).validate(_Templates([template]))
    changed = ControlTowerControls(rule_set=RuleSet.load(edited, root=cache)).validate(_Templates([template]))
    assert (VERSIONING_RULE, "Data") in _rules_hit(original)
    assert (VERSIONING_RULE, "Data") not in _rules_hit(changed)
    assert judged == ["bare.template.json", "bare.template.json"]


# Thorough only (the plugin's full run is seconds of cfn-guard): the fast tier keeps the selection rule
# (test_only_rules_naming_a_present_type_are_run) and every synth's judgement with the filtered rules.
@pytest.mark.thorough
def test_filtered_rules_find_what_the_full_rule_set_finds(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The plugin's own run over all 237 files and ours over the files naming a template's types agree, finding
    for finding, on every template of every shape."""
    paths = []
    for name in shape_names():
        templates = load_shape(name, tmp_path_factory).templates
        paths += [
            _write(tmp_path / f"{name}-{sid}.template.json", templates[sid]) for sid in sorted(templates)
        ]
    assert len(paths) >= 3, paths
    ours = ControlTowerControls(rule_set=RuleSet.load(root=tmp_path / "cache")).validate(_Templates(paths))
    full = CfnGuardValidator().validate(_Templates(paths))
    assert _findings(ours) == _findings(full)
    # These templates carry acknowledged findings: none at all would mean that neither run judged anything.
    assert _findings(full)


def _findings(report: Any) -> list[tuple[str, str, str, tuple[str, ...], str]]:
    return sorted(
        (v.rule_name, Path(r.template_path).name, r.resource_logical_id, tuple(r.locations), v.fix)
        for v in report.violations
        for r in v.violating_resources
    )


def test_only_rules_naming_a_present_type_are_run(tmp_path: Path) -> None:
    rule_set = RuleSet.load(root=tmp_path / "cache")
    chosen = {rule.path.name for rule in rule_set.for_template(_bucket(versioned=True))}
    assert "ct-s3-pr-11.guard" in chosen
    assert "ct-lambda-pr-3.guard" not in chosen
    assert rule_set.for_template({"Resources": {}}) == [r for r in rule_set.rules if not r.types]


# cfn-guard selects resources with a filter on Type (`Resources.*[ Type == ... ]`) whose value is a string, a list
# of strings, a regex (`Type == /IAM/`) or a `%variable` bound by `let` (AWS CloudFormation Guard User Guide,
# "Defining Guard queries and filtering" and "Assigning and referencing variables in Guard rules").
_TYPE_FILTER = re.compile(
    r"Resources\.\*\s*\[\s*Type\s*(?:==|!=|\bin\b|\bIN\b)\s*(\[[^\]]*\]|%\w+|'[^']*'|\"[^\"]*\"|/[^/]*/)"
)
_LET = re.compile(r"\blet\s+(\w+)\s*=\s*(\[[^\]]*\]|'[^']*'|\"[^\"]*\"|/[^/]*/)")


def test_every_type_a_rule_filters_on_is_a_type_it_is_selected_by(tmp_path: Path) -> None:
    """A rule file is run on a template only if the template holds a type the index found in the file
    (hubspoke/policy/control_tower.py); read here from the rule's own Type filters instead: each names whole
    types the index holds, or (a regex, a value built at run time) the rule must run on every template."""
    filters = 0
    for rule in RuleSet.load(root=tmp_path / "cache").rules:
        text = rule.path.read_text()
        bound = dict(_LET.findall(text))
        for value in _TYPE_FILTER.findall(text):
            if value.startswith("%") and value[1:] not in bound:
                continue  # a rule's parameter: its value is a literal at the call, which the index reads too
            value = bound.get(value[1:], value)
            named = re.findall(r"['\"]([^'\"]*)['\"]", value)
            filters += 1
            if named and not value.startswith("/") and all(re.fullmatch(r"AWS::\w+::\w+", n) for n in named):
                assert set(named) <= rule.types, (rule.path.name, value)
            else:
                assert not rule.types, (rule.path.name, value)
    assert filters > 200  # the rules were read (237 files, most with one Type filter or more)


def _app_with_a_finding() -> App:
    app = App()
    stage = Stage(app, "Env")
    lambda_.Function(
        Stack(stage, "S"),
        "Outside",
        runtime=lambda_.Runtime.PYTHON_3_12,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context): pass"),
    )
    Validations.of(stage).add_plugins(ControlTowerControls())
    return app


def test_a_cached_finding_stops_synth_as_a_fresh_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judged: list[str]
) -> None:
    monkeypatch.setenv("HUBSPOKE_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2):
        with pytest.raises(Exception, match="ValidationFailed") as caught:
            _app_with_a_finding().synth()
        assert "CT.LAMBDA.PR.3" in str(caught.value)
    assert len(judged) == 1, judged


def test_an_unwritable_cache_still_finds_and_writes_nothing_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judged: list[str]
) -> None:
    """A read-only home (as in a locked-down CI runner): the same verdicts, kept only in a temporary directory
    for the life of the process."""
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("HUBSPOKE_CACHE_DIR", str(blocked / "cache"))
    template = _write(tmp_path / "bare.template.json", _bucket(versioned=False))
    for _ in range(2):
        assert (VERSIONING_RULE, "Data") in _rules_hit(
            ControlTowerControls().validate(_Templates([template]))
        )
    assert len(judged) == 1
    assert not (blocked / "cache").exists()


def _a_topology_of_its_own(tmp_path: Path, **second: str) -> HubSpokeConfig:
    """A config only a test makes, for its topology: the smallest one with a second spoke that only peers
    (with `second`'s keys, such as another account)."""
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16", "storage": {"enabled": False},
         "compute": {"enabled": False}, **second},
    ]  # fmt: skip
    return load(write_config(tmp_path, minimal(spokes=spokes), f"topology-{len(second)}.yaml")).config


def test_the_fast_tier_judges_shipped_configs_in_full_exercised_ones_where_their_acks_land(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/development.md, "Tests": `make test-fast` (`-m "not thorough"`) runs Control Tower over every template
    of config/*.yaml, over a spoke in another account's Network, PeerAccess and Link stacks and the hub's Network
    stack (its reader role for that account), over the spoke's
    Compute stack of options() (its public endpoint, CT.EKS.PR.1) and the hub's Storage stack of varied() (its
    i7i nodes, CT.EC2.PR.16 and 19), and over nothing of a config a test makes for a topology; any other selection
    (`make test-thorough`, a file run on its own) judges every template the tests make. A synth judged in part
    is cached under its own key, never passed off as a judged one."""
    monkeypatch.setattr(conftest, "_FAST_TIER", conftest._FAST_TIER)  # put back after the test
    in_full = [load(path).config for path in sorted((ROOT / "config").glob("*.yaml"))]
    assert {c.environment for c in in_full} >= {"dev"} and len(in_full) >= 2
    exercised = {
        frozenset({"compute-us-west-2"}): load(write_config(tmp_path, options(), "options.yaml")).config,
        frozenset({"storage-us-east-2"}): load(write_config(tmp_path, varied(), "varied.yaml")).config,
        # A spoke in another account: where its account lands, and the hub's Network stack, which carries CDK's
        # reader role for that account (weak references).
        frozenset(
            {"network-eu-west-1", "peer-access-eu-west-1", "link-eu-west-1", "network-us-east-2"}
        ): _a_topology_of_its_own(tmp_path, account=SPOKE_ACCOUNT),
    }
    topology = _a_topology_of_its_own(tmp_path)
    keys = {}
    for markexpr, fast in (("not thorough", True), ("", False), ("thorough", False)):
        asked = SimpleNamespace(
            getoption=lambda name, default=None, m=markexpr: m if name == "markexpr" else default
        )
        conftest.pytest_configure(asked)  # type: ignore[arg-type]
        assert all(conftest.judged_stacks(config) is None for config in in_full), markexpr
        for stacks, config in exercised.items():
            assert conftest.judged_stacks(config) == (stacks if fast else None), markexpr
        assert conftest.judged_stacks(topology) == (frozenset() if fast else None), markexpr
        keys[fast] = [conftest._cache_key(config) for config in (*in_full, *exercised.values(), topology)]
    same = len(in_full)
    assert keys[True][:same] == keys[False][:same]
    assert all(fast != full for fast, full in zip(keys[True][same:], keys[False][same:], strict=True))


def test_a_spoke_in_another_account_changes_only_the_stacks_the_fast_tier_judges_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fast tier judges of a config with a spoke in another account only the stacks where that account lands:
    every other template of it is the same config's in one account, whose options the other judged configs hold
    (the verify tests' two-spoke world, and that world with its second spoke in another account, as
    tests/cli/test_verify_accounts.py synthesizes them)."""
    other = two_spokes_across_accounts()
    one, two = (conftest.synth(HubSpokeConfig.model_validate(data)) for data in (TWO_SPOKES, other))
    changed = {sid for sid in two if one.get(sid) != two[sid]}
    region = other["spokes"][1]["region"]
    # ...and the hub network the spoke reads, which gains CDK's reader role for the spoke's account (this spoke
    # has no CNQ, so it reads no hub storage).
    assert not HubSpokeConfig.model_validate(other).spokes[1].storage.enabled
    hub_network = f"network-{other['hub']['region']}"
    assert changed == {f"network-{region}", f"peer-access-{region}", f"link-{region}", hub_network}, sorted(
        changed
    )
    monkeypatch.setattr(conftest, "_FAST_TIER", True)
    assert conftest.judged_stacks(HubSpokeConfig.model_validate(other)) == changed


def test_what_the_fast_tier_leaves_unjudged_of_options_and_varied_is_of_kinds_it_judges(
    dev_templates: conftest.Templates,
) -> None:
    """The fast tier's claim for the templates of options() and varied() it does not judge: each resource type
    in them that a Control Tower rule file names is held by a template of config/dev.yaml it judges too, so each
    rule that could report on them (a rule selects resources by type: hubspoke/policy/control_tower.py) runs in
    the fast tier on dev's resources of that type. A type no rule file names (a VPC's secondary CIDR block) can
    only be skipped; a rule file that names none runs on every template, dev's included. The stacks it judges
    must exist, or it would judge nothing of that config."""
    named = set().union(*(rule.types for rule in RuleSet.load().rules))
    assert "AWS::EKS::Cluster" in named and "AWS::EC2::Instance" in named  # CT.EKS.PR.1's, CT.EC2.PR.16's
    judged_types = {r["Type"] for t in dev_templates.values() for r in t.get("Resources", {}).values()}
    for name, data in (("options", options()), ("varied", varied())):
        templates = conftest.synth(HubSpokeConfig.model_validate(data))
        stacks = conftest._JUDGED_STACKS_OF_EXERCISED[name]
        assert stacks and stacks < set(templates), (name, sorted(stacks), sorted(templates))
        for sid in set(templates) - stacks:
            types = {r["Type"] for r in templates[sid].get("Resources", {}).values()} & named
            assert types <= judged_types, (name, sid, sorted(types - judged_types))


@pytest.mark.thorough
def test_a_synth_judged_in_part_is_the_judged_synth_with_only_those_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judged: list[str]
) -> None:
    """What the fast tier gives up on a test-only config, or on the stacks of options() and varied() it leaves,
    is cfn-guard's verdicts on those templates, nothing else: the same templates and the same warnings, and only
    the named stacks' templates judged. The runs go from none judged to all, with an empty verdict cache, so a
    verdict an earlier run took would be judged (and counted) there, not read from a later one."""
    monkeypatch.setenv("HUBSPOKE_CACHE_DIR", str(tmp_path / "cache"))
    config = _a_topology_of_its_own(tmp_path)
    runs = {}
    for stacks in (frozenset(), frozenset({"network-eu-west-1"}), None):
        monkeypatch.setattr(conftest, "judged_stacks", lambda c, s=stacks: s)
        key = f"{__name__}|stacks={stacks}"
        before = len(judged)
        templates = conftest._synth_now(config, key)
        runs[stacks] = (templates, conftest._WARNINGS[key], judged[before:])
        for cache in (conftest._SYNTH_CACHE, conftest._WARNINGS, conftest._DEPENDENCIES, conftest._REGIONS):
            cache.pop(key, None)
    templates, warnings, every = runs[None]
    network = [name for name in every if "networkeuwest1" in name.lower()]
    assert runs[frozenset()][2] == [] and network == [], (runs[frozenset()][2], every)
    [judged_alone] = runs[frozenset({"network-eu-west-1"})][2]
    assert "networkeuwest1" in judged_alone.lower(), judged_alone
    assert len(every) == len(templates) - 1 > 0, (every, sorted(templates))
    for stacks, (made, made_warnings, _) in runs.items():
        assert made == templates and made_warnings == warnings, stacks
