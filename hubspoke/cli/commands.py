"""The subcommands of `hubspoke`: where each lives and what it does, known without importing any of them.

`hubspoke validate` must not pay for boto3, graphviz or matplotlib: main.py imports only the module of the
command being run, and lists the others from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """One subcommand: its module (add_parser(subparsers), run(args) -> exit code) and its one-line summary."""

    module: str
    summary: str


COMMANDS: dict[str, Command] = {
    "validate": Command("hubspoke.cli.validate", "check config files without synthesizing"),
    "render": Command(
        "hubspoke.cli.render", "print Kubernetes manifests for one Region (pipe to kubectl apply -f -)"
    ),
    "image": Command(
        "hubspoke.cli.image", "build the training image and push it to every compute Region by digest"
    ),
    "bench": Command("hubspoke.cli.bench", "analyse cold/warm read benchmarks"),
    "plan": Command(
        "hubspoke.cli.plan",
        "show the stacks, peerings, first-deploy duration, run-rate and deploy commands a config produces",
    ),
    "preflight": Command(
        "hubspoke.cli.preflight", "check the AWS accounts and Regions before deploying (read-only)"
    ),
    "verify": Command(
        "hubspoke.cli.verify",
        "check a deployed environment against its config, with a fix per problem (read-only)",
    ),
    "connect": Command(
        "hubspoke.cli.connect",
        "print the tunnel and kubeconfig commands that reach one Region's private EKS endpoint",
    ),
    "ami": Command(
        "hubspoke.cli.ami",
        "print the current Ubuntu 24.04 image of each Region as the storage.ami_id line to paste",
    ),
    "cost": Command(
        "hubspoke.cli.cost", "compare the cached hub-and-spoke path with full replication, per spoke"
    ),
    "diagram": Command("hubspoke.cli.diagram", "draw the topology as SVG or PNG"),
    "dataset": Command(
        "hubspoke.cli.dataset", "load a dataset version from S3 into the hub (Qumulo Shift-From) and seal it"
    ),
}
