"""What an environment costs per hour while it stands: GPU nodes, CNQ nodes, NAT gateways, EKS control planes.

Every line is count x a row of hubspoke/prices.py; a line without a row is listed with no price, and the total
then says it is incomplete rather than leave the line out. Not counted: EBS volumes, S3, data processed by NAT,
inter-Region transfer (`hubspoke cost`), Lambda, CloudWatch, Secrets Manager, and Qumulo's licence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.eks_addons import in_extended_support
from hubspoke.prices import ListPrice, PriceKind, price

NOT_COUNTED = (
    "EBS volumes, S3, NAT data processing, inter-Region transfer (hubspoke cost), Lambda, CloudWatch, "
    "Secrets Manager, Qumulo's licence"
)


@dataclass(frozen=True)
class Line:
    """`count` of one priced thing in one Region, and its cost per hour (None: no price in the table)."""

    region: str
    what: str
    count: int
    item: str
    price: ListPrice | None

    @property
    def usd_per_hour(self) -> float | None:
        return None if self.price is None else self.count * self.price.usd


def nat_gateways(region: RegionConfig) -> int:
    """NAT gateways the Region's network deploys: one, one per private AZ, or none (config `nat`)."""
    return {"single": 1, "per_az": len(region.resolved_az_ids), "none": 0}[region.nat]


def run_rate(config: HubSpokeConfig, *, on: date | None = None) -> list[Line]:
    """One line per priced thing the config deploys, hub first, then the spokes in config order; an EKS control
    plane past its version's standard support `on` that day (today by default) at the extended-support rate."""
    on = on or date.today()
    lines: list[Line] = []

    def add(region: str, what: str, count: int, kind: PriceKind, item: str) -> None:
        if count:
            lines.append(Line(region, what, count, item, price(kind, item, region)))

    for region in config.regions():
        code = region.region
        if region.compute.enabled:
            for group in region.compute.instance_groups:
                add(code, f"HyperPod group {group.name}", group.count, "hyperpod", group.instance_type)
            version = region.compute.kubernetes_version
            if in_extended_support(version, on):
                add(
                    code,
                    f"EKS control plane ({version}, extended support)",
                    1,
                    "eks",
                    "cluster-extended-support",
                )
            else:
                add(code, "EKS control plane", 1, "eks", "cluster")
        if region.storage.enabled:
            add(code, "CNQ nodes", region.storage.node_count, "ec2", region.storage.instance_type)
        add(code, f"NAT gateway ({region.nat})", nat_gateways(region), "nat", "nat-gateway")
    return lines


def total(lines: list[Line]) -> tuple[float, bool]:
    """The sum of the priced lines, and whether every line had a price."""
    priced = [line.usd_per_hour for line in lines if line.usd_per_hour is not None]
    return sum(priced), len(priced) == len(lines)
