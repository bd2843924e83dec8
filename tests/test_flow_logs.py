"""Flow-log patterns scale with CIDR size instead of failing synth, and validation names what cannot fit.

The oracle is CloudWatch's documented matching (tests/fakes/cloudwatch_filter.py) and Python's ipaddress,
not the pattern builder; the 1024-character limit is botocore's logs model (PutMetricFilter filterPattern).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import botocore.session
import pytest

from hubspoke.config import ConfigError, load
from hubspoke.config.traffic_rules import flow_log_filters_fit, hub_and_spokes_do_not_share_a_24
from hubspoke.flow_logs import traffic_patterns
from tests.config.test_loader import valid
from tests.conftest import minimal, write_config
from tests.fakes.cloudwatch_filter import match


def _limit() -> int:
    model = botocore.session.get_session().get_service_model("logs")
    return int(model.operation_model("PutMetricFilter").input_shape.members["filterPattern"].metadata["max"])


@pytest.mark.parametrize(
    "hub_cidr", ["10.10.0.0/16", "10.10.0.0/17", "10.10.0.0/19", "10.10.0.0/20", "10.10.0.0/23"]
)
def test_every_hub_address_is_counted_once_and_no_other(hub_cidr: str) -> None:
    patterns = traffic_patterns(own_cidrs=["10.20.0.0/16"], hub_cidrs=[hub_cidr])["from_hub"]
    assert all(len(p) <= _limit() for p in patterns)
    hub = ipaddress.ip_network(hub_cidr)
    probes = [
        hub.network_address,
        hub.broadcast_address,
        hub.network_address + 256,
        hub.broadcast_address + 1,
    ]
    probes += [ipaddress.ip_address("10.100.0.1"), ipaddress.ip_address("110.10.0.1")]
    for address in probes:
        line = f"2 1 eni-1 {address} 10.20.0.5 3713 40000 6 1 100 1 2 ACCEPT OK"
        hits = sum(match(p, line) is not None for p in patterns)
        # /23 is matched as its two /24s: the wildcards cover exactly the CIDR when it ends on /24 or wider.
        assert hits == (1 if address in hub else 0), (hub_cidr, str(address), hits)


def test_a_17_needs_a_few_filters_not_one_per_24() -> None:
    kinds = traffic_patterns(own_cidrs=["10.20.0.0/20"], hub_cidrs=["10.10.0.0/17"])
    # 128 /24 wildcards per direction, packed under 1024 characters: a handful of patterns, not 128.
    assert 1 < len(kinds["from_hub"]) <= 8 and len(kinds["to_hub"]) == len(kinds["from_hub"])
    assert sum(p.count("srcaddr=10.10.") for p in kinds["from_hub"]) == 128


def _problems(tmp_path: Path, data: dict[str, object], name: str = "env.yaml") -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(write_config(tmp_path, data, name=name))
    return [f"{p.field}: {p.message}" for p in caught.value.problems]


def test_validation_names_the_cidrs_whose_filters_do_not_fit(tmp_path: Path) -> None:
    """30 hub /17s need 30 x 128 /24 wildcards from and to the hub: the hub's CIDRs are what to change. CloudWatch
    Logs allows 100 metric filters per log group (User Guide quotas, "can't be changed"); hubspoke keeps to 60."""
    many = [f"10.{i}.0.0/17" for i in range(30, 60)]
    found = _problems(
        tmp_path, minimal(hub={"region": "us-east-2", "cidr": "10.10.0.0/17", "secondary_cidrs": many})
    )
    [problem] = [p for p in found if "metric filters" in p]
    assert problem.startswith("hub.secondary_cidrs: the traffic metrics of spoke spokes[0] need "), problem
    assert "of CloudWatch Logs' 100 per log group (a choice" in problem and "octet-aligned" in problem
    # The spoke's own CIDRs overflowing names the spoke's field.
    own = [f"10.{i}.0.0/17" for i in range(30, 60)]
    spoke = {"region": "us-west-2", "cidr": "10.20.0.0/17", "secondary_cidrs": own}
    found = _problems(tmp_path, minimal(spokes=[spoke]), name="spoke.yaml")
    [problem] = [p for p in found if "metric filters" in p]
    assert problem.startswith("spokes[0].secondary_cidrs: "), problem
    fine = minimal(hub={"region": "us-east-2", "cidr": "10.10.0.0/17"})
    assert load(write_config(tmp_path, fine, name="fine.yaml")).config.hub.cidr == "10.10.0.0/17"


def _sharing(hub_secondary: str, spoke_secondary: str) -> dict[str, object]:
    return minimal(
        hub={"region": "us-east-2", "cidr": "10.10.0.0/16", "secondary_cidrs": [hub_secondary]},
        spokes=[{"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": [spoke_secondary]}],
    )


def test_a_hub_and_a_spoke_block_in_one_24_are_refused(tmp_path: Path) -> None:
    """Patterns match text, so 10.30.0.0/25 and 10.30.0.128/25 are both 10.30.0.*: the spoke's own replies
    would count as bytes from the hub. They do not overlap, so only this rule catches it."""
    found = _problems(tmp_path, _sharing("10.30.0.0/25", "10.30.0.128/25"))
    assert found == [
        "spokes[0].secondary_cidrs[0]: 10.30.0.128/25 shares the /24 10.30.0.0/24 with hub.secondary_cidrs[0] "
        "(10.30.0.0/25); the spoke's traffic metrics match addresses by /24 and would mix hub and spoke bytes: "
        "move one of the two blocks to a /24 the other does not use"
    ]
    apart = _sharing("10.30.0.0/25", "10.30.1.0/25")
    assert load(write_config(tmp_path, apart, name="apart.yaml")).config.spokes[0].secondary_cidrs == [
        "10.30.1.0/25"
    ]


def test_a_refused_config_exits_2_naming_file_field_and_fix(tmp_path: Path) -> None:
    import contextlib
    import io

    from hubspoke.cli.main import main

    path = write_config(tmp_path, _sharing("10.30.0.0/25", "10.30.0.128/25"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["validate", str(path)]) == 2
    assert f"{path}: spokes[0].secondary_cidrs[0]: 10.30.0.128/25 shares the /24" in err.getvalue()
    assert "Traceback" not in err.getvalue()


def _own_17s(first: int, count: int) -> list[str]:
    return [f"10.{i}.0.0/17" for i in range(first, first + count)]


def _filters(own: list[str], hub: list[str]) -> tuple[int, int]:
    """(hub's share, spoke's own share) of one spoke's filters, as the patterns above are built."""
    kinds = traffic_patterns(own_cidrs=own, hub_cidrs=hub)
    return len(kinds["from_hub"]) + len(kinds["to_hub"]), len(kinds["nfs_replies"])


