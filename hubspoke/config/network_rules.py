"""Config rules on the network: CIDRs that can be peered, one spoke per Region, AZ IDs of their Region, no
endpoint open to the whole internet."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.config.sections import Problem
from hubspoke.regions import REGIONS, partition_regions


def vpc_cidrs_do_not_overlap(config: HubSpokeConfig) -> Iterator[Problem]:
    """Peered VPCs must not overlap (VPC peering guide); we check every pair, peered or not."""
    seen: list[tuple[str, ipaddress.IPv4Network]] = []
    for region in config.regions():
        for field, block in region.cidr_fields():
            for other_field, other in seen:
                if block.overlaps(other):
                    yield Problem(
                        field,
                        f"{block} overlaps {other_field} ({other}); peered VPCs need disjoint CIDRs: "
                        f"pick a block outside {other}",
                    )
            seen.append((field, block))
    # A clash of a VPC block with a Kubernetes service CIDR. The service CIDR is fixed for a cluster's life
    # (botocore eks 2017-11-01, KubernetesNetworkConfigRequest.serviceIpv4Cidr: "You can only specify a custom
    # CIDR block when you create a cluster. You can't change this value after the cluster is created"), so
    # changing a deployed cluster's replaces it. With the default service CIDR, the block is what to change
    # (it is most likely the new one, and one block clashes with every cluster's default at once): one problem on
    # the block, a free block first. A service CIDR the config sets is the user's choice: the problem is on it.
    services: list[tuple[str, ipaddress.IPv4Network, bool]] = []
    for region in config.regions():
        if (compute := region.compute_on) is not None:
            service = ipaddress.IPv4Network(compute.service_cidr)
            services.append((region.path, service, "service_cidr" in compute.model_fields_set))
    replaces = (
        "changing a deployed cluster's service_cidr replaces that EKS cluster (it is set only at creation)"
    )
    for path, service, explicit in services:
        if not explicit:
            continue
        for other_field, other in seen:
            if service.overlaps(other):
                yield Problem(
                    f"{path}.compute.service_cidr",
                    f"Kubernetes service CIDR {service} overlaps {other_field} ({other}); pods could not "
                    f"reach those addresses: pick a service CIDR outside every VPC, {_free_service_cidr(seen)} "
                    f"({replaces})",
                )
    in_use = [(p, svc) for p, svc, _ in services]
    for block_field, block in seen:
        clusters = [(p, svc) for p, svc, explicit in services if not explicit and svc.overlaps(block)]
        if not clusters:
            continue
        owners = ", ".join(f"{p}.compute.service_cidr" for p, _ in clusters)
        yield Problem(
            block_field,
            f"{block} overlaps the default Kubernetes service CIDR {clusters[0][1]} ({owners}); pods could not "
            f"reach those addresses: pick a block outside it, {_free_block(block, seen, in_use)}; or set "
            f"{clusters[0][0]}.compute.service_cidr, but {replaces}",
        )


def _free_block(
    block: ipaddress.IPv4Network,
    taken: list[tuple[str, ipaddress.IPv4Network]],
    services: list[tuple[str, ipaddress.IPv4Network]],
) -> str:
    """A block of `block`'s size in 10.0.0.0/8 that overlaps no other VPC block and no service CIDR here."""
    others = [b for _, b in taken if b != block] + [s for _, s in services]
    if block.prefixlen >= 8:
        for candidate in ipaddress.IPv4Network("10.0.0.0/8").subnets(new_prefix=block.prefixlen):
            if not any(candidate.overlaps(o) for o in others):
                return f"e.g. {candidate}"
    return "a free private block"


def _free_service_cidr(taken: list[tuple[str, ipaddress.IPv4Network]]) -> str:
    """A /16 of 172.16.0.0/12 that no VPC block overlaps, as the fix to suggest (botocore eks model,
    KubernetesNetworkConfigRequest.serviceIpv4Cidr: within 10/8, 172.16/12 or 192.168/16, /24 to /12, and
    overlapping no block of the VPC; 172.17.0.0/16 is skipped as Docker's default bridge, ASSUMED still worth
    avoiding on nodes)."""
    for candidate in ipaddress.IPv4Network("172.16.0.0/12").subnets(new_prefix=16):
        if candidate != ipaddress.IPv4Network("172.17.0.0/16") and not any(
            candidate.overlaps(b) for _, b in taken
        ):
            return f"e.g. {candidate}"
    return "a /16 of 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16"


def one_spoke_per_region(config: HubSpokeConfig) -> Iterator[Problem]:
    hub_region = config.hub.region
    first: dict[str, str] = {}
    for spoke in config.spokes:
        path, code = spoke.path, spoke.region
        if code == hub_region:
            yield Problem(
                f"{path}.region",
                f"{code} is the hub Region; a spoke must be in another Region: remove this spoke",
            )
        elif code in first:
            yield Problem(
                f"{path}.region",
                f"{code} is already a spoke at {first[code]}; one spoke per Region: merge or remove one",
            )
        else:
            first[code] = path


