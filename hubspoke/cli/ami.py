"""`hubspoke ami --region REGION...`: the current Canonical Ubuntu 24.04 image per Region, as the line to paste.

Needs no config (a config without storage.ami_id does not validate yet): it reads AWS's public Canonical
parameter (hubspoke.cli.preflight.cnq.UBUNTU_PARAMETER) in each Region with the standard credential chain.
"""

from __future__ import annotations

import argparse

from botocore.exceptions import BotoCoreError, ClientError

from hubspoke.cli.output import Table, fail, print_json, print_tables
from hubspoke.cli.preflight import Clients, session_clients
from hubspoke.cli.preflight.cnq import UBUNTU_PARAMETER
from hubspoke.regions import REGIONS


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "ami",
        help=summary,
        description="Read Canonical's public SSM parameter for Ubuntu 24.04 (amd64, gp3) in each Region and "
        "print the image ID as the storage.ami_id line to paste into the config. Read-only. "
        "Exit 0 when every Region answered, 1 otherwise, 2 for bad input.",
        epilog="Example:\n  hubspoke ami --region us-east-2 --region us-west-2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--region", action="append", required=True, metavar="REGION", help="Region (repeatable)"
    )
    parser.add_argument(
        "--profile", metavar="NAME", help="AWS profile (default: AWS_PROFILE or the default chain)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=run)


def current_images(regions: list[str], clients: Clients) -> dict[str, str]:
    """Region -> current image ID, or the error that stopped the lookup."""
    found = {}
    for region in regions:
        try:
            found[region] = str(
                clients("ssm", region).get_parameter(Name=UBUNTU_PARAMETER)["Parameter"]["Value"]
            )
        except (ClientError, BotoCoreError) as exc:
            found[region] = f"error: {exc}"
    return found


def run(args: argparse.Namespace, *, clients: Clients | None = None) -> int:
    unknown = sorted(set(args.region) - set(REGIONS))
    if unknown:
        return fail(f"--region: unknown Region code(s) {', '.join(unknown)}; use codes such as us-west-2")
    images = current_images(list(dict.fromkeys(args.region)), clients or session_clients(args.profile))
    if args.json:
        print_json({"parameter": UBUNTU_PARAMETER, "images": images})
    else:
        table = Table(
            "Canonical Ubuntu 24.04 LTS (amd64, gp3), current image", ("region", "storage.ami_id line")
        )
        for region, image in images.items():
            table.add(region, image if image.startswith("error") else f"ami_id: {image}")
        print_tables(
            [table], notes=[f"Source: SSM {UBUNTU_PARAMETER}. Paste each line under that Region's storage."]
        )
    return 1 if any(i.startswith("error") for i in images.values()) else 0
