"""`hubspoke preflight`: every check's pass and fail path against moto, in-process and as a loopback server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from hubspoke.cli.main import main
from hubspoke.cli.preflight import run_preflight, session_clients
from hubspoke.cli.preflight.checks import CLI_BOOTSTRAP_VERSION, check_bootstrap
from hubspoke.config import HubSpokeConfig, load
from hubspoke.names import eks_cluster_name
from tests.cli.preflight_world import (
    Unsupported,
    World,
    eks_version,
    fake_path,
    isolate_from_real_aws,
    only_checks,
    preflight_config,
    rows_of,
    run_checks,
)
from tests.fakes.loopback import closed_port

ROOT = Path(__file__).resolve().parents[2]
# The peering quota's check, with the CIDR check that finds the hub VPC it reads (only_checks).
PEERING = {"cidr overlap", "peering quota"}


def test_healthy_deployed_environment_passes_every_check(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.deployed_dev()
    monkeypatch.setenv("PATH", fake_path(tmp_path) + os.pathsep + os.environ["PATH"])
    results = run_checks(ROOT / "config" / "dev.yaml", Unsupported(world.clients))
    assert [r for r in results if r.status != "pass"] == []
    checks = {(r.region, r.check) for r in results}
    for region in ("us-east-2", "us-west-2"):
        for check in (
            "account",
            "cdk bootstrap",
            "cidr overlap",
            "az ids",
            "accelerator az",
            "sagemaker quota",
            "kubernetes version",
            "security group rules",
        ):
            assert (region, check) in checks
    assert ("us-east-2", "peering quota") in checks
    assert ("us-east-2", "local tools") in checks and ("us-west-2", "local tools") not in checks
    assert ("us-west-2", "lambda concurrency") in checks  # the spoke runs the canary
    # Our own VPCs carry the environment's tags: recognized, not reported as clashes.
    assert any("already deployed" in r.detail for r in rows_of(results, "cidr overlap"))


def test_wrong_account_fails_and_skips_that_regions_checks(world: World, tmp_path: Path) -> None:
    world.deployed_dev()
    results = run_checks(preflight_config(tmp_path, account="111111111111"), Unsupported(world.clients))
    account = rows_of(results, "account")
    assert {r.status for r in account} == {"fail"}
    for row in account:
        assert row.detail == "credentials are for account 123456789012, the config says 111111111111"
        assert (
            row.fix
            == "use credentials for 111111111111 (AWS_PROFILE or --profile), or fix `account` in the config"
        )
    assert not rows_of(results, "sagemaker quota")
    assert all(r.status == "not checked" for r in results if r.check != "account")
    # The rows it skips are named as the report names them when they run.
    skipped = {(r.region, r.check) for r in results if r.status == "not checked"}
    assert skipped == {
        (n, c) for n in ("us-east-2", "us-west-2") for c in ("cdk bootstrap", "cidr overlap", "az ids")
    }


# Written here, not imported from hubspoke.cli.preflight.checks. The oldest bootstrap version the templates
# deploy on: aws-cdk-lib's DefaultStackSynthesizer puts a CheckBootstrapVersion rule in every template that
# refuses versions 1 to 5 ("CDK bootstrap stack version 6 required", in every synthesized template's Rules).
TEMPLATES_NEED = 6
# The version the pinned CDK CLI bootstraps (package.json, aws-cdk 2.1148.1: lib/api/bootstrap/
# bootstrap-template.yaml, CdkBootstrapVersion Value '33').
CLI_SHIPS = 33


@pytest.mark.parametrize(
    ("version", "status"),
    [
        (None, "warn"),
        (str(TEMPLATES_NEED - 1), "warn"),
        (str(TEMPLATES_NEED), "warn"),
        (str(CLI_SHIPS - 1), "warn"),
        (str(CLI_SHIPS), "pass"),
    ],
)
def test_bootstrap_missing_or_old(world: World, tmp_path: Path, version: str | None, status: str) -> None:
    """Both boundaries from both sides: below 6 the templates' own rule would refuse the deploy, but in the
    environment's own account `hubspoke deploy` bootstraps first (docs/getting-started.md), so it warns and says
    so; from 6 they deploy, and below the CLI's 33 a re-bootstrap only brings fixes (warn); 33 passes."""
    world.bootstrap("us-east-2")
    if version:
        world.bootstrap("us-west-2", version)
    results = run_checks(preflight_config(tmp_path), Unsupported(world.clients), checks={"cdk bootstrap"})
    (row,) = rows_of(results, "cdk bootstrap", "us-west-2")
    assert row.status == status
    if status != "pass":
        assert row.fix.startswith("npx cdk bootstrap aws://123456789012/us-west-2")
    if version is None or int(version) < TEMPLATES_NEED:
        assert "`hubspoke deploy` bootstraps it" in row.detail
    if version and int(version) < TEMPLATES_NEED:
        assert row.detail.startswith(f"version {version}; the templates need 6 or newer: ")
    elif version and status == "warn":
        assert row.detail == f"version {version} works; the pinned CDK CLI ships 33"
        assert row.fix == "npx cdk bootstrap aws://123456789012/us-west-2 (upgrades in place)"
    elif version:
        assert row.detail == "version 33"
    assert rows_of(results, "cdk bootstrap", "us-east-2")[0].status == "pass"


