"""How a Region's VPC CIDR is carved into subnets: derived from config, shared by synth, plan and diagram.

For a VPC of prefix /P: one accelerator subnet of /P+2 (a quarter: HyperPod and EKS pods take many
addresses) in the accelerator AZ ID; one private subnet of /P+4 per AZ ID; one public subnet of /P+6
per AZ ID when NAT is on. The rest stays free for growth. /20 is the smallest VPC this fits.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal

from hubspoke.config.schema import RegionConfig

SubnetKind = Literal["accelerator", "private", "public"]


@dataclass(frozen=True)
class SubnetPlan:
    """One subnet: its role, CIDR and AZ ID."""

    kind: SubnetKind
    cidr: str
    az_id: str

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.az_id}"


def subnet_layout(region: RegionConfig) -> tuple[SubnetPlan, ...]:
    vpc = ipaddress.IPv4Network(region.cidr)
    p = vpc.prefixlen
    quarters = list(vpc.subnets(new_prefix=p + 2))
    sixteenths = list(vpc.subnets(new_prefix=p + 4))
    sixty_fourths = list(vpc.subnets(new_prefix=p + 6))
    azs = region.resolved_az_ids
    plan = [SubnetPlan("accelerator", str(quarters[0]), region.resolved_accelerator_az_id)]
    # Private subnets start at the second quarter (sixteenths 4..7), public at the second half.
    plan += [SubnetPlan("private", str(sixteenths[4 + i]), az) for i, az in enumerate(azs)]
    if region.nat != "none":
        plan += [SubnetPlan("public", str(sixty_fourths[32 + i]), az) for i, az in enumerate(azs)]
    return tuple(plan)


def route_table_az_ids(region: RegionConfig) -> tuple[str, ...]:
    """AZ IDs that get a private route table: every private AZ, plus the accelerator AZ if it is another."""
    return tuple(dict.fromkeys([*region.resolved_az_ids, region.resolved_accelerator_az_id]))
