"""`hubspoke preflight`'s EKS add-on and administrator rows, and paginated reads, against the preflight test world.

Add-on names are written as the EKS User Guide ("Amazon EKS add-ons") and the SageMaker developer guide
("Installing the training operator") name them, not read from hubspoke/eks_addons.py (issue 45).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hubspoke.config import load
from tests.cli.preflight_world import (
    Unsupported,
    World,
    preflight_config,
    rows_of,
    run_checks,
)
from tests.conftest import ROOT

# What a Compute stack installs, by the names AWS's guides give them.
EVERY_ADDON = {
    "vpc-cni",
    "kube-proxy",
    "coredns",
    "eks-pod-identity-agent",
    "cert-manager",
    "amazon-sagemaker-hyperpod-training-operator",
    "amazon-cloudwatch-observability",
}
OPERATOR = "amazon-sagemaker-hyperpod-training-operator"
# The checks these tests read, each run alone (only_checks).
ADDONS, ADMINS = {"eks add-on versions"}, {"administrators exist"}


def test_a_pinned_addon_version_eks_does_not_offer_fails_before_the_deploy(world: World) -> None:
    """EKS DescribeAddonVersions lists each add-on's versions with the Kubernetes versions they are compatible
    with (botocore eks 2017-11-01: addons[].addonVersions[].compatibilities[].clusterVersion). An account whose
    EKS offers amazon-cloudwatch-observability only up to v6.3.0 for 1.33 cannot create the pinned
    v6.4.0-eksbuild.1: preflight says so, with the versions offered; every other add-on passes."""
    world.deployed_dev()
    offered = Unsupported(world.clients).addon_versions
    offered["amazon-cloudwatch-observability"] = {
        "v6.2.0-eksbuild.1": ["1.33"],
        "v6.3.0-eksbuild.9": ["1.33"],
        "v6.3.0-eksbuild.10": ["1.33"],
    }
    clients = Unsupported(world.clients, addon_versions=offered)
    results = run_checks(ROOT / "config" / "dev.yaml", clients, only={"us-west-2"}, checks=ADDONS)
    found = rows_of(results, "eks add-on versions", "us-west-2")
    (failed,) = [r for r in found if r.status == "fail"]
    assert failed.detail.startswith(
        "amazon-cloudwatch-observability v6.4.0-eksbuild.1 (pinned in hubspoke/eks_addons.py) is not offered for "
        "Kubernetes 1.33 in us-west-2; EKS offers "
    )
    # Newest first by number, not by text (eksbuild.10 is newer than eksbuild.9).
    assert "EKS offers v6.3.0-eksbuild.10, v6.3.0-eksbuild.9, v6.2.0-eksbuild.1" in failed.detail
    assert failed.fix == (
        "pin one EKS offers in hubspoke/eks_addons.py (VERSIONED['1.33']['amazon-cloudwatch-observability']), or "
        "`aws eks describe-addon-versions --addon-name amazon-cloudwatch-observability --kubernetes-version 1.33 "
        "--region us-west-2` lists them"
    )
    passed = {r.detail.split()[0] for r in found if r.status == "pass"}
    assert passed == EVERY_ADDON - {"amazon-cloudwatch-observability"}
    asked = [p for op, p in clients.asked if op == "DescribeAddonVersions"]
    assert all(p["kubernetesVersion"] == "1.33" for p in asked)


def test_the_assumed_vpc_cni_pin_of_the_default_version_is_checked_before_the_deploy(
    world: World, tmp_path: Path
) -> None:
    """No stored EKS table gives a vpc-cni build for Kubernetes 1.35 (the table stops at 1.33), so its pin is
    ASSUMED (hubspoke/eks_addons.py). An account whose EKS offers vpc-cni for 1.35 only from v1.21.0 fails the
    row before anything is created, and the config that names no version is asked about 1.35, the default."""
    world.deployed_dev()
    offered = Unsupported(world.clients).addon_versions
    offered["vpc-cni"] = {"v1.21.0-eksbuild.2": ["1.35"], "v1.20.1-eksbuild.3": ["1.33", "1.32"]}
    clients = Unsupported(world.clients, addon_versions=offered)
    results = run_checks(preflight_config(tmp_path), clients, only={"us-east-2"}, checks=ADDONS)
    found = rows_of(results, "eks add-on versions", "us-east-2")
    (failed,) = [r for r in found if r.status == "fail"]
    assert "vpc-cni v1.20.1-eksbuild.3" in failed.detail and "v1.21.0-eksbuild.2" in failed.detail
    assert "VERSIONED['1.35']['vpc-cni']" in failed.fix
    assert {r.detail.split()[0] for r in found if r.status == "pass"} == EVERY_ADDON - {"vpc-cni"}
    asked = [p for op, p in clients.asked if op == "DescribeAddonVersions"]
    assert asked and all(p.get("kubernetesVersion") == "1.35" for p in asked)


def test_an_unpinned_addon_eks_does_not_offer_for_the_version_fails_with_the_versions_it_is_offered_for(
    world: World, tmp_path: Path
) -> None:
    """The training operator is left to EKS's default (AWS::EKS::Addon AddonVersion is optional), and AWS's
    pages disagree on which Kubernetes versions it supports (issue 41). An account whose EKS offers it only up to
    1.34 cannot install it on a 1.35 cluster: the row fails, naming the versions it is offered for (the same call
    without kubernetesVersion) and the config field to change, instead of skipping an add-on without a pin."""
    world.deployed_dev()
    offered = Unsupported(world.clients).addon_versions
    offered[OPERATOR] = {"v1.1.0-eksbuild.1": ["1.33", "1.32"], "v1.2.0-eksbuild.1": ["1.34", "1.33"]}
    clients = Unsupported(world.clients, addon_versions=offered)
    results = run_checks(preflight_config(tmp_path), clients, only={"us-east-2"}, checks=ADDONS)
    found = rows_of(results, "eks add-on versions", "us-east-2")
    (failed,) = [r for r in found if r.status == "fail"]
    assert failed.detail.startswith(f"{OPERATOR} is not offered for Kubernetes 1.35 in us-east-2")
    assert "offers it for 1.32, 1.33, 1.34" in failed.detail
    assert failed.detail.endswith("): the Compute stack installs it and would fail after the node waits")
    assert failed.fix == (
        "set hub.compute.kubernetes_version to a version it is offered for (1.34 is the newest), or wait until "
        "EKS offers it for 1.35"
    )
    # An add-on left to EKS's default that is offered: how many builds, and the newest.
    (agent,) = [r for r in found if r.detail.startswith("eks-pod-identity-agent ")]
    assert agent.detail == (
        "eks-pod-identity-agent (EKS's default, not pinned) is offered for 1.35: 1 version(s), newest "
        "v1.3.9-eksbuild.5"
    )
    # Every add-on has a row: none is skipped for want of a pin.
    assert {r.detail.split()[0] for r in found} == EVERY_ADDON


def test_an_addon_eks_offers_for_no_version_says_so(world: World, tmp_path: Path) -> None:
    """DescribeAddonVersions answers an empty `addons` list for a name it does not offer in the Region."""
    world.deployed_dev()
    offered = Unsupported(world.clients).addon_versions
    del offered["cert-manager"]
    results = run_checks(
        preflight_config(tmp_path),
        Unsupported(world.clients, addon_versions=offered),
        only={"us-east-2"},
        checks=ADDONS,
    )
    (failed,) = [r for r in rows_of(results, "eks add-on versions") if r.status == "fail"]
    assert (
        "cert-manager is not offered" in failed.detail
        and "(EKS offers it for no Kubernetes version here)" in failed.detail
    )
    assert failed.fix == (
        "set hub.compute.kubernetes_version to a version it is offered for, or wait until EKS offers it for 1.35"
    )


def test_a_pinned_addon_with_no_build_for_the_version_says_eks_offers_none(
    world: World, tmp_path: Path
) -> None:
    """An account whose EKS lists kube-proxy builds only for 1.34 offers none for a 1.35 cluster (each build's
    compatibilities name the Kubernetes versions it runs on, botocore eks 2017-11-01): the row says so."""
    world.deployed_dev()
    offered = Unsupported(world.clients).addon_versions
    offered["kube-proxy"] = {"v1.34.6-eksbuild.13": ["1.34"]}
    results = run_checks(
        preflight_config(tmp_path),
        Unsupported(world.clients, addon_versions=offered),
        only={"us-east-2"},
        checks=ADDONS,
    )
    (failed,) = [r for r in rows_of(results, "eks add-on versions") if r.status == "fail"]
    assert failed.detail.endswith(
        " is not offered for Kubernetes 1.35 in us-east-2; EKS offers no version of it"
    )


def _admins(tmp_path: Path, *arns: str) -> Path:
    return preflight_config(tmp_path, access={"administrators": list(arns)})


def test_every_administrator_that_exists_passes(world: World, tmp_path: Path) -> None:
    """IAM GetRole and GetUser take the name without its path (IAM API reference, GetRole: RoleName); the role at
    a path is found by its last segment and its ARN, which carries the path, matches the configured one."""
    world.deployed_dev()
    iam = world.clients("iam", "us-east-1")
    iam.create_role(RoleName="ClusterAdmins", Path="/teams/ml/", AssumeRolePolicyDocument="{}")
    iam.create_user(UserName="alice")
    path = _admins(
        tmp_path,
        "arn:aws:iam::123456789012:role/teams/ml/ClusterAdmins",
        "arn:aws:iam::123456789012:user/alice",
    )
    rows = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-east-2"}, checks=ADMINS),
        "administrators exist",
    )
    assert [r.status for r in rows] == ["pass", "pass"], rows


def test_a_missing_administrator_fails_before_the_deploy(world: World, tmp_path: Path) -> None:
    """EKS User Guide, "Create access entries": an access entry names "one, and only one, existing IAM principal";
    IAM answers NoSuchEntity (404) for a name it does not hold (botocore iam 2010-05-08, GetRole errors)."""
    world.deployed_dev()
    path = _admins(tmp_path, "arn:aws:iam::123456789012:role/Nobody", "arn:aws:iam::123456789012:user/ghost")
    rows = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-east-2"}, checks=ADMINS),
        "administrators exist",
    )
    assert [r.status for r in rows] == ["fail", "fail"], rows
    assert rows[0].detail == (
        "arn:aws:iam::123456789012:role/Nobody does not exist in account 123456789012: EKS refuses an access entry "
        "for it"
    )
    assert rows[0].fix == (
        "create the role, or fix access.administrators (`aws iam get-role --role-name Nobody --query Role.Arn` "
        "prints an existing one's ARN)"
    )
    assert "aws iam get-user --user-name ghost" in rows[1].fix


def test_a_role_of_that_name_at_another_path_is_not_the_administrator(world: World, tmp_path: Path) -> None:
    """An access entry names the role's ARN, path included (EKS User Guide, "Create access entries"): a role
    named Admins at /ops/ is not arn:...:role/Admins."""
    world.deployed_dev()
    world.clients("iam", "us-east-1").create_role(
        RoleName="Admins", Path="/ops/", AssumeRolePolicyDocument="{}"
    )
    path = _admins(tmp_path, "arn:aws:iam::123456789012:role/Admins")
    (row,) = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-east-2"}, checks=ADMINS),
        "administrators exist",
    )
    assert row.status == "fail" and row.detail == (
        "arn:aws:iam::123456789012:role/Admins does not exist in account 123456789012 (a role of that name exists "
        "as arn:aws:iam::123456789012:role/ops/Admins): EKS refuses an access entry for it"
    )


def test_an_administrator_in_another_account_is_named_not_failed(world: World, tmp_path: Path) -> None:
    """STANDARD access entries may name a principal in another account (same page); these credentials cannot
    read that account's IAM, so the row warns with the command to run there."""
    world.deployed_dev()
    # deployed_dev() created the second, in this account: it is still checked after the first.
    path = _admins(
        tmp_path,
        "arn:aws:iam::210987654321:role/Admins",
        "arn:aws:iam::123456789012:role/hubspoke-dev-cluster-admins",
    )
    foreign, own = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-east-2"}, checks=ADMINS),
        "administrators exist",
    )
    assert foreign.status == "not checked" and foreign.detail == (
        "arn:aws:iam::210987654321:role/Admins is in account 210987654321, not 123456789012: out of these "
        "credentials' reach"
    )
    assert (
        foreign.fix
        == "check it exists with credentials for 210987654321: `aws iam get-role --role-name Admins`"
    )
    assert own.status == "pass"


