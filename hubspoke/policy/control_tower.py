"""Control Tower's proactive controls inside synth: the cfn-guard rules its hooks run, from cdklabs' plugin.

Each violation is marked an error: the plugin (cdklabs-cdk-validator-cfnguard) gives none a severity, and
aws-cdk-lib 2.275 recomputes success from severities after acknowledgments (synthesis-validation.js,
collectSuppressions), so one acknowledgment would let every other finding pass (tests/policy/test_acks.py).
Two speed-ups judge nothing differently (the plugin's 237 rule files were about 80 % of a synth): a template
meets only the rule files naming one of its resource types, since every rule selects by `Type` first (each
file's "Reports on" header; tests/policy/test_control_tower.py compares with the plugin's full run); and
verdicts, findings included, are cached on disk keyed by the template's bytes, the plugin's jsii tarball
sha-256 and this module's source, since cfn-guard judges each `--data` file alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cdklabs.cdk_validator_cfnguard as cfnguard_package
import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
)
from cdklabs.cdk_validator_cfnguard import CfnGuardValidator
from constructs import IConstruct

from hubspoke.cache import cache_dir, writable

# This module's source is part of every key: a change to how rules are indexed, selected or verdicts stored
# makes a new rule index and new verdicts, never a reuse of old ones.
_SELECTION = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
# Where the plugin keeps the Control Tower rules inside its package (CfnGuardValidator's defaultRulesPath).
_RULES_IN_PACKAGE = "package/rules/control-tower/cfn-guard/"
_RESOURCE_TYPE = re.compile(r"AWS::[A-Za-z0-9]+::[A-Za-z0-9]+")


def plugin_tarball() -> Path:
    """The plugin's jsii tarball: its rules, its cfn-guard binary and its code, as the jsii runtime loads them."""
    [tgz] = (Path(cfnguard_package.__file__).parent / "_jsii").glob("*.jsii.tgz")
    return tgz


@dataclass(frozen=True)
class GuardRule:
    """One Control Tower rule file and the resource types it names (header and body)."""

    path: Path
    types: frozenset[str]

    def applies_to(self, resource_types: set[str]) -> bool:
        # A file that names no type at all is run on every template: nothing says what it could skip.
        return not self.types or bool(self.types & resource_types)


@dataclass(frozen=True)
class RuleSet:
    """The plugin's Control Tower rule files, extracted once per plugin build into `directory`."""

    fingerprint: str
    directory: Path
    rules: tuple[GuardRule, ...]

    @classmethod
    def load(cls, tarball: Path | None = None, *, root: Path | None = None) -> RuleSet:
        """The rule set of `tarball` (the installed plugin's by default), extracted under `root` if not yet."""
        tarball = tarball or plugin_tarball()
        fingerprint = hashlib.sha256(tarball.read_bytes() + _SELECTION.encode()).hexdigest()
        directory = writable(root or cache_dir()) / "cfn-guard" / fingerprint[:32]
        index = directory / "index.json"
        if not index.exists():
            _extract_rules(tarball, directory)
        types = json.loads(index.read_text())
        rules = tuple(
            GuardRule(directory / "rules" / rel, frozenset(names)) for rel, names in sorted(types.items())
        )
        return cls(fingerprint, directory, rules)

    def for_template(self, template: dict[str, Any]) -> list[GuardRule]:
        """The rule files that can report on `template`: those naming one of its resource types."""
        resources = template.get("Resources") or {}
        present = {r.get("Type") for r in resources.values() if isinstance(r, dict)}
        return [rule for rule in self.rules if rule.applies_to({t for t in present if isinstance(t, str)})]

    def verdict_path(self, template_bytes: bytes) -> Path:
        key = hashlib.sha256(f"{self.fingerprint}\0".encode() + template_bytes)
        return self.directory / "verdicts" / f"{key.hexdigest()}.json"


