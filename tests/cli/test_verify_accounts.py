"""`hubspoke verify` where a spoke lives in another account: what each account's credentials can check.

The world is the two-spoke environment with the network-only spoke (eu-west-1) in account 111111111111:
its Network stack, VPC and peering request are made with that account's credentials (an assumed role,
verify_world.assumed_clients), and the hub account accepts the peering in us-east-2, as CloudFormation
does with the hub-side peer role (AWS::EC2::VPCPeeringConnection, PeerRoleArn). The hub's Link stack for
that spoke routes 10.30.0.0/16 over the peering in the hub account.

With the hub account's credentials, the spoke's Network stack (and so its PeeringConnectionId output)
cannot be read; the hub's VPC is the accepter, and the accepter's account lists the peerings its VPC
accepted (VPC peering guide), so the hub finds it there. With the spoke account's credentials, the hub's
VPC ID cannot be read, but the accepter's account and Region are on the peering itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hubspoke.cli.verify import run_verify
from hubspoke.config import load
from tests.cli.test_verify import rows
from tests.cli.verify_fixtures import SPOKE_ACCOUNT, deployed_world, two_spokes_across_accounts
from tests.cli.verify_world import DeployedWorld
from tests.conftest import synth, write_config

HUB_ACCOUNT = "123456789012"


@pytest.fixture(scope="module")
def xacct_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_config(tmp_path_factory.mktemp("xacct"), two_spokes_across_accounts(), "dev.yaml")


@pytest.fixture(scope="module")
def xacct_templates(xacct_config: Path) -> dict[str, dict[str, Any]]:
    return synth(load(xacct_config).config)


@pytest.fixture
def xacct(backend: str, xacct_config: Path, xacct_templates: dict[str, dict[str, Any]]) -> DeployedWorld:
    """The cross-account world, deployed once per test process in-process and restored for each later test."""
    return deployed_world(backend, xacct_config, xacct_templates)


def _run(world: DeployedWorld, path: Path, account: str, only: set[str] | None = None) -> list[Any]:
    return run_verify(
        world.config, world.clients_for(account), config_path=str(path), only=only, kubeconfig=()
    )


@pytest.mark.long
def test_hub_credentials_find_the_cross_account_peering_from_the_hub_side(
    xacct: DeployedWorld, xacct_config: Path
) -> None:
    pcx = xacct.outputs["hubspoke-dev-network-eu-west-1"]["PeeringConnectionId"]
    # Decoys the hub account also sees, each active and from the spoke's account and CIDR (DescribeVpcPeering-
    # Connections' filters narrow, the fields decide): one requested from another Region, one accepted by
    # another VPC of the hub account. Neither is the spoke's peering.
    spoke, hub_ec2 = xacct.clients_for(SPOKE_ACCOUNT), xacct.clients("ec2", "us-east-2")
    hub_vpc = xacct.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    other_hub_vpc = hub_ec2.create_vpc(CidrBlock="10.97.0.0/16")["Vpc"]["VpcId"]
    for requester_region, accepter in (("us-west-2", hub_vpc), ("eu-west-1", other_hub_vpc)):
        vpc = spoke("ec2", requester_region).create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
        decoy = spoke("ec2", requester_region).create_vpc_peering_connection(
            VpcId=vpc, PeerVpcId=accepter, PeerRegion="us-east-2", PeerOwnerId=HUB_ACCOUNT
        )["VpcPeeringConnection"]["VpcPeeringConnectionId"]
        hub_ec2.accept_vpc_peering_connection(VpcPeeringConnectionId=decoy)
    results = _run(xacct, xacct_config, HUB_ACCOUNT)
    # The correct hub routes to the spoke are neither flagged nor given a delete-route that would cut it off.
    assert [r for r in results if r.status == "warn"] == []
    assert [(r.region, r.check) for r in results if r.status == "fail"] == [("eu-west-1", "account")]
    hub_routes = rows(results, "routes", "us-east-2")
    assert {r.status for r in hub_routes} == {"pass"} and len(hub_routes) == 2
    for row in hub_routes:
        assert f"10.30.0.0/16 via {pcx} (found from the hub side" in row.detail
    # What the hub's credentials cannot read is said, not guessed.
    (unread,) = [r for r in rows(results, "stale reader", "us-east-2") if r.status == "not checked"]
    assert unread.detail.startswith("cannot read network-eu-west-1") and SPOKE_ACCOUNT in unread.detail


def test_routes_to_a_spoke_whose_peering_cannot_be_found_are_not_judged(
    xacct: DeployedWorld, xacct_config: Path
) -> None:
    pcx = xacct.outputs["hubspoke-dev-network-eu-west-1"]["PeeringConnectionId"]
    xacct.clients_for(SPOKE_ACCOUNT)("ec2", "eu-west-1").delete_vpc_peering_connection(
        VpcPeeringConnectionId=pcx
    )
    results = _run(xacct, xacct_config, HUB_ACCOUNT, only={"us-east-2"})
    hub_routes = rows(results, "routes", "us-east-2")
    assert [r for r in hub_routes if r.status in ("warn", "fail")] == []
    (unseen,) = [r for r in hub_routes if r.status == "not checked"]
    assert unseen.detail.startswith("routes to spoke eu-west-1 (10.30.0.0/16), none judged:")
    assert "the hub's VPC has no active peering from 10.30.0.0/16 in account 111111111111" in unseen.detail
    assert unseen.fix.endswith(f"hubspoke verify --config {xacct_config} --region eu-west-1")
    # Two active peerings from that account and CIDR: which one the Link stack routes over is not knowable
    # from the hub side, so still nothing inside the CIDR is judged.
    spoke_ec2 = xacct.clients_for(SPOKE_ACCOUNT)("ec2", "eu-west-1")
    hub_vpc = xacct.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    for _ in range(2):
        vpc = spoke_ec2.create_vpc(CidrBlock="10.30.0.0/16")["Vpc"]["VpcId"]
        new = spoke_ec2.create_vpc_peering_connection(
            VpcId=vpc, PeerVpcId=hub_vpc, PeerRegion="us-east-2", PeerOwnerId=HUB_ACCOUNT
        )["VpcPeeringConnection"]["VpcPeeringConnectionId"]
        xacct.clients("ec2", "us-east-2").accept_vpc_peering_connection(VpcPeeringConnectionId=new)
    hub_routes = rows(_run(xacct, xacct_config, HUB_ACCOUNT, only={"us-east-2"}), "routes", "us-east-2")
    assert [r for r in hub_routes if r.status in ("warn", "fail")] == []
    (unseen,) = [r for r in hub_routes if r.status == "not checked"]
    assert "the hub's VPC has 2 active peerings from 10.30.0.0/16" in unseen.detail


def test_spoke_credentials_compare_the_accepters_account_and_region(
    xacct: DeployedWorld, xacct_config: Path
) -> None:
    results = _run(xacct, xacct_config, SPOKE_ACCOUNT, only={"eu-west-1"})
    (peering,) = rows(results, "peering", "eu-west-1")
    assert peering.status == "pass"
    assert f"and account {HUB_ACCOUNT} (us-east-2); the hub VPC ID was not compared" in peering.detail
    assert [r for r in results if r.status in ("warn", "fail")] == []
    # A peering accepted by a VPC of the spoke's own account, in the hub's Region: the account is wrong.
    spoke = xacct.clients_for(SPOKE_ACCOUNT)
    stray = spoke("ec2", "us-east-2").create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"]
    eu_vpc = xacct.outputs["hubspoke-dev-network-eu-west-1"]["VpcId"]
    wrong = spoke("ec2", "eu-west-1").create_vpc_peering_connection(
        VpcId=eu_vpc, PeerVpcId=stray, PeerRegion="us-east-2", PeerOwnerId=SPOKE_ACCOUNT
    )["VpcPeeringConnection"]["VpcPeeringConnectionId"]
    spoke("ec2", "us-east-2").accept_vpc_peering_connection(VpcPeeringConnectionId=wrong)
    xacct.redeploy_with("network-eu-west-1", PeeringConnectionId=wrong)
    (elsewhere,) = rows(_run(xacct, xacct_config, SPOKE_ACCOUNT, only={"eu-west-1"}), "peering", "eu-west-1")
    assert elsewhere.status == "fail"
    assert elsewhere.detail == (
        f"{wrong} accepter is VPC {stray} in us-east-2 (account {SPOKE_ACCOUNT}); "
        f"expected the hub VPC in us-east-2 (account {HUB_ACCOUNT})"
    )
    # A peering request the hub account has not accepted yet: only the hub account's credentials can accept it
    # (VPC Peering Guide: the owner of the accepter VPC accepts), so the fix says whose credentials to use.
    hub_vpc = xacct.outputs["hubspoke-dev-network-us-east-2"]["VpcId"]
    pending = spoke("ec2", "eu-west-1").create_vpc_peering_connection(
        VpcId=eu_vpc, PeerVpcId=hub_vpc, PeerRegion="us-east-2", PeerOwnerId=HUB_ACCOUNT
    )["VpcPeeringConnection"]["VpcPeeringConnectionId"]
    xacct.redeploy_with("network-eu-west-1", PeeringConnectionId=pending)
    (waiting,) = rows(_run(xacct, xacct_config, SPOKE_ACCOUNT, only={"eu-west-1"}), "peering", "eu-west-1")
    assert waiting.status == "fail" and waiting.detail.startswith(f"{pending} is pending-acceptance")
    assert waiting.fix == (
        f"accept it in the hub Region with credentials for the hub account {HUB_ACCOUNT}: "
        f"aws ec2 accept-vpc-peering-connection --vpc-peering-connection-id {pending} --region us-east-2"
    )
