"""Who the caller is to EKS: the IAM principal behind `sts get-caller-identity`, matched against access entries.

An access entry names an IAM role or user (EKS User Guide, "Create access entries"); a caller who assumed a role
shows up in STS GetCallerIdentity as a session, arn:<partition>:sts::<account>:assumed-role/<role name>/<session>
(IAM User Guide, "IAM identifiers", role session ARNs), which carries the role's name but not its path. So a
session matches an entry for a role of that name in that account, whatever its path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_SESSION = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/.+"
)
_PRINCIPAL = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):iam::(?P<account>\d{12}):(?P<kind>role|user)/(?P<path>.+)"
)


@dataclass(frozen=True)
class Caller:
    """The IAM principal the caller's credentials act as: a role (from a session) or a user."""

    arn: str  # what GetCallerIdentity returned
    account: str
    kind: str  # "role", "user" or "other" (root, federated user: no access entry can name it)
    name: str  # the role's or user's name, without path

    def matches(self, principal_arn: str) -> bool:
        """Whether an access entry for `principal_arn` is this caller's."""
        found = _PRINCIPAL.fullmatch(principal_arn)
        if found is None or self.kind == "other":
            return False
        name = found["path"].rsplit("/", 1)[-1]
        return (found["account"], found["kind"], name) == (self.account, self.kind, self.name)

    def entry(self, principal_arns: Iterable[str]) -> str | None:
        """The first of `principal_arns` that is this caller's, or None."""
        return next((arn for arn in principal_arns if self.matches(arn)), None)


def caller(arn: str) -> Caller:
    """The principal behind a GetCallerIdentity ARN."""
    session = _SESSION.fullmatch(arn)
    if session:
        return Caller(arn, session["account"], "role", session["role"])
    principal = _PRINCIPAL.fullmatch(arn)
    if principal:
        return Caller(arn, principal["account"], principal["kind"], principal["path"].rsplit("/", 1)[-1])
    account = arn.split(":")[4] if arn.count(":") >= 5 else ""
    return Caller(arn, account, "other", "")
