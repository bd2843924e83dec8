"""Config rules on the quotas a topology uses up: active peerings per VPC, inbound rules per security group,
metric filters per log group. Past a quota CloudFormation fails mid-deploy; validation says so first."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig, QuotasConfig, RegionConfig
from hubspoke.config.sections import Problem
from hubspoke.ports import FROM_HUB, FROM_SPOKE

# VPC quotas: active peering connections per VPC, default and hard maximum.
PEERINGS_DEFAULT_QUOTA = 50
PEERINGS_MAX_QUOTA = 125
# Amazon VPC "Inbound or outbound rules per security group" (L-0EA8095F), the AWS default (schema.QuotasConfig).
SECURITY_GROUP_RULES_QUOTA_CODE = "L-0EA8095F"
# Amazon VPC "Security groups per network interface" (L-2AFB9258, 5 by default); the same page: this quota times
# the rules quota may not exceed 1,000, so raising rules past 200 needs this one lowered first.
SECURITY_GROUPS_PER_INTERFACE_QUOTA_CODE = "L-2AFB9258"
RULES_TIMES_GROUPS_LIMIT = 1000
DEFAULT_SECURITY_GROUP_RULES = QuotasConfig().security_group_rules
MAX_SECURITY_GROUP_RULES = next(
    m.le for m in QuotasConfig.model_fields["security_group_rules"].metadata if hasattr(m, "le")
)


VPC_CIDR_BLOCKS_QUOTA_CODE = "L-83CA0A9D"


def vpc_cidr_blocks_within_quota(config: HubSpokeConfig) -> Iterator[Problem]:
    """A VPC's primary and secondary blocks fit 'IPv4 CIDR blocks per VPC' (5 unless the config states more)."""
    for region in config.regions():
        path, blocks, allowed = region.path, len(region.all_cidrs), region.quotas.vpc_cidr_blocks
        if blocks > allowed:
            code = region.region
            yield Problem(
                f"{path}.secondary_cidrs",
                f"{blocks} CIDR blocks on this VPC (the primary and {blocks - 1} secondary) exceed the quota of "
                f"{allowed} 'IPv4 CIDR blocks per VPC' ({VPC_CIDR_BLOCKS_QUOTA_CODE}, default 5): list fewer, or "
                "request an increase (`aws service-quotas request-service-quota-increase --service-code vpc "
                f"--quota-code {VPC_CIDR_BLOCKS_QUOTA_CODE} --desired-value {blocks} --region {code}`) and state "
                f"it as {path}.quotas.vpc_cidr_blocks: {blocks}",
            )


ROUTES_PER_ROUTE_TABLE_QUOTA_CODE = "L-93826ACB"


def _by_path(config: HubSpokeConfig) -> dict[str, RegionConfig]:
    return {region.path: region for region in config.regions()}


def private_route_table_routes(config: HubSpokeConfig) -> dict[str, tuple[int, int]]:
    """(peer routes, other routes) of each Region's private route tables, hub first, then spokes in config order.

    Peer routes: one per peer CIDR over the peering (constructs/peering.py PeerSide): every spoke's blocks on the
    hub, the hub's blocks on a spoke. Other routes: the local route of each of the VPC's own blocks (a route table
    has one per CIDR block; counted against the quota here, though the quotas page does not say whether they
    count), the S3 gateway endpoint's route (constructs/vpc.py) and the default route to a NAT gateway unless
    `nat: none`.
    """
    by_path = _by_path(config)
    spoke_cidrs = sum(len(r.all_cidrs) for path, r in by_path.items() if path != "hub")
    hub_cidrs = len(by_path["hub"].all_cidrs)
    counts: dict[str, tuple[int, int]] = {}
    for path, region in by_path.items():
        other = len(region.all_cidrs) + 1 + (0 if region.nat == "none" else 1)
        counts[path] = (spoke_cidrs if path == "hub" else hub_cidrs, other)
    return counts


