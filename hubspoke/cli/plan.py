"""`hubspoke plan --config PATH`: the stacks, peerings and CDK commands an environment produces, without AWS."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from hubspoke.cli.commands import COMMANDS
from hubspoke.cli.output import Table, print_json, print_tables
from hubspoke.config import HubSpokeConfig, RegionConfig, load
from hubspoke.config.layout import subnet_layout
from hubspoke.mtu import peer_mtu
from hubspoke.outputs import consumers, produced
from hubspoke.regions import is_opt_in, opt_in_note
from hubspoke.topology import StackPlan, cross_account, plan_stacks, stage_id

# What a cross-account target trusts the deploying account with (CDK guide, "Bootstrapping", --trust).
_TRUSTED_EXECUTION_POLICY = "arn:aws:iam::aws:policy/AdministratorAccess"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "plan",
        help=COMMANDS["plan"].summary,
        description="Print, in deploy order, every stack the config produces (Region, account, contents), "
        "the peerings with both CIDRs and the MTU, and the CDK bootstrap and deploy commands. No AWS calls.",
        epilog="Example:\n  hubspoke plan --config config/dev.yaml\n  hubspoke plan --config config/dev.yaml --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    loaded = load(args.config)
    data = build_plan(loaded.config, config_path=str(args.config))
    if args.json:
        print_json(data)
    else:
        print_tables(_tables(data), notes=_notes(data))
    return 0


def build_plan(config: HubSpokeConfig, *, config_path: str) -> dict[str, Any]:
    """The plan as plain data: the JSON output, and the source of the tables."""
    stage = stage_id(config)
    stacks = plan_stacks(config)
    readers = consumers(config)
    return {
        "environment": config.environment,
        "config": config_path,
        "stage": stage,
        "hub": config.hub.region,
        "spokes": [s.region for s in config.spokes],
        "opt_in_regions": [r.region for r in config.regions() if is_opt_in(r.region)],
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
                "read_by": [
                    {
                        "stack": consumer,
                        "outputs": list(names),
                        "refresh": refresh_command(config_path, stage, consumer),
                    }
                    for consumer, names in readers.get(plan.id, {}).items()
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
        "commands": {
            "bootstrap": _bootstrap_commands(config, stacks),
            "deploy_all": cdk_command("deploy", config_path, f"{stage}/*"),
            "refresh": refresh_command(config_path, stage, "<reader-stack-id>"),
            "deploy_in_order": [
                cdk_command("deploy", config_path, "--exclusively", f"{stage}/{p.id}") for p in stacks
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


def _bootstrap_commands(config: HubSpokeConfig, stacks: list[StackPlan]) -> list[str]:
    """One `cdk bootstrap` per account and Region pair; other accounts trust the environment's account."""
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
        commands.append(shlex.join(("npx", "cdk", "bootstrap", f"aws://{account}/{region}", *extra)))
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
        ("stack", "its outputs read", "by"),
    )
    for s in data["stacks"]:
        for n, reader in enumerate(s["read_by"]):
            readers.add(s["name"] if n == 0 else "", "\n".join(reader["outputs"]), reader["stack"])
    return [stacks, readers, peerings] if data["peerings"] else [stacks, readers]


def _notes(data: dict[str, Any]) -> list[str]:
    commands = data["commands"]
    note = opt_in_note(data["opt_in_regions"])
    return [
        *([f"Before anything else: {note}", ""] if note else []),
        "Bootstrap each account and Region once:",
        *(f"  {c}" for c in commands["bootstrap"]),
        "",
        "Deploy everything (the CDK CLI follows the dependencies):",
        f"  {commands['deploy_all']}",
        "",
        "Or one stack at a time, in this order:",
        *(f"  {c}" for c in commands["deploy_in_order"]),
        "",
        "Refresh a reader after its producer's outputs changed (a new token forces an update; see the table):",
        f"  {commands['refresh']}",
    ]
