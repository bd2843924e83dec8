"""The schema's field checks at their documented edges, and the lookups the stacks use on a loaded config.

Sources: Amazon VPC User Guide, "VPC CIDR blocks" (a VPC's blocks, primary and secondary, are /16 to /28);
docs/configuration.md (`cidr` is /16 to /20: the subnet layout needs a /20); Amazon S3 User Guide, "General
purpose bucket naming rules" (no two adjacent periods in a bucket name).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import load
from tests.config.test_loader import problems
from tests.conftest import QUMULO_CORE, minimal, write_config


def _with_spoke(**spoke: Any) -> dict[str, Any]:
    return minimal(spokes=[{"region": "us-west-2", "cidr": "10.20.0.0/16", **spoke}])


@pytest.mark.parametrize("value", ["10.20.0.0", "fd00:20::/48"])
def test_a_cidr_must_be_ipv4_with_a_prefix(tmp_path: Path, value: str) -> None:
    [line] = problems(tmp_path, _with_spoke(cidr=value))
    assert line == f"spokes[0].cidr: '{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16"


def test_a_vpc_cidr_may_be_as_small_as_a_20_and_the_fix_names_its_16(tmp_path: Path) -> None:
    load(write_config(tmp_path, _with_spoke(cidr="10.20.16.0/20")))
    [line] = problems(tmp_path, _with_spoke(cidr="10.20.16.0/21"))
    assert line.startswith("spokes[0].cidr: /21 is too small for the subnet layout")
    assert line.endswith("use /16 to /20, e.g. 10.20.0.0/16")


def test_secondary_cidrs_reach_down_to_a_28(tmp_path: Path) -> None:
    load(write_config(tmp_path, _with_spoke(secondary_cidrs=["100.64.0.0/28"])))
    [line] = problems(tmp_path, _with_spoke(secondary_cidrs=["100.64.0.0/29"]))
    assert (
        line
        == "spokes[0].secondary_cidrs[0]: /29 is outside what AWS allows for a VPC CIDR block (/16 to /28)"
    )


def test_plain_cidr_fields_take_any_ipv4_block(tmp_path: Path) -> None:
    """`public_access_cidrs` and `admin_cidr` name the operator's own network: any IPv4 block but the world."""
    data = _with_spoke(
        compute={"public_access_cidrs": ["203.0.113.0/24"]}, storage={"admin_cidr": "198.51.100.7/32"}
    )
    spoke = load(write_config(tmp_path, data)).config.spokes[0]
    assert spoke.compute.public_access_cidrs == ["203.0.113.0/24"]
    assert spoke.storage.admin_cidr == "198.51.100.7/32"


def test_an_unknown_region_far_from_any_gets_the_generic_fix(tmp_path: Path) -> None:
    [line] = problems(tmp_path, _with_spoke(region="xx"))
    assert (
        line == "spokes[0].region: unknown Region code 'xx'; use a commercial Region code such as us-west-2"
    )


def test_a_bucket_name_with_adjacent_periods_is_refused_a_prefix_with_them_is_not(tmp_path: Path) -> None:
    def spoke_with(uri: str) -> dict[str, Any]:
        return _with_spoke(storage={"qumulo_core": {**QUMULO_CORE, "install_uri": uri}})

    [line] = problems(tmp_path, spoke_with("s3://my..bucket/cnq/qumulo-core-install/"))
    assert "is not an S3 folder URI" in line
    # Object keys may hold any UTF-8 (S3 User Guide, "Naming Amazon S3 objects"): only the bucket is restricted.
    load(write_config(tmp_path, spoke_with("s3://my-bucket/releases..old/qumulo-core-install/")))


