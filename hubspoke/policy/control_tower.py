"""Control Tower's proactive controls inside synth: the cfn-guard rules its hooks run, from cdklabs' plugin.

The plugin (cdklabs-cdk-validator-cfnguard, which bundles the rules and the cfn-guard binary) reports its
violations without a severity. aws-cdk-lib 2.275 recomputes a report's success after acknowledgments from the
severities alone (core/lib/private/synthesis-validation.js, collectSuppressions), so once one Control Tower
finding is acknowledged, every other one would only be printed and synth would pass. This wrapper marks each
violation an error, so an unacknowledged one always stops synth (tests/policy/test_acks.py).
"""

from __future__ import annotations

import jsii
from aws_cdk import (
    IPolicyValidationContext,
    IPolicyValidationPlugin,
    PolicyValidationPluginReport,
    PolicyViolatingResource,
    PolicyViolation,
)
from cdklabs.cdk_validator_cfnguard import CfnGuardValidator


@jsii.implements(IPolicyValidationPlugin)
class ControlTowerControls:
    """The Control Tower rule set as a policy-validation plugin whose every finding is an error.

    Example::

        Validations.of(stage).add_plugins(ControlTowerControls())
    """

    def __init__(self) -> None:
        self._guard = CfnGuardValidator()

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

    def validate(self, context: IPolicyValidationContext) -> PolicyValidationPluginReport:
        report = self._guard.validate(context)
        return PolicyValidationPluginReport(
            success=report.success,
            violations=[
                PolicyViolation(
                    rule_name=v.rule_name,
                    description=v.description,
                    fix=v.fix,
                    rule_metadata=v.rule_metadata,
                    severity="error",
                    violating_resources=[
                        PolicyViolatingResource(
                            resource_logical_id=r.resource_logical_id,
                            template_path=r.template_path,
                            locations=list(r.locations),
                        )
                        for r in v.violating_resources
                    ],
                )
                for v in report.violations
            ],
        )
