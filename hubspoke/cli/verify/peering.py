"""Verify's peering checks: each spoke's peering as the spoke sees it, and as the hub finds it from its side.

The spoke's Network stack requests the peering (PeeringConnectionId output) and the hub's VPC accepts it
(constructs/peering.py). Credentials for one account cannot read the other account's stacks when a spoke
lives in another account, so each side checks what it can: the spoke compares the accepter's account and
Region even when the hub's VPC ID is out of reach, and the hub finds the peering its VPC accepted from
that spoke's account and CIDR, since the accepter's account sees every peering its VPC accepted.
"""

from __future__ import annotations

from typing import Any

from hubspoke.cli.checks import CheckResult, pages
from hubspoke.cli.verify.live import Context, Unavailable
from hubspoke.config import RegionConfig, SpokeConfig
from hubspoke.outputs import PEERING_CONNECTION, VPC_ID
from hubspoke.topology import cross_account, stack_id

# EC2 VpcPeeringConnectionStateReasonCode (botocore ec2 service-2.json): initiating-request, provisioning,
# pending-acceptance, active, and the states a peering never leaves: deleted, deleting, rejected, failed,
# expired.
_SETTING_UP = {"initiating-request", "provisioning"}


def network_stack(region: str) -> str:
    return stack_id("network", region)


def _describe(ec2: Any, filters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # EC2 DescribeVpcPeeringConnections (paginator result key VpcPeeringConnections): Status.Code and
    # Message, RequesterVpcInfo and AccepterVpcInfo (VpcId, Region, OwnerId, CidrBlock, CidrBlockSet).
    return list(pages(ec2, "describe_vpc_peering_connections", "VpcPeeringConnections", Filters=filters))


def peering_rows(ctx: Context, spoke: RegionConfig) -> list[CheckResult]:
    """The spoke's peering: requested by its VPC, accepted by the hub's (account, Region, VPC), active."""
    config = ctx.config
    code, hub = spoke.region, config.hub.region
    pcx_id = ctx.stacks.output(network_stack(code), PEERING_CONNECTION.key())
    spoke_vpc = ctx.stacks.output(network_stack(code), VPC_ID.key())
    try:
        hub_vpc: str | None = ctx.stacks.output(network_stack(hub), VPC_ID.key())
        unread = ""
    except Unavailable as exc:  # a spoke in another account: the hub's stack is out of reach
        hub_vpc, unread = None, f"; the hub VPC ID was not compared ({exc})"
    # Filter vpc-peering-connection-id narrows; the ID decides (moto 5.2.5 ignores the filter).
    found = [
        p
        for p in _describe(
            ctx.clients("ec2", code), [{"Name": "vpc-peering-connection-id", "Values": [pcx_id]}]
        )
        if p.get("VpcPeeringConnectionId") == pcx_id
    ]
    network = stack_id("network", code)
    if not found:
        return [
            CheckResult(code, "peering", "fail", f"{pcx_id} does not exist", ctx.gone_fix(network, pcx_id))
        ]
    pcx = found[0]
    wanted = {
        "requester": (spoke_vpc, code, config.account_of(spoke)),
        "accepter": (hub_vpc, hub, config.account_of(config.hub)),
    }
    rows = []
    for side, key in (("requester", "RequesterVpcInfo"), ("accepter", "AccepterVpcInfo")):
        info = pcx.get(key, {})
        live = (info.get("VpcId"), info.get("Region"), info.get("OwnerId"))
        vpc, region, account = wanted[side]
        # An unreadable hub VPC ID (None) is not compared; its account and Region still are.
        if live != (vpc or live[0], region, account):
            rows.append(
                CheckResult(
                    code,
                    "peering",
                    "fail",
                    f"{pcx_id} {side} is VPC {live[0]} in {live[1]} (account {live[2]}); "
                    f"expected {vpc or 'the hub VPC'} in {region} (account {account})",
                    # The spoke's Network stack resolved the hub VPC ID when it last deployed: after the hub's
                    # VPC was replaced, a refresh re-reads it (a new PeerVpcId replaces the peering).
                    f"if the hub's VPC was replaced: {ctx.refresh_command(network)}, then "
                    f"{ctx.refresh_command(stack_id('link', code))}; otherwise {ctx.gone_fix(network, pcx_id)}",
                )
            )
    state = pcx.get("Status", {})
    code_now = state.get("Code")
    if code_now != "active":
        if code_now == "pending-acceptance":
            who = (
                f" with credentials for the hub account {config.account_of(config.hub)}"
                if cross_account(config, spoke)
                else ""
            )
            fix = (
                f"accept it in the hub Region{who}: aws ec2 accept-vpc-peering-connection "
                f"--vpc-peering-connection-id {pcx_id} --region {hub}"
            )
        elif code_now in _SETTING_UP:
            fix = "the peering is still being set up: run hubspoke verify again in a minute"
        else:  # it will never be active again
            fix = ctx.gone_fix(network, pcx_id)
        message = f" ({state['Message']})" if state.get("Message") else ""
        rows.append(CheckResult(code, "peering", "fail", f"{pcx_id} is {code_now}{message}, not active", fix))
    return rows or [
        CheckResult(
            code,
            "peering",
            "pass",
            f"{pcx_id} active between {spoke_vpc} ({code}) and "
            f"{hub_vpc or 'account ' + config.account_of(config.hub)} ({hub}){unread}",
        )
    ]


def peering_from_hub(ctx: Context, spoke: SpokeConfig) -> tuple[str | None, str]:
    """The active peering the hub's VPC accepted from this spoke, found from the hub side, and how it was found.

    EC2 DescribeVpcPeeringConnections filters accepter-vpc-info.vpc-id, requester-vpc-info.owner-id and
    requester-vpc-info.cidr-block (botocore ec2 DescribeVpcPeeringConnectionsRequest.Filters); the
    answer is checked field by field, as every filter is. None (with the reason) unless exactly one is active.
    """
    hub = ctx.config.hub
    hub_vpc = ctx.stacks.output(network_stack(hub.region), VPC_ID.key())
    account = ctx.config.account_of(spoke)
    filters = [
        {"Name": "accepter-vpc-info.vpc-id", "Values": [hub_vpc]},
        {"Name": "requester-vpc-info.owner-id", "Values": [account]},
        {"Name": "requester-vpc-info.cidr-block", "Values": [spoke.cidr]},
    ]
    active = sorted(
        p["VpcPeeringConnectionId"]
        for p in _describe(ctx.clients("ec2", hub.region), filters)
        if _accepted_from(p, hub_vpc=hub_vpc, account=account, spoke=spoke)
        and p.get("Status", {}).get("Code") == "active"
    )
    if len(active) == 1:
        return active[0], f"found from the hub side: accepted by {hub_vpc} from account {account}"
    wanted = f"from {spoke.cidr} in account {account} ({spoke.region}) accepted by {hub_vpc}"
    if not active:
        return None, f"and the hub's VPC has no active peering {wanted}"
    return None, f"and the hub's VPC has {len(active)} active peerings {wanted} ({', '.join(active)})"


def _accepted_from(pcx: dict[str, Any], *, hub_vpc: str, account: str, spoke: SpokeConfig) -> bool:
    requester, accepter = pcx.get("RequesterVpcInfo", {}), pcx.get("AccepterVpcInfo", {})
    cidrs = {requester.get("CidrBlock")} | {c.get("CidrBlock") for c in requester.get("CidrBlockSet", [])}
    return (
        accepter.get("VpcId") == hub_vpc
        and requester.get("OwnerId") == account
        and requester.get("Region") == spoke.region
        and spoke.cidr in cidrs
    )