class _NotBootstrapped:
    """SSM with no bootstrap parameter: GetParameter answers ParameterNotFound (SSM API Reference, GetParameter)."""

    def get_parameter(self, Name: str) -> Any:
        raise ClientError({"Error": {"Code": "ParameterNotFound", "Message": Name}}, "GetParameter")


def test_bootstrap_of_another_account_still_fails() -> None:
    """deploy refuses credentials of any account but the environment's, so it cannot bootstrap another account's
    pair (cli/deploy.py prints the command for that account's credentials): preflight keeps that a fail."""
    row = check_bootstrap(
        _NotBootstrapped(), region="us-west-2", account="210987654321", deployer="123456789012"
    )
    assert row.status == "fail" and "credentials for 210987654321" in row.detail
    assert row.fix == "npx cdk bootstrap aws://210987654321/us-west-2 --profile <a profile of 210987654321>"
    own = check_bootstrap(
        _NotBootstrapped(), region="us-west-2", account="123456789012", deployer="123456789012"
    )
    assert own.status == "warn" and own.fix == "npx cdk bootstrap aws://123456789012/us-west-2"


def test_foreign_vpc_overlapping_a_configured_cidr_fails_with_a_free_block(
    world: World, tmp_path: Path
) -> None:
    world.deployed_dev()
    world.vpc("us-west-2", "10.20.128.0/17", name="legacy")
    results = run_checks(preflight_config(tmp_path), Unsupported(world.clients), checks={"cidr overlap"})
    (row,) = [r for r in rows_of(results, "cidr overlap", "us-west-2") if r.status == "fail"]
    assert "legacy" in row.detail and "spokes[0].cidr" in row.detail
    suggestion = row.fix.rsplit("e.g. ", 1)[1]
    import ipaddress

    taken = [
        ipaddress.IPv4Network(c) for c in ("10.10.0.0/16", "10.20.0.0/16", "10.20.128.0/17", "172.31.0.0/16")
    ]
    assert not any(ipaddress.IPv4Network(suggestion).overlaps(t) for t in taken)


def test_a_foreign_vpc_overlapping_a_secondary_cidr_names_that_field(world: World, tmp_path: Path) -> None:
    """A clash with the spoke's first secondary block names `spokes[0].secondary_cidrs[0]`, the field to change."""
    world.deployed_dev()
    world.vpc("us-west-2", "10.21.0.0/24", name="legacy")
    spoke = {
        "region": "us-west-2",
        "cidr": "10.20.0.0/16",
        "secondary_cidrs": ["10.21.0.0/20", "10.22.0.0/20"],
    }
    results = run_checks(
        preflight_config(tmp_path, spokes=[spoke]),
        Unsupported(world.clients),
        only={"us-west-2"},
        checks={"cidr overlap"},
    )
    (row,) = [r for r in rows_of(results, "cidr overlap", "us-west-2") if r.status == "fail"]
    assert "overlaps spokes[0].secondary_cidrs[0] 10.21.0.0/20" in row.detail
    assert row.fix.startswith("set spokes[0].secondary_cidrs[0] to a free block, e.g. ")


