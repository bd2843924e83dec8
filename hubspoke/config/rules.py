"""Rules that span Regions or sections (overlaps, duplicates, Region facts, quotas), run on a valid config.

Each topic has its module (network_rules, storage_rules, compute_rules, quotas, traffic_rules, ops_rules,
dataset_rules); this is the list they run in, in the order their messages are printed. A field's own checks sit
beside it in schema.py.
"""

from __future__ import annotations

from hubspoke.config.compute_rules import compute_only_where_hyperpod_runs
from hubspoke.config.dataset_rules import loads_run_on_hub_compute
from hubspoke.config.network_rules import (
    az_ids_belong_to_region,
    one_spoke_per_region,
    secondary_cidrs_associable,
    vpc_cidrs_are_private,
    vpc_cidrs_do_not_overlap,
)
from hubspoke.config.ops_rules import alarms_reach_somebody
from hubspoke.config.quotas import (
    peer_path_rules_within_quota,
    peering_quota,
    routes_within_quota,
    vpc_cidr_blocks_within_quota,
)
from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem, Rule
from hubspoke.config.storage_rules import (
    ami_pinned_in_one_region,
    buckets_follow_qumulos_rule,
    cnq_instance_family,
    portal_stays_in_one_account,
    qumulo_core_is_one_release,
    regions_are_deployable,
    spoke_storage_needs_hub_storage,
    xlarge_is_for_development,
)
from hubspoke.config.traffic_rules import flow_log_filters_fit, hub_and_spokes_do_not_share_a_24

__all__ = ["RULES", "Problem", "Rule", "check"]

RULES: tuple[Rule, ...] = (
    vpc_cidrs_do_not_overlap,
    vpc_cidrs_are_private,
    secondary_cidrs_associable,
    one_spoke_per_region,
    az_ids_belong_to_region,
    regions_are_deployable,
    cnq_instance_family,
    compute_only_where_hyperpod_runs,
    portal_stays_in_one_account,
    peering_quota,
    vpc_cidr_blocks_within_quota,
    spoke_storage_needs_hub_storage,
    ami_pinned_in_one_region,
    qumulo_core_is_one_release,
    buckets_follow_qumulos_rule,
    xlarge_is_for_development,
    hub_and_spokes_do_not_share_a_24,
    flow_log_filters_fit,
    peer_path_rules_within_quota,
    routes_within_quota,
    alarms_reach_somebody,
    loads_run_on_hub_compute,
)


def check(config: HubSpokeConfig) -> list[Problem]:
    return [problem for rule in RULES for problem in rule(config)]
