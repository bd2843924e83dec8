"""`hubspoke connect --config PATH --region CODE`: the commands that put kubectl on a Region's private EKS endpoint.

The endpoint is private (EKS User Guide, "Cluster API server endpoint", "Accessing a private only API server"), so
kubectl goes through the Region's SSM access host (hubspoke/constructs/hyperpod/access.py): Session Manager
forwards a local port to the endpoint on 443 with the AWS-StartPortForwardingSessionToRemoteHost document, whose
`host` the agent on the instance resolves, inside the VPC (Systems Manager User Guide, "Start a session", port
forwarding to a remote host). kubectl then talks to https://localhost:<port> but must still check the server
certificate against the endpoint's name, which the kubeconfig cluster field `tls-server-name` does (Kubernetes
reference, `kubectl config set-cluster --tls-server-name`). `aws eks update-kubeconfig` names the cluster entry
by the cluster's ARN and, with `--role-arn`, signs its tokens as that role; `--alias` names the context it makes
current instead of the ARN (AWS CLI reference, update-kubeconfig; awscli customizations/eks/update_kubeconfig.py).
Reads the compute stack's outputs (hubspoke.outputs: EksClusterName, EksEndpoint, AccessHostInstanceId) and the
caller's identity; prints, runs nothing.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError, ProfileNotFound

from hubspoke.cli.access import caller
from hubspoke.cli.checks import CREDENTIALS_FIX, Clients, session_clients
from hubspoke.cli.output import fail, print_json
from hubspoke.cli.plan import cdk_command
from hubspoke.config import HubSpokeConfig, load
from hubspoke.outputs import ACCESS_HOST_INSTANCE, EKS_CLUSTER_NAME, EKS_ENDPOINT
from hubspoke.topology import StackPlan, plan_stacks, stage_id

# The SSM document that forwards a local port to a host and port reachable from the instance (Systems Manager
# User Guide, "Start a session": port forwarding to a remote host; an AWS-owned document).
FORWARD_DOCUMENT = "AWS-StartPortForwardingSessionToRemoteHost"
API_PORT = 443
# A local port above 1023 needs no privileges; any free one works (--local-port). Each Region gets its own default,
# 8443 plus its place in the config (hub first), so the hub's and a spoke's tunnels can run at once.
DEFAULT_LOCAL_PORT = 8443
EXIT_NOT_READY = 1


class NotReady(Exception):
    """What connect needs is not deployed (or cannot be read): `fix` says what to do."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fix = fix


@dataclass(frozen=True)
class Steps:
    """What a person runs, in order, to use kubectl on one Region's cluster."""

    region: str
    cluster: str
    cluster_arn: str
    endpoint: str
    instance_id: str
    local_port: int
    caller: str
    role_arn: str | None
    note: str
    tunnel: str
    kubeconfig: str
    through_tunnel: str
    check: str
    context: str
    switch: str


def compute_plan(config: HubSpokeConfig, region: str) -> StackPlan | None:
    return next((p for p in plan_stacks(config) if p.kind == "compute" and p.region == region), None)


def default_local_port(config: HubSpokeConfig, region: str) -> int:
    """The Region's own default tunnel port: 8443 for the hub, then one more per spoke in config order."""
    return DEFAULT_LOCAL_PORT + [r.region for r in config.regions()].index(region)


def read_outputs(clients: Clients, plan: StackPlan) -> dict[str, str]:
    """The compute stack's outputs (CloudFormation DescribeStacks: Stacks[].Outputs[].OutputKey/OutputValue)."""
    cfn = clients("cloudformation", plan.region)
    try:
        [stack] = cfn.describe_stacks(StackName=plan.name)["Stacks"]
    except ClientError as exc:
        # CloudFormation answers a missing stack with ValidationError "Stack with id X does not exist".
        if "does not exist" in str(exc):
            raise NotReady(f"stack {plan.name} does not exist in {plan.region}", "deploy it") from None
        raise
    return {str(o["OutputKey"]): str(o.get("OutputValue", "")) for o in stack.get("Outputs", [])}


