"""`hubspoke verify`: network checks (VPC, peering, routes, cross-Region ingress), pass and fail, against moto.

IDs come from the world's outputs (built from the synthesized Network and Link templates); the commands in
the fixes are checked against the EC2 API's parameter names (CreateRoute, DeleteRoute, ReplaceRoute,
Authorize/RevokeSecurityGroupIngress with IpPermissions) and the expected rule shapes against EC2's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import load
from tests.cli.test_verify import NETWORK, quoted_command_problems, region_rows, rows, verify
from tests.cli.verify_fixtures import TWO_SPOKES
from tests.cli.verify_world import DeployedWorld
from tests.conftest import ROOT, write_config


def test_vpc_cidrs_against_the_config(deployed: DeployedWorld, deployed_config: Path, tmp_path: Path) -> None:
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    deployed.clients("ec2", "us-east-2").associate_vpc_cidr_block(VpcId=hub_vpc, CidrBlock="10.11.0.0/16")
    (extra,) = region_rows(deployed, deployed_config, "vpc", "us-east-2")
    assert extra.status == "warn" and "10.11.0.0/16" in extra.detail
    data = json.loads(json.dumps(TWO_SPOKES))
    data["hub"]["secondary_cidrs"] = ["10.12.0.0/16"]
    wider = write_config(tmp_path, data)
    (missing,) = [
        r
        for r in region_rows(deployed, wider, "vpc", "us-east-2", config=load(wider).config)
        if r.status == "fail"
    ]
    assert "lacks configured CIDR(s) 10.12.0.0/16" in missing.detail
    # A CIDR new in the config comes with the Network stack's next deploy; one disassociated by hand does
    # not (an unchanged template is not deployed), so EC2 AssociateVpcCidrBlock (VpcId, CidrBlock) restores it.
    assert missing.fix == (
        f"a CIDR newly added to the config: npx cdk deploy -c config={wider} --exclusively "
        "hubspoke-dev/network-us-east-2; one disassociated by hand (CloudFormation does not re-create it): "
        f"aws ec2 associate-vpc-cidr-block --vpc-id {hub_vpc} --cidr-block 10.12.0.0/16 --region us-east-2"
    )


def _gone(fix: str, stack: str, region: str) -> None:
    """A fix for a resource deleted outside CloudFormation: drift detection, then the runbook, no redeploy.

    CloudFormation does not re-create a resource from an unchanged template (ContinueUpdateRollback's own
    example in botocore: "CloudFormation doesn't know the instance was deleted"); DetectStackDrift reports it
    DELETED.
    """
    assert quoted_command_problems(fix) == {
        f"aws cloudformation detect-stack-drift --stack-name {stack} --region {region}": []
    }
    assert fix.endswith(
        'follow docs/runbooks/deploy-environment.md ("A resource deleted outside CloudFormation")'
    )
    assert "cdk deploy" not in fix


def test_peering_not_active_fails(deployed: DeployedWorld, deployed_config: Path) -> None:
    pcx = deployed.peering("us-west-2")
    deployed.clients("ec2", "us-west-2").delete_vpc_peering_connection(VpcPeeringConnectionId=pcx)
    results = verify(deployed, deployed_config, areas=NETWORK)
    (row,) = rows(results, "peering", "us-west-2")
    assert row.status == "fail" and f"{pcx} is deleted" in row.detail
    # A redeploy of the Network and Link stacks would change nothing: their templates did not change.
    _gone(row.fix, "hubspoke-dev-network-us-west-2", "us-west-2")
    assert rows(results, "peering", "eu-west-1")[0].status == "pass"


def test_the_runbook_section_the_gone_fixes_name_exists() -> None:
    from hubspoke.cli.verify.live import GONE_RUNBOOK

    path, _, section = GONE_RUNBOOK.partition(" (")
    assert f"\n## {section.strip(')').strip(chr(34))}\n" in (ROOT / path).read_text()


def test_route_table_or_security_group_deleted_outside_cloudformation_fails(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    table = deployed.route_table("us-west-2", "usw2-az2")
    group = deployed.security_group("us-west-2")
    ec2 = deployed.clients("ec2", "us-west-2")
    # EC2 deletes a route table only once no subnet is associated with it (DeleteRouteTable); the world
    # creates no subnet associations, so the table goes as it would after those were removed by hand.
    ec2.delete_route_table(RouteTableId=table)
    ec2.delete_security_group(GroupId=group)
    results = verify(deployed, deployed_config, areas=NETWORK)
    (missing_table,) = [r for r in rows(results, "routes", "us-west-2") if r.status == "fail"]
    assert missing_table.detail == f"route table {table} (usw2-az2) does not exist"
    _gone(missing_table.fix, "hubspoke-dev-network-us-west-2", "us-west-2")
    (missing_group,) = rows(results, "security group", "us-west-2")
    assert missing_group.status == "fail" and missing_group.detail == f"{group} does not exist"
    _gone(missing_group.fix, "hubspoke-dev-network-us-west-2", "us-west-2")


def test_peering_waiting_for_acceptance_or_to_another_vpc_fails(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    west = deployed.clients("ec2", "us-west-2")
    spoke_vpc = deployed.outputs["hubspoke-dev-network-us-west-2"]["VpcId"]
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    pending = west.create_vpc_peering_connection(VpcId=spoke_vpc, PeerVpcId=hub_vpc, PeerRegion="us-east-2")
    pending_id = pending["VpcPeeringConnection"]["VpcPeeringConnectionId"]
    deployed.redeploy_with("network-us-west-2", PeeringConnectionId=pending_id)
    east = deployed.clients("ec2", "eu-west-1")
    stray = east.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    eu_vpc = deployed.outputs["hubspoke-dev-network-eu-west-1"]["VpcId"]
    wrong = east.create_vpc_peering_connection(VpcId=eu_vpc, PeerVpcId=stray)["VpcPeeringConnection"][
        "VpcPeeringConnectionId"
    ]
    east.accept_vpc_peering_connection(VpcPeeringConnectionId=wrong)
    deployed.redeploy_with("network-eu-west-1", PeeringConnectionId=wrong)
    results = verify(deployed, deployed_config, areas=NETWORK)
    (waiting,) = rows(results, "peering", "us-west-2")
    assert waiting.detail.startswith(f"{pending_id} is pending-acceptance")
    assert (
        waiting.fix
        == f"accept it in the hub Region: aws ec2 accept-vpc-peering-connection --vpc-peering-connection-id {pending_id} --region us-east-2"
    )
    (elsewhere,) = rows(results, "peering", "eu-west-1")
    assert elsewhere.status == "fail"
    assert elsewhere.detail == (
        f"{wrong} accepter is VPC {stray} in eu-west-1 (account 123456789012); "
        f"expected {hub_vpc} in us-east-2 (account 123456789012)"
    )


def test_missing_route_fails_with_the_command_that_restores_it(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    table, pcx = deployed.route_table("us-east-2", "use2-az1"), deployed.peering("us-west-2")
    deployed.clients("ec2", "us-east-2").delete_route(RouteTableId=table, DestinationCidrBlock="10.20.0.0/16")
    failed = [r for r in region_rows(deployed, deployed_config, "routes", "us-east-2") if r.status == "fail"]
    assert [r.detail for r in failed] == [
        f"{table} (use2-az1) has no route to spoke us-west-2 10.20.0.0/16: that traffic is dropped"
    ]
    assert failed[0].fix == (
        f"aws ec2 create-route --destination-cidr-block 10.20.0.0/16 --vpc-peering-connection-id {pcx} "
        f"--route-table-id {table} --region us-east-2"
    )


def test_route_between_spokes_fails(deployed: DeployedWorld, deployed_config: Path) -> None:
    """A route to part of another spoke's CIDR (10.30.8.0/24 inside eu-west-1's 10.30.0.0/16) is one too."""
    table = deployed.route_table("us-west-2", "usw2-az2")
    deployed.clients("ec2", "us-west-2").create_route(
        RouteTableId=table,
        DestinationCidrBlock="10.30.8.0/24",
        VpcPeeringConnectionId=deployed.peering("us-west-2"),
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "routes", "us-west-2") if r.status == "fail"]
    assert row.detail.startswith(
        f"{table} (usw2-az2) routes 10.30.8.0/24 (spoke eu-west-1) via {deployed.peering('us-west-2')}: "
    )
    # The reason a reader needs: VPC peering is not transitive (VPC Peering Guide, "VPC peering limitations").
    assert "peering is not transitive" in row.detail
    assert (
        row.fix
        == f"aws ec2 delete-route --destination-cidr-block 10.30.8.0/24 --route-table-id {table} --region us-west-2"
    )


def test_peer_cidr_routed_elsewhere_or_split_off_fails(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    ec2 = deployed.clients("ec2", "us-west-2")
    gateway = ec2.describe_internet_gateways()["InternetGateways"][0]["InternetGatewayId"]
    first, second = (
        deployed.route_table("us-west-2", "usw2-az1"),
        deployed.route_table("us-west-2", "usw2-az2"),
    )
    ec2.replace_route(RouteTableId=first, DestinationCidrBlock="10.10.0.0/16", GatewayId=gateway)
    ec2.create_route(RouteTableId=second, DestinationCidrBlock="10.10.64.0/18", GatewayId=gateway)
    pcx = deployed.peering("us-west-2")
    failed = [
        (r.detail, r.fix)
        for r in region_rows(deployed, deployed_config, "routes", "us-west-2")
        if r.status == "fail"
    ]
    # EC2 ReplaceRoute (RouteTableId, DestinationCidrBlock, VpcPeeringConnectionId) points the route back at the
    # peering; DeleteRoute removes the more specific one, since the longest prefix match wins (VPC User Guide,
    # "Route priority").
    assert failed == [
        (
            f"{first} (usw2-az1) sends hub us-east-2 10.10.0.0/16 to {gateway}, not the peering {pcx}",
            f"aws ec2 replace-route --destination-cidr-block 10.10.0.0/16 --vpc-peering-connection-id {pcx} "
            f"--route-table-id {first} --region us-west-2",
        ),
        (
            f"{second} (usw2-az2) sends 10.10.64.0/18, part of a peer CIDR, to {gateway}: "
            "the longer prefix wins, so that part bypasses the peering",
            f"aws ec2 delete-route --destination-cidr-block 10.10.64.0/18 --route-table-id {second} "
            "--region us-west-2",
        ),
    ]


def _permissions(fix: str) -> list[dict[str, Any]]:
    return json.loads(fix.split("--ip-permissions '", 1)[1].rstrip("'"))


def test_unknown_security_group_sources_fail_with_the_revoke(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    group = deployed.security_group("us-east-2")
    ec2 = deployed.clients("ec2", "us-east-2")
    other = ec2.create_security_group(
        GroupName="bastion",
        Description="x",
        VpcId=deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"],
    )["GroupId"]
    ec2.authorize_security_group_ingress(
        GroupId=group,
        IpPermissions=[
            {
                "IpProtocol": "tcp",
                "FromPort": 2049,
                "ToPort": 2049,
                "IpRanges": [{"CidrIp": "192.168.0.0/16"}],
            },
            {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "10.20.0.0/16"}]},
            {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": other}]},
        ],
    )
    failed = {
        r.detail.split(" (", 1)[0]: r
        for r in region_rows(deployed, deployed_config, "security group", "us-east-2")
        if r.status == "fail"
    }
    assert set(failed) == {
        f"{group} admits 192.168.0.0/16",
        f"{group} admits 10.20.0.0/16",
        f"{group} admits security group {other}",
    }
    assert "not a configured peer CIDR" in failed[f"{group} admits 192.168.0.0/16"].detail
    # A peer CIDR on a port the path does not need is still too much.
    assert "TCP 22" in failed[f"{group} admits 10.20.0.0/16"].detail
    revoke = failed[f"{group} admits 192.168.0.0/16"].fix
    assert revoke.startswith(f"aws ec2 revoke-security-group-ingress --group-id {group} --region us-east-2")
    # EC2 IpPermissions shape: IpProtocol, FromPort, ToPort, IpRanges[].CidrIp (RevokeSecurityGroupIngress).
    assert _permissions(revoke) == [
        {"IpProtocol": "tcp", "FromPort": 2049, "ToPort": 2049, "IpRanges": [{"CidrIp": "192.168.0.0/16"}]}
    ]
    assert _permissions(failed[f"{group} admits security group {other}"].fix) == [
        {"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": other}]}
    ]


def test_missing_ingress_fails_with_the_authorize(deployed: DeployedWorld, deployed_config: Path) -> None:
    group = deployed.security_group("us-west-2")
    portal = {"IpProtocol": "tcp", "FromPort": 3713, "ToPort": 3713, "IpRanges": [{"CidrIp": "10.10.0.0/16"}]}
    pmtu = {"IpProtocol": "icmp", "FromPort": 3, "ToPort": 4, "IpRanges": [{"CidrIp": "10.10.0.0/16"}]}
    deployed.clients("ec2", "us-west-2").revoke_security_group_ingress(
        GroupId=group, IpPermissions=[portal, pmtu]
    )
    (row,) = [
        r for r in region_rows(deployed, deployed_config, "security group", "us-west-2") if r.status == "fail"
    ]
    assert row.detail == f"{group} does not admit peer 10.10.0.0/16 on ICMP 3/4, TCP 3713"
    assert row.fix.startswith(
        f"aws ec2 authorize-security-group-ingress --group-id {group} --region us-west-2"
    )
    assert sorted(_permissions(row.fix), key=str) == sorted([portal, pmtu], key=str)


def test_leftover_routes_warn_and_a_dead_peer_route_fails(
    deployed: DeployedWorld, deployed_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ec2 = deployed.clients("ec2", "us-east-2")
    table, other_table = (
        deployed.route_table("us-east-2", "use2-az1"),
        deployed.route_table("us-east-2", "use2-az2"),
    )
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    shared = ec2.create_vpc(CidrBlock="172.31.0.0/16")["Vpc"]["VpcId"]
    foreign = ec2.create_vpc_peering_connection(VpcId=hub_vpc, PeerVpcId=shared)["VpcPeeringConnection"][
        "VpcPeeringConnectionId"
    ]
    ec2.accept_vpc_peering_connection(VpcPeeringConnectionId=foreign)
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="172.31.0.0/16", VpcPeeringConnectionId=foreign)
    ec2.create_route(RouteTableId=table, DestinationCidrBlock="10.40.0.0/16", VpcPeeringConnectionId=foreign)
    deployed.blackhole(monkeypatch, table, "10.40.0.0/16")
    results = [
        r
        for r in verify(deployed, deployed_config, areas=NETWORK)
        if r.check == "routes" and r.region == "us-east-2"
    ]
    warned = sorted(r.detail for r in results if r.status == "warn")
    assert warned == [
        f"{table} (use2-az1) routes 10.40.0.0/16 to {foreign}, which is gone (blackhole)",
        f"{table} (use2-az1) routes 172.31.0.0/16 over {foreign}, a peering this environment does not plan",
    ]
    assert {r.status for r in results} == {"warn", "pass"}  # the peer routes themselves are fine
    # Each leftover comes with the DeleteRoute that removes it (DestinationCidrBlock, RouteTableId).
    assert sorted(r.fix for r in results if r.status == "warn") == [
        f"a leftover (a removed spoke?): aws ec2 delete-route --destination-cidr-block 10.40.0.0/16 "
        f"--route-table-id {table} --region us-east-2",
        f"if it is a leftover: aws ec2 delete-route --destination-cidr-block 172.31.0.0/16 "
        f"--route-table-id {table} --region us-east-2",
    ]
    deployed.blackhole(monkeypatch, other_table, "10.20.0.0/16")
    (dead,) = [
        r
        for r in verify(deployed, deployed_config, areas=NETWORK)
        if r.check == "routes" and r.status == "fail"
    ]
    assert (dead.region, dead.detail) == (
        "us-east-2",
        f"{other_table} (use2-az2) route to 10.20.0.0/16 via {deployed.peering('us-west-2')} is blackhole",
    )
    # A route goes blackhole when its target is gone (DescribeRouteTables, Route.State): the peering row says why.
    assert "the peering row" in dead.fix


def test_a_disassociated_cidr_is_not_live(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    """A CIDR whose association is disassociated neither satisfies the config nor warns as extra.

    botocore's ec2 2016-11-15 model, shape VpcCidrBlockStateCode: associating, associated, disassociating,
    disassociated, failing, failed; DescribeVpcs keeps listing a disassociated entry in CidrBlockAssociationSet.
    """
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    ec2 = deployed.clients("ec2", "us-east-2")
    association = ec2.associate_vpc_cidr_block(VpcId=hub_vpc, CidrBlock="10.12.0.0/16")
    ec2.disassociate_vpc_cidr_block(AssociationId=association["CidrBlockAssociation"]["AssociationId"])
    (listed,) = [
        a["CidrBlockState"]["State"]
        for a in ec2.describe_vpcs(VpcIds=[hub_vpc])["Vpcs"][0]["CidrBlockAssociationSet"]
        if a["CidrBlock"] == "10.12.0.0/16"
    ]
    assert listed == "disassociated"  # the world lists it, as EC2 does, so the check has to look at the state
    assert [r.status for r in region_rows(deployed, deployed_config, "vpc", "us-east-2")] == ["pass"]
    data = json.loads(json.dumps(TWO_SPOKES))
    data["hub"]["secondary_cidrs"] = ["10.12.0.0/16"]
    wider = write_config(tmp_path, data)
    (missing,) = region_rows(deployed, wider, "vpc", "us-east-2", config=load(wider).config)
    assert missing.status == "fail" and "lacks configured CIDR(s) 10.12.0.0/16" in missing.detail


def test_healthy_network_rows_name_what_they_compared(deployed: DeployedWorld, deployed_config: Path) -> None:
    """Each pass row names the IDs it read from the Network stacks' outputs and the CIDRs the config gives."""
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    spoke_vpc = deployed.outputs["hubspoke-dev-network-us-west-2"]["VpcId"]
    pcx, table = deployed.peering("us-west-2"), deployed.route_table("us-west-2", "usw2-az1")
    results = verify(deployed, deployed_config, only={"us-west-2"}, areas=NETWORK)
    assert [r.detail for r in rows(results, "vpc")] == [f"{spoke_vpc} carries 10.20.0.0/16"]
    assert [r.detail for r in rows(results, "peering")] == [
        f"{pcx} active between {spoke_vpc} (us-west-2) and {hub_vpc} (us-east-2)"
    ]
    routes = {r.detail for r in rows(results, "routes")}
    assert f"{table} (usw2-az1) routes 10.10.0.0/16 via {pcx}; nothing between spokes" in routes
    assert {r.status for r in rows(results, "routes")} == {"pass"} and len(routes) == 2