def test_a_disassociated_cidr_block_of_a_foreign_vpc_is_not_a_clash(world: World, tmp_path: Path) -> None:
    """DescribeVpcs keeps a disassociated block in CidrBlockAssociationSet with CidrBlockState.State
    "disassociated" (botocore ec2 2016-11-15 model, VpcCidrBlockStateCode: associating, associated,
    disassociating, disassociated, failing, failed): the VPC no longer holds that range, so it clashes with nothing.
    Amazon VPC User Guide, "VPC CIDR blocks": a secondary block from 10.0.0.0/8 is allowed beside a 10.x primary."""
    world.deployed_dev()
    vpc = world.vpc("us-west-2", "10.30.0.0/16", name="legacy")
    ec2 = world.clients("ec2", "us-west-2")
    association = ec2.associate_vpc_cidr_block(VpcId=vpc, CidrBlock="10.20.128.0/17")
    path = preflight_config(tmp_path)
    assert [
        r.status
        for r in rows_of(
            run_checks(path, Unsupported(world.clients), only={"us-west-2"}, checks={"cidr overlap"}),
            "cidr overlap",
            "us-west-2",
        )
    ] == ["fail"]
    ec2.disassociate_vpc_cidr_block(AssociationId=association["CidrBlockAssociation"]["AssociationId"])
    (row,) = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-west-2"}, checks={"cidr overlap"}),
        "cidr overlap",
        "us-west-2",
    )
    assert row.status == "pass", row.detail


def test_foreign_vpc_overlapping_only_a_peer_cidr_warns(world: World, tmp_path: Path) -> None:
    world.deployed_dev()
    unnamed = world.vpc("us-west-2", "10.10.0.0/24")
    results = run_checks(preflight_config(tmp_path), Unsupported(world.clients), checks={"cidr overlap"})
    rows = rows_of(results, "cidr overlap", "us-west-2")
    assert [r.status for r in rows] == ["warn"]
    # A VPC without a Name tag is named by its ID alone.
    assert rows[0].detail == f"existing VPC {unnamed} 10.10.0.0/24 overlaps peer CIDR 10.10.0.0/16"
    assert rows[0].fix == "harmless unless that VPC is ever routed to this one (TGW, peering); else renumber"


def test_hub_vpc_full_of_foreign_peerings_fails_the_quota(world: World, tmp_path: Path) -> None:
    world.deployed_dev()
    hub = next(
        v["VpcId"]
        for v in world.clients("ec2", "us-east-2").describe_vpcs()["Vpcs"]
        if v["CidrBlock"] == "10.10.0.0/16"
    )
    # AWS General Reference, "Amazon Virtual Private Cloud endpoints and quotas": 'Active VPC peering connections
    # per VPC' (L-7E9ECCDB) is 50 by default, at most 125; moto answers that default: 50 foreign + 1 spoke exceed it.
    for n in range(50):
        world.peer("us-east-2", hub, world.vpc("us-east-2", f"10.{100 + n}.0.0/16"))
    results = run_checks(preflight_config(tmp_path), Unsupported(world.clients), checks=PEERING)
    (row,) = rows_of(results, "peering quota")
    assert row.status == "fail"
    # The spoke's own peering (the spoke requested it, the hub accepted) is not one of the 50 foreign ones.
    assert row.detail.startswith(
        "51 active peering(s) needed on the hub VPC (50 existing, 1 spoke(s)); quota 50 ("
    )
    # Written here, not imported from production: a typo in the code preflight asks for must fail.
    assert "'Active VPC peering connections per VPC' (L-7E9ECCDB)" in row.fix


def test_unknown_az_id_fails(world: World, tmp_path: Path) -> None:
    world.deployed_dev()
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "az_ids": ["usw2-az8", "usw2-az9"]}
    results = run_checks(
        preflight_config(tmp_path, spokes=[spoke]), Unsupported(world.clients), checks={"az ids"}
    )
    (row,) = rows_of(results, "az ids", "us-west-2")
    assert row.status == "fail" and row.detail == "AZ ID(s) usw2-az8, usw2-az9 do not exist in us-west-2"
    assert row.fix.startswith("use AZ IDs from usw2-az1, ") and row.fix.endswith(
        " in spokes[0].az_ids / spokes[0].accelerator_az_id"
    )