def routes_within_quota(config: HubSpokeConfig) -> Iterator[Problem]:
    """Each private route table's routes fit 'Routes per route table' (50 unless the config states more).

    Past the quota the Link (hub side) or Network (spoke side) stack fails mid-deploy creating a route.
    """
    by_path = _by_path(config)
    for path, (peers, other) in private_route_table_routes(config).items():
        region = by_path[path]
        allowed = region.quotas.routes_per_route_table
        needed = peers + other
        if needed <= allowed:
            continue
        code = region.region
        whose = "every spoke CIDR" if path == "hub" else "every hub CIDR"
        stated = "routes_per_route_table" in region.quotas.model_fields_set
        origin = "the quota this file states" if stated else "the AWS default"
        yield Problem(
            f"{path}.quotas.routes_per_route_table",
            f"each private route table in {code} needs {needed} routes ({peers} over the peering, one for {whose}, "
            f"and {other} local, S3 endpoint and NAT routes), over {origin} of {allowed} 'Routes per route table' "
            f"({ROUTES_PER_ROUTE_TABLE_QUOTA_CODE}, default 50, at most 1,000): peer fewer CIDRs, or request an "
            "increase (`aws service-quotas request-service-quota-increase --service-code vpc --quota-code "
            f"{ROUTES_PER_ROUTE_TABLE_QUOTA_CODE} --desired-value {needed} --region {code}`) and state it as "
            f"{path}.quotas.routes_per_route_table: {needed}",
        )


def peering_quota(config: HubSpokeConfig) -> Iterator[Problem]:
    count = len(config.spokes)
    if count > PEERINGS_MAX_QUOTA:
        yield Problem(
            "spokes",
            f"{count} spokes need {count} peerings on the hub VPC; AWS allows at most "
            f"{PEERINGS_MAX_QUOTA}: split the environment",
        )
    elif count > PEERINGS_DEFAULT_QUOTA:
        yield Problem(
            "spokes",
            f"{count} spokes exceed the default quota of {PEERINGS_DEFAULT_QUOTA} active peerings per VPC; "
            "request an increase (Service Quotas, Amazon VPC) before deploying",
            severity="warning",
        )


def peer_path_rules(config: HubSpokeConfig) -> dict[str, int]:
    """Inbound rules each Region's cross-Region security group needs: one per peer CIDR and port (ports.py)."""
    by_path = _by_path(config)
    spoke_cidrs = sum(len(r.all_cidrs) for path, r in by_path.items() if path != "hub")
    # The hub first, then the spokes in config order: the order the findings are printed in.
    counts = {"hub": spoke_cidrs * len(FROM_SPOKE)}
    counts.update({path: len(by_path["hub"].all_cidrs) * len(FROM_HUB) for path in by_path if path != "hub"})
    return counts


def peer_path_rules_within_quota(config: HubSpokeConfig) -> Iterator[Problem]:
    """Every peer CIDR adds one rule per port to the other side's group; CloudFormation fails past the quota.

    The quota is per security group (Amazon VPC User Guide, "Amazon VPC quotas": 60 inbound rules by default,
    L-0EA8095F); a Link stack that would add the 61st rule fails at deploy time, after the spoke's network.
    """
    by_path = _by_path(config)
    for path, needed in peer_path_rules(config).items():
        region = by_path[path]
        code = region.region
        quotas = region.quotas
        if needed <= (quota := quotas.security_group_rules):
            continue
        peers = "every spoke CIDR" if path == "hub" else "every hub CIDR"
        ports = len(FROM_SPOKE) if path == "hub" else len(FROM_HUB)
        stated = (
            "the quota this file states"
            if "security_group_rules" in quotas.model_fields_set
            else "the AWS default"
        )
        if needed > MAX_SECURITY_GROUP_RULES:
            yield Problem(
                f"{path}.quotas.security_group_rules",
                f"the cross-Region security group in {code} would need {needed} inbound rules ({ports} per CIDR "
                f"for {peers}); no account can hold more than {MAX_SECURITY_GROUP_RULES} per group while CNQ "
                "nodes carry two groups (rules per group times groups per interface is capped at 1,000): "
                "split the spokes over more environments or peer fewer CIDRs",
            )
            continue
        yield Problem(
            f"{path}.quotas.security_group_rules",
            f"the cross-Region security group in {code} needs {needed} inbound rules ({ports} per CIDR for "
            f"{peers}), over {stated} of {quota} rules per security group: request 'Inbound or outbound rules "
            f"per security group' ({SECURITY_GROUP_RULES_QUOTA_CODE}) of at least {needed} in {code} "
            f"(Service Quotas, Amazon VPC), then set {path}.quotas.security_group_rules: {needed}; "
            "or peer fewer CIDRs",
        )
