"""`hubspoke plan --config PATH`: the stacks, peerings and CDK commands an environment produces, how long its
first deploy takes and what it costs per hour while it stands, without AWS."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from hubspoke.cli.output import Table, print_json, print_tables
from hubspoke.config import HubSpokeConfig, RegionConfig, load
from hubspoke.config.layout import subnet_layout
from hubspoke.deploy_time import deploy_time
from hubspoke.mtu import peer_mtu
from hubspoke.outputs import AssemblyMissing, Reference, produced, readers
from hubspoke.regions import is_opt_in, opt_in_note
from hubspoke.run_rate import NOT_COUNTED, run_rate, total
from hubspoke.topology import StackPlan, cross_account, plan_stacks, stage_id

# What a cross-account target trusts the deploying account with (CDK guide, "Bootstrapping", --trust).
_TRUSTED_EXECUTION_POLICY = "arn:aws:iam::aws:policy/AdministratorAccess"
# The deploy commands never stop for approval. The pinned CDK CLI (aws-cdk 2.1148.1) defaults to
# --require-approval broadening, and 8 of the 9 dev stacks add IAM statements or security-group rules, so each
# would stop for a "y"; without a terminal it throws TtyNotAttached, and with --concurrency above 1 it throws
# ConcurrencyConflict instead of asking (lib/index.js, CliIoHost requestResponse). Review first with `cdk diff`.
NO_APPROVAL = ("--require-approval", "never")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "plan",
        help=summary,
        description="Print, in deploy order, every stack the config produces (Region, account, contents), "
        "the peerings with both CIDRs and the MTU, the first deploy's critical path and the --concurrency that "
        "reaches it, the run-rate in $/hour from dated list prices, and the CDK bootstrap and deploy commands. "
        "No AWS calls.",
        epilog="Example:\n  hubspoke plan --config config/dev.yaml\n  hubspoke plan --config config/dev.yaml --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument(
        "--assembly",
        type=Path,
        default=Path("cdk.out"),
        metavar="DIR",
        help="cloud assembly `cdk synth` wrote, read for which stack reads which (default: cdk.out)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = load(args.config)
    data = build_plan(loaded.config, config_path=str(args.config), assembly=args.assembly)
    if args.json:
        print_json(data)
    else:
        print_tables(_tables(data), notes=_notes(data))
    return 0


def build_plan(
    config: HubSpokeConfig, *, config_path: str, assembly: Path = Path("cdk.out")
) -> dict[str, Any]:
    """The plan as plain data: the JSON output, and the source of the tables.

    Who reads what comes from the templates in `assembly` (their Fn::GetStackOutput); without them it is null.
    """
    stage = stage_id(config)
    stacks = plan_stacks(config)
    try:
        reads: dict[str, dict[str, tuple[Reference, ...]]] | None = readers(config, assembly)
        unread = None
    except AssemblyMissing as exc:
        reads, unread = None, str(exc)
    timing = deploy_time(config, stacks)
    concurrency = max(timing.expected.concurrency, timing.bound.concurrency)
    lines = run_rate(config)
    usd_per_hour, complete = total(lines)
    return {
        "environment": config.environment,
        "config": config_path,
        "stage": stage,
        "hub": config.hub.region,
        "spokes": [s.region for s in config.spokes],
        "opt_in_regions": [r.region for r in config.regions() if is_opt_in(r.region)],
        "read_by_unknown": unread,
        "stacks": [
            {
                "order": n,
                "id": plan.id,
                "name": plan.name,
                "selector": f"{stage}/{plan.id}",
                "kind": plan.kind,
                "region": plan.region,
                "account": plan.account,
                "holds": _contents(config, plan),
                "depends_on": list(plan.depends_on),
                "outputs": list(produced(config, plan)),
                # Fn::GetStackOutput is resolved when the consumer deploys: after this stack's outputs
                # change, redeploy these (CloudFormation User Guide, "Fn::GetStackOutput").
                "read_by": None
                if reads is None
                else [
                    {
                        "stack": consumer,
                        "outputs": [r.output for r in refs],
                        "carries": [r.carries for r in refs],
                        "refresh": refresh_command(config_path, stage, consumer),
                    }
                    for consumer, refs in reads.get(plan.id, {}).items()
                ],
            }
            for n, plan in enumerate(stacks, start=1)
        ],
        "peerings": [
            {
                "requester": spoke.region,
                "requester_cidrs": list(spoke.all_cidrs),
                "accepter": config.hub.region,
                "accepter_cidrs": list(config.hub.all_cidrs),
                "mtu": peer_mtu(config),
                "cross_account": cross_account(config, spoke),
            }
            for spoke in config.spokes
        ],
        "deploy_time": {
            "expected_minutes": timing.expected.minutes,
            "bound_minutes": timing.bound.minutes,
            "critical_path": list(timing.expected.path),
            "bound_critical_path": list(timing.bound.path),
            "concurrency": concurrency,
            "stack_kinds": {
                kind: {"expected_minutes": d.expected, "bound_minutes": d.bound, "source": d.source}
                for kind, d in timing.durations.items()
                if any(p.kind == kind for p in stacks)
            },
        },
        # Every compute Region deploys its HyperPod groups, the hub's too (compute.enabled defaults to true).
        "accelerated_nodes": [
            {
                "region": r.region,
                "role": "hub" if r is config.hub else "spoke",
                "count": g.count,
                "type": g.instance_type,
            }
            for r in config.regions()
            if r.compute.enabled
            for g in r.compute.instance_groups
        ],
        "run_rate": {
            "usd_per_hour": usd_per_hour,
            "complete": complete,
            "lines": [
                {
                    "region": line.region,
                    "what": line.what,
                    "count": line.count,
                    "item": line.item,
                    "usd_each": None if line.price is None else line.price.usd,
                    "usd_per_hour": line.usd_per_hour,
                    "source": None if line.price is None else line.price.cited,
                }
                for line in lines
            ],
            "not_counted": NOT_COUNTED,
        },
        "commands": {
            "bootstrap": _bootstrap_commands(config, stacks, config_path),
            "review": cdk_command("diff", config_path, f"{stage}/*"),
            "deploy_all": cdk_command(
                "deploy", config_path, *NO_APPROVAL, "--concurrency", str(concurrency), f"{stage}/*"
            ),
            "refresh": refresh_command(config_path, stage, "<reader-stack-id>"),
            "deploy_in_order": [
                cdk_command("deploy", config_path, *NO_APPROVAL, "--exclusively", f"{stage}/{p.id}")
                for p in stacks
            ],
        },
    }


def _contents(config: HubSpokeConfig, plan: StackPlan) -> list[str]:
    """What one stack holds, line by line, with the numbers from config that matter to a reader."""
    region = config.region_config(plan.region)
    if plan.kind == "network":
        subnets = [f"{s.kind} subnet {s.cidr} in {s.az_id}" for s in subnet_layout(region)]
        return [f"VPC {', '.join(region.all_cidrs)}, NAT {region.nat}", *subnets, plan.holds]
    if plan.kind in ("link", "peer-access") and plan.spoke:
        spoke = config.spoke(plan.spoke)
        return [plan.holds, f"spoke {plan.spoke} ({', '.join(spoke.all_cidrs)})"]
    if plan.kind == "storage":
        role = "hub" if plan.region == config.hub.region else f"spoke with a portal to {config.hub.region}"
        st = region.storage
        return [f"CNQ {role}", f"{st.node_count} x {st.instance_type} in {region.resolved_accelerator_az_id}"]
    if plan.kind == "compute":
        return [f"EKS {region.compute.kubernetes_version}", f"HyperPod {_groups(region)}"]
    return [plan.holds]


def _groups(region: RegionConfig) -> str:
    return ", ".join(f"{g.count} x {g.instance_type}" for g in region.compute.instance_groups)


def _bootstrap_commands(config: HubSpokeConfig, stacks: list[StackPlan], config_path: str) -> list[str]:
    """One `cdk bootstrap` per account and Region pair; other accounts trust the environment's account. With
    cdk.json present the CLI synthesizes the app even for named environments (aws-cdk 2.1148.1 lib/index.js,
    CdkToolkit.defineEnvironments), so `-c config=` names this environment's config alone."""
    pairs = list(dict.fromkeys((p.account, p.region) for p in stacks))
    commands = []
    for account, region in pairs:
        extra: tuple[str, ...] = ()
        if account != config.account:
            extra = (
                "--trust",
                config.account,
                "--cloudformation-execution-policies",
                _TRUSTED_EXECUTION_POLICY,
            )
        commands.append(cdk_command("bootstrap", config_path, f"aws://{account}/{region}", *extra))
    return commands


