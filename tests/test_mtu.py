"""The shared MTU place: never above the peering's 8500, and the rendered script does what it says."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hubspoke.config import load
from hubspoke.mtu import (
    peer_mtu_parameter_value,
    peer_mtu_parameters,
    peer_routes,
    render_peer_mtu_pin,
    render_route_mtu_from_ssm_script,
)
from tests.conftest import minimal, write_config

# Written here, not imported from hubspoke.mtu: EC2 User Guide, "Network maximum transmission unit (MTU) for your
# EC2 instance": traffic over inter-Region VPC peering carries at most 8500 bytes (1500 in copies before 2025).
PEERING_MTU = 8500
# hubspoke's floor (README `inter_region_mtu`, config schema): IPv6's minimum link MTU, RFC 8200 section 5.
MIN_MTU = 1280

cidrs = st.builds(
    lambda addr, prefix: str(ipaddress.IPv4Network((addr, prefix), strict=False)),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=8, max_value=28),
)


def test_config_mtu_is_the_peering_limit_or_below(tmp_path: Path) -> None:
    cfg = load(write_config(tmp_path, minimal(inter_region_mtu=1500))).config
    assert peer_routes(cfg, cfg.spokes[0]) == (("10.10.0.0/16", 1500),)
    cfg = load(write_config(tmp_path, minimal())).config
    assert peer_routes(cfg, cfg.hub) == (("10.20.0.0/16", 8500),)


def _stub(tmp_path: Path, name: str, body: str) -> None:
    stub = tmp_path / name
    stub.write_text("#!/bin/bash\n" + body)
    stub.chmod(0o755)


def test_the_pin_fails_loudly_without_a_default_route(tmp_path: Path) -> None:
    """Without a default IPv4 route there is no gateway to pin through: the function says so and pins nothing."""
    log = tmp_path / "ip.log"
    _stub(tmp_path, "ip", f'echo "$*" >> {log}\n')  # `ip -4 route show default` prints no route
    _stub(tmp_path, "aws", "printf '10.20.0.0/16 8500\\n'\n")
    script = render_route_mtu_from_ssm_script("/hubspoke/dev/peer-mtu/", "us-east-2")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "-c", script + "hubspoke_pin_peer_mtu"], env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 1
    assert "hubspoke: no default IPv4 route; cannot pin the peer MTU" in result.stderr
    assert not any("route replace" in c for c in log.read_text().splitlines())


AWS_CALL = "ssm get-parameters-by-path --region {region} --path {path} --recursive --query Parameters[].Value --output text"


def _run_ssm_variant(
    tmp_path: Path, published: str, *, errexit: bool = True, ip_fails: bool = False
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = tmp_path / "ip.log"
    _stub(
        tmp_path,
        "ip",
        f'echo "$*" >> {log}\n'
        'if [ "$1 $2 $3" = "-4 route show" ]; then echo "default via 10.10.0.1 dev ens5"; fi\n'
        + ('if [ "$1 $2" = "route replace" ]; then exit 2; fi\n' if ip_fails else ""),
    )
    # The AWS CLI stub answers only the call the runbook (docs/runbooks/mtu.md, step 3) documents: any other
    # Region, path or query exits 254, as the CLI does on a failed call, so a mangled flag cannot pass.
    # `Parameters[].Value`: GetParametersByPath's result shape (botocore data/ssm/2014-11-06/service-2,
    # GetParametersByPathResult.Parameters -> Parameter.Value); --recursive reads the per-spoke sub-paths.
    expected = AWS_CALL.format(region="us-east-2", path="/hubspoke/dev/peer-mtu/")
    _stub(
        tmp_path,
        "aws",
        f'if [ "$*" != {shlex.quote(expected)} ]; then echo "aws stub: unexpected call: $*" >&2; exit 254; fi\n'
        f"printf '%s\\n' {shlex.quote(published)}\n",
    )
    script = render_route_mtu_from_ssm_script("/hubspoke/dev/peer-mtu/", "us-east-2")
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    flags = ["-euo", "pipefail"] if errexit else []
    result = subprocess.run(
        ["bash", *flags, "-c", script + "hubspoke_pin_peer_mtu"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result, (log.read_text().splitlines() if log.exists() else [])


def test_hub_pins_what_link_stacks_publish(tmp_path: Path) -> None:
    # `aws ... --output text` prints the values of all parameters tab-separated on one line.
    result, calls = _run_ssm_variant(tmp_path, "10.20.0.0/16 8500\t10.30.0.0/16 8500")
    assert result.returncode == 0, result.stderr
    assert "route replace 10.20.0.0/16 via 10.10.0.1 dev ens5 mtu 8500" in calls
    assert "route replace 10.30.0.0/16 via 10.10.0.1 dev ens5 mtu 8500" in calls
    # The line the runbook tells the operator to look for (docs/runbooks/mtu.md, step 3).
    assert "hubspoke: pinned MTU on 2 peer route(s) via 10.10.0.1 dev ens5" in result.stdout


def test_hub_refuses_a_published_mtu_above_the_peering_limit(tmp_path: Path) -> None:
    result, calls = _run_ssm_variant(tmp_path, "10.20.0.0/16 9001")
    assert result.returncode != 0
    assert "refusing MTU 9001" in result.stderr
    assert not any("route replace" in c for c in calls)


@given(cidrs, st.integers(min_value=0, max_value=20000))
def test_published_values_never_exceed_the_limit(cidr: str, mtu: int) -> None:
    if MIN_MTU <= mtu <= PEERING_MTU:
        assert peer_mtu_parameter_value(cidr, mtu) == f"{cidr} {mtu}"
    else:
        with pytest.raises(ValueError, match=rf"MTU {mtu} for {re.escape(cidr)} is outside 1280\.\.8500"):
            peer_mtu_parameter_value(cidr, mtu)


@pytest.mark.parametrize(("mtu", "ok"), [(MIN_MTU - 1, False), (MIN_MTU, True), (PEERING_MTU, True)])
def test_published_values_hold_the_ipv6_floor_at_its_edge(mtu: int, ok: bool) -> None:
    """1280 is accepted and 1279 refused: RFC 8200 section 5, "IPv6 requires that every link in the Internet have
    an MTU of 1280 octets or greater" (the sampled property above need not land on the edge)."""
    if ok:
        assert peer_mtu_parameter_value("10.20.0.0/16", mtu) == f"10.20.0.0/16 {mtu}"
    else:
        with pytest.raises(ValueError, match="outside 1280"):
            peer_mtu_parameter_value("10.20.0.0/16", mtu)


