"""Each rule of our pack passes the dev templates and catches the violation it exists for."""

from __future__ import annotations

import copy
import inspect
import re
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig, load
from hubspoke.policy.rules import RULES, PolicyRule, Template, check
from tests.conftest import ROOT, Shape, Templates, write_config


def as_templates(templates: Templates) -> list[Template]:
    return [Template(sid, t) for sid, t in templates.items()]


def rules_hit(templates: Templates, config: HubSpokeConfig) -> set[str]:
    return {v.rule for v in check(as_templates(templates), config)}


def test_every_shapes_templates_pass(shape: Shape) -> None:
    assert check(as_templates(shape.templates), shape.config) == []


def _readme_rules() -> dict[str, tuple[str, str]]:
    """docs/policy.md's table of our pack: rule id -> (what it refuses, source), from its "Our pack" section."""
    text = (ROOT / "docs" / "policy.md").read_text()
    section = text[text.index("\n## Our pack\n") :]
    section = section[: section.index("\n## ", 1)]
    rows = re.findall(r"^\| `(HubSpoke-\w+)` \| (.*?) \| (.*?) \|$", section, flags=re.MULTILINE)
    table = {rule: (refuses, source) for rule, refuses, source in rows}
    assert len(table) == len(rows), "a rule is in docs/policy.md's table twice"
    return table


def _reported(rule: PolicyRule) -> set[str]:
    """The ids a rule's code reports (its Violation's first argument), read from its source, docstring left out."""
    body = inspect.getsource(rule).replace(rule.__doc__ or "", "")
    return set(re.findall(r"\"(HubSpoke-\w+)\"", body))


def test_every_rule_is_documented_by_the_id_it_reports() -> None:
    """A finding names a rule id; the user looks it up in docs/policy.md's table, which says what the rule
    refuses and where the requirement comes from, and the rule's docstring starts with the same id. A rule added,
    renamed or reporting under another rule's id without its documentation following fails here."""
    documented = _readme_rules()
    ids = []
    for rule in RULES:
        head = re.match(r"(HubSpoke-\w+): \S", rule.__doc__ or "")
        assert head, f"{rule.__name__}: the docstring starts with '<rule id>: <what it requires>'"
        assert _reported(rule) == {head[1]}, f"{rule.__name__} reports other ids than its docstring's"
        ids.append(head[1])
    assert len(set(ids)) == len(ids), "two rules share an id"
    assert sorted(documented) == sorted(ids), "docs/policy.md's table and the pack list different rules"
    for rule, (refuses, source) in documented.items():
        assert refuses.strip() and source.strip(), (
            f"{rule}: docs/policy.md says what it refuses and its source"
        )


def _ingress(templates: Templates, stack: str, cidr: str, key: str = "CidrIp") -> Templates:
    broken = copy.deepcopy(templates)
    broken[stack]["Resources"]["Injected"] = {
        "Type": "AWS::EC2::SecurityGroupIngress",
        "Properties": {key: cidr, "IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "GroupId": "sg-1"},
    }
    return broken


@pytest.mark.parametrize(("key", "world"), [("CidrIp", "0.0.0.0/0"), ("CidrIpv6", "::/0")])
def test_world_ingress_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, key: str, world: str
) -> None:
    """Both halves of the world: AWS::EC2::SecurityGroupIngress takes IPv4 ranges in CidrIp and IPv6 ranges in
    CidrIpv6 (CloudFormation template reference, AWS::EC2::SecurityGroupIngress), and ::/0 is every IPv6 address."""
    said = _said(
        _ingress(dev_templates, "network-us-east-2", world, key), dev_config, "HubSpoke-NoWorldIngress"
    )
    assert said == ["\nsecurity group ingress from 0.0.0.0/0 or ::/0\n"
                    "allow the peer VPC CIDR or the configured admin CIDR instead\n"]  # fmt: skip