def test_accelerator_az_without_p5_fails_and_names_an_az_that_has_it(world: World, tmp_path: Path) -> None:
    world.bootstrap("us-east-2")
    world.bootstrap("ap-northeast-1")
    # In moto's offering data (copied from AWS) apne1-az2 has no p5.48xlarge while apne1-az1 and az4 do.
    spoke = {"region": "ap-northeast-1", "cidr": "10.30.0.0/16", "accelerator_az_id": "apne1-az2"}
    results = run_checks(
        preflight_config(tmp_path, spokes=[spoke]), Unsupported(world.clients), checks={"az ids"}
    )
    (row,) = rows_of(results, "accelerator az", "ap-northeast-1")
    assert row.status == "fail" and "apne1-az2" in row.detail
    assert row.detail == "apne1-az2 does not offer p5.48xlarge"
    assert row.fix.startswith("set spokes[0].accelerator_az_id to one of ")
    offering_azs = row.fix.split("one of ", 1)[1].split(", ")
    assert offering_azs == ["apne1-az1", "apne1-az4"]
    assert rows_of(results, "accelerator az", "us-east-2")[0].detail == "use2-az1 offers p5.48xlarge"


def _with_version(tmp_path: Path, version: str) -> HubSpokeConfig:
    """A hub with compute at `version`. Validation refuses versions outside the kubectl layer's skew (1.33 to
    1.35), so one outside it is set on the loaded config: preflight's own rows must still judge it, for the day
    the layer and HyperPod's list part ways."""
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"kubernetes_version": "1.33"}}
    config = load(preflight_config(tmp_path, hub=hub)).config
    compute = config.hub.compute.model_copy(update={"kubernetes_version": version})
    return config.model_copy(update={"hub": config.hub.model_copy(update={"compute": compute})})


def test_kubernetes_version_in_extended_support_that_hyperpod_does_not_list_says_both(
    world: World, tmp_path: Path
) -> None:
    """Extended support (EKS: billed extra) and HyperPod's list (its EKS prerequisites: 1.30 to 1.35) are
    separate facts; a version with both problems gets both in one warning, not only the first found."""
    world.bootstrap("us-east-2")
    versions = [eks_version("1.27", "EXTENDED_SUPPORT"), eks_version("1.33")]
    with only_checks({"kubernetes version"}):
        results = run_preflight(
            _with_version(tmp_path, "1.27"),
            Unsupported(world.clients, eks_versions=versions),
            only={"us-east-2"},
        )
    (row,) = rows_of(results, "kubernetes version")
    assert row.status == "warn"
    assert (
        "1.27 is in extended support (billed extra per cluster hour); HyperPod's EKS prerequisites"
        in row.detail
    )
    # Both ways out, in the same order: the newest version in standard support, then HyperPod's newest.
    assert row.fix.startswith(
        "set hub.compute.kubernetes_version to 1.33; set hub.compute.kubernetes_version to 1.35, or check"
    )


def test_a_version_listed_without_a_support_status_is_named_as_listed(world: World, tmp_path: Path) -> None:
    """versionStatus and the deprecated status are both optional in ClusterVersionInformation (botocore eks
    2017-11-01): a version EKS lists with neither is offered, and the warning says "listed", not a status."""
    world.bootstrap("us-east-2")
    with only_checks({"kubernetes version"}):
        results = run_preflight(
            _with_version(tmp_path, "1.36"),
            Unsupported(world.clients, eks_versions=[eks_version("1.36", None), eks_version("1.35")]),
            only={"us-east-2"},
        )
    (row,) = rows_of(results, "kubernetes version")
    assert row.status == "warn" and row.detail.startswith("EKS offers 1.36 (listed); HyperPod"), row.detail


def test_extended_support_with_no_standard_version_offered_says_to_upgrade_later(
    world: World, tmp_path: Path
) -> None:
    """A Region whose EKS lists no version in standard support (VersionStatus, botocore eks 2017-11-01) has no
    version to name: the fix says to upgrade once a newer one is offered, not an empty "set ... to"."""
    world.bootstrap("us-east-2")
    with only_checks({"kubernetes version"}):
        results = run_preflight(
            _with_version(tmp_path, "1.33"),
            Unsupported(world.clients, eks_versions=[eks_version("1.33", "EXTENDED_SUPPORT")]),
            only={"us-east-2"},
        )
    (row,) = rows_of(results, "kubernetes version")
    assert row.status == "warn" and "1.33 is in extended support" in row.detail
    assert row.fix == "upgrade when a newer version is offered"


