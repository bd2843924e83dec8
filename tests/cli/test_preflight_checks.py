"""`hubspoke preflight`'s rows when AWS answers what the healthy worlds never do: a bootstrap version that is not a
number, a read the credentials may not make, a quota Service Quotas will not show; and the command's help.

Every denied read must become that check's failing row naming the IAM action, never a traceback or a pass.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

from hubspoke.cli.main import main
from hubspoke.cli.preflight import run_preflight
from hubspoke.cli.preflight.checks import check_availability_zones, check_bootstrap, check_peering_quota
from hubspoke.config import load
from tests.cli.preflight_world import (
    Unsupported,
    World,
    eks_version,
    isolate_from_real_aws,
    only_checks,
    preflight_config,
    rows_of,
    run_checks,
)
from tests.conftest import ROOT


class _Ssm:
    """SSM GetParameter answering the bootstrap parameter with `value` (SSM API Reference, GetParameter:
    Parameter.Value is a string)."""

    def __init__(self, value: str) -> None:
        self.value = value

    def get_parameter(self, Name: str) -> dict[str, Any]:
        # AWS CDK v2 Developer Guide, "cdk bootstrap": the default qualifier is hnb659fds.
        assert Name == "/cdk-bootstrap/hnb659fds/version"
        return {"Parameter": {"Name": Name, "Type": "String", "Value": self.value}}


@pytest.mark.parametrize("value", ["v33", "", "33.0"])
def test_a_bootstrap_version_that_is_not_a_number_fails_with_the_command_that_rewrites_it(value: str) -> None:
    """The bootstrap template writes CdkBootstrapVersion, an AWS::SSM::Parameter of Type String, as a whole
    number (aws-cdk 2.1148.1, lib/api/bootstrap/bootstrap-template.yaml: Value '33'); anything else was written
    by hand and the templates' CheckBootstrapVersion rule cannot read it. Bootstrapping again rewrites it, so
    that command is the fix, even in the environment's own account."""
    row = check_bootstrap(_Ssm(value), region="us-west-2", account="123456789012", deployer="123456789012")
    assert row.check == "cdk bootstrap" and row.region == "us-west-2"
    assert row.status == "fail" and f"is '{value}', not a version" in row.detail
    assert row.fix == "npx cdk bootstrap aws://123456789012/us-west-2"


def test_the_cidr_row_counts_the_other_vpcs_and_names_our_own_once_deployed(
    world: World, tmp_path: Path
) -> None:
    """Every Region starts with a default VPC of 172.31.0.0/16 (Amazon VPC User Guide, "Default VPCs"; moto
    creates it too): before the first deploy it is the one other VPC, and none overlaps the spoke's block. After
    it, the VPC tagged with the environment and Region is ours, named as deployed and not counted as another."""
    world.bootstrap("us-west-2")
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": ["10.21.0.0/20"]}
    path = preflight_config(tmp_path, spokes=[spoke])
    (row,) = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-west-2"}, checks={"cidr overlap"}),
        "cidr overlap",
    )
    assert row.status == "pass" and row.detail == "1 other VPC(s), none overlaps 10.20.0.0/16, 10.21.0.0/20"
    ours = world.vpc("us-west-2", "10.20.0.0/16", own_env="dev")
    (row,) = rows_of(
        run_checks(path, Unsupported(world.clients), only={"us-west-2"}, checks={"cidr overlap"}),
        "cidr overlap",
    )
    assert row.detail.endswith(f", 10.21.0.0/20; our VPC {ours} is already deployed")


def test_a_region_that_offers_the_type_in_no_zone_says_to_train_elsewhere(
    world: World, tmp_path: Path
) -> None:
    """moto's copy of DescribeInstanceTypeOfferings (by availability-zone-id) lists p5.48xlarge in no zone of
    eu-west-1: no accelerator_az_id can help, so the fix says to change the Region or the instance type."""
    world.bootstrap("us-east-2")
    world.bootstrap("eu-west-1")
    spoke = {"region": "eu-west-1", "cidr": "10.30.0.0/16"}
    results = run_checks(
        preflight_config(tmp_path, spokes=[spoke]),
        Unsupported(world.clients),
        only={"eu-west-1"},
        checks={"az ids"},
    )
    (row,) = rows_of(results, "accelerator az", "eu-west-1")
    assert row.status == "fail" and row.detail.endswith(" does not offer p5.48xlarge")
    assert row.fix == "eu-west-1 offers no p5.48xlarge: train in another Region or change the instance type"