def _said(templates: Templates, config: HubSpokeConfig, rule: str) -> list[str]:
    """Each of `rule`'s findings as its reader sees it: message and fix, each on its own line."""
    return [f"\n{v.message}\n{v.fix}\n" for v in check(as_templates(templates), config) if v.rule == rule]


@pytest.mark.parametrize(
    ("stack", "cidr"),
    [
        ("network-us-east-2", "192.168.0.0/16"),
        ("link-us-west-2", "172.16.0.0/16"),
        ("network-us-west-2", "10.30.0.0/16"),
    ],
)
def test_ingress_from_unknown_cidr_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, stack: str, cidr: str
) -> None:
    assert "HubSpoke-PeerCidrIngress" in rules_hit(_ingress(dev_templates, stack, cidr), dev_config)


def _drop(templates: Templates, stack: str, kind: str, count: int = 1) -> Templates:
    broken = copy.deepcopy(templates)
    res: dict[str, Any] = broken[stack]["Resources"]
    victims = [
        k for k, v in res.items() if v["Type"] == kind and "VpcPeeringConnectionId" in v["Properties"]
    ][:count]
    assert victims
    for k in victims:
        del res[k]
    return broken


def test_missing_route_on_either_side_is_caught(dev_config: HubSpokeConfig, dev_templates: Templates) -> None:
    """Each side of a peering needs its own routes (Amazon VPC Peering Guide): the finding says which side and
    what to route."""
    [spoke_side] = _said(
        _drop(dev_templates, "network-us-west-2", "AWS::EC2::Route"), dev_config, "HubSpoke-PeeringRouted"
    )
    assert "\nspoke side lacks " in spoke_side and spoke_side.endswith(
        "\nroute every hub CIDR in every private route table of the spoke via the peering\n"
    ), spoke_side
    assert "HubSpoke-PeeringRouted" in rules_hit(
        _drop(dev_templates, "link-us-west-2", "AWS::EC2::Route"), dev_config
    )
    without_link = {k: v for k, v in dev_templates.items() if k != "link-us-west-2"}
    assert "HubSpoke-PeeringRouted" in rules_hit(without_link, dev_config)


def test_spoke_to_spoke_route_is_caught(config_from: Any) -> None:
    """Two spokes (the verify tests' environment, whose synth the fast tier makes anyway): a route from one
    spoke's VPC to the other's CIDR over the peering is transitive routing, which VPC peering does not support
    (Amazon VPC Peering Guide, "VPC peering limitations")."""
    from tests.cli.verify_fixtures import TWO_SPOKES
    from tests.conftest import synth

    config = config_from(TWO_SPOKES)
    assert [(s.region, s.cidr) for s in config.spokes] == [
        ("us-west-2", "10.20.0.0/16"),
        ("eu-west-1", "10.30.0.0/16"),
    ]
    templates = copy.deepcopy(synth(config))
    net = templates["network-us-west-2"]["Resources"]
    route = copy.deepcopy(
        next(
            v
            for v in net.values()
            if v["Type"] == "AWS::EC2::Route" and "VpcPeeringConnectionId" in v["Properties"]
        )
    )
    route["Properties"]["DestinationCidrBlock"] = "10.30.0.0/16"
    net["Transitive"] = route
    assert "HubSpoke-NoTransitiveRoute" in rules_hit(templates, config)


def _peering_violations(templates: Templates, config: HubSpokeConfig) -> list[tuple[str, str]]:
    return [
        (v.template, v.message)
        for v in check(as_templates(templates), config)
        if v.rule == "HubSpoke-PeeringRouted"
    ]


