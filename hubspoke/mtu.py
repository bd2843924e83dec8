"""The one place that decides and renders the MTU towards peer VPCs (CNQ node user data, lifecycle scripts).

Inside a VPC the MTU is 9001; over inter-Region VPC peering it is at most 8500 (EC2 User Guide,
"Network MTU"). Hosts keep 9001 on their interface and pin 8500 on the routes to each peer CIDR, so
local traffic keeps jumbo frames and cross-Region traffic is never black-holed by a too-large packet.
The hosts whose packets cross the peering are the CNQ nodes (portal traffic, TCP 3713, hub <-> spoke).
Each Region publishes the routes its hosts pin as SSM parameters under one path (in the hub Region the
spokes' Link stacks, in a spoke Region its Storage stack), so the node script is the same everywhere and
a new spoke changes no hub template.
"""

from __future__ import annotations

import ipaddress
import shlex

from hubspoke import names
from hubspoke.config.schema import HubSpokeConfig, RegionConfig

VPC_MTU = 9001
INTER_REGION_PEERING_MTU = 8500


def peer_mtu(config: HubSpokeConfig) -> int:
    """The MTU for every path that crosses the peering: config's value, never above the peering's limit."""
    return min(config.inter_region_mtu, INTER_REGION_PEERING_MTU)


def peer_routes(config: HubSpokeConfig, region: RegionConfig) -> tuple[tuple[str, int], ...]:
    """(peer CIDR, MTU) for every CIDR this Region reaches over peering."""
    mtu = peer_mtu(config)
    return tuple((cidr, mtu) for cidr in config.peer_cidrs(region))


def peer_mtu_parameter_path(config: HubSpokeConfig) -> str:
    """SSM path under which each spoke's Link stack publishes its CIDRs and MTU (hubspoke/names.py)."""
    return names.peer_mtu_parameter_path(config.environment)


def peer_mtu_parameters(config: HubSpokeConfig, toward: RegionConfig) -> tuple[tuple[str, str], ...]:
    """(SSM parameter name, value) that publish `toward`'s CIDRs to the hosts on the other side of the peering."""
    path, mtu = peer_mtu_parameter_path(config), peer_mtu(config)
    return tuple(
        (f"{path}{toward.region}/{i}", peer_mtu_parameter_value(cidr, mtu))
        for i, cidr in enumerate(toward.all_cidrs)
    )


def peer_mtu_parameter_value(cidr: str, mtu: int) -> str:
    """One published route: `CIDR MTU`, what the hub's hosts read back with the SSM renderer below."""
    _check(cidr, mtu)
    return f"{cidr} {mtu}"


def _check(cidr: str, mtu: int) -> ipaddress.IPv4Network:
    net = ipaddress.IPv4Network(cidr)  # raises on anything that is not a CIDR: never render garbage
    if not 1280 <= mtu <= INTER_REGION_PEERING_MTU:
        raise ValueError(f"MTU {mtu} for {cidr} is outside 1280..{INTER_REGION_PEERING_MTU}")
    return net


_DEFAULT_ROUTE = [
    "  local gw dev",
    "  read -r gw dev < <(ip -4 route show default | awk "
    '\'{for (i = 1; i < NF; i++) { if ($i == "via") g = $(i + 1); if ($i == "dev") d = $(i + 1) }} '
    "END { print g, d }')",
    '  if [ -z "${gw:-}" ] || [ -z "${dev:-}" ]; then',
    '    echo "hubspoke: no default IPv4 route; cannot pin the peer MTU" >&2',
    "    return 1",
    "  fi",
]


def render_route_mtu_from_ssm_script(path: str, region: str) -> str:
    """Bash that pins the routes the spokes' Link stacks published under `path` (the hub's side).

    The hub's hosts learn spokes at run time, so adding a spoke changes no hub template; the function
    refuses any published MTU above the peering's limit, whatever wrote it.
    """
    lines = [
        "# hubspoke: pin the route MTU towards every spoke VPC, as the spokes' Link stacks publish them in SSM.",
        "hubspoke_pin_peer_mtu() {",
        *_DEFAULT_ROUTE,
        "  local published cidr mtu count=0",
        '  command -v aws > /dev/null || { echo "hubspoke: the AWS CLI is needed to read the spokes\' CIDRs" >&2; return 1; }',
        f"  published=$(aws ssm get-parameters-by-path --region {shlex.quote(region)} --path {shlex.quote(path)} "
        "--recursive --query 'Parameters[].Value' --output text) || "
        f'{{ echo "hubspoke: cannot read {path} from SSM" >&2; return 1; }}',
        "  while read -r cidr mtu; do",
        '    [ -n "${cidr:-}" ] || continue',
        f'    if ! [[ "$mtu" =~ ^[0-9]+$ ]] || [ "$mtu" -lt 1280 ] || [ "$mtu" -gt {INTER_REGION_PEERING_MTU} ]; then',
        f'      echo "hubspoke: refusing MTU $mtu for $cidr (allowed 1280..{INTER_REGION_PEERING_MTU})" >&2',
        "      return 1",
        "    fi",
        '    ip route replace "$cidr" via "$gw" dev "$dev" mtu "$mtu" || '
        '{ echo "hubspoke: cannot set MTU $mtu towards $cidr" >&2; return 1; }',
        "    count=$((count + 1))",
        "  done < <(tr '\\t' '\\n' <<< \"$published\")",
        '  echo "hubspoke: pinned MTU on $count peer route(s) via $gw dev $dev"',
        "}",
    ]
    return "\n".join(lines) + "\n"


def render_peer_mtu_pin(path: str, region: str) -> str:
    """A whole executable script that pins what is published under `path` (run at boot and by a timer).

    The AWS CLI of a stock Ubuntu node is a snap (/snap/bin), which systemd's default PATH leaves out.
    """
    return (
        "#!/bin/bash\n# hubspoke: pin the route MTU towards the peer VPCs (docs/runbooks/mtu.md).\n"
        "set -euo pipefail\nexport PATH=$PATH:/snap/bin\n"
        + render_route_mtu_from_ssm_script(path, region)
        + "hubspoke_pin_peer_mtu\n"
    )
