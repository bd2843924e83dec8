"""`hubspoke plan`: stacks in deploy order, peerings, and CDK commands derived from config and topology."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from hubspoke.cli.main import main
from hubspoke.cli.plan import build_plan
from hubspoke.config import load
from hubspoke.topology import plan_stacks, stage_id
from tests.conftest import NETWORK_ONLY, minimal, synth, write_config
from tests.test_outputs import write_assembly

ROOT = Path(__file__).resolve().parents[2]


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], **overrides: Any) -> dict[str, Any]:
    path = write_config(tmp_path, minimal(**overrides))
    assert main(["plan", "--config", str(path), "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_every_stack_once_and_after_its_dependencies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
    ]
    data = _plan(tmp_path, capsys, spokes=spokes)
    ids = [s["id"] for s in data["stacks"]]
    assert len(ids) == len(set(ids))
    for position, stack in enumerate(data["stacks"]):
        assert all(ids.index(dep) < position for dep in stack["depends_on"])
    assert {s["region"] for s in data["stacks"]} == {"us-east-2", "us-west-2", "eu-west-1"}
    config = load(write_config(tmp_path, minimal(spokes=spokes))).config
    assert ids == [p.id for p in plan_stacks(config)]


def test_peerings_carry_both_cidrs_and_the_mtu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spokes = [{"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": ["100.64.0.0/16"]}]
    data = _plan(tmp_path, capsys, spokes=spokes, inter_region_mtu=8000)
    (peering,) = data["peerings"]
    assert peering["requester_cidrs"] == ["10.20.0.0/16", "100.64.0.0/16"]
    assert peering["accepter_cidrs"] == ["10.10.0.0/16"]
    assert peering["mtu"] == 8000


def test_deploy_commands_select_every_stack_of_the_stage_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, minimal())
    config = load(path).config
    data = build_plan(config, config_path=str(path))
    selectors = [shlex.split(c)[-1] for c in data["commands"]["deploy_in_order"]]
    assert selectors == [f"{stage_id(config)}/{p.id}" for p in plan_stacks(config)]
    for command in [*data["commands"]["deploy_in_order"], data["commands"]["deploy_all"]]:
        argv = shlex.split(command)
        assert argv[:3] == ["npx", "cdk", "deploy"]
        assert argv[argv.index("-c") + 1] == f"config={path}"


def test_bootstrap_once_per_account_and_region_with_trust_across_accounts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16", "account": "222222222222", **NETWORK_ONLY},
        {"region": "eu-west-1", "cidr": "10.30.0.0/16"},
    ]
    data = _plan(tmp_path, capsys, spokes=spokes)
    commands = [shlex.split(c) for c in data["commands"]["bootstrap"]]
    targets = [next(a for a in c if a.startswith("aws://")) for c in commands]
    pairs = {f"aws://{s['account']}/{s['region']}" for s in data["stacks"]}
    assert sorted(targets) == sorted(pairs)
    for argv, target in zip(commands, targets, strict=True):
        # With cdk.json the CLI synthesizes the app to bootstrap even a named environment (aws-cdk 2.1148.1
        # lib/index.js, CdkToolkit.defineEnvironments), and app.py alone builds every config/*.yaml: name one.
        assert (
            argv[:3] == ["npx", "cdk", "bootstrap"]
            and argv[argv.index("-c") + 1] == f"config={tmp_path / 'env.yaml'}"
        )
        other_account = not target.startswith("aws://123456789012/")
        assert ("--trust" in argv) == other_account
        if other_account:
            assert argv[argv.index("--trust") + 1] == "123456789012"


def test_plain_output_names_every_stack_and_command(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "config" / "dev.yaml"
    assert main(["plan", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    data = build_plan(load(path).config, config_path=str(path))
    for stack in data["stacks"]:
        assert stack["name"] in out
    for command in [*data["commands"]["bootstrap"], *data["commands"]["deploy_in_order"]]:
        assert command in out
    assert "\x1b[" not in out  # piped: no terminal colour codes


def test_bad_config_exits_2_with_the_validate_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, minimal(inter_region_mtu=9001))
    assert main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: inter_region_mtu:") and "Traceback" not in err


def test_every_weak_reference_reader_deploys_after_its_producer_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fn::GetStackOutput resolves when the consumer deploys (CloudFormation User Guide), so plan names the
    readers to redeploy after a producer's outputs change, and each reader comes after its producer. Who reads
    what comes from the synthesized templates (--assembly), written here as `cdk synth` lays them out. The config
    is config/dev.yaml, whose synth the other tests share."""
    path = ROOT / "config" / "dev.yaml"
    config = load(path).config
    assembly = write_assembly(tmp_path / "cdk.out", stage_id(config), synth(config))
    assert main(["plan", "--config", str(path), "--json", "--assembly", str(assembly)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["read_by_unknown"] is None
    order = [s["id"] for s in data["stacks"]]
    by_id = {s["id"]: s for s in data["stacks"]}
    readers = {(s["id"], r["stack"]) for s in data["stacks"] for r in s["read_by"]}
    assert ("network-us-west-2", "link-us-west-2") in readers
    assert ("storage-us-east-2", "ops-us-west-2") in readers
    for producer, reader in readers:
        assert order.index(producer) < order.index(reader), (producer, reader)
    [link] = [r for r in by_id["network-us-west-2"]["read_by"] if r["stack"] == "link-us-west-2"]
    [carried] = link["carries"]
    assert carried.startswith("PeeringToHub")  # the peering's Ref, read under CDK's own output name
    assert not by_id["dashboard-us-east-2"]["read_by"] and not by_id["dashboard-us-east-2"]["outputs"]


def test_without_a_synthesized_assembly_plan_says_who_reads_what_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, minimal())
    assert main(["plan", "--config", str(path), "--assembly", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "Who reads what is unknown:" in out and "run `npx cdk synth" in out
    assert "Weak references:" not in out, "no empty table of readers before the note"
    assert main(["plan", "--config", str(path), "--json", "--assembly", str(tmp_path / "none")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(s["read_by"] is None for s in data["stacks"]) and data["read_by_unknown"]


def test_opt_in_regions_are_named_before_the_bootstrap_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Account Management Reference Guide, "Enable or disable AWS Regions in your account": Regions launched
    after March 20, 2019 are opt-in (af-south-1, Cape Town, 2020); us-east-2 and us-west-2 are enabled by
    default. An opt-in Region must be enabled before anything can be bootstrapped there."""
    spokes = [
        {"region": "us-west-2", "cidr": "10.20.0.0/16"},
        {"region": "af-south-1", "cidr": "10.30.0.0/16", "compute": {"enabled": False}},
    ]
    assert _plan(tmp_path, capsys, spokes=spokes)["opt_in_regions"] == ["af-south-1"]
    assert _plan(tmp_path, capsys)["opt_in_regions"] == []
    path = write_config(tmp_path, minimal(spokes=spokes))
    assert main(["plan", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "opt-in Regions: af-south-1" in out
    assert out.index("aws account enable-region --region-name af-south-1") < out.index("cdk bootstrap")


def test_dev_plan_states_duration_concurrency_run_rate_and_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """What a CDK user needs before `cdk deploy`: the deploy command that runs unattended (--require-approval
    never: the pinned CLI otherwise stops at each IAM or security-group change and fails without a TTY or with
    --concurrency above 1, aws-cdk 2.1148.1 lib/index.js), the critical path (216 minutes expected for dev,
    tests/test_deploy_time.py by hand) with the concurrency reaching it (3), the run-rate ($416.54/hour,
    tests/test_run_rate.py by hand) and that the hub deploys p5 nodes too (4 in all)."""
    assert main(["plan", "--config", str(ROOT / "config" / "dev.yaml")]) == 0
    out = capsys.readouterr().out
    command = "npx cdk deploy -c config=" + str(ROOT / "config" / "dev.yaml")
    assert f"{command} --require-approval never --concurrency 3 'hubspoke-dev/*'" in out
    assert "`cdk deploy --all` selects nothing here" in out
    assert "Critical path (3 h 36 min expected): network-us-east-2 -> storage-us-east-2" in out
    assert "First deploy: 3 h 36 min expected, at most 6 h 44 min" in out
    assert "Run-rate while deployed: $416.54/hour" in out
    assert "HyperPod nodes: 4 x ml.p5.48xlarge: 2 x ml.p5.48xlarge in us-east-2 (hub), 2 x" in out


def test_plan_json_carries_deploy_time_and_run_rate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", str(ROOT / "config" / "dev.yaml"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["deploy_time"]["expected_minutes"] == 216
    assert data["deploy_time"]["concurrency"] == 3
    assert data["deploy_time"]["critical_path"][-1] == "dashboard-us-east-2"
    assert [(n["region"], n["role"], n["count"]) for n in data["accelerated_nodes"]] == [
        ("us-east-2", "hub", 2),
        ("us-west-2", "spoke", 2),
    ]
    assert data["run_rate"]["complete"] is True
    assert all(line["source"].startswith("ASSUMED: ") for line in data["run_rate"]["lines"])
    for command in data["commands"]["deploy_in_order"]:
        assert "--require-approval never" in command


def test_an_unpriced_region_says_at_least(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, minimal(hub={"region": "sa-east-1", "cidr": "10.10.0.0/16"}))
    assert main(["plan", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "(some lines have no price)" in out and "no price" in out