@pytest.mark.parametrize("table", ["PrivateRouteTableUse2Az1", "PrivateRouteTableUse2Az2"])
def test_a_missing_hub_side_route_is_reported_on_the_link_template(
    dev_config: HubSpokeConfig, dev_templates: Templates, table: str
) -> None:
    """Every hub route table needs the route (dev's hub has two, one per AZ ID); the fix belongs in the Link
    stack, which holds the hub's routes to the spoke, so that is the template named."""
    broken = copy.deepcopy(dev_templates)
    res = broken["link-us-west-2"]["Resources"]
    hub_outputs = dev_templates["network-us-east-2"]["Outputs"]
    # The Link reads the table through CDK's own output, whose value is the named output's (the CLI's).
    [victim] = [
        k
        for k, v in res.items()
        if v["Type"] == "AWS::EC2::Route"
        and hub_outputs[v["Properties"]["RouteTableId"]["Fn::GetStackOutput"]["OutputName"]]["Value"]
        == hub_outputs[table]["Value"]
    ]
    del res[victim]
    [(where, message)] = _peering_violations(broken, dev_config)
    assert where == "link-us-west-2" and "hub side lacks 1 route" in message
    # The fix names every hub route table by the output the Link reads it from, and the stack holding them.
    [said] = _said(broken, dev_config, "HubSpoke-PeeringRouted")
    tables = "PrivateRouteTableUse2Az1, PrivateRouteTableUse2Az2"
    assert f"({tables} of hubspoke-dev-network-us-east-2) via the peering" in said, said


def test_a_link_route_over_another_stacks_output_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """Right output name, wrong stack: a route over the hub network's (non-existent) peering output."""
    broken = copy.deepcopy(dev_templates)
    routes = [
        r["Properties"]
        for r in broken["link-us-west-2"]["Resources"].values()
        if r["Type"] == "AWS::EC2::Route"
    ]
    routes[0]["VpcPeeringConnectionId"]["Fn::GetStackOutput"]["StackName"] = "hubspoke-dev-network-us-east-2"
    [(where, _)] = _peering_violations(broken, dev_config)
    assert where == "link-us-west-2"