def test_a_zone_answered_without_a_zone_type_is_an_availability_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZoneType is optional in the EC2 AvailabilityZone shape (botocore ec2 2016-11-15: no required members);
    its values are availability-zone, local-zone and wavelength-zone. A zone answered without it is taken as an
    Availability Zone (the kind every Region has), so the configured AZ IDs are found, not reported missing."""
    isolate_from_real_aws(monkeypatch)
    import botocore.session

    ec2 = botocore.session.get_session().create_client("ec2", region_name="us-west-2")
    zones = [{"ZoneName": f"us-west-2{x}", "ZoneId": f"usw2-az{n}", "RegionName": "us-west-2", "State": "available"}
             for n, x in ((1, "a"), (2, "b"), (3, "c"))]  # fmt: skip
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "az_ids": ["usw2-az1", "usw2-az2"]}
    config = load(preflight_config(tmp_path, spokes=[{**spoke, "compute": {"enabled": False}}])).config
    region = config.spokes[0]
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_availability_zones", {"AvailabilityZones": zones}, {"AllAvailabilityZones": True}
        )
        (row,) = check_availability_zones(ec2, config=config, region=region)
    assert (
        row.status == "pass" and row.detail.startswith("usw2-az1, usw2-az2") and row.detail.endswith(" exist")
    )


def _vpc(n: int, cidr: str, *extra: tuple[str, str]) -> dict[str, Any]:
    """A Vpc of DescribeVpcs (botocore ec2 2016-11-15), whose members are all optional: its primary block and, given
    `extra` (block, VpcCidrBlockStateCode) pairs, a CidrBlockAssociationSet of those and of the primary block
    answered without its CidrBlockState; without extras, no association set (the primary block alone)."""
    vpc: dict[str, Any] = {"VpcId": f"vpc-{n:017x}", "CidrBlock": cidr}
    if extra:
        primary = {"AssociationId": f"vpc-cidr-assoc-{n}", "CidrBlock": cidr}
        vpc["CidrBlockAssociationSet"] = [primary] + [
            {"AssociationId": f"vpc-cidr-assoc-{n}{i}", "CidrBlock": c, "CidrBlockState": {"State": state}}
            for i, (c, state) in enumerate(extra)
        ]
    return vpc


def _cidr_rows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, vpcs: list[dict[str, Any]]) -> list[Any]:
    isolate_from_real_aws(monkeypatch)
    import botocore.session

    from hubspoke.cli.preflight.checks import check_cidrs

    ec2 = botocore.session.get_session().create_client("ec2", region_name="us-west-2")
    config = load(preflight_config(tmp_path)).config
    with Stubber(ec2) as stub:
        stub.add_response("describe_vpcs", {"Vpcs": vpcs})
        rows, _ = check_cidrs(ec2, config=config, region=config.spokes[0])
    return [r for r in rows if r.status == "fail"]


def test_a_block_still_associating_already_clashes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """VpcCidrBlockStateCode (botocore ec2 2016-11-15) has associating before associated: a block on its way in
    takes the range as surely as one that is in, so it clashes with the spoke's 10.20.0.0/16."""
    (row,) = _cidr_rows(monkeypatch, tmp_path, [_vpc(1, "10.30.0.0/16", ("10.20.128.0/17", "associating"))])
    assert (
        row.detail == "existing VPC vpc-00000000000000001 10.20.128.0/17 overlaps spokes[0].cidr 10.20.0.0/16"
    )


