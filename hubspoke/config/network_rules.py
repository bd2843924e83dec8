"""Config rules on the network: CIDRs that can be peered, one spoke per Region, AZ IDs of their Region, no
endpoint open to the whole internet."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.raw import Problem, default, enabled, net, regions, section
from hubspoke.config.schema import ComputeConfig
from hubspoke.regions import REGIONS

SERVICE_CIDR = default(ComputeConfig, "service_cidr")


def vpc_cidrs_do_not_overlap(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Peered VPCs must not overlap (VPC peering guide); we check every pair, peered or not."""
    seen: list[tuple[str, ipaddress.IPv4Network]] = []
    for path, region in regions(raw):
        blocks = [(f"{path}.cidr", region.get("cidr"))]
        secondary = region.get("secondary_cidrs")
        if isinstance(secondary, list):
            blocks += [(f"{path}.secondary_cidrs[{i}]", c) for i, c in enumerate(secondary)]
        for field, value in blocks:
            block = net(value)
            if block is None:
                continue
            for other_field, other in seen:
                if block.overlaps(other):
                    yield Problem(
                        field,
                        f"{block} overlaps {other_field} ({other}); peered VPCs need disjoint CIDRs: "
                        f"pick a block outside {other}",
                    )
            seen.append((field, block))
    for path, region in regions(raw):
        compute = section(region, "compute")
        service = net(compute.get("service_cidr", SERVICE_CIDR))
        if service is None or not enabled(compute):
            continue
        for other_field, other in seen:
            if service.overlaps(other):
                yield Problem(
                    f"{path}.compute.service_cidr",
                    f"Kubernetes service CIDR {service} overlaps {other_field} ({other}); pods could not "
                    f"reach those addresses: pick a service CIDR outside every VPC, e.g. {SERVICE_CIDR}",
                )


def one_spoke_per_region(raw: Mapping[str, Any]) -> Iterator[Problem]:
    hub_region = section(raw, "hub").get("region")
    first: dict[str, str] = {}
    for path, region in regions(raw):
        code = region.get("region")
        if path == "hub" or not isinstance(code, str):
            continue
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


def az_ids_belong_to_region(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in regions(raw):
        facts = REGIONS.get(region.get("region", ""))
        if facts is None:
            continue
        az_ids = region.get("az_ids")
        fields = (
            [(f"{path}.az_ids[{i}]", v) for i, v in enumerate(az_ids)] if isinstance(az_ids, list) else []
        )
        fields.append((f"{path}.accelerator_az_id", region.get("accelerator_az_id")))
        for field, value in fields:
            if isinstance(value, str) and not facts.owns_az_id(value):
                yield Problem(
                    field,
                    f"AZ ID '{value}' is not in {facts.code}; its AZ IDs look like {facts.default_az_ids[0]}",
                )
        if isinstance(az_ids, list) and len(set(az_ids)) != len(az_ids):
            yield Problem(f"{path}.az_ids", "lists an AZ ID twice; list each AZ once")


def public_endpoint_not_open_to_world(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in regions(raw):
        cidrs = section(region, "compute").get("public_access_cidrs")
        for i, value in enumerate(cidrs if isinstance(cidrs, list) else []):
            block = net(value)
            if block is not None and block.prefixlen == 0:
                yield Problem(
                    f"{path}.compute.public_access_cidrs[{i}]",
                    "opens the EKS API to the whole internet; list your admin network's CIDR instead",
                )
        admin = net(section(region, "storage").get("admin_cidr"))
        if admin is not None and admin.prefixlen == 0:
            yield Problem(
                f"{path}.storage.admin_cidr",
                "opens SSH and the Qumulo REST API to the whole internet; use your admin network's CIDR",
            )