def test_lookups_by_region_code(tmp_path: Path) -> None:
    spokes = [
        {
            "region": "us-west-2",
            "cidr": "10.20.0.0/16",
            "account": "210987654321",
            # A CNQ spoke in another account is refused (storage_rules): peer the network only.
            "storage": {"enabled": False},
            "compute": {"enabled": False},
        },
        {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
    ]
    config = load(write_config(tmp_path, minimal(spokes=spokes))).config
    assert config.spoke("eu-west-1").cidr == "10.30.0.0/16"
    assert config.region_config("us-east-2") is config.hub
    assert config.region_config("us-west-2") is config.spoke("us-west-2")
    # A Region's own account wins over the environment's (docs/configuration.md: `account` per Region).
    assert config.account_of(config.spoke("us-west-2")) == "210987654321"
    assert config.account_of(config.spoke("eu-west-1")) == "123456789012"


def test_the_dataset_pin_defaults_to_llama3s_token_format_and_refuses_what_cannot_fit(tmp_path: Path) -> None:
    """LLaMA 3: 128,256 token IDs (vocab_size in Meta's Llama 3 params.json), above 2-byte IDs' 65,536."""
    dataset = load(write_config(tmp_path, minimal(dataset={"name": "c4", "version": "v1"}))).config.dataset
    assert (dataset.token_bytes, dataset.vocab_size) == (4, 128256)
    [line] = problems(tmp_path, minimal(dataset={"name": "c4", "version": "v1", "token_bytes": 2}))
    assert line.startswith("dataset.vocab_size: 128256 does not fit 2-byte tokens (at most 65536)")
    load(write_config(tmp_path, minimal(dataset={"token_bytes": 2, "vocab_size": 65536})))
    [line] = problems(tmp_path, minimal(dataset={"name": "c4", "version": "../v1"}))
    assert line.startswith("dataset.version:")


def test_deep_health_checks_take_the_two_known_checks_once_each(tmp_path: Path) -> None:
    """DeepHealthCheckType (botocore's sagemaker service model) also lists MultiNodeTrainingValidation, which
    hubspoke has no source for: refused, like a misspelt check and a check listed twice."""
    for checks, says in (
        (["MultiNodeTrainingValidation"], "InstanceStress"),
        (["InstanceStres"], "InstanceStress"),
        (["InstanceStress", "InstanceStress"], "list each check once"),
    ):
        lines = problems(
            tmp_path, _with_spoke(compute={"instance_groups": [{"on_start_deep_health_checks": checks}]})
        )
        assert any(
            line.startswith("spokes[0].compute.instance_groups[0].on_start_deep_health_checks")
            and says in line
            for line in lines
        ), (checks, lines)


# --- A new user's configs (issue 43): each refused, or warned, with the field and what to write ---------------


def _group(instance_type: str) -> dict[str, Any]:
    return _with_spoke(compute={"instance_groups": [{"instance_type": instance_type}]})


def test_a_hyperpod_instance_type_that_does_not_exist_is_refused_with_the_nearest_one(tmp_path: Path) -> None:
    """botocore's sagemaker model (data/sagemaker/2017-07-24/service-2.json, ClusterInstanceType) lists
    ml.p5.48xlarge and ml.g5.8xlarge, every HyperPod type starting with ml.; neither misspelling is listed."""
    assert problems(tmp_path, _group("ml.p5.48xlage")) == [
        "spokes[0].compute.instance_groups[0].instance_type: 'ml.p5.48xlage' is not a SageMaker HyperPod instance "
        "type (botocore's sagemaker model, ClusterInstanceType); did you mean ml.p5.48xlarge?"
    ]
    assert problems(tmp_path, _group("g5.8xlarge")) == [
        "spokes[0].compute.instance_groups[0].instance_type: 'g5.8xlarge' is not a SageMaker HyperPod instance "
        "type (botocore's sagemaker model, ClusterInstanceType); did you mean ml.g5.8xlarge?"
    ]
    load(write_config(tmp_path, _group("ml.g5.8xlarge")))


def test_an_unknown_cnq_instance_type_is_refused_as_one_not_asked_for_volumes(tmp_path: Path) -> None:
    """botocore's ec2 model (data/ec2/2016-11-15/service-2.json.gz, InstanceType) lists i4i.8xlarge, not
    i4i.8xlage: the answer is the type, not "define cache volumes" for a type that does not exist."""
    data = minimal()
    data["hub"]["storage"]["instance_type"] = "i4i.8xlage"
    assert problems(tmp_path, data) == [
        "hub.storage.instance_type: 'i4i.8xlage' is not an EC2 instance type (botocore's ec2 model, InstanceType); "
        "did you mean i4i.8xlarge?"
    ]


def test_a_dataset_version_without_a_name_is_refused(tmp_path: Path) -> None:
    """Jobs read <dataset_path>/<name>/<version> (docs/datasets.md): a version alone names no folder."""
    assert problems(tmp_path, minimal(dataset={"version": "v1"})) == [
        "dataset.name: missing: version v1 is a version of no dataset; add dataset.name, the folder under "
        "dataset_path that holds it (docs/datasets.md)"
    ]


def test_a_public_vpc_cidr_is_a_warning_naming_the_private_ranges(tmp_path: Path) -> None:
    """Amazon VPC User Guide, "VPC CIDR blocks": AWS recommends a block from RFC 1918's private ranges (10.0.0.0/8,
    172.16.0.0/12, 192.168.0.0/16) and allows a publicly routable one: a warning, not a refusal."""
    loaded = load(write_config(tmp_path, _with_spoke(cidr="52.20.0.0/16")))
    assert [(w.field, w.message) for w in loaded.warnings] == [
        (
            "spokes[0].cidr",
            "52.20.0.0/16 is outside private address space (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, as the "
            "Amazon VPC User Guide recommends, 'VPC CIDR blocks'; AWS accepts it): pick a private block such as "
            "10.30.0.0/16 unless you own this range and mean it",
        )
    ]
    assert load(write_config(tmp_path, _with_spoke(cidr="192.168.0.0/16"))).warnings == ()


def test_an_email_that_is_not_one_says_how_to_write_it(tmp_path: Path) -> None:
    data = minimal(ops={"alarm_emails": ["me at example.com"]})
    assert problems(tmp_path, data) == [
        "ops.alarm_emails[0]: 'me at example.com' is not an e-mail address; write it like you@example.com"
    ]


def test_an_s3_uri_as_a_source_bucket_names_the_bucket_to_write(tmp_path: Path) -> None:
    """Amazon S3 User Guide, "General purpose bucket naming rules": a bucket name has no scheme or slash."""
    data = minimal(dataset={"source_buckets": ["s3://my-datasets/c4/"]})
    assert problems(tmp_path, data) == [
        "dataset.source_buckets[0]: 's3://my-datasets/c4/' is an S3 URI; list the bucket's name only: my-datasets"
    ]


def test_an_emptied_section_says_to_write_its_keys_or_remove_it(tmp_path: Path) -> None:
    """`ops:` with its lines deleted is YAML null (YAML 1.1: an empty value)."""
    text = write_config(tmp_path, minimal()).read_text() + "ops:\n"
    text = text.replace("ops:\n  alarms_notify_nobody: true\n", "", 1)
    assert problems(tmp_path, text) == [
        "ops: has no value (nothing after the colon): write its keys under it, or remove the line to take the "
        "defaults"
    ]


def test_a_cnq_volume_count_is_answered_with_its_own_range(tmp_path: Path) -> None:
    """A volume count, not a HyperPod group's: 0 to 96 volumes per node (the field's description)."""
    data = minimal()
    data["hub"]["storage"]["cache_volumes"] = {"write_cache": {"count": -1, "size_gib": 16}}
    assert problems(tmp_path, data) == [
        "hub.storage.cache_volumes.write_cache.count: input should be greater than or equal to 0, got -1; "
        "expected volumes per node, 0 to 96"
    ]