def test_a_missing_spoke_network_template_is_reported_not_skipped(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    without = {k: v for k, v in dev_templates.items() if k != "network-us-west-2"}
    [said] = _said(without, dev_config, "HubSpoke-PeeringRouted")
    assert "no Network template for spoke us-west-2" in said, said
    assert said.endswith("\nsynthesize every stack of the environment before checking policy\n"), said


def _with_peering_route(templates: Templates, stack: str, destination: str) -> Templates:
    """`templates` with one more route over `stack`'s peering (a copy of a real one) to `destination`."""
    broken = copy.deepcopy(templates)
    res = broken[stack]["Resources"]
    route = copy.deepcopy(
        next(
            v
            for v in res.values()
            if v["Type"] == "AWS::EC2::Route" and "VpcPeeringConnectionId" in v["Properties"]
        )
    )
    route["Properties"]["DestinationCidrBlock"] = destination
    res["Injected"] = route
    return broken


@pytest.fixture(
    params=["dev-templates", pytest.param("multi-spoke-synth", marks=pytest.mark.thorough)], scope="module"
)
def multi_spoke(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Shape:
    """The multi-spoke shape's config (hub 10.10/16 + 10.11/16; spokes 10.20/16 + 10.21/20, 10.30/16,
    10.40/20) over templates whose us-west-2 routes over its peering only into the hub.

    Thorough tier: the shape's own synth (us-west-2 routes to both hub CIDRs). Fast tier: dev's templates, whose
    us-west-2 (10.20.0.0/16, as in the shape) routes over its peering to dev's hub, 10.10.0.0/16, the shape's
    primary hub CIDR: the rule reads nothing but the spokes' Network templates and the config's CIDRs, so it
    judges each injected route below as it would in the shape's synth, without a whole-environment synth (and
    its Control Tower run) of its own.
    """
    from tests.conftest import load_shape
    from tests.shapes import SHAPES

    if request.param == "multi-spoke-synth":
        return load_shape("multi-spoke", tmp_path_factory)
    config = load(write_config(tmp_path_factory.mktemp("multi-spoke-config"), SHAPES["multi-spoke"])).config
    return Shape("multi-spoke", config, load_shape("dev", tmp_path_factory).templates)


@pytest.mark.parametrize(
    "destination",
    [
        "10.0.0.0/8",  # a supernet of the hub and of every other spoke
        "10.30.1.0/24",  # inside eu-west-1's 10.30.0.0/16
        "10.40.0.0/16",  # covers ap-northeast-1's 10.40.0.0/20
        "192.168.0.0/16",  # nobody's: the hub would drop it
    ],
)
def test_a_peering_route_beyond_the_hub_is_caught(multi_spoke: Shape, destination: str) -> None:
    """Peering is not transitive (Amazon VPC Peering Guide, "VPC peering limitations"): the hub forwards nothing a
    spoke sends it for another VPC, so a spoke's peering route may lead only into the hub's CIDRs."""
    broken = _with_peering_route(multi_spoke.templates, "network-us-west-2", destination)
    hits = [
        v for v in check(as_templates(broken), multi_spoke.config) if v.rule == "HubSpoke-NoTransitiveRoute"
    ]
    assert [v.logical_id for v in hits] == ["Injected"]


@pytest.mark.parametrize("destination", ["10.11.0.0/16", "10.10.0.0/15", "10.10.4.0/24"])
def test_a_peering_route_into_the_hub_passes(multi_spoke: Shape, destination: str) -> None:
    """The refusal above is not everything: a route to the hub's secondary CIDR, to both hub CIDRs at once
    (10.10.0.0/15 is exactly 10.10.0.0/16 + 10.11.0.0/16) or to part of the hub stays within the hub."""
    broken = _with_peering_route(multi_spoke.templates, "network-us-west-2", destination)
    assert "HubSpoke-NoTransitiveRoute" not in rules_hit(broken, multi_spoke.config)


def test_a_link_route_read_in_its_own_region_by_default_is_the_hubs(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """Fn::GetStackOutput's Region defaults to the Region of the stack being created or updated (CloudFormation
    Template Reference, Fn::GetStackOutput): the Link stack lives in the hub's Region, so a route table read
    from the hub's network stack without a Region is the hub's, and the Link's routes are whole."""
    broken = copy.deepcopy(dev_templates)
    for res in broken["link-us-west-2"]["Resources"].values():
        if res["Type"] == "AWS::EC2::Route":
            res["Properties"]["RouteTableId"]["Fn::GetStackOutput"].pop("Region", None)
    assert _peering_violations(broken, dev_config) == []


@pytest.mark.parametrize(
    ("field", "region"),
    [
        ("VpcPeeringConnectionId", "us-east-2"),  # the spoke's stack name, read in the hub's Region
        ("VpcPeeringConnectionId", None),  # no Region: the Link stack's own (the hub's) Region
        ("RouteTableId", "us-west-2"),  # the hub's stack name, read in the spoke's Region
    ],
)
def test_a_link_route_read_from_the_wrong_region_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, field: str, region: str | None
) -> None:
    """Fn::GetStackOutput names a stack by StackName and Region, and Region defaults to the Region of the stack
    being created or updated (CloudFormation Template Reference, Fn::GetStackOutput). The Link stack lives in the
    hub's Region (us-east-2 in dev), so the spoke's peering is the right one only when read in us-west-2 and the
    hub's route tables only in us-east-2; the stack name alone proves neither."""
    broken = copy.deepcopy(dev_templates)
    route = next(
        r["Properties"]
        for r in broken["link-us-west-2"]["Resources"].values()
        if r["Type"] == "AWS::EC2::Route"
    )
    ref = route[field]["Fn::GetStackOutput"]
    ref.pop("Region", None)
    if region is not None:
        ref["Region"] = region
    [(where, message)] = _peering_violations(broken, dev_config)
    assert where == "link-us-west-2" and "hub side lacks 1 route" in message


def _access_host(templates: Templates, stack: str) -> tuple[str, str]:
    """(instance, security group) logical IDs of the access host in `stack`."""
    [(host, props)] = [
        (k, r["Properties"])
        for k, r in templates[stack]["Resources"].items()
        if r["Type"] == "AWS::EC2::Instance"
    ]
    [group] = props["NetworkInterfaces"][0]["GroupSet"]
    return host, group["Fn::GetAtt"][0]


@pytest.mark.parametrize("how", ["standalone", "inline", "public"])
def test_a_way_into_the_access_host_is_caught(
    dev_config: HubSpokeConfig, dev_templates: Templates, how: str
) -> None:
    """Session Manager needs no inbound port (Systems Manager User Guide, "AWS Systems Manager Session Manager"):
    an ingress rule on the host's group, standalone or inline, or a public address, is refused."""
    broken = copy.deepcopy(dev_templates)
    resources = broken["compute-us-west-2"]["Resources"]
    host, group = _access_host(broken, "compute-us-west-2")
    rule = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": "10.20.0.0/16"}
    if how == "standalone":
        resources["Injected"] = {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {**rule, "GroupId": {"Fn::GetAtt": [group, "GroupId"]}},
        }
    elif how == "inline":
        resources[group]["Properties"]["SecurityGroupIngress"] = [rule]
    else:
        resources[host]["Properties"]["NetworkInterfaces"][0]["AssociatePublicIpAddress"] = True
    assert "HubSpoke-AccessHostNoIngress" in rules_hit(broken, dev_config)
    assert "HubSpoke-AccessHostNoIngress" not in rules_hit(dev_templates, dev_config)


def _network(region: str, routes: dict[str, dict[str, Any]], kind: str = "network") -> Template:
    """A hand-written network template of `region` holding `routes` (AWS::EC2::Route properties by logical ID)."""
    return Template(
        f"{kind}-{region}",
        {
            "Metadata": {"hubspoke": {"kind": kind, "region": region}},
            "Resources": {k: {"Type": "AWS::EC2::Route", "Properties": p} for k, p in routes.items()},
        },
    )


PEER = {"VpcPeeringConnectionId": {"Ref": "Peering"}, "RouteTableId": {"Ref": "Table"}}
NAT = {"NatGatewayId": {"Ref": "Nat"}, "RouteTableId": {"Ref": "Table"}}


@pytest.mark.parametrize(
    ("route", "caught", "covered"),
    [
        ({**PEER, "DestinationCidrBlock": "10.10.0.0/16"}, False, None),  # the hub's CIDR
        ({**PEER, "DestinationCidrBlock": "10.10.5.0/24"}, False, None),  # inside it
        ({**PEER, "DestinationCidrBlock": "10.30.0.0/16"}, True, "10.30.0.0/16"),  # the other spoke
        ({**PEER, "DestinationCidrBlock": "10.30.7.0/24"}, True, "10.30.0.0/16"),  # inside the other spoke
        ({**PEER, "DestinationCidrBlock": "0.0.0.0/0"}, True, "10.30.0.0/16"),  # a supernet of it
        ({**PEER, "DestinationCidrBlock": "10.10.0.0/15"}, True, None),  # past the hub, no spoke
        ({**PEER, "DestinationCidrBlock": "172.16.0.0/12"}, True, None),  # a dead end
        ({**PEER, "DestinationIpv6CidrBlock": "::/0"}, True, None),  # the hub has no IPv6 CIDR
        ({**PEER, "DestinationCidrBlock": {"Ref": "HubCidr"}}, True, None),  # a token, not comparable
        ({**NAT, "DestinationCidrBlock": "10.30.1.0/24"}, True, "10.30.0.0/16"),  # into a spoke, any target
        ({**NAT, "DestinationCidrBlock": "0.0.0.0/0"}, False, None),  # the internet, not over the peering
        ({**NAT, "DestinationCidrBlock": {"Ref": "Anywhere"}}, False, None),
        ({**NAT, "DestinationIpv6CidrBlock": "::/0"}, False, None),
        ({**NAT, "DestinationCidrBlock": "10.20.1.0/24"}, False, None),  # its own CIDR
    ],
)
def test_a_spoke_routes_over_its_peering_only_to_the_hub(
    config_from: Any, route: dict[str, Any], caught: bool, covered: str | None
) -> None:
    """VPC peering is not transitive (Amazon VPC Peering Guide, "VPC peering limitations"): over its peering a
    spoke (10.20.0.0/16) reaches only the hub's CIDR (10.10.0.0/16), and no route of it leads into the other
    spoke (10.30.0.0/16). A route names IPv4 or IPv6 destinations (AWS::EC2::Route DestinationCidrBlock,
    DestinationIpv6CidrBlock). No synth: the rule reads the route alone."""
    from tests.cli.verify_fixtures import TWO_SPOKES

    config = config_from(TWO_SPOKES)
    found = [v for v in check([_network("us-west-2", {"R": route})], config) if v.rule == TRANSITIVE]
    assert [(v.template, v.logical_id) for v in found] == ([("network-us-west-2", "R")] if caught else [])
    for v in found:
        assert ("10.30.0.0/16" in v.message) == (covered is not None), v.message
        dest = route.get("DestinationCidrBlock", route.get("DestinationIpv6CidrBlock"))
        assert (dest if isinstance(dest, str) else repr(dest)) in v.message, v.message
        assert v.fix == FIXES["VpcPeeringConnectionId" in route, isinstance(dest, str)], v.fix


TRANSITIVE = "HubSpoke-NoTransitiveRoute"
# What the user is told to do, by (over the peering, literal destination): the hub forwards nothing onward and
# no spoke reaches another (Amazon VPC Peering Guide, "VPC peering limitations").
FIXES = {
    (True, True): "route over the peering only the hub's CIDRs: the hub forwards nothing onward",
    (True, False): "route the hub's CIDRs literally, as config gives them",
    (False, True): "remove it: spoke-to-spoke traffic cannot cross the hub's peerings",
}


def test_the_hub_and_other_stacks_may_route_toward_a_spoke(config_from: Any) -> None:
    """The hub routes to every spoke (that is the hub-and-spoke design), and only Network stacks hold a spoke's
    peering routes; a spoke's own CIDR is no other spoke's."""
    from tests.cli.verify_fixtures import TWO_SPOKES

    config = config_from(TWO_SPOKES)
    to_spoke = {"R": {**PEER, "DestinationCidrBlock": "10.30.0.0/16"}}
    templates = [_network("us-east-2", to_spoke), _network("us-west-2", to_spoke, kind="link")]
    assert [v for v in check(templates, config) if v.rule == TRANSITIVE] == []
    other = [_network("eu-west-1", {"R": {**PEER, "DestinationCidrBlock": "10.20.0.0/16"}})]
    assert [v.template for v in check(other, config) if v.rule == TRANSITIVE] == ["network-eu-west-1"]


def test_a_route_to_the_hubs_adjacent_cidrs_at_once_is_the_hubs(config_from: Any) -> None:
    """A hub with two adjacent CIDRs (10.10.0.0/16 and its secondary 10.11.0.0/16) may be routed as one /15."""
    from tests.cli.verify_fixtures import TWO_SPOKES

    data = copy.deepcopy(TWO_SPOKES)
    data["hub"]["secondary_cidrs"] = ["10.11.0.0/16"]
    config = config_from(data)
    assert config.hub.all_cidrs == ("10.10.0.0/16", "10.11.0.0/16")
    route = {"R": {**PEER, "DestinationCidrBlock": "10.10.0.0/15"}}
    assert [v for v in check([_network("us-west-2", route)], config) if v.rule == TRANSITIVE] == []


def test_a_route_past_the_hub_names_every_hub_and_spoke_cidr_it_concerns(config_from: Any) -> None:
    """The finding lists the hub's CIDRs a spoke may route to and every other spoke CIDR the route covers,
    each by its CIDR, so the reader can see what to route instead (hub 10.10.0.0/16 + 10.11.0.0/16; the other
    spoke 10.30.0.0/16 + 10.31.0.0/16, both inside 10.0.0.0/8)."""
    from tests.cli.verify_fixtures import TWO_SPOKES

    data = copy.deepcopy(TWO_SPOKES)
    data["hub"]["secondary_cidrs"] = ["10.11.0.0/16"]
    data["spokes"][1]["secondary_cidrs"] = ["10.31.0.0/16"]
    config = config_from(data)
    route = {"R": {**PEER, "DestinationCidrBlock": "10.0.0.0/8"}}
    [found] = [v for v in check([_network("us-west-2", route)], config) if v.rule == TRANSITIVE]
    assert found.message == (
        "route over the peering to 10.0.0.0/8, outside the hub's CIDRs 10.10.0.0/16, 10.11.0.0/16 and covering "
        "another spoke's CIDR 10.30.0.0/16, 10.31.0.0/16"
    )


def _ingress_in(region: str, cidr: Any, spoke: str | None = None) -> Template:
    """A hand-written template of `region` (a Link stack's when `spoke` is given) with one ingress rule."""
    meta = {"kind": "link" if spoke else "network", "region": region, **({"spoke": spoke} if spoke else {})}
    rule = {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "GroupId": "sg-1", "CidrIp": cidr}
    return Template("t", {"Metadata": {"hubspoke": meta},
                          "Resources": {"In": {"Type": "AWS::EC2::SecurityGroupIngress", "Properties": rule}}})  # fmt: skip


@pytest.mark.parametrize(
    ("region", "cidr", "spoke", "caught"),
    [
        ("us-west-2", "10.20.0.0/16", None, False),  # the spoke's own VPC
        ("us-west-2", "10.20.3.0/24", None, False),  # inside it
        ("us-west-2", "10.10.0.0/16", None, False),  # its peer, the hub
        ("us-east-2", "10.20.0.0/16", None, False),  # the hub's peer, the spoke
        ("us-west-2", "10.30.0.0/16", None, True),  # neither
        ("us-west-2", "10.20.0.0/15", None, True),  # wider than the VPC
        ("us-east-2", "10.20.0.0/16", "us-west-2", False),  # a Link stack admits its spoke
        ("us-east-2", "10.10.0.0/16", "us-west-2", False),  # and the hub VPC itself
        ("us-east-2", "10.30.0.0/16", "us-west-2", True),
    ],
)
def test_ingress_comes_only_from_the_vpc_or_its_configured_peers(
    dev_config: HubSpokeConfig, region: str, cidr: str, spoke: str | None, caught: bool
) -> None:
    """Security groups cannot be referenced across Regions, so a peer's traffic is admitted by its CIDR (Amazon
    VPC Peering Guide, "Update your security groups to reference peer security groups"); anything else from
    outside the VPC is refused. dev: hub 10.10.0.0/16 in us-east-2, spoke 10.20.0.0/16 in us-west-2."""
    found = [
        v
        for v in check([_ingress_in(region, cidr, spoke)], dev_config)
        if v.rule == "HubSpoke-PeerCidrIngress"
    ]
    assert [v.logical_id for v in found] == (["In"] if caught else [])
    for v in found:
        assert cidr in v.message and region in v.message, v.message


def test_ingress_by_security_group_or_in_a_template_of_no_region_is_not_a_cidr_rule(
    dev_config: HubSpokeConfig,
) -> None:
    """Ingress naming a source group (SourceSecurityGroupId, no CidrIp) and a template with no hubspoke
    metadata (no stack of ours, so no Region to judge by) are for other rules."""
    by_group = _ingress_in("us-west-2", None)
    by_group.body["Resources"]["In"]["Properties"]["SourceSecurityGroupId"] = "sg-2"
    regionless = Template("t", {"Resources": _ingress_in("us-west-2", "10.30.0.0/16").body["Resources"]})
    assert [
        v for v in check([by_group, regionless], dev_config) if v.rule == "HubSpoke-PeerCidrIngress"
    ] == []
