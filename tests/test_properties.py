"""Random topologies: a config the oracle below calls valid is accepted and synthesizes with every template
invariant of the suite holding; a config it calls invalid is rejected, for the reasons it names and no other.

The oracle is written from the documents, not from hubspoke.config:
- VPC User Guide, "VPC CIDR blocks": a VPC's blocks are /16 to /28; hubspoke's subnet layout (docs/configuration.md, `.cidr`)
  needs its primary block to be /20 or larger.
- VPC Peering Guide, "VPC peering limitations": peered VPCs' CIDR blocks must not overlap (hubspoke checks
  every pair of blocks, secondary ones included).
- EC2 User Guide, "Network MTU": inter-Region peering carries at most 8500 bytes.
- README (the project's contract): one spoke per Region and never the hub's; `nat: none` refused where storage
  is on (CNQ must reach Qumulo's endpoints) and where compute is (HyperPod nodes pull from ECR and call EKS and
  SageMaker, and the VPC has no interface endpoints); compute mounts the Region's own CNQ, so compute needs storage; a
  spoke in another account peers the network only (no cross-account portals yet); a spoke's CNQ caches the
  hub's, so spoke storage needs hub storage.
The draws stay where no other rule applies: compute only in us-east-2 and us-west-2 (the Regions the reference
run trained in, docs/design.md §1, so HyperPod is offered there), at most three blocks of /16 or narrower per VPC
(far from the 60 flow-log filters per log group), blocks from 10.0.0.0/8 and 100.64.0.0/10 (no clash with the
Kubernetes service CIDR 172.20.0.0/16; primaries from 10.0.0.0/8 with secondaries from 100.64.0.0/10 or outside
10.0.0.0/16, which the VPC User Guide's "IPv4 CIDR block association restrictions" permit), each starting on a /24 boundary (so two blocks share a /24 only when they
overlap: the rule that hub and spoke blocks must not share one never fires alone).

`make test` runs a few synthesizing examples (the `ci` profile); `make test-thorough` runs hundreds.
"""

from __future__ import annotations

import importlib
import inspect
import ipaddress
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from hubspoke.config import ConfigError, HubSpokeConfig, load
from tests.conftest import HYPOTHESIS_PROFILE, ROOT, Shape, forget, synth, with_pins, write_config

HUB_ACCOUNT, OTHER_ACCOUNT = "123456789012", "210987654321"
TRAINING_REGIONS = ("us-east-2", "us-west-2")  # where the reference run trained (docs/design.md §1)
REGIONS = (*TRAINING_REGIONS, "us-east-1", "eu-west-1", "eu-central-1", "ap-northeast-1")
SYNTH_EXAMPLES = {"ci": 6, "thorough": 300}[HYPOTHESIS_PROFILE]


@st.composite
def region(
    draw: st.DrawFn, code: str, blocks: list[str], *, hub: dict[str, Any] | None, valid: bool
) -> dict[str, Any]:
    """One Region's entry; with `valid`, only the combinations the README allows (given the hub, for a spoke)."""
    entry: dict[str, Any] = {"region": code, "cidr": blocks[0]}
    if blocks[1:]:
        entry["secondary_cidrs"] = blocks[1:]
    account = draw(st.sampled_from([None, HUB_ACCOUNT, OTHER_ACCOUNT])) if hub is not None else None
    if account:
        entry["account"] = account
    storage = draw(st.booleans())
    if valid and hub is not None:  # a spoke's CNQ caches the hub's, and only in the hub's account
        storage = storage and hub["storage"]["enabled"] and account != OTHER_ACCOUNT
    nat = draw(st.sampled_from([None, "single", "per_az", *([] if valid and storage else ["none"])]))
    if nat:
        entry["nat"] = nat
    entry["storage"] = {"enabled": storage}
    # Compute only where HyperPod is known to run; elsewhere it stays off (and the oracle need not know more).
    compute = code in TRAINING_REGIONS and draw(st.booleans())
    entry["compute"] = {"enabled": compute and (storage or not valid)}
    return entry


def network(address: str, prefix: int) -> str:
    return str(ipaddress.IPv4Network((address, prefix), strict=False))