@pytest.mark.parametrize(
    ("version", "status"),
    [("1.33", "pass"), ("1.35", "pass"), ("1.36", "warn"), ("1.29", "warn"), ("1.27", "warn")],
)
def test_kubernetes_version_hyperpod_does_not_list_warns(
    world: World, tmp_path: Path, version: str, status: str
) -> None:
    """EKS may offer a version HyperPod does not support: the SageMaker developer guide's "Getting started with
    Amazon EKS support in SageMaker HyperPod" lists "1.30, 1.31, 1.32, 1.33, 1.34, and 1.35" (newest stored
    snapshot, read 2026-12-01; older ones began at 1.28); outside it, a warning that names the field."""
    world.bootstrap("us-east-2")
    versions = [eks_version(v) for v in ("1.27", "1.29", "1.33", "1.35", "1.36")]
    with only_checks({"kubernetes version"}):
        results = run_preflight(
            _with_version(tmp_path, version),
            Unsupported(world.clients, eks_versions=versions),
            only={"us-east-2"},
        )
    (row,) = rows_of(results, "kubernetes version")
    assert row.status == status, row.detail
    if status == "pass":
        assert row.detail == f"EKS offers {version} (STANDARD_SUPPORT)"
    if status == "warn":
        # The guide's range, oldest to newest, and the newest as the version to set.
        assert (
            f"HyperPod's EKS prerequisites list only 1.30 to 1.35: CreateCluster may refuse {version}"
            in row.detail
        )
        assert row.fix.startswith(
            "set hub.compute.kubernetes_version to 1.35, or check the SageMaker developer"
        )


@pytest.mark.parametrize(
    ("versions", "status", "undefined"),
    [
        ([eks_version("1.32"), eks_version("1.31")], "fail", False),
        ([eks_version("1.33", "EXTENDED_SUPPORT"), eks_version("1.34")], "warn", False),
        ([eks_version("1.33", "UNSUPPORTED")], "fail", False),
        # Only the deprecated `status` field, whose enum ClusterVersionStatus (botocore eks 2017-11-01 model)
        # spells the states unsupported, standard-support, extended-support.
        ([eks_version("1.33", None, status="unsupported")], "fail", False),
        (
            [
                eks_version("1.33", None, status="extended-support"),
                eks_version("1.34", None, status="standard-support"),
                eks_version("1.31", "EXTENDED_SUPPORT"),
            ],
            "warn",
            False,
        ),
        # Spellings neither enum has are not guessed into a state: a warning names the value.
        ([eks_version("1.33", None, status="Standard-Support"), eks_version("1.34")], "warn", True),
        ([eks_version("1.33", "standard-support"), eks_version("1.34")], "warn", True),
    ],
)
def test_kubernetes_version_offered_by_eks(
    world: World, tmp_path: Path, versions: list[Any], status: str, undefined: bool
) -> None:
    world.bootstrap("us-east-2")
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"kubernetes_version": "1.33"}}
    results = run_checks(
        preflight_config(tmp_path, hub=hub),
        Unsupported(world.clients, eks_versions=versions),
        only={"us-east-2"},
        checks={"kubernetes version"},
    )
    (row,) = rows_of(results, "kubernetes version")
    assert row.status == status
    # Each row says whether the spelling is one the model defines: a mapping lost from the deprecated field
    # would turn a known state into "does not define" and must fail here, not take the early return.
    assert ("does not define" in row.detail) is undefined, row.detail
    if undefined:
        assert row.detail.startswith("EKS lists 1.33 with status ")
        assert row.fix == "check the version's support status in the EKS console before deploying"
        return
    assert "compute.kubernetes_version" in row.fix
    if status == "warn":
        assert row.fix.endswith("to 1.34")
    else:
        assert row.detail == "EKS does not offer 1.33 here"
        # The versions in standard support to choose from, else no version to name.
        offered = "1.31, 1.32" if len(versions) == 2 else "the versions EKS lists"
        assert row.fix == f"set hub.compute.kubernetes_version to one of {offered}"