def _extract_rules(tarball: Path, directory: Path) -> None:
    """Unpack the Control Tower rule files and index their resource types; atomic, so workers may race."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=directory.parent))
    try:
        types: dict[str, list[str]] = {}
        with tarfile.open(tarball) as archive:
            for member in archive.getmembers():
                if not (member.isfile() and member.name.startswith(_RULES_IN_PACKAGE)):
                    continue
                rel = member.name[len(_RULES_IN_PACKAGE) :]
                data = archive.extractfile(member).read()  # type: ignore[union-attr]
                target = staging / "rules" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                if rel.endswith(".guard"):
                    types[rel] = sorted(set(_RESOURCE_TYPE.findall(data.decode())))
        if not types:
            raise RuntimeError(f"{tarball} holds no Control Tower rules under {_RULES_IN_PACKAGE}")
        (staging / "verdicts").mkdir()
        (staging / "index.json").write_text(json.dumps(types, indent=0, sort_keys=True))
        try:
            staging.rename(directory)
        except OSError:
            if not (directory / "index.json").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@jsii.implements(IPolicyValidationContext)
class _Templates:
    """A validation context holding the templates one cfn-guard run judges."""

    def __init__(self, paths: Sequence[str], app: IConstruct | None = None) -> None:
        self._paths, self._app = list(paths), app

    @property
    def app_construct(self) -> IConstruct:
        # The plugin reads template paths only (lib/plugin.js, validate); this is here for the interface.
        if self._app is None:
            raise AttributeError("this validation context judges template files, not an app")
        return self._app

    @property
    def template_paths(self) -> list[str]:
        return self._paths


def judge(rules: Iterable[GuardRule], template_path: str) -> dict[str, Any]:
    """cfn-guard's verdict on one template under `rules`, through the plugin (its binary, its result parsing):
    the plugin's own success flag (it can fail a template without naming a violation) and its findings."""
    selected = [str(rule.path) for rule in rules]
    if not selected:
        return {"success": True, "violations": []}
    report = CfnGuardValidator(control_tower_rules_enabled=False, rules=selected).validate(
        _Templates([template_path])
    )
    violations = [
        {
            "rule_name": v.rule_name,
            "description": v.description,
            "fix": v.fix,
            "rule_metadata": dict(v.rule_metadata or {}),
            "resources": [
                {"logical_id": r.resource_logical_id, "locations": list(r.locations)}
                for r in v.violating_resources
            ],
        }
        for v in report.violations
    ]
    return {"success": bool(report.success), "violations": violations}


@jsii.implements(IPolicyValidationPlugin)
class ControlTowerControls:
    """The Control Tower rule set as a policy-validation plugin whose every finding is an error.

    Example::

        Validations.of(stage).add_plugins(ControlTowerControls())
    """

    def __init__(self, *, rule_set: RuleSet | None = None) -> None:
        self._guard = CfnGuardValidator()
        self._rule_set = rule_set

    @property
    def name(self) -> str:
        # The plugin's own name: acknowledgments are namespaced by it (hubspoke.policy.acks).
        return str(self._guard.name)

    @property
    def rule_ids(self) -> list[str]:
        return list(self._guard.rule_ids or [])

    @property
    def version(self) -> str:
        return str(self._guard.version)

    def verdict(self, template_path: str) -> dict[str, Any]:
        """The verdict on one template: read from the cache when its bytes were judged under this rule set."""
        rule_set = self._rule_set = self._rule_set or RuleSet.load()
        data = Path(template_path).read_bytes()
        cached = rule_set.verdict_path(data)
        if cached.exists():
            stored: dict[str, Any] = json.loads(cached.read_text())
            return stored
        verdict = judge(rule_set.for_template(json.loads(data)), template_path)
        partial = None
        try:
            with tempfile.NamedTemporaryFile("w", dir=cached.parent, delete=False, suffix=".tmp") as out:
                partial = out.name
                json.dump(verdict, out)
            os.chmod(partial, 0o644)  # a cache shared by several users stays readable by each
            os.replace(partial, cached)
        except OSError:
            # A cache that cannot be written only costs the next synth this judgment again.
            if partial:
                Path(partial).unlink(missing_ok=True)
        return verdict

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        verdicts = {path: self.verdict(path) for path in context.template_paths}
        violations = [
            PolicyViolation(
                rule_name=v["rule_name"],
                description=v["description"],
                fix=v["fix"],
                rule_metadata=v["rule_metadata"] or None,
                severity="error",
                violating_resources=[
                    PolicyViolatingResource(
                        resource_logical_id=r["logical_id"], template_path=path, locations=r["locations"]
                    )
                    for r in v["resources"]
                ],
            )
            for path, verdict in verdicts.items()
            for v in verdict["violations"]
        ]
        success = all(v["success"] for v in verdicts.values()) and not violations
        return PolicyValidationPluginReport(success=success, violations=violations)