def refresh_command(config_path: str, stage: str, stack_id: str) -> str:
    """Redeploy one reader so its Fn::GetStackOutput values are read again (stage.py, REFRESH_CONTEXT).

    A new token makes the deploy an update even with an unchanged template; `$(date +%s)` is left for the
    shell to expand.
    """
    return cdk_command("deploy", config_path, "--exclusively", f"{stage}/{stack_id}").replace(
        " --exclusively", " -c refresh=$(date +%s) --exclusively", 1
    )


def cdk_command(verb: str, config_path: str, *rest: str) -> str:
    """`npx cdk VERB -c config=PATH ...`, shell-quoted: the form plan and verify print."""
    return shlex.join(("npx", "cdk", verb, "-c", f"config={config_path}", *rest))


def _tables(data: dict[str, Any]) -> list[Table]:
    stacks = Table(
        f"Stacks of environment {data['environment']} (stage {data['stage']}), in deploy order",
        ("#", "stack", "region", "account", "holds", "after"),
    )
    for s in data["stacks"]:
        stacks.add(
            s["order"],
            s["name"],
            s["region"],
            s["account"],
            "\n".join(s["holds"]),
            "\n".join(s["depends_on"]),
        )
    peerings = Table(
        "Peerings (spoke requests, hub accepts)", ("spoke", "spoke CIDRs", "hub", "hub CIDRs", "MTU")
    )
    for p in data["peerings"]:
        peerings.add(
            p["requester"] + (" (cross-account)" if p["cross_account"] else ""),
            "\n".join(p["requester_cidrs"]),
            p["accepter"],
            "\n".join(p["accepter_cidrs"]),
            p["mtu"],
        )
    readers = Table(
        "Weak references: when a stack's outputs change, refresh the stacks that read them, in this order",
        ("stack", "what is read (its resource)", "by"),
    )
    for s in data["stacks"]:
        for n, reader in enumerate(s["read_by"] or []):
            readers.add(s["name"] if n == 0 else "", "\n".join(reader["carries"]), reader["stack"])
    timing = data["deploy_time"]
    kinds = Table(
        f"First deploy: {_hours(timing['expected_minutes'])} expected, at most {_hours(timing['bound_minutes'])} "
        f"before a waiter fails it, with --concurrency {timing['concurrency']}",
        ("stack kind", "expected", "at most", "source"),
    )
    for kind, d in timing["stack_kinds"].items():
        kinds.add(kind, f"{d['expected_minutes']:g} min", f"{d['bound_minutes']:g} min", d["source"])
    rate = data["run_rate"]
    cost = Table(
        f"Run-rate while deployed: {_usd_hour(rate)}",
        ("region", "what", "count", "each", "per hour", "price source"),
    )
    for line in rate["lines"]:
        priced = line["usd_each"] is not None
        cost.add(
            line["region"],
            line["what"],
            f"{line['count']} x {line['item']}",
            f"${line['usd_each']:,.3f}" if priced else "no price",
            f"${line['usd_per_hour']:,.2f}" if priced else "no price",
            line["source"] or "not in hubspoke/prices.py: add a dated, cited row",
        )
    # Without an assembly who reads what is unknown: the note printed after the tables says so, not an empty table.
    known = [readers] if data["read_by_unknown"] is None else []
    tables = [stacks, *known, peerings] if data["peerings"] else [stacks, *known]
    return [*tables, kinds, cost]


