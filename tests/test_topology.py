"""The stack plan of hubspoke.topology, written out by hand from docs/design.md §3 for each kind of topology.

The order the design states: hub Network -> per spoke [PeerAccess when the accounts differ] -> spoke Network
(peering) -> hub-side Link -> Storage (hub, then the spokes, whose cache reads the hub) -> Compute (mounts its own
Region's storage) -> Ops (the spoke's hub-outage canary reads the hub through the spoke's portal) -> one
environment-wide dashboard. Names follow the README's `hubspoke-<environment>-<kind>-<region>`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hubspoke.config import HubSpokeConfig, load
from hubspoke.topology import cross_account, plan_stacks, stack_name, stage_id
from tests.conftest import NETWORK_ONLY, minimal, write_config

HUB_ACCOUNT = "123456789012"
SPOKE_ACCOUNT = "210987654321"


def _config(tmp_path: Path, **overrides: Any) -> HubSpokeConfig:
    return load(write_config(tmp_path, minimal(**overrides))).config


def _rows(config: HubSpokeConfig) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    return [(p.name, p.id, p.region, p.account, p.depends_on) for p in plan_stacks(config)]


def test_full_topology_plan_is_the_designed_order(tmp_path: Path) -> None:
    config = _config(tmp_path, environment="prod")
    hub, spoke = "us-east-2", "us-west-2"
    a = HUB_ACCOUNT
    assert _rows(config) == [
        (f"hubspoke-prod-network-{hub}", f"network-{hub}", hub, a, ()),
        (f"hubspoke-prod-network-{spoke}", f"network-{spoke}", spoke, a, (f"network-{hub}",)),
        # The hub side of the spoke lives in the hub Region, after both networks (routes need both VPCs).
        (f"hubspoke-prod-link-{spoke}", f"link-{spoke}", hub, a, (f"network-{hub}", f"network-{spoke}")),
        (f"hubspoke-prod-storage-{hub}", f"storage-{hub}", hub, a, (f"network-{hub}",)),
        # The spoke's cache reaches the hub's cluster over the peering the Link stack routes.
        (
            f"hubspoke-prod-storage-{spoke}",
            f"storage-{spoke}",
            spoke,
            a,
            (f"network-{spoke}", f"link-{spoke}", f"storage-{hub}"),
        ),
        (f"hubspoke-prod-compute-{hub}", f"compute-{hub}", hub, a, (f"network-{hub}", f"storage-{hub}")),
        (
            f"hubspoke-prod-compute-{spoke}",
            f"compute-{spoke}",
            spoke,
            a,
            (f"network-{spoke}", f"storage-{spoke}"),
        ),
        # The canary runs in the spoke's network and probes the hub's floating IPs, which it reads from the hub's
        # Storage stack (a weak reference since 9843fa6; the assembly records these three, test_deploy_time.py).
        (
            f"hubspoke-prod-ops-{spoke}",
            f"ops-{spoke}",
            spoke,
            a,
            (f"network-{spoke}", f"storage-{hub}", f"storage-{spoke}"),
        ),
        (
            f"hubspoke-prod-dashboard-{hub}",
            f"dashboard-{hub}",
            hub,
            a,
            (f"compute-{hub}", f"compute-{spoke}", f"ops-{spoke}"),
        ),
    ]
    assert stage_id(config) == "hubspoke-prod"
    assert stack_name(config, "link", spoke) == f"hubspoke-prod-link-{spoke}"


def test_a_spoke_in_another_account_gets_a_peer_access_stack_first(tmp_path: Path) -> None:
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "account": SPOKE_ACCOUNT, **NETWORK_ONLY}
    config = _config(
        tmp_path, hub={"region": "us-east-2", "cidr": "10.10.0.0/16", **NETWORK_ONLY}, spokes=[spoke]
    )
    assert cross_account(config, config.spokes[0])
    assert _rows(config) == [
        ("hubspoke-dev-network-us-east-2", "network-us-east-2", "us-east-2", HUB_ACCOUNT, ()),
        # The role the spoke account assumes to accept the peering: in the hub's account and Region.
        (
            "hubspoke-dev-peer-access-us-west-2",
            "peer-access-us-west-2",
            "us-east-2",
            HUB_ACCOUNT,
            ("network-us-east-2",),
        ),
        (
            "hubspoke-dev-network-us-west-2",
            "network-us-west-2",
            "us-west-2",
            SPOKE_ACCOUNT,
            ("network-us-east-2", "peer-access-us-west-2"),
        ),
        (
            "hubspoke-dev-link-us-west-2",
            "link-us-west-2",
            "us-east-2",
            HUB_ACCOUNT,
            ("network-us-east-2", "network-us-west-2"),
        ),
        ("hubspoke-dev-dashboard-us-east-2", "dashboard-us-east-2", "us-east-2", HUB_ACCOUNT, ()),
    ]


def test_a_spoke_naming_the_hubs_account_is_not_cross_account(tmp_path: Path) -> None:
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "account": HUB_ACCOUNT, **NETWORK_ONLY}
    config = _config(
        tmp_path, hub={"region": "us-east-2", "cidr": "10.10.0.0/16", **NETWORK_ONLY}, spokes=[spoke]
    )
    assert not cross_account(config, config.spokes[0])
    assert [p.kind for p in plan_stacks(config)] == ["network", "network", "link", "dashboard"]


def test_hub_storage_without_hub_compute(tmp_path: Path) -> None:
    """The hub only holds the dataset (docs/design.md §1: train wherever GPUs are): no hub Compute, and the dashboard
    waits for the stacks whose alarms it shows."""
    hub = {"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"enabled": False}}
    config = _config(tmp_path, hub=hub)
    rows = {p.id: p.depends_on for p in plan_stacks(config)}
    assert "compute-us-east-2" not in rows
    assert rows["compute-us-west-2"] == ("network-us-west-2", "storage-us-west-2")
    assert rows["dashboard-us-east-2"] == ("compute-us-west-2", "ops-us-west-2")


def test_every_spoke_gets_its_own_network_link_and_ops(tmp_path: Path) -> None:
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16", "compute": {"enabled": False}},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16", "compute": {"enabled": False}},
    ]
    config = _config(
        tmp_path,
        hub={"region": "us-east-2", "cidr": "10.10.0.0/16", "compute": {"enabled": False}},
        spokes=spokes,
    )
    rows = {p.id: (p.region, p.depends_on) for p in plan_stacks(config)}
    assert rows["link-eu-west-1"] == ("us-east-2", ("network-us-east-2", "network-eu-west-1"))
    assert rows["storage-eu-west-1"] == (
        "eu-west-1",
        ("network-eu-west-1", "link-eu-west-1", "storage-us-east-2"),
    )
    assert rows["ops-us-west-2"] == (
        "us-west-2",
        ("network-us-west-2", "storage-us-east-2", "storage-us-west-2"),
    )
    assert rows["ops-eu-west-1"] == (
        "eu-west-1",
        ("network-eu-west-1", "storage-us-east-2", "storage-eu-west-1"),
    )
    assert rows["dashboard-us-east-2"] == ("us-east-2", ("ops-us-west-2", "ops-eu-west-1"))


def _built_directly(**overrides: Any) -> HubSpokeConfig:
    """A config made without load(): pydantic's field checks only, none of the cross-field rules (config/rules.py)
    that load() applies; plan_stacks is public and takes such a config as it is."""
    return HubSpokeConfig.model_validate(minimal(**overrides))


def test_a_config_built_without_load_plans_no_dependency_on_a_missing_stack() -> None:
    """plan_stacks promises an order `cdk deploy` can follow one by one: each stack waits only for stacks planned
    before it (a CDK stack dependency is on another stack of the app). Here that holds for configs load() would
    refuse: a spoke with storage while the hub has none (spoke_storage_needs_hub_storage), and compute in a
    Region without storage (compute_mounts_local_storage)."""
    no_hub_storage = _built_directly(
        hub={"region": "us-east-2", "cidr": "10.10.0.0/16", "storage": {"enabled": False}}
    )
    no_spoke_storage = _built_directly(
        spokes=[{"region": "us-west-2", "cidr": "10.20.0.0/16", "storage": {"enabled": False}}]
    )
    assert not no_hub_storage.hub.storage.enabled and no_hub_storage.spokes[0].storage.enabled
    assert no_spoke_storage.spokes[0].compute.enabled and not no_spoke_storage.spokes[0].storage.enabled
    for config in (no_hub_storage, no_spoke_storage):
        planned: list[str] = []
        for plan in plan_stacks(config):
            assert all(dep in planned for dep in plan.depends_on), (plan.id, plan.depends_on, planned)
            planned.append(plan.id)
    rows = {p.id: p.depends_on for p in plan_stacks(no_hub_storage)}
    assert rows["storage-us-west-2"] == ("network-us-west-2", "link-us-west-2")
    rows = {p.id: p.depends_on for p in plan_stacks(no_spoke_storage)}
    assert rows["compute-us-west-2"] == ("network-us-west-2",)
