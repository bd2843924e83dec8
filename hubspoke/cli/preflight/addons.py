"""Preflight rows for what a Compute stack asks EKS and IAM for: its add-ons and its administrators' access entries.

Both fail only when CloudFormation reaches them, the operator add-ons after the HyperPod node waits (up to about
1 h 50 min), and the failure rolls EKS and HyperPod back with them.
"""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import CheckResult, error_code
from hubspoke.cli.checks import pages as _pages
from hubspoke.cli.preflight.checks import region_path, version_key
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.eks_addons import ADDONS, addon_version

ADDON_CHECK = "eks add-on versions"
ADMIN_CHECK = "administrators exist"

# An IAM role or user ARN (IAM User Guide, "IAM identifiers", ARNs): arn:<partition>:iam::<account>:role/<path/>name.
_PRINCIPAL = re.compile(r"arn:[a-z-]+:iam::(\d{12}):(role|user)/(?:[^/]+/)*([^/]+)")


def _offered(eks: Any, addon: str, kubernetes_version: str | None) -> dict[str, set[str]]:
    """Each version of `addon` EKS lists -> the Kubernetes versions it is compatible with (every page).

    EKS DescribeAddonVersions (botocore eks 2017-11-01): addons[].addonVersions[].compatibilities[].clusterVersion;
    kubernetesVersion and addonName are optional filters, and the operation is paginated (nextToken).
    """
    params: dict[str, str] = {"addonName": addon}
    if kubernetes_version:
        params["kubernetesVersion"] = kubernetes_version
    found: dict[str, set[str]] = {}
    for info in _pages(eks, "describe_addon_versions", "addons", **params):
        if info.get("addonName") != addon:
            continue
        for v in info.get("addonVersions", []):
            clusters = {str(c.get("clusterVersion")) for c in v.get("compatibilities", [])}
            found.setdefault(str(v["addonVersion"]), set()).update(clusters)
    return found


def check_addon_versions(eks: Any, *, config: HubSpokeConfig, region: RegionConfig) -> list[CheckResult]:
    """Every add-on the Compute stack installs (hubspoke/eks_addons.py ADDONS) is offered for the configured version.

    A pinned add-on needs its pin among the versions compatible with that Kubernetes version; an unpinned one
    (EKS installs its default for the cluster's version: AWS::EKS::Addon AddonVersion is optional) needs any.
    """
    name, wanted = region.region, region.compute.kubernetes_version
    field = f"{region_path(config, region)}.compute.kubernetes_version"
    rows = []
    for addon in ADDONS:
        pin = addon_version(addon, wanted)
        offered = {v for v, clusters in _offered(eks, addon, wanted).items() if wanted in clusters}
        newest = sorted(offered, key=version_key, reverse=True)
        listing = (
            f"`aws eks describe-addon-versions --addon-name {addon} --kubernetes-version {wanted} "
            f"--region {name}` lists them"
        )
        if pin is not None and pin in offered:
            rows.append(CheckResult(name, ADDON_CHECK, "pass", f"{addon} {pin} is offered for {wanted}"))
        elif pin is not None:
            rows.append(
                CheckResult(
                    name,
                    ADDON_CHECK,
                    "fail",
                    f"{addon} {pin} (pinned in hubspoke/eks_addons.py) is not offered for Kubernetes {wanted} in "
                    f"{name}; EKS offers {', '.join(newest[:3]) or 'no version of it'}",
                    f"pin one EKS offers in hubspoke/eks_addons.py (VERSIONED['{wanted}']['{addon}']), or {listing}",
                )
            )
        elif offered:
            rows.append(
                CheckResult(
                    name,
                    ADDON_CHECK,
                    "pass",
                    f"{addon} (EKS's default, not pinned) is offered for {wanted}: {len(offered)} version(s), "
                    f"newest {newest[0]}",
                )
            )
        else:
            # Which Kubernetes versions it is offered for: the same call without the version filter.
            elsewhere = {c for clusters in _offered(eks, addon, None).values() for c in clusters}
            supported = sorted((c for c in elsewhere if version_key(c)), key=version_key)
            rows.append(
                CheckResult(
                    name,
                    ADDON_CHECK,
                    "fail",
                    f"{addon} is not offered for Kubernetes {wanted} in {name} (EKS offers it for "
                    f"{', '.join(supported) or 'no Kubernetes version here'}): the Compute stack installs it "
                    "and would fail after the node waits",
                    f"set {field} to a version it is offered for"
                    + (f" ({supported[-1]} is the newest)" if supported else "")
                    + f", or wait until EKS offers it for {wanted}",
                )
            )
    return rows


def check_administrators(iam: Any, *, config: HubSpokeConfig, region: RegionConfig) -> list[CheckResult]:
    """Every access.administrators principal exists: EKS's access entry names "one, and only one, existing IAM
    principal" (EKS User Guide, "Create access entries"), so a missing one fails the Compute stack.

    IAM GetRole / GetUser take the name without its path (botocore iam 2010-05-08, GetRoleRequest.RoleName) and
    answer NoSuchEntity (404) when there is none; the ARN they return holds the path, which must match too.
    Principals in another account are allowed for STANDARD entries (same page) but these credentials cannot read
    them: warn.
    """
    name, account = region.region, config.account_of(region)
    rows = []
    for arn in config.access.administrators:
        match = _PRINCIPAL.fullmatch(arn)
        if match is None:  # validation already refuses other forms (hubspoke.config.schema.PrincipalArn)
            continue
        owner, kind, principal = match.groups()
        if owner != account:
            rows.append(
                CheckResult(
                    name,
                    ADMIN_CHECK,
                    "not checked",
                    f"{arn} is in account {owner}, not {account}: out of these credentials' reach",
                    f"check it exists with credentials for {owner}: `aws iam get-{kind} --{kind}-name {principal}`",
                )
            )
            continue
        try:
            found = (
                iam.get_role(RoleName=principal)["Role"]
                if kind == "role"
                else iam.get_user(UserName=principal)["User"]
            )
        except ClientError as exc:
            if error_code(exc) != "NoSuchEntity":
                raise
            found = None
        if found is not None and found.get("Arn") == arn:
            rows.append(CheckResult(name, ADMIN_CHECK, "pass", f"{arn} exists"))
            continue
        other = f" (a {kind} of that name exists as {found['Arn']})" if found else ""
        rows.append(
            CheckResult(
                name,
                ADMIN_CHECK,
                "fail",
                f"{arn} does not exist in account {account}{other}: EKS refuses an access entry for it",
                f"create the {kind}, or fix access.administrators (`aws iam get-{kind} --{kind}-name {principal} "
                f"--query {kind.capitalize()}.Arn` prints an existing one's ARN)",
            )
        )
    return rows