def test_exactly_sixty_filters_fit_and_every_spoke_past_them_is_named() -> None:
    """hubspoke keeps to 60 filters per flow-log group (flow_logs.py, of CloudWatch Logs' 100): 60 fit, 61 do
    not. Spoke 0 needs exactly 60, spoke 1 more; validation names spoke 1, after passing spoke 0."""
    hub = ["10.10.0.0/16"]
    fits, over = ["10.20.0.0/16", *_own_17s(100, 17)], ["10.21.0.0/16", *_own_17s(150, 18)]
    assert sum(_filters(fits, hub)) == 60 and sum(_filters(over, hub)) > 60
    hub_share, own_share = _filters(over, hub)
    raw = {
        "hub": {"region": "us-east-2", "cidr": hub[0]},
        "spokes": [
            {"region": "us-west-2", "cidr": fits[0], "secondary_cidrs": fits[1:]},
            {"region": "eu-west-1", "cidr": over[0], "secondary_cidrs": over[1:]},
        ],
    }
    [problem] = flow_log_filters_fit(valid(raw))
    assert problem.field == "spokes[1].secondary_cidrs"
    assert problem.message.startswith(
        f"the traffic metrics of spoke spokes[1] need {hub_share + own_share} metric filters on its flow-log "
        f"group ({hub_share} for the hub's CIDRs, from and to the hub; {own_share} for the spoke's own), more "
        "than the 60 hubspoke allows itself of CloudWatch Logs' 100 per log group"
    )


def test_a_26_is_named_with_the_24_it_shares() -> None:
    """A /26 is matched as its whole /24 too; the message names that /24, the block the operator must avoid."""
    raw = {
        "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16", "secondary_cidrs": ["10.30.0.0/26"]},
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": ["10.30.0.192/26"]}],
    }
    [problem] = hub_and_spokes_do_not_share_a_24(valid(raw))
    assert problem.field == "spokes[0].secondary_cidrs[0]"
    assert problem.message.startswith(
        "10.30.0.192/26 shares the /24 10.30.0.0/24 with hub.secondary_cidrs[0] (10.30.0.0/26)"
    )


def test_the_hubs_own_blocks_may_share_a_24() -> None:
    """Both are hub addresses, counted as the hub's bytes either way: only hub against spoke is refused."""
    raw = {
        "hub": {
            "region": "us-east-2",
            "cidr": "10.10.0.0/16",
            "secondary_cidrs": ["10.30.0.0/25", "10.30.0.128/25"],
        },
        "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}],
    }
    assert list(hub_and_spokes_do_not_share_a_24(valid(raw))) == []
