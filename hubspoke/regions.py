"""Facts about AWS Regions that synth and validation need offline: codes, AZ IDs, HyperPod availability."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class RegionFacts:
    """What hubspoke knows about one commercial Region without asking AWS."""

    code: str
    az_id_prefix: str
    # AZ IDs used when config names none; IDs (not names) because names are shuffled per account.
    default_az_ids: tuple[str, ...]
    hyperpod: bool

    def owns_az_id(self, az_id: str) -> bool:
        return az_id.startswith(self.az_id_prefix + "-az") and az_id[len(self.az_id_prefix) + 3 :].isdigit()


def _r(code: str, prefix: str, azs: tuple[int, ...] = (1, 2, 3), hyperpod: bool = False) -> RegionFacts:
    return RegionFacts(code, prefix, tuple(f"{prefix}-az{n}" for n in azs), hyperpod)


# AZ ID prefixes: EC2 User Guide, "AZ IDs for your AWS resources" (read 2026-11). HyperPod: the SageMaker
# developer guide's 18 Regions as of 2026-11-30, unverified offline (not in the stored docs); preflight asks
# the account itself.
REGIONS: dict[str, RegionFacts] = {
    r.code: r
    for r in (
        _r("us-east-1", "use1", (1, 2, 4), hyperpod=True),
        _r("us-east-2", "use2", hyperpod=True),
        _r("us-west-1", "usw1", (1, 3), hyperpod=True),
        _r("us-west-2", "usw2", (1, 2, 3), hyperpod=True),
        _r("af-south-1", "afs1"),
        _r("ap-east-1", "ape1"),
        _r("ap-south-1", "aps1", hyperpod=True),
        _r("ap-south-2", "aps2"),
        _r("ap-southeast-1", "apse1", hyperpod=True),
        _r("ap-southeast-2", "apse2", hyperpod=True),
        _r("ap-southeast-3", "apse3", hyperpod=True),
        _r("ap-southeast-4", "apse4", hyperpod=True),
        _r("ap-southeast-5", "apse5"),
        _r("ap-southeast-7", "apse7"),
        _r("ap-northeast-1", "apne1", (1, 2, 4), hyperpod=True),
        _r("ap-northeast-2", "apne2", (1, 2, 3), hyperpod=True),
        _r("ap-northeast-3", "apne3"),
        _r("ca-central-1", "cac1", (1, 2, 4), hyperpod=True),
        _r("ca-west-1", "caw1"),
        _r("eu-central-1", "euc1", hyperpod=True),
        _r("eu-central-2", "euc2"),
        _r("eu-west-1", "euw1", hyperpod=True),
        _r("eu-west-2", "euw2", hyperpod=True),
        _r("eu-west-3", "euw3"),
        _r("eu-south-1", "eus1"),
        _r("eu-south-2", "eus2", hyperpod=True),
        _r("eu-north-1", "eun1", hyperpod=True),
        _r("il-central-1", "ilc1"),
        _r("me-south-1", "mes1"),
        _r("me-central-1", "mec1"),
        _r("mx-central-1", "mxc1"),
        _r("sa-east-1", "sae1", hyperpod=True),
    )
}

HYPERPOD_REGIONS = frozenset(code for code, facts in REGIONS.items() if facts.hyperpod)

# Commercial Regions launched before March 20, 2019, enabled by default (AWS Account Management Reference
# Guide, "Enable or disable AWS Regions in your account"); others are opt-in, which preflight and verify
# check.
DEFAULT_REGIONS = frozenset(
    {
        "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
        "eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-north-1",
        "ap-south-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-southeast-1", "ap-southeast-2",
    }
)  # fmt: skip


def is_opt_in(code: str) -> bool:
    """True for a Region an account must enable before use (launched after March 20, 2019)."""
    return code not in DEFAULT_REGIONS


def opt_in_note(codes: list[str]) -> str | None:
    """What `validate` and `plan` say about the configured opt-in Regions, or None when there are none."""
    opt_in = [c for c in codes if is_opt_in(c)]
    if not opt_in:
        return None
    enable = "; ".join(f"aws account enable-region --region-name {c}" for c in opt_in)
    return (
        f"opt-in Regions: {', '.join(opt_in)} (disabled until the account enables them; STS refuses every token "
        f"there until then): {enable}"
    )


@cache
def partition_regions() -> frozenset[str]:
    """Every Region of the commercial partition, as botocore's endpoint data lists them (partitions[aws].regions
    of botocore/data/endpoints.json, less its pseudo-Region aws-global): Regions AWS added since this file's
    table (ap-east-2, ap-southeast-6) are known as soon as botocore is. REGIONS holds what hubspoke also knows
    about a Region (AZ ID prefix, default AZs, HyperPod); a Region outside it needs its AZ IDs in the config."""
    import importlib.util
    import json
    from pathlib import Path

    # The file itself, not botocore's Loader: `hubspoke validate` must not import the AWS SDK (it runs in
    # pre-commit hooks; tests/cli/test_main.py). find_spec locates a top-level package without importing it.
    spec = importlib.util.find_spec("botocore")
    if spec is None or spec.origin is None:
        return frozenset(REGIONS)
    endpoints = json.loads((Path(spec.origin).parent / "data" / "endpoints.json").read_text(encoding="utf-8"))
    [aws] = [p for p in endpoints["partitions"] if p["partition"] == "aws"]
    return frozenset(code for code in aws["regions"] if code != "aws-global")