@pytest.mark.parametrize("page", [50, 7])
def test_kms_aliases_are_read_past_the_first_page(world: World, tmp_path: Path, page: int) -> None:
    """KMS ListAliases answers at most 50 aliases when asked for no Limit (KMS API reference, ListAliases,
    Limit); in an account with 60 aliases of its own, alias/aws/s3 is on a later page. A package encrypted with
    the AWS managed key must still be recognized as aws/s3 (a warning), not failed as a customer key."""
    world.deployed_dev()
    kms = world.clients("kms", "us-east-2")
    for n in range(60):
        key = kms.create_key()["KeyMetadata"]["KeyId"]
        kms.create_alias(AliasName=f"alias/team-{n:02d}", TargetKeyId=key)
    every = kms.list_aliases()["Aliases"]  # moto answers all at once
    first = [a["AliasName"] for a in every[:50]]
    assert "alias/aws/s3" not in first  # the case this test is about
    target = next(a["TargetKeyId"] for a in every if a["AliasName"] == "alias/aws/s3")
    config = load(ROOT / "config" / "dev.yaml").config
    package = config.hub.storage.qumulo_core
    assert package is not None
    world.stage(
        package.package_uri,
        "us-east-2",
        ServerSideEncryption="aws:kms",
        SSEKMSKeyId=f"arn:aws:kms:us-east-2:123456789012:key/{target}",
    )
    clients = Unsupported(world.clients, kms_alias_page=page)
    (row,) = rows_of(
        run_checks(ROOT / "config" / "dev.yaml", clients, only={"us-east-2"}, checks={"qumulo core package"}),
        "qumulo core package",
    )
    assert row.status == "warn" and "aws/s3" in row.detail, row
    assert any("Marker" in params for op, params in clients.asked if op == "ListAliases")