def test_with_every_10_block_taken_no_free_block_is_suggested(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A VPC's block is at most a /16 (Amazon VPC User Guide, "VPC CIDR blocks"): 256 VPCs, one per 10.x.0.0/16,
    leave no /16 in 10.0.0.0/8 for the spoke, so the fix names the field without a suggestion."""
    (row,) = _cidr_rows(monkeypatch, tmp_path, [_vpc(x, f"10.{x}.0.0/16") for x in range(256)])
    assert row.fix == "set spokes[0].cidr to a free block"


def test_the_newest_standard_version_is_chosen_by_number_not_text(world: World, tmp_path: Path) -> None:
    """Kubernetes minor versions are numbers (Kubernetes "Release Versioning": x.y.z, y the minor): 1.100 is
    newer than 1.99, though "1.100" sorts first as text. A cluster in extended support is told the newest."""
    world.bootstrap("us-east-2")
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"kubernetes_version": "1.33"}}
    versions = [eks_version("1.33", "EXTENDED_SUPPORT"), eks_version("1.100"), eks_version("1.99")]
    results = run_checks(
        preflight_config(tmp_path, hub=hub),
        Unsupported(world.clients, eks_versions=versions),
        only={"us-east-2"},
        checks={"kubernetes version"},
    )
    (row,) = rows_of(results, "kubernetes version")
    assert row.status == "warn" and row.fix == "set hub.compute.kubernetes_version to 1.100"
    assert (
        row.detail
        == "EKS offers 1.33 (EXTENDED_SUPPORT); 1.33 is in extended support (billed extra per cluster hour)"
    )


@pytest.mark.parametrize(
    ("head", "status", "says"),
    [
        ({}, "pass", " is staged (0 MiB)"),
        ({"ServerSideEncryption": "aws:kms"}, "fail", "with aws:kms (key ?); the nodes'"),
    ],
)
def test_a_package_answered_without_a_size_or_key_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: dict[str, str], status: str, says: str
) -> None:
    """Every member of HeadObjectOutput is optional (botocore s3 2006-03-01 model): without ContentLength ("Size
    of the body in bytes") a staged package is shown as 0 MiB; aws:kms without SSEKMSKeyId names no key, so it
    cannot be told from a key of the user's and fails as one, with the key shown as unknown."""
    isolate_from_real_aws(monkeypatch)
    import botocore.session

    from hubspoke.cli.preflight.cnq import check_staged_package

    s3 = botocore.session.get_session().create_client("s3", region_name="us-east-2")
    config = load(preflight_config(tmp_path)).config
    with Stubber(s3) as stub:
        stub.add_response("head_object", head)
        row = check_staged_package(s3, config=config, region=config.hub, kms=object())
    assert row.status == status and says in row.detail, row


def test_the_release_row_names_every_other_storage_region(tmp_path: Path) -> None:
    """A portal needs the same release on both sides (validation refuses a mismatch), so the row names each other
    storage Region that installs it, in order; the release check reads no AWS API."""
    from hubspoke.cli.preflight.cnq import check_release

    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
    ]
    config = load(preflight_config(tmp_path, spokes=spokes)).config
    row = check_release(config, config.hub)
    assert (
        row.status == "pass" and ", the same as eu-west-1, us-west-2; the bundled qumulo-api is" in row.detail
    )


@pytest.mark.parametrize(
    ("foreign", "status", "fix"),
    [
        # ASSUMED headroom: more than 80 % of the quota in use warns (hubspoke.cli.preflight.checks).
        (39, "pass", ""),
        (40, "warn", "consider raising L-7E9ECCDB"),
        (49, "warn", "consider raising L-7E9ECCDB"),
        (50, "fail", "request 'Active VPC peering connections per VPC' (L-7E9ECCDB) = 51 in us-east-2"),
        (124, "fail", "request 'Active VPC peering connections per VPC' (L-7E9ECCDB) = 125 in us-east-2"),
        (125, "fail", "more than 125 peerings per VPC is not possible: split the spokes across hubs"),
    ],
)
def test_past_the_peering_quotas_maximum_no_increase_is_requested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreign: int, status: str, fix: str
) -> None:
    """AWS General Reference, "Amazon Virtual Private Cloud endpoints and quotas": 'Active VPC peering
    connections per VPC' is 50 by default and "can be increased up to a maximum of 125". 50 needed fit a quota
    of 50 (with little headroom), 51 do not; at 125 needed the row asks for 125; at 126 no request can help.
    EC2 and Service Quotas answer through botocore's Stubber in the models' shapes."""
    isolate_from_real_aws(monkeypatch)
    import botocore.session

    session = botocore.session.get_session()
    ec2 = session.create_client("ec2", region_name="us-east-2")
    quotas = session.create_client("service-quotas", region_name="us-east-2")
    hub = {"VpcId": "vpc-hub", "CidrBlock": "10.10.0.0/16"}

    def pcx(n: int, code: str, requester: dict[str, str], accepter: dict[str, str]) -> dict[str, Any]:
        """A VpcPeeringConnection (botocore ec2 2016-11-15); Status.Code is a VpcPeeringConnectionStateReasonCode."""
        return {"VpcPeeringConnectionId": f"pcx-{n:017x}", "Status": {"Code": code},
                "RequesterVpcInfo": requester, "AccepterVpcInfo": accepter}  # fmt: skip

    other = [
        {"VpcId": f"vpc-{n:017x}", "CidrBlock": f"172.{16 + n // 256}.{n % 256}.0/24"} for n in range(foreign)
    ]
    peerings = [
        # Not active: holds no slot of the quota (only active peerings count, the quota's name).
        pcx(1000, "deleted", hub, {"VpcId": "vpc-gone", "CidrBlock": "192.168.0.0/24"}),
        # The spoke's own peering (minimal(): spokes[0].cidr 10.20.0.0/16) is one of the spokes counted, not foreign.
        pcx(1001, "active", hub, {"VpcId": "vpc-spoke", "CidrBlock": "10.20.0.0/16"}),
        # The Region's other peerings are listed too (no filter was asked for): not the hub VPC's, not counted.
        pcx(1002, "active", {"VpcId": "vpc-a", "CidrBlock": "192.168.1.0/24"}, {"VpcId": "vpc-b"}),
        # Every member of VpcPeeringConnection is optional in the model: one answered without a side, or without
        # a Status, names no hub VPC or no active state, and is not counted either.
        {
            "VpcPeeringConnectionId": "pcx-no-requester",
            "Status": {"Code": "active"},
            "AccepterVpcInfo": {"VpcId": "vpc-c"},
        },
        {
            "VpcPeeringConnectionId": "pcx-no-accepter",
            "Status": {"Code": "active"},
            "RequesterVpcInfo": {"VpcId": "vpc-d"},
        },
        {
            "VpcPeeringConnectionId": "pcx-no-status",
            "RequesterVpcInfo": hub,
            "AccepterVpcInfo": {"VpcId": "vpc-e"},
        },
        # Foreign peerings count whichever side asked: the hub requests half of them and accepts the others.
        *(pcx(n, "active", *((hub, vpc) if n % 2 else (vpc, hub))) for n, vpc in enumerate(other)),
    ]
    with Stubber(ec2) as ec2_stub, Stubber(quotas) as quota_stub:
        quota_stub.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": "vpc", "QuotaCode": "L-7E9ECCDB", "Value": 50.0}},
            {"ServiceCode": "vpc", "QuotaCode": "L-7E9ECCDB"},
        )
        ec2_stub.add_response("describe_vpc_peering_connections", {"VpcPeeringConnections": peerings})
        row = check_peering_quota(
            ec2, quotas, config=load(preflight_config(tmp_path)).config, hub_vpc_id="vpc-hub"
        )
    assert row.status == status and row.check == "peering quota"  # the row's name, whatever its status
    needed = f"{foreign + 1} active peering(s) needed on the hub VPC ({foreign} existing, 1 spoke(s)); quota 50 (applied)"
    assert row.detail == needed + ("; little headroom" if status == "warn" else "")
    assert row.fix == fix