def test_denied_call_inside_a_two_service_check_names_that_calls_permission(
    world: World, tmp_path: Path
) -> None:
    """The peering check reads EC2 then Service Quotas; a denied EC2 call is an ec2: permission (IAM Service
    Authorization Reference: ec2:DescribeVpcPeeringConnections)."""
    world.deployed_dev()
    base = Unsupported(world.clients)

    def clients(service: str, region: str) -> Any:
        client = base(service, region)
        if service == "ec2":

            def deny(model: Any, **_: Any) -> Any:
                if model.name != "DescribeVpcPeeringConnections":
                    return None
                error = {"Code": "UnauthorizedOperation", "Message": "You are not authorized"}
                from botocore.awsrequest import AWSResponse

                return AWSResponse("https://stub", 403, {}, None), {
                    "Error": error,
                    "ResponseMetadata": {"HTTPStatusCode": 403},
                }

            client.meta.events.register("before-call.ec2.DescribeVpcPeeringConnections", deny)
        return client

    results = run_checks(ROOT / "config" / "dev.yaml", clients, only={"us-east-2"}, checks=PEERING)
    (row,) = rows_of(results, "peering quota")
    assert row.status == "fail"
    assert "ec2:DescribeVpcPeeringConnections" in row.fix and "servicequotas" not in row.fix