@pytest.mark.parametrize(
    "cidr", ["10.20.0.0/33", "10.20.0.1/16", "not-a-cidr", "10.20.0.0/16 9001", "fd00::/8"]
)
def test_published_values_refuse_what_is_not_an_ipv4_network(cidr: str) -> None:
    """Python docs, ipaddress.IPv4Network: ValueError for a prefix over 32, for host bits set (strict=True, the
    default), and AddressValueError (a ValueError) for anything not IPv4; a value that passed would be read back
    by the hosts' `while read -r cidr mtu` and pinned as whatever `ip route replace` makes of it."""
    with pytest.raises(ValueError):
        peer_mtu_parameter_value(cidr, PEERING_MTU)


@pytest.mark.parametrize(("published", "pinned"), [("1279", False), ("1280", True), ("85OO", False)])
def test_hub_holds_the_ipv6_floor_on_what_it_reads(tmp_path: Path, published: str, pinned: bool) -> None:
    """The hosts' pin refuses a published MTU under 1280 (RFC 8200 section 5) or not a number, and pins 1280."""
    result, calls = _run_ssm_variant(tmp_path, f"10.20.0.0/16 {published}")
    if pinned:
        assert result.returncode == 0, result.stderr
        assert f"route replace 10.20.0.0/16 via 10.10.0.1 dev ens5 mtu {published}" in calls
    else:
        assert result.returncode == 1 and f"refusing MTU {published}" in result.stderr
        assert not any("route replace" in c for c in calls)


@pytest.mark.parametrize("errexit", [True, False])
def test_the_refusal_holds_without_errexit(tmp_path: Path, errexit: bool) -> None:
    """The function refuses by returning, not by relying on its caller's `set -e`: bash ignores errexit inside a
    function called from an `||` list (bash manual, "The Set Builtin", -e), so a refusal that leaned on it would
    go on to pin 9001 over a link that carries at most 8500."""
    result, calls = _run_ssm_variant(tmp_path, "10.20.0.0/16 9001\t10.30.0.0/16 8500", errexit=errexit)
    assert result.returncode == 1
    assert not any("route replace" in c for c in calls)


def test_hub_says_which_route_it_could_not_pin(tmp_path: Path) -> None:
    result, _ = _run_ssm_variant(tmp_path, "10.20.0.0/16 8500", ip_fails=True)
    assert result.returncode == 1
    assert "hubspoke: cannot set MTU 8500 towards 10.20.0.0/16" in result.stderr


