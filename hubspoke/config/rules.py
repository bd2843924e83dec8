"""Rules that span fields (overlaps, duplicates, Region facts, quotas); each adds its findings to one list.

Each topic has its module (network_rules, storage_rules, compute_rules, quotas, traffic_rules, ops_rules,
dataset_rules) reading the typed config, a refused part absent (config/sections.py); this is the list they run
in, in the order their messages are printed.
"""

from __future__ import annotations

from hubspoke.config.compute_rules import (
    compute_mounts_local_storage,
    compute_needs_egress,
    compute_only_where_hyperpod_runs,
    connectivity_check_needs_two_nodes,
    kubernetes_version_within_kubectl_skew,
)
from hubspoke.config.dataset_rules import loads_run_on_hub_compute
from hubspoke.config.network_rules import (
    az_ids_belong_to_region,
    one_spoke_per_region,
    public_endpoint_not_open_to_world,
    secondary_cidrs_associable,
    vpc_cidrs_do_not_overlap,
)
from hubspoke.config.ops_rules import alarms_reach_somebody
from hubspoke.config.quotas import (
    peer_path_rules_within_quota,
    peering_quota,
    routes_within_quota,
    vpc_cidr_blocks_within_quota,
)
from hubspoke.config.sections import ConfigView, Problem, Rule
from hubspoke.config.storage_rules import (
    ami_pinned_in_one_region,
    buckets_follow_qumulos_rule,
    capacity_fits_the_nodes,
    checkpoints_outside_dataset,
    cnq_instance_family,
    cnq_node_count,
    floating_ips_cover_the_nodes,
    node_volumes_known,
    portal_stays_in_one_account,
    qumulo_core_supported,
    spoke_storage_needs_hub_storage,
    storage_is_pinned,
    storage_needs_egress,
    xlarge_is_for_development,
)
from hubspoke.config.traffic_rules import flow_log_filters_fit, hub_and_spokes_do_not_share_a_24

__all__ = ["RULES", "Problem", "Rule", "check"]

RULES: tuple[Rule, ...] = (
    vpc_cidrs_do_not_overlap,
    secondary_cidrs_associable,
    one_spoke_per_region,
    az_ids_belong_to_region,
    cnq_node_count,
    cnq_instance_family,
    compute_only_where_hyperpod_runs,
    compute_mounts_local_storage,
    portal_stays_in_one_account,
    checkpoints_outside_dataset,
    public_endpoint_not_open_to_world,
    peering_quota,
    vpc_cidr_blocks_within_quota,
    spoke_storage_needs_hub_storage,
    storage_is_pinned,
    ami_pinned_in_one_region,
    qumulo_core_supported,
    storage_needs_egress,
    compute_needs_egress,
    connectivity_check_needs_two_nodes,
    kubernetes_version_within_kubectl_skew,
    node_volumes_known,
    floating_ips_cover_the_nodes,
    buckets_follow_qumulos_rule,
    xlarge_is_for_development,
    capacity_fits_the_nodes,
    hub_and_spokes_do_not_share_a_24,
    flow_log_filters_fit,
    peer_path_rules_within_quota,
    routes_within_quota,
    alarms_reach_somebody,
    loads_run_on_hub_compute,
)


def check(config: ConfigView) -> list[Problem]:
    return [problem for rule in RULES for problem in rule(config)]