def az_ids_belong_to_region(config: HubSpokeConfig) -> Iterator[Problem]:
    for region in config.regions():
        path, code = region.path, region.region
        facts = REGIONS.get(code)
        if facts is None:
            # A Region botocore knows but hubspoke/regions.py does not: no default AZs to fall back on.
            if code in partition_regions() and not region.az_ids:
                yield Problem(
                    f"{path}.az_ids",
                    f"hubspoke has no default AZ IDs for {code} (hubspoke/regions.py): list two, e.g. from "
                    f"`aws ec2 describe-availability-zones --region {code} --query AvailabilityZones[].ZoneId`",
                )
            continue
        az_ids = region.az_ids or []
        fields = [(f"{path}.az_ids[{i}]", v) for i, v in enumerate(az_ids)]
        if region.accelerator_az_id is not None:
            fields.append((f"{path}.accelerator_az_id", region.accelerator_az_id))
        for field, value in fields:
            if not facts.owns_az_id(value):
                yield Problem(
                    field,
                    f"AZ ID '{value}' is not in {facts.code}; its AZ IDs look like {facts.default_az_ids[0]}",
                )
        if len(set(az_ids)) != len(az_ids):
            yield Problem(f"{path}.az_ids", "lists an AZ ID twice; list each AZ once")


# Amazon VPC User Guide, "IPv4 CIDR block association restrictions" (awsdocs/amazon-vpc-user-guide@a16ab76,
# doc_source/vpc-cidr-blocks.md): which secondary blocks a VPC accepts depends on the range its primary is in,
# because AWS services that work across VPCs and accounts need the ranges apart.
_RFC1918 = tuple(ipaddress.IPv4Network(c) for c in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
_SERVICE_RANGE = ipaddress.IPv4Network("198.19.0.0/16")
# The shared address space (RFC 6598) the same page offers for secondary blocks.
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_RESTRICTED_SECONDARY: tuple[tuple[ipaddress.IPv4Network | None, tuple[ipaddress.IPv4Network, ...]], ...] = (
    (_RFC1918[0], (_RFC1918[1], _RFC1918[2], _SERVICE_RANGE)),
    (_RFC1918[1], (_RFC1918[0], _RFC1918[2], ipaddress.IPv4Network("172.31.0.0/16"), _SERVICE_RANGE)),
    (_RFC1918[2], (_RFC1918[0], _RFC1918[1], _SERVICE_RANGE)),
    (_SERVICE_RANGE, _RFC1918),
    (None, (*_RFC1918, _SERVICE_RANGE)),  # a publicly routable primary, or one from 100.64.0.0/10
)
# "If any of the CIDR blocks associated with the VPC are from the 10.0.0.0/15 range, you cannot add a CIDR block
# from the 10.0.0.0/16 range."
_FIRST_TEN_15, _FIRST_TEN_16 = ipaddress.IPv4Network("10.0.0.0/15"), ipaddress.IPv4Network("10.0.0.0/16")


def secondary_cidrs_associable(config: HubSpokeConfig) -> Iterator[Problem]:
    """A secondary block AWS refuses to associate with the VPC's primary block fails the Network stack at deploy."""
    for region in config.regions():
        blocks = region.cidr_fields()
        if not blocks or blocks[0][0] != f"{region.path}.cidr":
            continue
        primary = blocks[0][1]
        restricted = next(
            (
                ranges
                for within, ranges in _RESTRICTED_SECONDARY
                if within is None or primary.subnet_of(within)
            ),
            (),
        )
        for field, block in blocks[1:]:
            clash = next((r for r in restricted if block.overlaps(r)), None)
            if clash is None and block.subnet_of(_FIRST_TEN_16):
                others = [b for f, b in blocks if f != field]
                clash = _FIRST_TEN_16 if any(b.overlaps(_FIRST_TEN_15) for b in others) else None
            if clash is not None:
                yield Problem(
                    field,
                    f"AWS does not associate {block} with a VPC whose primary block is {primary} (Amazon VPC User "
                    f"Guide, 'IPv4 CIDR block association restrictions': nothing from {clash}); pick a secondary "
                    "block from the primary's own private range or from 100.64.0.0/10",
                )


def vpc_cidrs_are_private(config: HubSpokeConfig) -> Iterator[Problem]:
    """AWS creates a VPC from any block, but recommends RFC 1918's private ranges (Amazon VPC User Guide, "VPC CIDR
    blocks": "we recommend that you specify a CIDR block from the private IPv4 address ranges as specified in RFC
    1918"; a publicly routable block is allowed), so a public one is a warning."""
    for region in config.regions():
        for field, block in region.cidr_fields():
            if not any(block.subnet_of(r) for r in (*_RFC1918, _SHARED)):
                yield Problem(
                    field,
                    f"{block} is outside private address space (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, as the "
                    "Amazon VPC User Guide recommends, 'VPC CIDR blocks'; AWS accepts it): pick a private block "
                    "such as 10.30.0.0/16 unless you own this range and mean it",
                    severity="warning",
                )
