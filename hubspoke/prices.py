"""Public list prices hubspoke quotes (run-rate and inter-Region transfer): one row per price, each dated and sourced.

No price here is fetched: the machine that wrote this table had no internet, so every row that could not be
re-read from its page on the date given is marked ASSUMED. Re-check a row on its page before relying on a
figure, and change it here (the one place it lives); `hubspoke plan` and `hubspoke cost` print the source and
date beside every figure they compute, and say "no price" for anything this table lacks instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PriceKind = Literal["hyperpod", "ec2", "nat", "eks", "transfer"]

_SAGEMAKER = (
    "Amazon SageMaker AI pricing, 'SageMaker HyperPod' on-demand (https://aws.amazon.com/sagemaker/pricing/)"
)
_EC2 = "Amazon EC2 On-Demand pricing, Linux (https://aws.amazon.com/ec2/pricing/on-demand/)"
_VPC = "Amazon VPC pricing, 'NAT gateway' per hour (https://aws.amazon.com/vpc/pricing/)"
_EKS = "Amazon EKS pricing, cluster on standard support, per hour (https://aws.amazon.com/eks/pricing/)"
# $0.60: AWS's notice quoted in WGBH-MLA/chowda#217 ("will be charged at $0.60 per cluster hour"); the pricing
# page itself was not among the stored pages, hence ASSUMED.
_EKS_EXTENDED = (
    "Amazon EKS pricing, cluster on extended support, per hour (https://aws.amazon.com/eks/pricing/)"
)
_TRANSFER = (
    "Amazon EC2 On-Demand pricing, 'Data Transfer', inter-Region, billed once by the sending Region "
    "(https://aws.amazon.com/ec2/pricing/on-demand/)"
)


@dataclass(frozen=True)
class ListPrice:
    """One list price: what it prices (`kind`, `item` such as an instance type, the Region or Region pair)."""

    kind: PriceKind
    item: str
    # The Region the price applies in; for transfer, "<from>><to>" (the sender first: it is billed).
    region: str
    usd: float
    unit: str
    source: str
    as_of: str
    # True where the figure could not be re-read from its source when it was written down.
    assumed: bool

    @property
    def cited(self) -> str:
        """The source and date, with ASSUMED in front when the figure was not re-read."""
        return f"{'ASSUMED: ' if self.assumed else ''}{self.source}, {self.as_of}"


_US_PAIR = ("us-east-2", "us-west-2")

PRICES: tuple[ListPrice, ...] = (
    # HyperPod bills an allocated instance, idle or not (SageMaker developer guide, "SageMaker HyperPod
    # references", "Service billing"). ml.p5.48xlarge's $98.32 predates the June 2025 P5 cut of "up to 45%"
    # (usage.ai, "LLM Cost Optimization on AWS"; costnimbus.com, "GPU cost management"; awsnegotiations.com
    # still quotes it, 2026): ASSUMED and likely high (docs/decisions.md, "Quoted run-rates"); re-read the
    # SageMaker pricing page.
    *(
        ListPrice(
            "hyperpod",
            "ml.p5.48xlarge",
            r,
            98.32,
            "USD per instance-hour",
            f"{_SAGEMAKER}; pre-June-2025 figure, third-party pages report a P5 cut of up to 45 % since "
            "(hubspoke/prices.py)",
            "2026-11",
            True,
        )
        for r in _US_PAIR
    ),
    *(
        ListPrice("hyperpod", "ml.g5.8xlarge", r, 3.06, "USD per instance-hour", _SAGEMAKER, "2026-11", True)
        for r in _US_PAIR
    ),
    # CNQ nodes: plain EC2 instances (hubspoke/constructs/cnq/infrastructure.py); Qumulo's licence is billed apart.
    *(
        ListPrice("ec2", "i4i.8xlarge", r, 2.746, "USD per instance-hour", _EC2, "2026-11", True)
        for r in _US_PAIR
    ),
    *(
        ListPrice("ec2", "i4i.xlarge", r, 0.343, "USD per instance-hour", _EC2, "2026-11", True)
        for r in _US_PAIR
    ),
    *(
        ListPrice("nat", "nat-gateway", r, 0.045, "USD per NAT gateway-hour", _VPC, "2026-11", True)
        for r in _US_PAIR
    ),
    *(ListPrice("eks", "cluster", r, 0.10, "USD per cluster-hour", _EKS, "2026-11", True) for r in _US_PAIR),
    *(
        ListPrice(
            "eks", "cluster-extended-support", r, 0.60, "USD per cluster-hour", _EKS_EXTENDED, "2026-11", True
        )
        for r in _US_PAIR
    ),
    # Inter-Region transfer out of a Region, "<sender>>*" for every other Region unless a pair has its own row
    # (the page lists, per sending Region, the rate to other AWS Regions and the exceptions). Regions not
    # listed have no price here: outside the US the rates differ by several times (e.g. South America).
    *(
        ListPrice("transfer", "inter-region", f"{r}>*", 0.02, "USD per GB", _TRANSFER, "2026-11", True)
        for r in ("us-east-1", "us-east-2", "us-west-1", "us-west-2")
    ),
    ListPrice(
        "transfer", "inter-region", "us-east-1>us-east-2", 0.01, "USD per GB", _TRANSFER, "2026-11", True
    ),
    ListPrice(
        "transfer", "inter-region", "us-east-2>us-east-1", 0.01, "USD per GB", _TRANSFER, "2026-11", True
    ),
)


def price(kind: PriceKind, item: str, region: str) -> ListPrice | None:
    """The table's row for `item` of `kind` in `region`, or None: the caller says "no price", never guesses."""
    return next((p for p in PRICES if (p.kind, p.item, p.region) == (kind, item, region)), None)


def transfer_price(sender: str, receiver: str) -> ListPrice | None:
    """Inter-Region transfer from `sender` to `receiver` (billed by the sender), or None when unknown."""
    return price("transfer", "inter-region", f"{sender}>{receiver}") or price(
        "transfer", "inter-region", f"{sender}>*"
    )