@dataclass
class _Denying(Unsupported):
    """The preflight world with some operations refused, as the service refuses a caller without the
    permission: operation name -> the error code that service answers with (HTTP 403), with `message` if given."""

    denied: dict[str, str] = field(default_factory=dict)
    message: str | None = None

    def hook(self, client: Any, service: str, region: str) -> None:
        super().hook(client, service, region)

        def refuse(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            code = self.denied.get(model.name)
            if code is None:
                return None
            body = {
                "Error": {"Code": code, "Message": self.message or f"not authorized to perform: {model.name}"}
            }
            return AWSResponse("https://stub", 403, {}, None), {
                **body,
                "ResponseMetadata": {"HTTPStatusCode": 403},
            }

        client.meta.events.register("before-call", refuse, unique_id="hubspoke-test-denied")


# The code each service denies with: EC2's UnauthorizedOperation (EC2 API Reference, "Error codes"); EKS's
# AccessDeniedException (botocore eks 2017-11-01 model, shape AccessDeniedException: "You don't have permissions to
# perform the requested operation"); the query-protocol services (CloudFormation, IAM) answer AccessDenied.
@pytest.mark.parametrize(
    ("operation", "code", "region", "checks", "action"),
    [
        ("DescribeCluster", "AccessDeniedException", "us-east-2", ["deployed kubernetes"], "eks:DescribeCluster"),
        ("DescribeImages", "UnauthorizedOperation", "us-east-2", ["ubuntu image"], "ec2:DescribeImages"),
        # The Storage stack's buckets and the canary's reservation are both read from ListStackResources.
        ("ListStackResources", "AccessDenied", "us-west-2", ["cnq deployed shape", "lambda concurrency"],
         "cloudformation:ListStackResources"),
        ("GetRole", "AccessDenied", "us-east-2", ["administrators exist"], "iam:GetRole"),
    ],
)  # fmt: skip
def test_a_denied_read_fails_its_row_with_the_permission_to_grant(
    world: World, operation: str, code: str, region: str, checks: list[str], action: str
) -> None:
    """A refusal is not "nothing there": ResourceNotFoundException, InvalidAMIID.NotFound, a stack that does not
    exist and NoSuchEntity are the only answers read as absence; any other error is that check's failing row.
    The canary's reservation is asked for, so its row reads the deployed Ops stack."""
    world.deployed_dev()
    config = load(ROOT / "config" / "dev.yaml").config
    ops = config.ops.model_copy(update={"reserve_canary_concurrency": True})
    config = config.model_copy(update={"ops": ops})
    with only_checks(set(checks)):
        results = run_preflight(config, _Denying(world.clients, denied={operation: code}), only={region})
    for check in checks:
        (row,) = rows_of(results, check, region)
        assert row.status == "fail" and f"{action} was denied" in row.detail, row
        assert row.fix == f"allow {action} (read-only) for these credentials"


def test_only_a_stack_that_does_not_exist_is_read_as_not_deployed(world: World) -> None:
    """CloudFormation answers ValidationError both for a stack that does not exist ("Stack with id ... does not
    exist", the only answer read as "nothing deployed yet") and for a request it refuses; any other ValidationError
    is the rows' failure, with what CloudFormation said, not a pass that skips the deployed stack."""
    world.deployed_dev()
    config = load(ROOT / "config" / "dev.yaml").config
    config = config.model_copy(
        update={"ops": config.ops.model_copy(update={"reserve_canary_concurrency": True})}
    )
    said = "1 validation error detected: Value at 'stackName' failed to satisfy constraint"
    clients = _Denying(world.clients, denied={"ListStackResources": "ValidationError"}, message=said)
    with only_checks({"cnq deployed shape", "lambda concurrency"}):
        results = run_preflight(config, clients, only={"us-west-2"})
    for check in ("cnq deployed shape", "lambda concurrency"):
        (row,) = rows_of(results, check, "us-west-2")
        assert row.status == "fail", row
        assert (
            row.detail == f"not checked: cloudformation:ListStackResources answered ValidationError: {said}"
        )


def test_an_applied_quota_that_cannot_be_read_is_not_taken_for_the_default(world: World) -> None:
    """GetServiceQuota's errors (botocore service-quotas 2019-06-24) other than NoSuchResourceException, such as
    AccessDeniedException, mean the applied value could not be read: the peering and VPC rows fail naming
    servicequotas:GetServiceQuota rather than fall back to AWS's default, which the applied value may be below."""
    world.deployed_dev()
    config = load(ROOT / "config" / "dev.yaml").config
    clients = Unsupported(world.clients, quota_errors={"GetServiceQuota": "AccessDeniedException"})
    with only_checks({"cidr overlap", "peering quota", "security group rules", "routes per route table"}):
        results = run_preflight(config, clients, only={"us-east-2"})
    for check in ("peering quota", "security group rules", "routes per route table"):
        (row,) = rows_of(results, check, "us-east-2")
        assert row.status == "fail" and "servicequotas:GetServiceQuota was denied" in row.detail, row


def test_the_help_examples_are_commands_the_parser_accepts(capsys: pytest.CaptureFixture[str]) -> None:
    """The help ends with examples to copy: one with a named profile (AWS CLI User Guide, "Using named
    profiles": AWS_PROFILE) and one limited to a Region with JSON output; each parses as written."""
    with pytest.raises(SystemExit):
        main(["preflight", "--help"])
    out = capsys.readouterr().out
    # What it reads and what its exit codes mean, each phrase across a line of the source so none is lost.
    said = " ".join(out.split())
    for phrase in (
        "Read-only AWS checks per Region: account, the local tools the AWS path runs (AWS CLI v2, "
        "session-manager-plugin, kubectl, docker; with the hub's rows), CDK bootstrap",
        "peering quota, AZ IDs and accelerator offerings,",
        "the pinned Ubuntu image, SageMaker cluster quota,",
        "the administrators' IAM principals. Exit 0 when nothing fails, 1 when a check fails, 2 for bad input. ",
    ):
        assert phrase in said, phrase
    assert re.search(r"(^|\s)Read-only AWS checks per Region", said), said  # the description's first words
    examples = out.split("Example:\n", 1)[1].strip().splitlines()
    assert [e.strip() for e in examples] == [
        "AWS_PROFILE=ml-dev hubspoke preflight --config config/dev.yaml",
        "hubspoke preflight --config config/dev.yaml --region us-west-2 --json",
    ]
    from hubspoke.cli.main import build_parser

    for example in examples:
        words = [w for w in shlex.split(example) if "=" not in w][1:]
        args = build_parser(words).parse_args(words)
        assert args.command == "preflight" and str(args.config) == "config/dev.yaml"