def test_a_vpc_gone_fails_naming_the_output_it_came_from(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """DescribeVpcs with the vpc-id filter answers an empty Vpcs list for an ID that does not exist (filters
    narrow; only VpcIds raises InvalidVpcID.NotFound: EC2 API Reference, DescribeVpcs)."""
    gone = "vpc-0123456789abcdef0"
    deployed.redeploy_with("network-us-east-2", VpcId=gone)
    (row,) = region_rows(deployed, deployed_config, "vpc", "us-east-2")
    assert row.status == "fail"
    assert row.detail == f"VPC {gone} (output VpcId of network-us-east-2) does not exist"
    # CloudFormation does not re-create it from an unchanged template; the runbook named keeps the data.
    assert row.fix.endswith(
        "delete and redeploy the Region's stacks (docs/runbooks/teardown.md keeps the data)"
    )
    assert (ROOT / "docs/runbooks/teardown.md").is_file()


def test_a_missing_or_extra_cidr_names_what_is_associated_and_the_fix(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    deployed.clients("ec2", "us-east-2").associate_vpc_cidr_block(VpcId=hub_vpc, CidrBlock="10.11.0.0/16")
    (extra,) = region_rows(deployed, deployed_config, "vpc", "us-east-2")
    assert extra.detail == (
        f"{hub_vpc} also carries 10.11.0.0/16, which the config does not name: nothing routes it over the peering"
    )
    # The config field that names a VPC's further CIDRs (config/dev.yaml's schema: hub.secondary_cidrs).
    assert extra.fix == "add it to secondary_cidrs, or disassociate it"
    data = json.loads(json.dumps(TWO_SPOKES))
    data["hub"]["secondary_cidrs"] = ["10.11.0.0/16"]
    named = write_config(tmp_path, data, "named.yaml")
    (carried,) = region_rows(deployed, named, "vpc", "us-east-2", config=load(named).config)
    assert (carried.status, carried.detail) == ("pass", f"{hub_vpc} carries 10.10.0.0/16, 10.11.0.0/16")
    data["hub"]["secondary_cidrs"] = ["10.11.0.0/16", "10.12.0.0/16", "10.13.0.0/16"]
    wider = write_config(tmp_path, data)
    (missing,) = region_rows(deployed, wider, "vpc", "us-east-2", config=load(wider).config)
    assert missing.status == "fail"
    assert missing.detail == (
        f"{hub_vpc} lacks configured CIDR(s) 10.12.0.0/16, 10.13.0.0/16 (associated: 10.10.0.0/16, 10.11.0.0/16)"
    )
    # One EC2 AssociateVpcCidrBlock per missing CIDR, after the deploy that creates newly configured ones.
    assert missing.fix.endswith(
        f"aws ec2 associate-vpc-cidr-block --vpc-id {hub_vpc} --cidr-block 10.12.0.0/16 --region us-east-2; "
        f"aws ec2 associate-vpc-cidr-block --vpc-id {hub_vpc} --cidr-block 10.13.0.0/16 --region us-east-2"
    )


def test_a_peering_gone_from_ec2_fails_with_the_drift_check(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    gone = "pcx-0123456789abcdef0"
    deployed.redeploy_with("network-us-west-2", PeeringConnectionId=gone)
    (row,) = region_rows(deployed, deployed_config, "peering", "us-west-2")
    assert row.status == "fail" and row.detail == f"{gone} does not exist"
    _gone(row.fix, "hubspoke-dev-network-us-west-2", "us-west-2")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("initiating-request", "Setting up the connection"),
        ("provisioning", "Setting up the connection"),
        ("provisioning", ""),
    ],
)
def test_a_peering_being_set_up_fails_until_it_is_active(
    deployed: DeployedWorld, deployed_config: Path, code: str, message: str
) -> None:
    """Status.Code initiating-request and provisioning come before active on their own; pending-acceptance waits
    for the accepter (EC2 VpcPeeringConnectionStateReasonCode, botocore ec2 service-2.json; VPC peering guide,
    "VPC peering connection lifecycle"). Status.Message (optional) is EC2's own words, shown as given."""
    from moto.backends import get_backend

    pcx = deployed.peering("us-west-2")
    status = get_backend("ec2")["123456789012"]["us-west-2"].vpc_pcxs[pcx]._status
    status.code, status.message = code, message
    (row,) = region_rows(deployed, deployed_config, "peering", "us-west-2")
    assert row.status == "fail"
    assert row.detail == f"{pcx} is {code}" + (f" ({message})" if message else "") + ", not active"
    assert row.fix == "the peering is still being set up: run hubspoke verify again in a minute"


def test_a_peering_to_the_wrong_vpc_names_the_refresh_before_the_drift_check(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The spoke's Network stack read the hub VPC ID at its last deploy: a refresh of it (and of the Link stack
    that reads its peering) re-reads it; a new PeerVpcId replaces the peering (AWS::EC2::VPCPeeringConnection,
    PeerVpcId: "Replacement")."""
    west = deployed.clients("ec2", "us-west-2")
    spoke_vpc = deployed.outputs["hubspoke-dev-network-us-west-2"]["VpcId"]
    stray = deployed.clients("ec2", "us-east-2").create_vpc(CidrBlock="10.98.0.0/16")["Vpc"]["VpcId"]
    wrong = west.create_vpc_peering_connection(VpcId=spoke_vpc, PeerVpcId=stray, PeerRegion="us-east-2")[
        "VpcPeeringConnection"
    ]["VpcPeeringConnectionId"]
    deployed.clients("ec2", "us-east-2").accept_vpc_peering_connection(VpcPeeringConnectionId=wrong)
    deployed.redeploy_with("network-us-west-2", PeeringConnectionId=wrong)
    (row,) = region_rows(deployed, deployed_config, "peering", "us-west-2")
    assert row.status == "fail" and row.detail.startswith(f"{wrong} accepter is VPC {stray} in us-east-2")
    first, _, otherwise = row.fix.partition("; otherwise ")
    assert first == (
        f"if the hub's VPC was replaced: npx cdk deploy -c config={deployed_config} -c refresh=$(date +%s) "
        f"--exclusively hubspoke-dev/network-us-west-2, then npx cdk deploy -c config={deployed_config} "
        "-c refresh=$(date +%s) --exclusively hubspoke-dev/link-us-west-2"
    )
    _gone(otherwise, "hubspoke-dev-network-us-west-2", "us-west-2")


def test_a_route_over_the_peering_to_a_cidr_no_peer_has_fails(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    table, pcx = deployed.route_table("us-west-2", "usw2-az1"), deployed.peering("us-west-2")
    deployed.clients("ec2", "us-west-2").create_route(
        RouteTableId=table, DestinationCidrBlock="192.168.0.0/16", VpcPeeringConnectionId=pcx
    )
    failed = [
        (r.detail, r.fix)
        for r in region_rows(deployed, deployed_config, "routes", "us-west-2")
        if r.status == "fail"
    ]
    assert failed == [
        (
            f"{table} (usw2-az1) sends 192.168.0.0/16 over {pcx}, not a peer CIDR",
            f"aws ec2 delete-route --destination-cidr-block 192.168.0.0/16 --route-table-id {table} "
            "--region us-west-2",
        )
    ]


def _route_targets() -> list[str]:
    """The targets an IPv4 route can have: CreateRoute's target parameters that DescribeRouteTables reports back
    on the Route (botocore ec2 model), less the destinations and the "[IPv6 traffic only]" ones."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("ec2")
    request = model.operation_model("CreateRoute").input_shape.members
    route = model.shape_for("Route").members
    return sorted(
        name
        for name in set(request) & set(route)
        if not name.startswith("Destination")
        and not (request[name].documentation or "").startswith("<p>[IPv6 traffic only]")
    )


@pytest.mark.parametrize("target", _route_targets())
def test_a_route_is_described_by_its_target(target: str) -> None:
    from hubspoke.cli.verify.network import _target

    assert _target({"DestinationCidrBlock": "10.10.64.0/18", target: f"{target}-1", "State": "active"}) == (
        f"{target}-1"
    )


def test_a_route_without_a_known_target_says_so() -> None:
    from hubspoke.cli.verify.network import _target

    assert _target({"DestinationCidrBlock": "10.10.64.0/18", "State": "blackhole"}) == "an unknown target"


def test_the_world_refuses_a_peering_filter_ec2_does_not_document(deployed: DeployedWorld) -> None:
    """The fake follows EC2: an undocumented filter name is refused (InvalidParameterValue), a documented one is not."""
    from botocore.exceptions import ClientError

    ec2 = deployed.clients("ec2", "us-east-2")
    ec2.describe_vpc_peering_connections(Filters=[{"Name": "requester-vpc-info.owner-id", "Values": ["1"]}])
    with pytest.raises(ClientError, match="InvalidParameterValue") as refused:
        ec2.describe_vpc_peering_connections(
            Filters=[{"Name": "requester-vpc-info.account", "Values": ["1"]}]
        )
    assert "The filter 'requester-vpc-info.account' is invalid" in str(refused.value)


def test_every_extra_cidr_is_named(deployed: DeployedWorld, deployed_config: Path) -> None:
    hub_vpc = deployed.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    for cidr in ("10.11.0.0/16", "10.14.0.0/16"):
        deployed.clients("ec2", "us-east-2").associate_vpc_cidr_block(VpcId=hub_vpc, CidrBlock=cidr)
    (extra,) = region_rows(deployed, deployed_config, "vpc", "us-east-2")
    assert extra.detail.startswith(f"{hub_vpc} also carries 10.11.0.0/16, 10.14.0.0/16, which")
