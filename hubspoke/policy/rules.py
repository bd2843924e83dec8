"""Our rule pack over synthesized templates: one rule, one small function, one fix a user can act on.

Rules take every template of one environment at once (the peering rule needs both sides) and the
config that produced them. No CDK import: tests run the same rules as invariants over cdk.out. Each topic
lives in its own module: network, cnq, hyperpod, waiters (custom-resource waits), deploy_facts (what a
first deploy into an account depends on) and retry (what the deploy after a failed or deleted one depends on).
"""

from __future__ import annotations

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.policy.access import ACCESS_RULES
from hubspoke.policy.cnq import CNQ_RULES
from hubspoke.policy.deploy_facts import DEPLOY_FACT_RULES
from hubspoke.policy.hyperpod import HYPERPOD_RULES
from hubspoke.policy.model import METADATA_KEY, PolicyRule, Template, Violation
from hubspoke.policy.network import NETWORK_RULES
from hubspoke.policy.retry import RETRY_RULES
from hubspoke.policy.waiters import custom_resource_waits_within_service_timeout

__all__ = ["METADATA_KEY", "RULES", "PolicyRule", "Template", "Violation", "check"]

RULES: tuple[PolicyRule, ...] = (
    *NETWORK_RULES,
    *CNQ_RULES,
    *HYPERPOD_RULES,
    *ACCESS_RULES,
    custom_resource_waits_within_service_timeout,
    *DEPLOY_FACT_RULES,
    *RETRY_RULES,
)


def check(templates: list[Template], config: HubSpokeConfig) -> list[Violation]:
    return [v for rule in RULES for v in rule(templates, config)]