def _nodes(nodes: list[dict[str, Any]]) -> str:
    if not nodes:
        return "none (compute.enabled is false everywhere)"
    types = sorted({n["type"] for n in nodes})
    where = ", ".join(f"{n['count']} x {n['type']} in {n['region']} ({n['role']})" for n in nodes)
    if len(types) == 1:
        return f"{sum(n['count'] for n in nodes)} x {types[0]}: {where}"
    return where


def _hours(minutes: float) -> str:
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def _usd_hour(rate: dict[str, Any]) -> str:
    figure = f"${rate['usd_per_hour']:,.2f}/hour"
    return figure if rate["complete"] else f"at least {figure} (some lines have no price)"


def _notes(data: dict[str, Any]) -> list[str]:
    commands = data["commands"]
    note = opt_in_note(data["opt_in_regions"])
    return [
        *([f"Before anything else: {note}", ""] if note else []),
        "Bootstrap each account and Region once:",
        *(f"  {c}" for c in commands["bootstrap"]),
        "",
        "Review what changes (IAM and security groups included), then deploy everything; the CDK CLI follows",
        "the dependencies. `cdk deploy --all` selects nothing here: it takes only stacks outside a Stage.",
        f"  {commands['review']}",
        f"  {commands['deploy_all']}",
        "--require-approval never: without it the CLI stops for every stack that changes IAM or security",
        "groups, and fails without a terminal (CI) or with --concurrency above 1.",
        f"Critical path ({_hours(data['deploy_time']['expected_minutes'])} expected): "
        + " -> ".join(data["deploy_time"]["critical_path"]),
        f"HyperPod nodes: {_nodes(data['accelerated_nodes'])}.",
        f"Run-rate: {_usd_hour(data['run_rate'])}; not counted: {data['run_rate']['not_counted']}.",
        "",
        "Or one stack at a time, in this order:",
        *(f"  {c}" for c in commands["deploy_in_order"]),
        "",
        "Refresh a reader after its producer's outputs changed (a new token forces an update; see the table):",
        f"  {commands['refresh']}",
        *([f"Who reads what is unknown: {data['read_by_unknown']}."] if data["read_by_unknown"] else []),
    ]
