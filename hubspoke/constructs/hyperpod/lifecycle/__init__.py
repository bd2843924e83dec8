"""HyperPod lifecycle scripts rendered from config: on_create.sh with the Region's peer MTU routes filled in.

No CDK here: the Compute stack ships the rendered directory as an asset, and tests run it against stubs.
"""

from __future__ import annotations

from pathlib import Path

from hubspoke.config.schema import HubSpokeConfig, RegionConfig
from hubspoke.mtu import (
    peer_mtu_parameter_path,
    peer_routes,
    render_route_mtu_from_ssm_script,
    render_route_mtu_script,
)

TEMPLATE = Path(__file__).with_name("on_create.sh")
PLACEHOLDER = "# @HUBSPOKE_PEER_MTU_FUNCTION@"
ON_CREATE = "on_create.sh"


def render_on_create(config: HubSpokeConfig, region: RegionConfig) -> str:
    """on_create.sh for one Region: the template with `hubspoke_pin_peer_mtu` defined for its peer CIDRs."""
    template = TEMPLATE.read_text()
    if template.count(PLACEHOLDER) != 1:
        raise ValueError(f"{TEMPLATE} must contain '{PLACEHOLDER}' exactly once")
    if region.region == config.hub.region:
        # The hub reads its spokes from what their Link stacks publish, so a new spoke changes no hub template.
        function = render_route_mtu_from_ssm_script(peer_mtu_parameter_path(config), region.region)
    else:
        function = render_route_mtu_script(peer_routes(config, region))
    return template.replace(PLACEHOLDER, function.rstrip("\n"))


def write_lifecycle_scripts(directory: Path, config: HubSpokeConfig, region: RegionConfig) -> Path:
    """Write the Region's lifecycle scripts into `directory` (the asset HyperPod downloads) and return it."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / ON_CREATE
    target.write_text(render_on_create(config, region))
    target.chmod(0o755)
    return directory