def test_hub_without_the_aws_cli_names_what_is_missing(tmp_path: Path) -> None:
    _stub(tmp_path, "ip", 'echo "default via 10.10.0.1 dev ens5"\n')
    script = render_route_mtu_from_ssm_script("/hubspoke/dev/peer-mtu/", "us-east-2")
    # PATH without any aws: only the stub directory and bash's own directory.
    env = {"PATH": f"{tmp_path}:{Path(_bash()).parent}"}
    result = subprocess.run(
        [_bash(), "-c", script + "hubspoke_pin_peer_mtu"], env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 1
    assert "AWS CLI" in result.stderr


def _bash() -> str:
    import shutil

    found = shutil.which("bash")
    assert found
    return found


def test_the_pin_script_runs_as_a_file_and_finds_the_snap_aws_cli(tmp_path: Path) -> None:
    """The whole script, executed as systemd runs it: from its shebang, with a PATH that lacks /snap/bin, where
    a snap's commands live (snapcraft docs, "Commands and aliases"): the script must add it itself."""
    log = tmp_path / "calls.log"
    _stub(
        tmp_path,
        "ip",
        f'echo "ip $*" >> {log}\nif [ "$1 $2 $3" = "-4 route show" ]; then echo "default via 10.20.0.1 dev ens5"; fi\n',
    )
    expected = AWS_CALL.format(region="us-west-2", path="/hubspoke/dev/peer-mtu/")
    _stub(
        tmp_path,
        "aws",
        f'echo "PATH=$PATH" >> {log}\n'
        f'if [ "$*" != {shlex.quote(expected)} ]; then exit 254; fi\nprintf "10.10.0.0/16 8500\\n"\n',
    )
    script = tmp_path / "pin.sh"
    script.write_text(render_peer_mtu_pin("/hubspoke/dev/peer-mtu/", "us-west-2"))
    script.chmod(0o755)
    assert script.read_text().startswith("#!/bin/bash\n")
    result = subprocess.run(
        [str(script)], env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines()
    assert "ip route replace 10.10.0.0/16 via 10.20.0.1 dev ens5 mtu 8500" in calls
    assert any(c.startswith("PATH=") and "/snap/bin" in c.split(":") for c in calls)


def test_link_stack_parameters_publish_every_cidr_under_the_runbook_path(tmp_path: Path) -> None:
    """Each CIDR of the spoke (primary first, then secondary) becomes one parameter under
    `/hubspoke/<env>/peer-mtu/<region>/` (docs/runbooks/mtu.md) holding `CIDR MTU`, the line the hub reads."""
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": ["100.64.0.0/16"]}
    cfg = load(write_config(tmp_path, minimal(inter_region_mtu=1500, spokes=[spoke]))).config
    assert peer_mtu_parameters(cfg, cfg.spokes[0]) == (
        ("/hubspoke/dev/peer-mtu/us-west-2/0", "10.20.0.0/16 1500"),
        ("/hubspoke/dev/peer-mtu/us-west-2/1", "100.64.0.0/16 1500"),
    )
    cfg = load(write_config(tmp_path, minimal())).config
    assert peer_mtu_parameters(cfg, cfg.hub) == (("/hubspoke/dev/peer-mtu/us-east-2/0", "10.10.0.0/16 8500"),)


# The reviewed snapshots of config/dev.yaml's Storage templates (tests/test_snapshots.py: "a diff here means
# infrastructure changed"; config/dev.yaml: environment dev, hub us-east-2, spoke us-west-2).
_DEV_SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__" / "test_snapshots"


@pytest.mark.parametrize("region", ["us-east-2", "us-west-2"])
def test_every_dev_node_carries_the_pin_script_of_its_reviewed_snapshot(region: str) -> None:
    """The pin script is part of every CNQ node's UserData (boot.sh writes it out between HUBSPOKE_PIN markers),
    and CloudFormation stops and starts an instance whose UserData changes (AWS::EC2::Instance, UserData:
    "Update requires: Some interruptions"): every byte of it, comments included, is infrastructure. So it must be
    what the reviewed snapshot of the Region's Storage template holds, under the runbook's path
    `/hubspoke/<env>/peer-mtu/` (docs/runbooks/mtu.md). A deliberate change updates the snapshot
    (`pytest tests/test_snapshots.py --snapshot-update`) and this test follows it."""
    template = json.loads((_DEV_SNAPSHOTS / f"test_dev_templates[storage-{region}].json").read_text())
    scripts = [
        r["Properties"]["UserData"]["Fn::Base64"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::EC2::Instance"
    ]
    assert scripts, "the dev Storage snapshot has no CNQ node"
    for user_data in scripts:
        pinned = re.search(r"<< 'HUBSPOKE_PIN'\n(.*?)\nHUBSPOKE_PIN\n", user_data, flags=re.DOTALL)
        assert pinned, "the node's UserData writes no pin script"
        assert pinned.group(1) + "\n" == render_peer_mtu_pin("/hubspoke/dev/peer-mtu/", region)
