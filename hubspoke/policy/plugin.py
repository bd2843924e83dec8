"""Runs hubspoke.policy.rules inside `cdk synth` as a CDK policy-validation plugin; a violation stops synth."""

from __future__ import annotations

import json
from pathlib import Path

import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
)

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.rules import RULES, Template, check


@jsii.implements(IPolicyValidationPlugin)
class HubSpokePolicy:
    """Our rule pack, registered on each environment's Stage beside cdk-nag's AwsSolutions pack."""

    def __init__(self, config: HubSpokeConfig) -> None:
        self._config = config

    @property
    def name(self) -> str:
        return "hubspoke-policy"

    @property
    def rule_ids(self) -> list[str]:
        return [rule.__doc__.split(":")[0] for rule in RULES if rule.__doc__]

    @property
    def version(self) -> str:
        return "1.0.0"

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        templates = [Template(p, json.loads(Path(p).read_text())) for p in context.template_paths]
        violations = check(templates, self._config)
        return PolicyValidationPluginReport(
            success=not violations,
            violations=[
                PolicyViolation(
                    # Explicit: after any acknowledgment CDK counts only severity "error" as failing.
                    severity="error",
                    rule_name=v.rule,
                    description=v.message,
                    fix=v.fix,
                    violating_resources=[
                        PolicyViolatingResource(
                            resource_logical_id=v.logical_id,
                            template_path=v.template,
                            locations=["Properties"],
                        )
                    ],
                )
                for v in violations
            ],
        )