@st.composite
def topologies(draw: st.DrawFn) -> tuple[dict[str, Any], bool]:
    """A config, and whether it was drawn well-formed (then the oracle must find nothing wrong with it)."""
    n = draw(st.integers(min_value=1, max_value=3))
    well_formed = draw(st.booleans())
    counts = [draw(st.integers(0, 2)) for _ in range(n + 1)]  # secondary blocks per Region
    if well_formed:  # distinct Regions; disjoint blocks of valid sizes, each in its own /16
        codes = draw(st.lists(st.sampled_from(REGIONS), min_size=n + 1, max_size=n + 1, unique=True))
        octets = draw(st.lists(st.integers(0, 250), min_size=n + 1, max_size=n + 1, unique=True))
        primaries = [network(f"10.{o}.0.0", draw(st.sampled_from([16, 18, 20]))) for o in octets]
        slots = draw(st.lists(st.integers(64, 127), min_size=sum(counts), max_size=sum(counts), unique=True))
        secondary = [network(f"100.{s}.0.0", draw(st.sampled_from([16, 20, 24, 28]))) for s in slots]
    else:  # anything: overlaps, repeated Regions, prefixes outside the limits (blocks still /24-aligned)
        codes = draw(st.lists(st.sampled_from(REGIONS[:4]), min_size=n + 1, max_size=n + 1))
        primaries = [
            network(f"10.{draw(st.integers(0, 6))}.0.0", draw(st.sampled_from([15, 16, 18, 20, 21])))
            for _ in range(n + 1)
        ]
        secondary = [
            network(
                f"{draw(st.sampled_from(['10.3', '100.64']))}.{16 * draw(st.integers(0, 3))}.0",
                draw(st.sampled_from([15, 16, 20, 24, 29])),
            )
            for _ in range(sum(counts))
        ]
    blocks = [[primaries[i], *secondary[sum(counts[:i]) : sum(counts[: i + 1])]] for i in range(n + 1)]
    data: dict[str, Any] = {"environment": "prop", "account": HUB_ACCOUNT}
    mtu = draw(st.sampled_from([None, 1500, 8500, *([] if well_formed else [9001])]))
    if mtu:
        data["inter_region_mtu"] = mtu
    data["hub"] = draw(region(codes[0], blocks[0], hub=None, valid=well_formed))
    data["spokes"] = [
        draw(region(codes[i], blocks[i], hub=data["hub"], valid=well_formed)) for i in range(1, n + 1)
    ]
    return with_pins(data), well_formed


# Marks a problem the schema finds on its field; the environment-wide rules read only a config the schema accepts.
SCHEMA = "(schema)"


def oracle(data: dict[str, Any]) -> list[set[str]]:
    """What is wrong with `data`: one set of fields per problem (naming any one of them is enough)."""
    problems: list[set[str]] = []
    regions = [("hub", data["hub"])] + [(f"spokes[{i}]", s) for i, s in enumerate(data["spokes"])]
    blocks: list[tuple[str, ipaddress.IPv4Network]] = []
    for path, r in regions:
        primary = ipaddress.IPv4Network(r["cidr"])
        if not 16 <= primary.prefixlen <= 20:
            problems.append({f"{path}.cidr", SCHEMA})
        blocks.append((f"{path}.cidr", primary))
        for j, cidr in enumerate(r.get("secondary_cidrs", [])):
            net = ipaddress.IPv4Network(cidr)
            if not 16 <= net.prefixlen <= 28:
                problems.append({f"{path}.secondary_cidrs[{j}]", SCHEMA})
            blocks.append((f"{path}.secondary_cidrs[{j}]", net))
    for i, (field_a, a) in enumerate(blocks):
        for field_b, b in blocks[i + 1 :]:
            if a.overlaps(b):
                problems.append({field_a, field_b})
    hub = data["hub"]
    seen: dict[str, str] = {}
    for path, r in regions[1:]:
        if r["region"] == hub["region"]:
            problems.append({f"{path}.region"})
        elif r["region"] in seen:
            problems.append({f"{path}.region", f"{seen[r['region']]}.region"})
        else:
            seen[r["region"]] = path
    if data.get("inter_region_mtu", 8500) > 8500:
        problems.append({"inter_region_mtu", SCHEMA})
    for path, r in regions:
        storage, compute = r["storage"]["enabled"], r["compute"]["enabled"]
        if storage and r.get("nat") == "none":
            problems.append({f"{path}.nat"})
        if compute and r.get("nat") == "none":
            problems.append({f"{path}.nat"})
        if compute and not storage:
            problems.append({f"{path}.compute"})
        if path != "hub" and storage and r.get("account", HUB_ACCOUNT) != HUB_ACCOUNT:
            problems.append({f"{path}.storage"})
        if path != "hub" and storage and not hub["storage"]["enabled"]:
            problems.append({f"{path}.storage"})
    return problems


def invariants() -> Iterator[tuple[str, Callable[[Shape], None]]]:
    """Every template invariant of the suite: each test function that takes only a topology shape."""
    for module_name in INVARIANT_MODULES:
        module = importlib.import_module(module_name)
        for name, fn in vars(module).items():
            if not name.startswith("test_") or not callable(fn):
                continue
            params = list(inspect.signature(fn).parameters)
            if params == ["shape"]:
                yield f"{module_name}.{name}", fn
            elif params == ["case"]:  # (config, templates) pairs, as tests/stacks/test_storage.py takes them
                yield f"{module_name}.{name}", lambda s, fn=fn: fn((s.config, s.templates))