def steps(
    config: HubSpokeConfig,
    clients: Clients,
    *,
    config_path: str,
    region: str,
    local_port: int | None = None,
    role_arn: str | None = None,
    profile: str | None = None,
) -> Steps:
    """The tunnel, kubeconfig and check commands for `region`, each aws one with `profile`; NotReady when the stack
    lacks what they need."""
    plan = compute_plan(config, region)
    assert plan is not None, "the caller checks the Region has compute"
    if local_port is None:
        local_port = default_local_port(config, region)
    deploy = cdk_command("deploy", config_path, "--exclusively", f"{stage_id(config)}/{plan.id}")
    try:
        outputs = read_outputs(clients, plan)
    except NotReady as exc:
        raise NotReady(exc.reason, f"deploy it: {deploy}") from None
    missing = [o.key() for o in (EKS_CLUSTER_NAME, EKS_ENDPOINT) if o.key() not in outputs]
    if missing:
        raise NotReady(
            f"stack {plan.name} has no output {', '.join(missing)} (deployed before issue 23)", deploy
        )
    if ACCESS_HOST_INSTANCE.key() not in outputs:
        why = (
            "access.access_host is false"
            if config.access.access_host is False
            else "access.administrators is empty"
            if not config.access.host_enabled
            else "the stack was deployed without it"
        )
        raise NotReady(
            f"stack {plan.name} has no access host ({why})",
            f"list your IAM role under access.administrators in {config_path} (the host follows it), then {deploy}",
        )
    name = outputs[EKS_CLUSTER_NAME.key()]
    endpoint = outputs[EKS_ENDPOINT.key()]
    # The name as EKS wrote it (urlsplit's hostname would lowercase it; DNS and TLS do not care, people reading do).
    host = urlsplit(endpoint).netloc.rsplit("@", 1)[-1].split(":")[0] or endpoint
    instance = outputs[ACCESS_HOST_INSTANCE.key()]
    me = caller(str(clients("sts", region).get_caller_identity()["Arn"]))
    partition = me.arn.split(":")[1] if me.arn.startswith("arn:") else "aws"
    cluster_arn = f"arn:{partition}:eks:{region}:{plan.account}:cluster/{name}"
    role, note = _role(config, me, role_arn)
    parameters = json.dumps(
        {"host": [host], "portNumber": [str(API_PORT)], "localPortNumber": [str(local_port)]}
    )
    session = ["aws", "ssm", "start-session", "--region", region, "--target", instance]
    # The profile the caller chose goes on every aws command; update-kubeconfig writes it into the user entry's exec
    # env as AWS_PROFILE, so kubectl's tokens are signed as it too (awscli customizations/eks/update_kubeconfig.py,
    # EKSClient.get_user_entry).
    chosen = ["--profile", profile] if profile else []
    tunnel = shlex.join([*session, "--document-name", FORWARD_DOCUMENT, "--parameters", parameters, *chosen])
    # The context is named after the cluster, readable in `kubectl config get-contexts`; the cluster entry keeps the ARN.
    update = ["aws", "eks", "update-kubeconfig", "--region", region, "--name", name, "--alias", name]
    kubeconfig = shlex.join([*update, *(["--role-arn", role] if role else []), *chosen])
    local = f"https://localhost:{local_port}"
    through = shlex.join(
        ["kubectl", "config", "set-cluster", cluster_arn, "--server", local, "--tls-server-name", host]
    )
    check = shlex.join(["kubectl", "get", "nodes"])
    switch = shlex.join(["kubectl", "config", "use-context", name])
    return Steps(
        region,
        name,
        cluster_arn,
        endpoint,
        instance,
        local_port,
        me.arn,
        role,
        note,
        tunnel,
        kubeconfig,
        through,
        check,
        name,
        switch,
    )


def _role(config: HubSpokeConfig, me: Any, role_arn: str | None) -> tuple[str | None, str]:
    """The role kubectl's tokens are signed as, and what the person should know about it."""
    admins = config.access.administrators
    if role_arn:
        return (
            role_arn,
            f"tokens are signed as {role_arn} (--role-arn); your credentials must be able to assume it",
        )
    mine = me.entry(admins)
    if mine:
        return None, f"you ({me.arn}) are {mine}, listed under access.administrators"
    roles = [a for a in admins if ":role/" in a]
    if len(roles) == 1:
        return roles[0], (
            f"you ({me.arn}) are not listed under access.administrators; the kubeconfig assumes the listed role "
            f"{roles[0]}, which your credentials must be allowed to assume"
        )
    listed = ", ".join(admins) or "nobody"
    return None, (
        f"you ({me.arn}) are not listed under access.administrators ({listed}): pass --role-arn with one you can "
        "assume, or add your role there and deploy the compute stack"
    )


