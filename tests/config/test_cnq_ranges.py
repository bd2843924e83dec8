"""Issue 22 items 8 and 9: CNQ config ranges and counts as Qumulo's own AWS and GCP deployments set them.

Every expected number is Qumulo's, written here with its source, not imported from hubspoke.config.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import ConfigError, load
from tests.conftest import minimal, write_config


def _load(tmp_path: Path, **storage: Any) -> Any:
    data = minimal()
    data["hub"].setdefault("storage", {}).update(storage)
    return load(write_config(tmp_path, data))


def _problems(tmp_path: Path, **storage: Any) -> list[str]:
    data = minimal()
    data["hub"].setdefault("storage", {}).update(storage)
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    return [line.removeprefix(f"{path}: ") for line in str(caught.value).splitlines()]


@pytest.mark.parametrize(
    ("tb", "buckets"),
    # Qumulo/qumulo-terraform-gcp @ a30b449c, persistent-storage/module/main.tf: number_buckets_calc =
    # ceil(soft_capacity_limit / 500), number_buckets_min = 16 when the calculation is below 16.
    [(50, 16), (100, 16), (8000, 16), (8001, 17), (8500, 17), (50000, 100)],
)
def test_default_bucket_count_is_qumulos_rule(tmp_path: Path, tb: int, buckets: int) -> None:
    assert buckets == max(16, math.ceil(tb / 500))  # the table is the rule as Qumulo writes it
    loaded = _load(tmp_path, soft_capacity_limit_tb=tb)
    assert loaded.config.hub.storage.buckets == buckets
    assert not [w for w in loaded.warnings if "bucket_count" in w.field]


def test_fewer_buckets_than_the_rule_is_a_development_warning(tmp_path: Path) -> None:
    """Qumulo allows a bucket count of its own only with dev_environment=true (qumulo-terraform-gcp
    @ a30b449c, persistent-storage/module/variables.tf bucket_count_override); a cluster formed with 4
    keeps working with 4 pinned, so it is a warning, not an error."""
    loaded = _load(tmp_path, bucket_count=4)
    assert loaded.config.hub.storage.buckets == 4
    [warning] = [w for w in loaded.warnings if w.field == "hub.storage.bucket_count"]
    assert "16" in warning.message and "development" in warning.message
    assert not [w for w in _load(tmp_path, bucket_count=16).warnings if "bucket_count" in w.field]


@pytest.mark.parametrize(("tb", "ok"), [(49, False), (50, True), (50000, True), (50001, False)])
def test_soft_capacity_is_qumulos_range(tmp_path: Path, tb: int, ok: bool) -> None:
    """'Soft capacity limit in TB (50 to 50000)' (Qumulo/qumulo-terraform-aws @ 8a6e4d57, variables.tf
    soft_capacity_limit_tb)."""
    if ok:
        _load(tmp_path, soft_capacity_limit_tb=tb)
    else:
        assert any(p.startswith("hub.storage.soft_capacity_limit_tb") for p in _problems(
            tmp_path, soft_capacity_limit_tb=tb))  # fmt: skip


def test_a_limit_below_50_tb_says_what_to_do(tmp_path: Path) -> None:
    """Below Qumulo's 50 TB: the message names the value and the field's range (Qumulo's, 50 to 50,000)."""
    [problem] = [p for p in _problems(tmp_path, soft_capacity_limit_tb=20) if "soft_capacity" in p]
    assert problem == (
        "hub.storage.soft_capacity_limit_tb: input should be greater than or equal to 50, got 20; expected the "
        "cluster's soft capacity limit, 50 to 50,000 (Qumulo's range); only ever raised"
    )


@pytest.mark.parametrize(("count", "ok"), [(2, False), (4, True), (100, True), (101, False)])
def test_floating_ip_count_is_a_cluster_total_up_to_100(tmp_path: Path, count: int, ok: bool) -> None:
    """'Number of floating IPs. Must be 0, or between 3 and 100' (qumulo-terraform-aws @ 8a6e4d57, variables.tf
    floating_ip_count); its main.tf raises a count below node_count to node_count, which hubspoke asks for."""
    if ok:
        assert _load(tmp_path, node_count=4, floating_ip_count=count).config.hub.storage.floating_ips == count
    else:
        assert any(p.startswith("hub.storage.floating_ip_count") for p in _problems(
            tmp_path, node_count=4, floating_ip_count=count))  # fmt: skip


def test_fewer_floating_ips_than_nodes_is_refused_with_the_fix(tmp_path: Path) -> None:
    found = _problems(tmp_path, node_count=5, floating_ip_count=4)
    assert found == [
        "hub.storage.floating_ip_count: 4 floating IPs for 5 nodes: Qumulo gives every node at least one (its "
        "AWS Terraform raises a smaller count to the node count): set at least 5"
    ]


def test_floating_ips_spread_evenly_over_the_nodes(tmp_path: Path) -> None:
    storage = _load(tmp_path, node_count=4, floating_ip_count=10).config.hub.storage
    assert [storage.floating_ips_on_node(i) for i in range(4)] == [3, 3, 2, 2]
    default = _load(tmp_path, node_count=4).config.hub.storage
    assert [default.floating_ips_on_node(i) for i in range(4)] == [3, 3, 3, 3], "3 per node"


@pytest.mark.parametrize(
    ("itype", "warned"), [("i4i.xlarge", True), ("i4i.2xlarge", False), ("m6i.xlarge", True)]
)
def test_xlarge_nodes_are_for_development(tmp_path: Path, itype: str, warned: bool) -> None:
    """Qumulo's Terraform takes its 4-vCPU sizes only with dev_environment (Qumulo/aws-terraform-cloud-q,
    terraform_tests.tfvars: 'To use m5.xlarge set the optional variable dev_environment=true';
    qumulo-terraform-gcp @ a30b449c, compute/module/main.tf node_instance_type)."""
    loaded = _load(tmp_path, instance_type=itype)
    found = [w for w in loaded.warnings if w.field == "hub.storage.instance_type"]
    assert bool(found) == warned
    if warned:
        assert "development" in found[0].message


@pytest.mark.parametrize(
    "product",
    # qumulo-api 7.10.2.1, qumulo/commands/cluster.py create_object_backed_cluster --product-type: "Valid
    # options for AWS clusters are: ACTIVE_WITH_STANDARD_STORAGE, ACTIVE_WITH_INTELLIGENT_STORAGE,
    # ARCHIVE_WITH_IA_STORAGE, ARCHIVE_WITH_GIR_STORAGE".
    ["ACTIVE_WITH_STANDARD_STORAGE", "ACTIVE_WITH_INTELLIGENT_STORAGE", "ARCHIVE_WITH_IA_STORAGE",
     "ARCHIVE_WITH_GIR_STORAGE"],
)  # fmt: skip
def test_product_type_is_stated_from_qumulos_aws_types(tmp_path: Path, product: str) -> None:
    assert _load(tmp_path, product_type=product).config.hub.storage.product_type == product


def test_azure_product_types_are_refused(tmp_path: Path) -> None:
    """ACTIVE_WITH_HOT_STORAGE is an Azure type (same SDK help text)."""
    assert any(p.startswith("hub.storage.product_type") for p in _problems(
        tmp_path, product_type="ACTIVE_WITH_HOT_STORAGE"))  # fmt: skip


@pytest.mark.parametrize(("tb", "nodes", "ok"), [(400, 4, True), (401, 4, False), (401, 5, True)])
def test_capacity_per_node_within_what_the_type_supports(
    tmp_path: Path, tb: int, nodes: int, ok: bool
) -> None:
    """Qumulo's GCP module refuses capacity_limit / node_count above the type's nodeCap (qumulo-terraform-gcp
    @ a30b449c, compute/module/sub-modules/qcluster/main.tf capacity_per_node_needed <= _available). With a
    stated 100 TB per node, 4 nodes carry 400 TB and 401 TB needs a fifth."""
    storage = {"capacity_per_node_tb": 100, "soft_capacity_limit_tb": tb, "node_count": nodes}
    if ok:
        _load(tmp_path, **storage)
    else:
        [problem] = _problems(tmp_path, **storage)
        assert problem.startswith("hub.storage.soft_capacity_limit_tb: 401 TB over 4 nodes")
        assert "raise node_count to 5" in problem


def test_no_per_node_capacity_is_assumed(tmp_path: Path) -> None:
    """No stored source gives Qumulo's AWS per-node figures: without the setting, nothing is refused."""
    _load(tmp_path, soft_capacity_limit_tb=50000, node_count=3)