def test_local_zones_are_never_suggested_as_az_ids(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DescribeAvailabilityZones(AllAvailabilityZones) also lists Local Zones (ZoneType local-zone, IDs such as
    usw2-lax1-az1); a subnet AZ ID in the config must be an Availability Zone, so only those are suggested."""
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend, Zone
    from pydantic import TypeAdapter

    from hubspoke.config.schema import AzId

    zones = RegionsAndZonesBackend.zones
    local = Zone(
        region_name="us-west-2", name="us-west-2-lax-1a", zone_id="usw2-lax1-az1", zone_type="local-zone"
    )
    monkeypatch.setitem(zones, "us-west-2", [*zones["us-west-2"], local])
    world.deployed_dev()
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "az_ids": ["usw2-az1", "usw2-az9"]}
    results = run_checks(
        preflight_config(tmp_path, spokes=[spoke]),
        Unsupported(world.clients),
        only={"us-west-2"},
        checks={"az ids"},
    )
    (row,) = rows_of(results, "az ids", "us-west-2")
    suggested = row.fix.split("from ", 1)[1].split(" in ", 1)[0].split(", ")
    assert row.status == "fail" and "usw2-lax1-az1" not in suggested and "usw2-az1" in suggested
    for az in suggested:
        TypeAdapter(AzId).validate_python(az)  # every suggestion is one the config accepts


def test_denied_call_names_the_permission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_from_real_aws(monkeypatch)
    base = session_clients()

    def clients(service: str, region: str) -> Any:
        client = base(service, region)
        stub = Stubber(client)
        if service == "sts":
            stub.add_response(
                "get_caller_identity",
                {"Account": "123456789012", "Arn": "arn:aws:iam::123456789012:user/u", "UserId": "u"},
            )
        else:
            for _ in range(3):
                stub.add_client_error(
                    "get_parameter", service_error_code="AccessDeniedException", http_status_code=400
                )
        stub.activate()
        return client

    results = run_checks(preflight_config(tmp_path), Unsupported(clients), only={"us-west-2"})
    (row,) = rows_of(results, "cdk bootstrap")
    assert row.status == "fail" and "ssm:GetParameter" in row.fix


def test_cli_without_credentials_says_so_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)
    code = main(["preflight", "--config", str(preflight_config(tmp_path)), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    (row,) = out["results"]
    assert row["check"] == "credentials" and row["status"] == "fail" and "AWS_PROFILE" in row["fix"]


def test_cli_unreachable_endpoint_fails_rows_without_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch)
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    code = main(["preflight", "--config", str(preflight_config(tmp_path)), "--region", "us-west-2"])
    captured = capsys.readouterr()
    assert code == 1
    assert "cannot reach AWS" in captured.out and "Traceback" not in captured.err


def test_cli_help_states_the_exit_codes_the_command_returns(capsys: pytest.CaptureFixture[str]) -> None:
    """The help names the exit codes the tests here observe: 0 with no failing row, 1 with one, 2 for bad input."""
    with pytest.raises(SystemExit) as done:
        main(["preflight", "--help"])
    assert done.value.code == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "Exit 0 when nothing fails, 1 when a check fails, 2 for bad input." in said
    # The services it reads, as AWS spells them.
    names = ("session-manager-plugin, kubectl, docker", "CDK bootstrap, CIDR overlaps", "SageMaker cluster quota",
             "EKS Kubernetes version", "IAM principals")  # fmt: skip
    assert all(name in said for name in names), said


def test_cli_bad_input_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch)
    assert main(["preflight", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: (file): file not found" in capsys.readouterr().err
    assert main(["preflight", "--config", str(preflight_config(tmp_path)), "--region", "eu-west-9"]) == 2
    assert "--region: eu-west-9" in capsys.readouterr().err
    assert (
        main(["preflight", "--config", str(preflight_config(tmp_path)), "--profile", "no-such-profile"]) == 2
    )
    assert "no-such-profile" in capsys.readouterr().err


def test_cli_exit_codes_and_json_against_moto(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    world.deployed_dev()
    monkeypatch.setenv("PATH", fake_path(tmp_path) + os.pathsep + os.environ["PATH"])
    import hubspoke.cli.preflight as preflight

    monkeypatch.setattr(
        preflight, "session_clients", lambda profile=None: Unsupported(session_clients(profile))
    )
    assert main(["preflight", "--config", str(ROOT / "config" / "dev.yaml"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["fail"] == 0 and summary["pass"] > 0
    wrong = str(preflight_config(tmp_path, account="111111111111"))
    assert main(["preflight", "--config", wrong]) == 1
    out = capsys.readouterr().out
    assert "fail" in out and f"Preflight of {wrong} (environment " in out
    # The rows a failed account check skips say "not checked", and the summary counts them.
    assert (
        main(["preflight", "--config", str(preflight_config(tmp_path, account="111111111111")), "--json"])
        == 1
    )
    out = json.loads(capsys.readouterr().out)
    skipped = [r for r in out["results"] if r["detail"] == "the account check did not pass"]
    assert skipped and all(r["status"] == "not checked" for r in skipped)
    assert out["summary"]["not checked"] == len(skipped)


def test_cli_bootstrap_version_matches_the_pinned_cdk_cli() -> None:
    template = ROOT / "node_modules" / "aws-cdk" / "lib" / "api" / "bootstrap" / "bootstrap-template.yaml"
    # `make test` installs the pinned CLI first; a missing file means the CLI moved it: fail, never skip.
    assert template.exists(), (
        f"{template} not found: run `make setup`, or update this path for the pinned CLI"
    )
    text = template.read_text()
    block = text[text.index("  CdkBootstrapVersion:\n    Type: AWS::SSM::Parameter") :]
    value = block.split("Value: '", 1)[1].split("'", 1)[0]
    assert int(value) == CLI_BOOTSTRAP_VERSION, "bump CLI_BOOTSTRAP_VERSION with the CDK CLI pin"


def test_a_region_not_enabled_is_named_and_the_others_are_still_checked(world: World, tmp_path: Path) -> None:
    """STS in a Region the account has not enabled refuses the credentials with InvalidClientTokenId (IAM User
    Guide, "Activating and deactivating AWS STS in an AWS Region"). That Region's row says so and how to enable
    it (Account Management EnableRegion / GetRegionOptStatus, botocore account model); the other Regions are
    still checked. Only when every Region refuses are the credentials reported as bad."""
    world.deployed_dev()
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "af-south-1", "cidr": "10.30.0.0/16", "compute": {"enabled": False}},
    ]
    path = preflight_config(tmp_path, spokes=spokes)
    results = run_checks(path, Unsupported(world.clients, not_enabled=frozenset({"af-south-1"})))
    assert not rows_of(results, "credentials")
    (row,) = rows_of(results, "account", "af-south-1")
    assert row.status == "fail" and "is af-south-1 enabled for account 123456789012?" in row.detail
    # af-south-1 (Cape Town) launched after March 20, 2019: an opt-in Region (Account Management Reference
    # Guide, "Enable or disable AWS Regions in your account").
    assert "opt-in Region" in row.detail and "not an opt-in" not in row.detail
    assert "aws account enable-region --region-name af-south-1" in row.fix
    # The enabled Regions went on to their own checks.
    for region in ("us-east-2", "us-west-2"):
        assert rows_of(results, "account", region)[0].status == "pass"
        assert rows_of(results, "cdk bootstrap", region)[0].status == "pass"
    every = frozenset({"us-east-2", "us-west-2", "af-south-1"})
    (bad,) = run_checks(path, Unsupported(world.clients, not_enabled=every))
    assert bad.check == "credentials" and "us-east-2, us-west-2, af-south-1" in bad.detail


@pytest.mark.parametrize(
    ("error", "status", "says"),
    [
        (None, "pass", "quota 50 (default)"),
        ("NoSuchResourceException", "pass", "quota 50 (assumed default)"),
        ("AccessDeniedException", "fail", "servicequotas:GetAWSDefaultServiceQuota was denied"),
    ],
)
def test_only_a_missing_quota_falls_back_to_the_documented_default(
    world: World, tmp_path: Path, error: str | None, status: str, says: str
) -> None:
    """Without an applied value the AWS default is read (GetAWSDefaultServiceQuota). Its errors (botocore
    service-quotas 2019-06-24): NoSuchResourceException means there is no such quota to read, so the VPC quotas
    page's default of 50 peerings applies; AccessDeniedException (as IllegalArgumentException, ServiceException,
    TooManyRequestsException) means it could not be read, and the row must say which permission is missing
    rather than assume the default."""
    world.deployed_dev()
    errors = {"GetServiceQuota": "NoSuchResourceException"}
    if error:
        errors["GetAWSDefaultServiceQuota"] = error
    results = run_checks(
        preflight_config(tmp_path), Unsupported(world.clients, quota_errors=errors), checks=PEERING
    )
    (row,) = rows_of(results, "peering quota")
    assert row.status == status and says in row.detail, row


@pytest.mark.parametrize(
    ("live", "wanted", "status", "to_set"),
    [("1.33", "1.33", "pass", None), ("1.33", "1.34", "pass", None), ("1.33", "1.35", "fail", "1.34"),
     ("1.35", "1.34", "fail", "1.35")],
)  # fmt: skip
def test_a_deployed_cluster_the_config_would_move_more_than_one_minor_fails_before_the_deploy(
    world: World, tmp_path: Path, live: str, wanted: str, status: str, to_set: str | None
) -> None:
    """EKS updates a control plane "only one minor version at a time" and never down (EKS User Guide, "Update
    existing cluster to new Kubernetes version"). A config that left the version to the former default 1.33
    and now gets 1.35 would fail the deploy at the cluster and roll back: preflight says so, naming the step."""
    world.bootstrap("us-east-2")
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"kubernetes_version": wanted}}
    path = preflight_config(tmp_path, hub=hub)
    config = load(path).config
    world.clients("eks", "us-east-2").create_cluster(
        name=eks_cluster_name(config, config.hub),
        version=live,
        roleArn="arn:aws:iam::123456789012:role/eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    results = run_checks(path, Unsupported(world.clients), only={"us-east-2"}, checks={"deployed kubernetes"})
    (row,) = rows_of(results, "deployed kubernetes")
    assert row.status == status, row.detail
    if status == "pass":
        assert row.detail.endswith(
            "unchanged" if live == wanted else f"this deploy upgrades it to {wanted} (one minor)"
        )
    if to_set:
        assert (
            f"{eks_cluster_name(config, config.hub)} runs Kubernetes {live}, the config says {wanted}: "
            in row.detail
        )
        assert row.fix.endswith(" (docs/runbooks/compute.md, 'Upgrading Kubernetes')")
        assert row.fix.startswith(f"set hub.compute.kubernetes_version to {to_set} ")


def test_no_cluster_yet_is_created_at_the_configured_version(world: World, tmp_path: Path) -> None:
    world.bootstrap("us-east-2")
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"kubernetes_version": "1.35"}}
    config = load(preflight_config(tmp_path, hub=hub)).config
    with only_checks({"deployed kubernetes"}):
        results = run_preflight(config, Unsupported(world.clients), only={"us-east-2"})
    (row,) = rows_of(results, "deployed kubernetes")
    cluster = eks_cluster_name(config, config.hub)
    assert row.status == "pass" and row.detail == f"no cluster {cluster} yet: created at 1.35"