# The modules that hold shape-wide invariants; test_every_shape_invariant_module_is_listed keeps it complete.
INVARIANT_MODULES = (
    "tests.stacks.test_network",
    "tests.stacks.test_cross_account",
    "tests.stacks.test_storage",
    "tests.stacks.test_retention",
    "tests.stacks.test_ops",
    "tests.stacks.test_compute",
    "tests.stacks.test_cluster_access",
    "tests.stacks.test_dashboard",
    "tests.test_outputs",
    "tests.test_stack_order",
    "tests.policy.test_rules",
    "tests.policy.test_waiters",
    "tests.constructs.hyperpod.test_dependencies_lambda",
    "tests.constructs.canary.test_traffic_shapes",
)

# A well-formed topology with everything on somewhere: two accounts, secondary blocks, all three NAT modes.
RICH = with_pins({
    "environment": "prop", "account": HUB_ACCOUNT,
    "hub": {"region": "us-east-2", "cidr": "10.1.0.0/18", "secondary_cidrs": ["100.64.0.0/24"], "nat": "per_az",
            "storage": {"enabled": True}, "compute": {"enabled": False}},
    "spokes": [
        {"region": "us-west-2", "cidr": "10.2.0.0/20", "secondary_cidrs": ["100.65.0.0/16", "100.66.0.0/28"],
         "storage": {"enabled": True}, "compute": {"enabled": True}},
        {"region": "eu-west-1", "cidr": "10.3.0.0/16", "account": OTHER_ACCOUNT, "nat": "none",
         "storage": {"enabled": False}, "compute": {"enabled": False}},
    ],
})  # fmt: skip


@pytest.mark.thorough
@settings(max_examples=SYNTH_EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@example((RICH, True))
@given(topologies())
def test_valid_draws_synthesize_with_every_invariant_and_only_invalid_ones_are_refused(
    drawn: tuple[dict[str, Any], bool],
) -> None:
    data, well_formed = drawn
    expected = oracle(data)
    assert not (well_formed and expected), (
        f"the strategy drew a well-formed topology the oracle refuses: {expected}"
    )
    event("drawn well-formed" if well_formed else "drawn freely")
    with tempfile.TemporaryDirectory(prefix="hubspoke-prop-") as scratch:
        path = write_config(Path(scratch), data)
        try:
            config = load(path).config
        except ConfigError as exc:
            assert expected, f"a well-formed topology was refused:\n{exc}"
            fields = set()
            for line in exc.lines:
                assert line.startswith(f"{path}: "), line
                fields.add(line.removeprefix(f"{path}: ").split(": ", 1)[0])
            named = set().union(*expected)
            # Pins are filled in only where storage is on; a field under a problem's path is that problem.
            unexplained = {f for f in fields if not any(f == n or f.startswith(f"{n}.") for n in named)}
            assert not unexplained, f"refused for reasons the oracle does not know: {sorted(unexplained)}"
            schema_level = [p for p in expected if SCHEMA in p]
            missed = [p for p in schema_level or expected if not p & fields]
            assert not missed, f"accepted problems: {missed}"
            event("refused, for the oracle's reasons")
            return
    assert not expected, f"accepted although {expected}"
    event("accepted and synthesized")
    check_every_invariant(config)


def check_every_invariant(config: HubSpokeConfig) -> None:
    try:
        shape = Shape("drawn", config, synth(config))
        checked = 0
        for name, invariant in invariants():
            try:
                invariant(shape)
            except AssertionError as exc:
                raise AssertionError(f"{name} fails for the drawn topology: {exc}") from exc
            checked += 1
        assert checked >= 50, "the invariants were not found"
    finally:
        forget(config)


def test_every_shape_invariant_module_is_listed() -> None:
    """A new module of shape-wide invariants must be run over the drawn topologies too."""
    found = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(
            r"def test_\w+\((shape: Shape|case: tuple\[HubSpokeConfig, Templates\])\)", path.read_text()
        )
    }
    assert found == set(INVARIANT_MODULES), sorted(found ^ set(INVARIANT_MODULES))


def test_the_oracle_knows_the_documented_limits() -> None:
    """The oracle itself, on hand-written cases: each refusal for the documented reason."""
    base = RICH
    assert oracle(base) == []
    cases = {
        "hub.cidr": {"hub": {**base["hub"], "cidr": "10.1.0.0/21"}},
        "spokes[0].secondary_cidrs[1]": {"spokes": [{**base["spokes"][0], "secondary_cidrs": ["100.65.0.0/16", "100.66.0.0/29"]}, base["spokes"][1]]},
        "spokes[1].storage": {"spokes": [base["spokes"][0], {**base["spokes"][1], "nat": "single", "storage": {"enabled": True}}]},
        "inter_region_mtu": {"inter_region_mtu": 9001},
    }  # fmt: skip
    for field, change in cases.items():
        assert any(field in p for p in oracle({**base, **change})), field
