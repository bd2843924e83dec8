"""What every config section is built from: the base model, shared field types (CIDRs, Regions, accounts, images,
instance types) with their checks, and how a section's validator reports several problems at once."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.json_schema import JsonDict

from hubspoke.config import aws_models
from hubspoke.regions import REGIONS, partition_regions

# AWS allows VPC CIDR blocks from /16 to /28; our subnet layout needs /20 or larger (see layout.py).
VPC_MAX_PREFIX = 16
VPC_MIN_PREFIX = 20
SECONDARY_MIN_PREFIX = 28
# A Region without az_ids gets private subnets in this many of its AZs (the first of regions.py's list).
DEFAULT_AZ_COUNT = 2


def _network(value: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValueError(f"'{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16") from None
    if not isinstance(net, ipaddress.IPv4Network) or "/" not in value:
        raise ValueError(f"'{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16")
    if str(net) != value:
        raise ValueError(f"'{value}' has host bits set; did you mean {net}?")
    return net


def _cidr(value: str) -> str:
    _network(value)
    return value


def _vpc_cidr(value: str) -> str:
    net = _network(value)
    if net.prefixlen < VPC_MAX_PREFIX:
        raise ValueError(
            f"/{net.prefixlen} is larger than AWS allows for a VPC; use a prefix from /16 to /20"
        )
    if net.prefixlen > VPC_MIN_PREFIX:
        raise ValueError(
            f"/{net.prefixlen} is too small for the subnet layout (a quarter for the accelerator subnet, "
            f"a sixteenth per private subnet, a sixty-fourth per public subnet); the minimum is "
            f"/{VPC_MIN_PREFIX}: use /16 to /{VPC_MIN_PREFIX}, e.g. {net.supernet(new_prefix=16)}"
        )
    return value


def _secondary_cidr(value: str) -> str:
    net = _network(value)
    if not VPC_MAX_PREFIX <= net.prefixlen <= SECONDARY_MIN_PREFIX:
        raise ValueError(f"/{net.prefixlen} is outside what AWS allows for a VPC CIDR block (/16 to /28)")
    return value


def _not_the_world(value: str) -> str:
    if value.endswith("/0"):
        raise ValueError(
            f"{value} opens this endpoint to the whole internet; list your admin network's CIDR instead"
        )
    return value


def _region(value: str) -> str:
    known = partition_regions() | set(REGIONS)
    if value not in known:
        import difflib

        close = difflib.get_close_matches(value, sorted(known), n=1)
        hint = f"did you mean {close[0]}?" if close else "use a commercial Region code such as us-west-2"
        raise ValueError(f"unknown Region code '{value}'; {hint}")
    return value


def _once_each(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError(f"list each check once: {value}")
    return value


def _hyperpod_type(value: str) -> str:
    return aws_models.check(value, "sagemaker", "ClusterInstanceType", "a SageMaker HyperPod instance type")


def _ec2_type(value: str) -> str:
    return aws_models.check(value, "ec2", "InstanceType", "an EC2 instance type")


Cidr = Annotated[str, AfterValidator(_cidr)]
VpcCidr = Annotated[str, AfterValidator(_vpc_cidr)]
SecondaryCidr = Annotated[str, AfterValidator(_secondary_cidr)]
RegionCode = Annotated[str, AfterValidator(_region)]
AccountId = Annotated[str, Field(pattern=r"^\d{12}$")]
AzId = Annotated[str, Field(pattern=r"^[a-z]+\d-az\d+$")]
Quantity = Annotated[str, Field(pattern=r"^[1-9]\d*(Gi|Ti)$")]


def _not_latest(value: str) -> str:
    # `latest` is the tag every untagged push moves: two pods of one job could pull different images.
    if value.endswith(":latest"):
        raise ValueError(
            "`:latest` names whatever was pushed last; use the digest `hubspoke image build` printed "
            "(repository@sha256:...) or another immutable tag"
        )
    return value


# registry/repository:tag or @sha256:digest, as docker push printed it; never `:latest`.
ImageRef = Annotated[
    str,
    Field(pattern=r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$"),
    AfterValidator(_not_latest),
]


class Refusals(ValueError):
    """What a section's validator refuses, each "key: message" (the loader adds the key to the section's path)."""

    def __init__(self, problems: list[str]):
        self.problems = [(key, message) for key, _, message in (p.partition(": ") for p in problems)]
        super().__init__("; ".join(problems))


def refuse(problems: list[str]) -> None:
    """Raise every problem a section's validator found at once; nothing when there are none."""
    if problems:
        raise Refusals(problems)


def effective_account(region_account: Any, environment_account: Any) -> Any:
    """A Region's account: its own when set, else the environment's."""
    return region_account or environment_account


def shown_as(text: str) -> JsonDict:
    """A default the reference states in words: computed from other keys, or no literal value (`json_schema_extra`)."""
    return {"default_text": text}


class Model(BaseModel):
    """Base for every config section: unknown keys are errors, values are immutable, types are not coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
