"""The run-rate of what a config deploys (hubspoke.run_rate, hubspoke.prices): counts from config, prices cited."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from hubspoke.config import HubSpokeConfig, load
from hubspoke.prices import PRICES, transfer_price
from hubspoke.run_rate import run_rate, total
from tests.conftest import ROOT, minimal, write_config

# The day the figures below were worked out: 1.33 (dev, smoke) is past its standard support (2026-07-29).
PRICED_ON = date(2026, 12, 1)


def test_dev_deploys_four_p5_nodes_hub_and_spoke(dev_config: HubSpokeConfig) -> None:
    """config/dev.yaml leaves compute.enabled at its default (true) in the hub too, so the hub and the spoke
    each deploy the default group, 2 x ml.p5.48xlarge (docs/configuration.md): 4 p5 nodes, 32 GPUs. Its
    clusters state Kubernetes 1.33, past EKS standard support since 2026-07-29: extended-support rate."""
    lines = {(line.region, line.item): line.count for line in run_rate(dev_config, on=PRICED_ON)}
    assert lines == {
        ("us-east-2", "ml.p5.48xlarge"): 2,
        ("us-east-2", "cluster-extended-support"): 1,
        ("us-east-2", "i4i.8xlarge"): 4,
        ("us-east-2", "nat-gateway"): 1,
        ("us-west-2", "ml.p5.48xlarge"): 2,
        ("us-west-2", "cluster-extended-support"): 1,
        ("us-west-2", "i4i.8xlarge"): 4,
        ("us-west-2", "nat-gateway"): 1,
    }


def test_dev_run_rate_by_hand(dev_config: HubSpokeConfig) -> None:
    """The rows of hubspoke/prices.py as written on 2026-11 (all ASSUMED: not re-read offline): ml.p5.48xlarge
    $98.32, i4i.8xlarge $2.746, NAT gateway $0.045, EKS cluster $0.60 per hour on extended support (dev states
    1.33, past standard support), in us-east-2 and us-west-2.
    4 x 98.32 + 8 x 2.746 + 2 x 0.045 + 2 x 0.60 = 393.28 + 21.968 + 0.09 + 1.2 = 416.538."""
    usd, complete = total(run_rate(dev_config, on=PRICED_ON))
    assert complete
    assert usd == pytest.approx(416.538)


def test_a_region_without_prices_is_listed_and_marks_the_total_incomplete(tmp_path: Path) -> None:
    hub = {"region": "sa-east-1", "cidr": "10.10.0.0/16"}
    config = load(write_config(tmp_path, minimal(hub=hub))).config
    lines = run_rate(config)
    unpriced = [line for line in lines if line.price is None]
    assert {line.region for line in unpriced} == {"sa-east-1"}
    assert {line.item for line in unpriced} == {"ml.p5.48xlarge", "cluster", "i4i.8xlarge", "nat-gateway"}
    _, complete = total(lines)
    assert not complete


def test_nat_per_az_counts_one_gateway_per_private_az(tmp_path: Path) -> None:
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16", "nat": "per_az", "az_ids": ["usw2-az1", "usw2-az2"]}
    ]
    config = load(write_config(tmp_path, minimal(spokes=spokes))).config
    nat = [line for line in run_rate(config) if line.item == "nat-gateway" and line.region == "us-west-2"]
    assert [line.count for line in nat] == [2]


def test_nat_per_az_with_the_default_az_ids_counts_the_default_azs(tmp_path: Path) -> None:
    """Without `az_ids` a Region's private subnets are in its first 2 AZs (docs/configuration.md, `.az_ids`,
    default "the Region's first 2"), so `nat: per_az` stands 2 gateways, not the 0 an unset list would give."""
    spokes = [{"region": "us-west-2", "cidr": "10.20.0.0/16", "nat": "per_az"}]
    config = load(write_config(tmp_path, minimal(spokes=spokes))).config
    nat = [line for line in run_rate(config) if line.item == "nat-gateway" and line.region == "us-west-2"]
    assert [line.count for line in nat] == [2]


def test_every_price_is_dated_sourced_and_one_row_per_item() -> None:
    keys = [(p.kind, p.item, p.region) for p in PRICES]
    assert len(keys) == len(set(keys))
    for p in PRICES:
        assert p.as_of and "https://aws.amazon.com/" in p.source and p.usd > 0


def test_transfer_is_priced_by_pair_or_not_at_all() -> None:
    """EC2 On-Demand pricing, 'Data Transfer': out of US East (Ohio) to another Region $0.02/GB, to US East
    (N. Virginia) $0.01/GB; South America (Sao Paulo) has no row here (its rate is several times higher)."""
    assert transfer_price("us-east-2", "us-west-2").usd == 0.02  # type: ignore[union-attr]
    assert transfer_price("us-east-2", "us-east-1").usd == 0.01  # type: ignore[union-attr]
    assert transfer_price("sa-east-1", "us-east-2") is None


def test_smoke_profile_costs_dollars_not_a_p5_bill() -> None:
    """config/smoke.yaml: per Region 1 x ml.g5.8xlarge ($3.06), 1 x i4i.xlarge ($0.343), a NAT gateway ($0.045)
    and an EKS cluster at 1.33 on extended support ($0.60), all ASSUMED 2026-11 list prices:
    2 x 4.048 = $8.096 per hour."""
    config = load(ROOT / "config" / "smoke.yaml").config
    usd, complete = total(run_rate(config, on=PRICED_ON))
    assert complete
    assert usd == pytest.approx(8.096)


def test_a_control_plane_past_standard_support_is_priced_at_the_extended_rate(tmp_path: Path) -> None:
    """EKS standard support for 1.33 ended 2026-07-29 (the EKS version calendar, as hubspoke/eks_addons.py cites
    it); after it a cluster costs $0.60 per cluster hour (AWS's extended-support notice: "charged at $0.60 per
    cluster hour") instead of $0.10. The same config the day before and the day after."""

    config = load(ROOT / "config" / "smoke.yaml").config  # states 1.33 in both Regions
    before = [line for line in run_rate(config, on=date(2026, 7, 29)) if "EKS" in line.what]
    after = [line for line in run_rate(config, on=date(2026, 7, 30)) if "EKS" in line.what]
    assert [line.usd_per_hour for line in before] == [0.10, 0.10]
    assert [line.usd_per_hour for line in after] == [0.60, 0.60]
    assert all("1.33, extended support" in line.what for line in after)