def render(s: Steps, *, config_path: str, profile: str | None = None) -> str:
    lines = [
        f"Connect kubectl to EKS cluster {s.cluster} in {s.region} through access host {s.instance_id}.",
        f"Who: {s.note}.",
        "",
        "1. Open the tunnel in its own terminal and leave it running (needs the AWS CLI's Session Manager plugin):",
        f"   {s.tunnel}",
        "2. Write the kubeconfig entry (rerun step 3 after any later update-kubeconfig):",
        f"   {s.kubeconfig}",
        "3. Send it through the tunnel, still checking the certificate against the endpoint's own name:",
        f"   {s.through_tunnel}",
        "4. Check, while the tunnel runs:",
        f"   {s.check}",
        f"   hubspoke verify --config {shlex.quote(config_path)} --region {s.region}"
        + (f" --profile {shlex.quote(profile)}" if profile else ""),
        "5. Back to this cluster after connecting to another Region (step 2 made it kubectl's current context):",
        f"   {s.switch}",
    ]
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "connect",
        help=summary,
        description="Print the commands that connect kubectl to one Region's private EKS endpoint: a Session "
        "Manager port forward through the Region's SSM access host, `aws eks update-kubeconfig` with the role "
        "listed under access.administrators, and the kubeconfig change that sends kubectl through the tunnel. "
        "Reads the compute stack's outputs and the caller's identity; runs nothing. Exit 0 when printed, 1 when "
        "the stack lacks what the steps need (with the fix), 2 for bad input.",
        epilog="Example:\n  AWS_PROFILE=ml-dev hubspoke connect --config config/dev.yaml --region us-west-2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument("--region", required=True, metavar="REGION", help="a configured Region with compute")
    parser.add_argument(
        "--profile", metavar="NAME", help="AWS profile (default: AWS_PROFILE or the default chain)"
    )
    parser.add_argument(
        "--local-port",
        type=int,
        metavar="PORT",
        help=f"local end of the tunnel (default {DEFAULT_LOCAL_PORT} for the hub, one more per spoke in config "
        "order; 1024-65535)",
    )
    parser.add_argument(
        "--role-arn",
        metavar="ARN",
        help="sign kubectl's tokens as this role (default: from access.administrators)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, *, clients: Clients | None = None) -> int:
    config = load(args.config).config
    regions = sorted(r.region for r in config.regions())
    if args.region not in regions:
        return fail(f"--region: {args.region} not in {args.config}; choose from {', '.join(regions)}")
    if compute_plan(config, args.region) is None:
        with_compute = sorted(p.region for p in plan_stacks(config) if p.kind == "compute")
        return fail(
            f"--region: {args.region} has no compute in {args.config} (compute.enabled: false); "
            f"Regions with a cluster: {', '.join(with_compute) or 'none'}"
        )
    if args.local_port is not None and not 1024 <= args.local_port <= 65535:
        return fail(
            f"--local-port: {args.local_port} is outside 1024-65535; leave it out for "
            f"{default_local_port(config, args.region)}"
        )
    if clients is None:
        try:
            clients = session_clients(args.profile)
        except ProfileNotFound as exc:
            return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    config_path = str(args.config)
    try:
        found = steps(
            config, clients, config_path=config_path, region=args.region, local_port=args.local_port,
            role_arn=args.role_arn, profile=args.profile,
        )  # fmt: skip
    except NotReady as exc:
        print(f"hubspoke connect: {exc.reason}\n  fix: {exc.fix}", file=sys.stderr)
        return EXIT_NOT_READY
    except (ClientError, BotoCoreError) as exc:
        print(
            f"hubspoke connect: AWS refused or could not be reached: {exc}\n  fix: {CREDENTIALS_FIX}",
            file=sys.stderr,
        )
        return EXIT_NOT_READY
    if args.json:
        print_json(asdict(found))
    else:
        print(render(found, config_path=config_path, profile=args.profile))
    return 0
