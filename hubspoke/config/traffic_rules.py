"""Rules for the spokes' traffic metrics (hubspoke/flow_logs.py): their patterns must count the right bytes
and fit one flow-log group. Same conventions as rules.py and sections.py (the typed config in, one Problem per
finding)."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem
from hubspoke.flow_logs import LOG_GROUP_FILTER_QUOTA, MAX_FILTERS_PER_LOG_GROUP, traffic_patterns


def hub_and_spokes_do_not_share_a_24(config: HubSpokeConfig) -> Iterator[Problem]:
    """Flow-log patterns match addresses as text, so a block smaller than /24 is matched as its whole /24
    (hubspoke/flow_logs.py): a hub block and a spoke block in one /24 would count each other's bytes."""
    hub_blocks = [
        (f, n, n.supernet(new_prefix=24) if n.prefixlen > 24 else n) for f, n in config.hub.cidr_fields()
    ]
    for spoke in config.spokes:
        for field, net in spoke.cidr_fields():
            widened = net.supernet(new_prefix=24) if net.prefixlen > 24 else net
            for hub_field, hub_net, hub_widened in hub_blocks:
                if widened.overlaps(hub_widened) and not net.overlaps(hub_net):
                    yield Problem(
                        field,
                        f"{net} shares the /24 {widened if net.prefixlen > 24 else hub_widened} with "
                        f"{hub_field} ({hub_net}); the spoke's traffic metrics match addresses by /24 and would "
                        "mix hub and spoke bytes: move one of the two blocks to a /24 the other does not use",
                    )


def flow_log_filters_fit(config: HubSpokeConfig) -> Iterator[Problem]:
    """A spoke's traffic metrics (hubspoke/flow_logs.py) must fit the metric filters of one log group."""
    hub = config.hub
    hub_cidrs = hub.all_cidrs
    for region in config.spokes:
        where, own = region.path, region.all_cidrs
        kinds = traffic_patterns(own_cidrs=own, hub_cidrs=hub_cidrs)
        # Bytes from and to the hub each need the hub's patterns; NFS replies need the spoke's own.
        hub_share, own_share = len(kinds["from_hub"]) + len(kinds["to_hub"]), len(kinds["nfs_replies"])
        if hub_share + own_share <= MAX_FILTERS_PER_LOG_GROUP:
            continue
        blamed, blamed_path = (hub, "hub") if hub_share >= own_share else (region, where)
        field = f"{blamed_path}.{'secondary_cidrs' if blamed.secondary_cidrs else 'cidr'}"
        yield Problem(
            field,
            f"the traffic metrics of spoke {where} need {hub_share + own_share} metric filters on its flow-log "
            f"group ({hub_share} for the hub's CIDRs, from and to the hub; {own_share} for the spoke's own), more "
            f"than the {MAX_FILTERS_PER_LOG_GROUP} hubspoke allows itself of CloudWatch Logs' "
            f"{LOG_GROUP_FILTER_QUOTA} per log group (a choice, leaving room for your own filters): a CIDR that "
            f"does not end on /8, /16 or /24 is matched block by block; use fewer or octet-aligned CIDRs in "
            f"{blamed_path} (one /16 instead of several /17s)",
        )
