"""The config contract: the minimal file loads with defaults; every kind of bad input is named with its fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import ConfigError, load
from hubspoke.config.schema import VPC_MIN_PREFIX, HubSpokeConfig
from tests.conftest import minimal, with_pins, write_config


def problems(tmp_path: Path, data: Any) -> list[str]:
    path = write_config(tmp_path, data) if not isinstance(data, str) else tmp_path / "env.yaml"
    if isinstance(data, str):
        path.write_text(data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    lines = str(caught.value).splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines), lines
    return [line.removeprefix(f"{path}: ") for line in lines]


def valid(raw: dict[str, Any]) -> HubSpokeConfig:
    """A raw config as the environment-wide rules read it: valid, with an environment and account added and
    its Regions network-only unless the config says otherwise."""
    for region in [raw["hub"], *raw.get("spokes", [])]:
        region.setdefault("storage", {"enabled": False})
        region.setdefault("compute", {"enabled": False})
    return HubSpokeConfig.model_validate(with_pins({"environment": "dev", "account": "123456789012", **raw}))


def with_spoke(**spoke: Any) -> dict[str, Any]:
    data = minimal()
    data["spokes"][0].update(spoke)
    return data


def test_minimal_file_loads_with_reference_defaults(tmp_path: Path) -> None:
    cfg = load(write_config(tmp_path, minimal())).config
    assert cfg.inter_region_mtu == 8500
    assert cfg.hub.storage.node_count == 4
    spoke = cfg.spokes[0]
    assert spoke.compute.instance_groups[0].instance_type == "ml.p5.48xlarge"
    assert spoke.compute.instance_groups[0].count == 2
    assert spoke.compute.dataset_volume_size == "50Ti"
    assert spoke.portal.mode == "read_only"
    assert spoke.resolved_az_ids == ("usw2-az1", "usw2-az2")
    assert spoke.resolved_accelerator_az_id == "usw2-az1"


def test_adding_a_spoke_is_one_entry(tmp_path: Path) -> None:
    data = minimal()
    data["spokes"].append({"region": "eu-west-1", "cidr": "10.30.0.0/16"})
    cfg = load(write_config(tmp_path, with_pins(data))).config
    assert [s.region for s in cfg.spokes] == ["us-west-2", "eu-west-1"]
    assert cfg.peer_cidrs(cfg.hub) == ("10.20.0.0/16", "10.30.0.0/16")
    assert cfg.peer_cidrs(cfg.spokes[1]) == ("10.10.0.0/16",)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (with_spoke(cidr="10.20.0.0/33"), "spokes[0].cidr", "not an IPv4 CIDR"),
        (with_spoke(cidr="banana"), "spokes[0].cidr", "not an IPv4 CIDR"),
        (with_spoke(cidr="10.20.0.1/16"), "spokes[0].cidr", "did you mean 10.20.0.0/16"),
        (with_spoke(cidr="10.20.0.0/24"), "spokes[0].cidr", f"minimum is /{VPC_MIN_PREFIX}"),
        (with_spoke(cidr="10.0.0.0/8"), "spokes[0].cidr", "larger than AWS allows"),
        (with_spoke(region="us-wst-2"), "spokes[0].region", "did you mean us-west-2"),
        (with_spoke(region="us-east-2"), "spokes[0].region", "is the hub Region"),
        (with_spoke(cidrr="10.20.0.0/16"), "spokes[0].cidrr", "did you mean 'cidr'"),
        (minimal(inter_region_mtu=9001), "inter_region_mtu", "inter-Region peering carries at most 8500"),
        (minimal(account=123456789012), "account", "quote it"),
        (minimal(inter_region_mtu="8500"), "inter_region_mtu", "valid integer"),
        (with_spoke(nat="sometimes"), "spokes[0].nat", "'single', 'per_az' or 'none'"),
        (with_spoke(az_ids=["use2-az1"]), "spokes[0].az_ids[0]", "not in us-west-2"),
        (with_spoke(storage={"node_count": 2}), "spokes[0].storage.node_count", "1 node or 3 to 24"),
        (with_spoke(storage={"node_count": 25}), "spokes[0].storage.node_count", "1 node or 3 to 24"),
        (
            with_spoke(region="af-south-1"),
            "spokes[0].compute",
            "HyperPod is not offered in af-south-1",
        ),
        (
            with_spoke(account="222222222222"),
            "spokes[0].storage",
            "cross-account portals are not supported",
        ),
        (
            with_spoke(compute={"public_access_cidrs": ["0.0.0.0/0"]}),
            "spokes[0].compute.public_access_cidrs[0]",
            "whole internet",
        ),
    ],
)
def test_rejects_with_field_and_fix(tmp_path: Path, change: dict[str, Any], field: str, words: str) -> None:
    found = problems(tmp_path, change)
    assert any(line.startswith(f"{field}: ") and words in line for line in found), found


def test_missing_required_keys_are_named(tmp_path: Path) -> None:
    data = minimal()
    del data["account"]
    del data["hub"]["cidr"]
    found = problems(tmp_path, data)
    assert any(line.startswith("account: required") for line in found), found
    assert any(line.startswith("hub.cidr: required") for line in found), found


def test_overlaps_name_both_fields_including_secondary_and_service_cidrs(tmp_path: Path) -> None:
    data = minimal()
    data["spokes"].append({"region": "eu-west-1", "cidr": "10.20.128.0/20"})
    data["spokes"][0]["secondary_cidrs"] = ["10.10.64.0/18"]
    data["hub"]["compute"] = {"service_cidr": "10.20.0.0/16"}
    found = problems(tmp_path, with_pins(data))
    assert any(f.startswith("spokes[1].cidr: ") and "spokes[0].cidr" in f for f in found), found
    assert any(f.startswith("spokes[0].secondary_cidrs[0]: ") and "hub.cidr" in f for f in found), found
    assert any(f.startswith("hub.compute.service_cidr: ") and "spokes[0].cidr" in f for f in found), found


def test_duplicate_spoke_regions(tmp_path: Path) -> None:
    data = minimal()
    data["spokes"].append({"region": "us-west-2", "cidr": "10.30.0.0/16"})
    found = problems(tmp_path, with_pins(data))
    assert any(f.startswith("spokes[1].region: ") and "already a spoke at spokes[0]" in f for f in found), (
        found
    )


def test_every_problem_is_reported_in_one_run(tmp_path: Path) -> None:
    """The schema's problems all at once; on a valid file, the environment-wide rules' all at once."""
    data = copy.deepcopy(minimal(inter_region_mtu=9000, typo=1))
    data["spokes"][0]["cidr"] = "10.20.0.0/33"
    data["spokes"].append({"region": "us-wst-2", "cidr": "10.30.0.0/16"})
    fields = {line.split(": ")[0] for line in problems(tmp_path, with_pins(data))}
    assert fields == {"inter_region_mtu", "typo", "spokes[0].cidr", "spokes[1].region"}
    data = minimal()
    data["spokes"][0]["cidr"] = "10.10.0.0/16"  # overlaps the hub
    data["spokes"].append({"region": "us-west-2", "cidr": "10.30.0.0/16"})
    fields = {line.split(": ")[0] for line in problems(tmp_path, with_pins(data))}
    assert fields == {"spokes[0].cidr", "spokes[1].region"}


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("", "(file)", "file is empty"),
        ("   \n# only a comment\n", "(file)", "file is empty"),
        # The file has two lines: an error at its end is on line 2, after its last character (issue 21 item 14).
        ("environment: dev\nhub: [1,\n", "(yaml line 2, column 9)", "fix the YAML syntax"),
        ("environment: dev\nenvironment: prod\n", "(yaml line 2, column 1)", "given twice"),
        ("- a\n- b\n", "(top level)", "expected a mapping"),
    ],
)
def test_file_level_problems(tmp_path: Path, text: str, field: str, words: str) -> None:
    found = problems(tmp_path, text)
    assert any(line.startswith(f"{field}: ") and words in line for line in found), found


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path / "nope.yaml")
    assert "(file): file not found" in str(caught.value)


def test_warnings_do_not_fail(tmp_path: Path) -> None:
    data = minimal()
    data["hub"]["storage"]["instance_type"] = "r5.8xlarge"
    # Outside Qumulo's families its volume layout is the config's to give (storage.cache_volumes).
    data["hub"]["storage"]["cache_volumes"] = {"write_cache": {"count": 14, "size_gib": 16}}
    loaded = load(write_config(tmp_path, data))
    assert [w.field for w in loaded.warnings] == ["hub.storage.instance_type"]


def test_cross_field_rules_use_the_schemas_defaults(tmp_path: Path) -> None:
    """Rules read the typed config, where an omitted or null key is the schema's default; they must agree with it.

    A spoke with `account: null` is in the environment's account (as the schema parses it), so its CNQ
    portal is allowed; rules used to read the null as another account.
    """
    data = minimal()
    data["spokes"][0]["account"] = None
    loaded = load(write_config(tmp_path, data))
    assert loaded.config.account_of(loaded.config.spokes[0]) == "123456789012"
    # An omitted service CIDR is the schema's default, 172.20.0.0/16: a VPC there overlaps it.
    clash = minimal()
    clash["spokes"][0]["cidr"] = "172.20.0.0/16"
    with pytest.raises(
        ConfigError,
        match=r"spokes\[0\]\.cidr: 172\.20\.0\.0/16 overlaps the default Kubernetes service CIDR 172\.20\.0\.0/16 "
        r"\(hub\.compute\.service_cidr, spokes\[0\]\.compute\.service_cidr\)",
    ):
        load(write_config(tmp_path, clash, "clash.yaml"))


def test_flow_logs_kept_for_less_than_a_year_are_refused_before_synth(tmp_path: Path) -> None:
    """Control Tower's CT.CLOUDWATCH.PR.2 (ct-cloudwatch-pr-2.guard in cdklabs-cdk-validator-cfnguard 0.0.62)
    requires a retention of 365 days or more; validation says so before synth stops on it."""
    data = minimal()
    data["hub"]["flow_logs_retention_days"] = 30
    found = problems(tmp_path, data)
    assert any(p.startswith("hub.flow_logs_retention_days") for p in found), found
    assert any("365" in p for p in found), found
    data["hub"]["flow_logs_retention_days"] = 731
    assert load(write_config(tmp_path, data, name="kept.yaml")).config.hub.flow_logs_retention_days == 731


def _storage(**change: Any) -> dict[str, Any]:
    data = minimal()
    data["hub"]["storage"].update(change)
    return data


def _core(**change: Any) -> dict[str, Any]:
    data = minimal()
    data["hub"]["storage"]["qumulo_core"].update(change)
    return data


@pytest.mark.parametrize(
    ("data", "field", "fix"),
    [
        # An AMI ID is ami- and hex (EC2 API reference, Image.ImageId); the command prints the one to pin.
        (
            _storage(ami_id="ami-123"),
            "hub.storage.ami_id",
            "`hubspoke ami --region <region>` prints the current one",
        ),
        (_core(version="latest"), "hub.storage.qumulo_core.version", "7.9.2.1 or newer"),
        (
            with_spoke(compute={"instance_groups": [{"count": 0}]}),
            "spokes[0].compute.instance_groups[0].count",
            "got 0; expected nodes in the group, 1 to 1,000",
        ),
        ({**minimal(), "hub": {**minimal()["hub"], "storage": ["x"]}}, "hub.storage", "remove the '- '"),
        ({**minimal(), "hub": 5}, "hub", "got 5; write its keys under it (key: value lines), not a value"),
        (minimal(environment="a" * 40), "environment", "at most 15 letters, digits or hyphens"),
    ],
)
def test_pattern_and_type_errors_say_what_to_write(tmp_path: Path, data: Any, field: str, fix: str) -> None:
    found = problems(tmp_path, data)
    line = next(x for x in found if x.startswith(f"{field}: "))
    assert fix in line, line


def test_yaml_and_file_errors_point_at_the_real_cause(tmp_path: Path) -> None:
    """A tab may not indent YAML (YAML 1.2 spec, 6.1: tabs are not allowed in indentation); PyYAML marks an error
    at the end of the stream on the line after the last, which the message must not name; a directory or a binary
    file is not a permissions problem."""
    import yaml as pyyaml

    text = pyyaml.safe_dump(minimal(), sort_keys=False)
    (tab,) = problems(tmp_path, text.replace("  region: us-east-2", "\tregion: us-east-2", 1))
    assert "indent with spaces" in tab
    broken = text + "bad: [\n"
    (end,) = problems(tmp_path, broken)
    assert end.startswith(f"(yaml line {len(broken.splitlines())}, ")
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    with pytest.raises(ConfigError) as caught:
        load(folder)
    assert "is a directory" in str(caught.value) and "permissions" not in str(caught.value)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\x00\x01\xff\xfe" * 10)
    with pytest.raises(ConfigError) as caught:
        load(binary)
    assert "not UTF-8 text" in str(caught.value) and "permissions" not in str(caught.value)


def test_an_unquoted_version_is_told_to_quote_it_and_where_types_are_documented(tmp_path: Path) -> None:
    """YAML 1.1 (PyYAML's safe_load) reads `1.30` as the float 1.3: the message says so and points at the
    configuration reference, not a README section that does not list types (a new user's report)."""
    data = minimal(spokes=[{"region": "us-west-2", "cidr": "10.20.0.0/16"}])
    lines = problems(
        tmp_path, {**data, "spokes": [{**data["spokes"][0], "compute": {"kubernetes_version": 1.3}}]}
    )
    [line] = [line for line in lines if "kubernetes_version" in line]
    assert line == (
        "spokes[0].compute.kubernetes_version: input should be a valid string, got 1.3 (quote it: YAML reads "
        'unquoted 1.30 as the number 1.3); expected EKS version, quoted (`"1.35"`): one hubspoke\'s kubectl layer '
        "reaches (`1.33`, `1.34`, `1.35`; HyperPod's own list is wider, 1.30 to 1.35); a deployed cluster moves one "
        "minor per deploy, so an environment states its version, hub and spokes each "
        "([runbooks/compute.md](runbooks/compute.md#upgrading-kubernetes))"
    )
