"""`hubspoke render prewarm`, `bench` and `results`: the operations manifests, registered in render.RENDERERS."""

from __future__ import annotations

import argparse
import ipaddress
import re
from collections.abc import Sequence
from typing import Any

from hubspoke.cli.render import Renderer, RenderError
from hubspoke.config import HubSpokeConfig, RegionConfig

_RUN_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


def _image_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--image",
        help="image with workload/ (default: compute.training_image, else the digest `hubspoke image build` "
        "recorded)",
    )


def _prewarm_arguments(parser: argparse.ArgumentParser) -> None:
    from hubspoke.k8s.prewarm import DEFAULT_PARALLEL

    parser.add_argument(
        "--rest-address",
        required=True,
        help="a floating IP of the Region's CNQ: its Storage stack's RestAddress output "
        "(docs/runbooks/cache-warm-up.md)",
    )
    parser.add_argument(
        "--dataset-version",
        metavar="VERSION",
        help="warm this sealed version of dataset.name instead of dataset.version (default: the config's pin; "
        "give the version the job reads)",
    )
    parser.add_argument(
        "--parallel",
        type=int,
        default=DEFAULT_PARALLEL,
        help=f"files warmed at once (default {DEFAULT_PARALLEL})",
    )
    _image_argument(parser)
    parser.add_argument(
        "--max-bytes-per-second",
        type=float,
        help="cap on what prewarm fetches from the hub, bytes per second on average (default: no cap)",
    )
    parser.add_argument(
        "--rewarm-on-missing",
        action="store_true",
        help="when prewarm's closing sample finds bytes the spoke no longer holds, warm the version again "
        "(default: report its estimate only; the rule behind the sample is ASSUMED, docs/operations.md)",
    )


def _prewarm(
    args: argparse.Namespace, config: HubSpokeConfig, region: RegionConfig, field: str
) -> Sequence[dict[str, Any]]:
    from hubspoke.dataset_manifest import ManifestError, check_segment
    from hubspoke.k8s.prewarm import prewarm_job
    from hubspoke.k8s.run import DatasetNotPinned

    if args.dataset_version is not None:
        try:
            check_segment("dataset version", args.dataset_version)
        except ManifestError as exc:
            raise RenderError("--dataset-version", str(exc)) from None
    if region.region == config.hub.region:
        spokes = ", ".join(s.region for s in config.spokes) or "none configured"
        raise RenderError(
            "--region",
            f"{region.region} is the hub: it holds the dataset, there is no cache to warm; use a spoke ({spokes})",
        )
    if not region.storage.enabled:
        raise RenderError(
            f"{field}.storage.enabled", "the spoke has no CNQ, so no cache to warm: set it to true"
        )
    try:
        address = ipaddress.ip_address(args.rest_address)
    except ValueError:
        raise RenderError(
            "--rest-address", f"'{args.rest_address}' is not an IP address; pass a CNQ floating IP"
        ) from None
    if not any(address in ipaddress.ip_network(c) for c in region.all_cidrs):
        raise RenderError(
            "--rest-address",
            f"{address} is outside {region.region}'s VPC ({', '.join(region.all_cidrs)}): warm through the "
            "spoke's own CNQ, not the hub's",
        )
    if not 1 <= args.parallel <= 256:
        raise RenderError("--parallel", "must be between 1 and 256")
    cap = args.max_bytes_per_second
    if cap is not None and not cap > 0:
        raise RenderError("--max-bytes-per-second", f"{cap:g} is not positive; leave it out for no cap")
    try:
        return [
            prewarm_job(
                config,
                region,
                rest_address=str(address),
                dataset_version=args.dataset_version,
                parallel=args.parallel,
                image=args.image,
                max_bytes_per_second=cap,
                rewarm_on_missing=args.rewarm_on_missing,
            )
        ]
    except DatasetNotPinned as exc:
        key, _, message = str(exc).partition(": ")
        raise RenderError(key, message) from None


def _bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run", dest="run_name", default="baseline", help="run name: names the Job and its results file"
    )
    parser.add_argument("--phases", default="cold,warm", help="one full read per phase (default cold,warm)")
    parser.add_argument("--max-seconds", type=int, help="stop each phase after this long")
    _image_argument(parser)


def _bench(
    args: argparse.Namespace, config: HubSpokeConfig, region: RegionConfig, field: str
) -> Sequence[dict[str, Any]]:
    from hubspoke.k8s.bench import bench_job
    from hubspoke.k8s.run import DatasetNotPinned

    if not _RUN_NAME.match(args.run_name):
        raise RenderError(
            "--run", f"'{args.run_name}' must be 1-40 lowercase letters, digits or '-', e.g. cold-2026-11-30"
        )
    if not re.fullmatch(r"[a-z0-9-]+(,[a-z0-9-]+)*", args.phases):
        raise RenderError("--phases", "comma-separated lowercase names, e.g. cold,warm")
    if args.max_seconds is not None and args.max_seconds < 1:
        raise RenderError("--max-seconds", "must be 1 or more")
    try:
        return [
            bench_job(
                config,
                region,
                run=args.run_name,
                phases=args.phases,
                max_seconds=args.max_seconds,
                image=args.image,
            )
        ]
    except DatasetNotPinned as exc:
        key, _, message = str(exc).partition(": ")
        raise RenderError(key, message) from None


PREWARM = Renderer(
    help="the Job that warms a spoke's portal cache over the dataset tree (CPU only, resumable)",
    add_arguments=_prewarm_arguments,
    render=_prewarm,
)
BENCH = Renderer(
    help="the cold/warm read benchmark Job (replays one training node's dataset reads, records every read)",
    add_arguments=_bench_arguments,
    render=_bench,
)


def _results_arguments(parser: argparse.ArgumentParser) -> None:
    from hubspoke.k8s.results import DEFAULT_HOURS

    parser.add_argument(
        "--hours",
        type=int,
        default=DEFAULT_HOURS,
        help=f"how long the pod stays up before Kubernetes ends it (default {DEFAULT_HOURS})",
    )
    _image_argument(parser)


def _results(
    args: argparse.Namespace, config: HubSpokeConfig, region: RegionConfig, field: str
) -> Sequence[dict[str, Any]]:
    from hubspoke.k8s.results import results_pod

    if not 1 <= args.hours <= 24:
        raise RenderError(
            "--hours", f"{args.hours} is not between 1 and 24; the pod is for copying files off"
        )
    return [results_pod(config, region, hours=args.hours, image=args.image)]


RESULTS = Renderer(
    help="a pod that mounts the checkpoint volume read-only for an hour, to copy bench and prewarm results off",
    add_arguments=_results_arguments,
    render=_results,
)
