"""The one way this project acknowledges a cdk-nag finding: by rule, optionally by finding, always with a reason."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

NAG_PACK = "AwsSolutions"
MIN_REASON = 40  # a reason a reviewer can check, not "needed" or "ok"


def acknowledge(scope: IConstruct, rule: str, *, reason: str, findings: Iterable[str] = ()) -> None:
    """Acknowledge `rule` (e.g. "AwsSolutions-IAM5") on `scope`, for the listed findings or for all of them."""
    if len(reason.strip()) < MIN_REASON:
        raise ValueError(f"acknowledgment of {rule} needs a reason a reviewer can check, got {reason!r}")
    ids = [f"{NAG_PACK}::{rule}[{f}]" for f in findings] or [f"{NAG_PACK}::{rule}"]
    Validations.of(scope).acknowledge(*(Acknowledgment(id=i, reason=reason) for i in ids))
