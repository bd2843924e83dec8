"""`hubspoke render KIND --config PATH --region R`: print Kubernetes manifests for one Region, for kubectl apply.

Each KIND is a Renderer registered in RENDERERS as "module:attribute", imported only when used. To add a
kind (e.g. prewarm, bench), write a module with a Renderer and add one line to RENDERERS.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from hubspoke.config import HubSpokeConfig, RegionConfig, format_problem, load
from hubspoke.config.sections import Problem
from hubspoke.images import record_path
from hubspoke.k8s.run import NoTrainingImage

EXIT_BAD_INPUT = 2


class RenderError(Exception):
    """Input the renderer cannot use; carries the config field at fault and how to fix it."""

    def __init__(self, field: str, message: str):
        self.problem = Problem(field, message)
        super().__init__(f"{field}: {message}")


class _PlainDumper(yaml.SafeDumper):
    """Writes repeated sub-trees out in full: anchors and aliases confuse people reading a manifest."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass(frozen=True)
class Renderer:
    """One `render` sub-kind: its help, its own options, and the function that returns the manifests."""

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    # (args, config, region, region_field) -> manifests; region_field is e.g. "spokes[0]".
    render: Callable[[argparse.Namespace, HubSpokeConfig, RegionConfig, str], Sequence[dict[str, Any]]]
    needs_compute: bool = True


RENDERERS: dict[str, str] = {
    "job": "hubspoke.cli.render:JOB",
    "prewarm": "hubspoke.cli.render_ops:PREWARM",
    "bench": "hubspoke.cli.render_ops:BENCH",
    "results": "hubspoke.cli.render_ops:RESULTS",
    "export": "hubspoke.cli.render_export:EXPORT",
}


def region_field(config: HubSpokeConfig, code: str) -> str:
    """The dotted config path of a Region, as error messages name it."""
    if config.hub.region == code:
        return "hub"
    return next(f"spokes[{i}]" for i, s in enumerate(config.spokes) if s.region == code)


def _load_renderer(kind: str) -> Renderer:
    module_name, _, attribute = RENDERERS[kind].partition(":")
    renderer: Renderer = getattr(importlib.import_module(module_name), attribute)
    return renderer


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "render",
        help=summary,
        description="Print Kubernetes manifests for one Region of an environment, as YAML for kubectl apply.",
        epilog="Example: hubspoke render job --config config/dev.yaml --region us-west-2 | kubectl apply -f -",
    )
    kinds = parser.add_subparsers(dest="render_kind", required=True, metavar="KIND")
    for kind in RENDERERS:
        renderer = _load_renderer(kind)
        kind_parser = kinds.add_parser(kind, help=renderer.help, description=renderer.help)
        kind_parser.add_argument("--config", required=True, type=Path, metavar="PATH")
        kind_parser.add_argument("--region", required=True, metavar="REGION")
        renderer.add_arguments(kind_parser)
        kind_parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    path: Path = args.config
    config = load(path).config  # ConfigError -> exit 2 in main, every problem listed
    codes = [r.region for r in config.regions()]
    if args.region not in codes:
        problem = Problem(
            "--region",
            f"{args.region} is not a Region of environment {config.environment}; use one of {', '.join(codes)}",
        )
        print(format_problem(path, problem), file=sys.stderr)
        return EXIT_BAD_INPUT
    region = config.region_config(args.region)
    field = region_field(config, region.region)
    renderer = _load_renderer(args.render_kind)
    if renderer.needs_compute and not region.compute.enabled:
        problem = Problem(
            f"{field}.compute.enabled",
            f"compute is off in {region.region}, so there is no cluster to run this on: "
            "set it to true or render for a Region with compute",
        )
        print(format_problem(path, problem), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        if hasattr(args, "image"):
            args.image = _recorded_image(args.image, path, config, region)
        manifests = renderer.render(args, config, region, field)
    except RenderError as exc:
        print(format_problem(path, exc.problem), file=sys.stderr)
        return EXIT_BAD_INPUT
    except NoTrainingImage:
        problem = Problem(
            f"{field}.compute.training_image",
            f"no training image for {region.region}: run `hubspoke image build --config {path} --base "
            "<image>@sha256:<digest>` (it pushes to the Region's ECR repository and records the digest in "
            f"{record_path(path)}), or set this field to an image pinned by digest, or pass --image",
        )
        print(format_problem(path, problem), file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.stdout.write(
        f"# hubspoke render {args.render_kind}: {config.environment} {region.region} from {path}\n"
    )
    sys.stdout.write(yaml.dump_all(manifests, Dumper=_PlainDumper, sort_keys=False, explicit_start=True))
    return 0


def _recorded_image(
    given: str | None, path: Path, config: HubSpokeConfig, region: RegionConfig
) -> str | None:
    """--image, else compute.training_image, else the digest `hubspoke image build` recorded beside the config."""
    from hubspoke.images import BadRecord, read_record

    if given or region.compute.training_image:
        return given or str(region.compute.training_image)
    record_file = record_path(path)
    try:
        record = read_record(record_file)
    except BadRecord as exc:
        raise RenderError("--image", str(exc)) from None
    if record is not None and record.environment != config.environment:
        raise RenderError(
            "--image",
            f"{record_file} records images of environment {record.environment}, not {config.environment}: "
            f"run `hubspoke image build --config {path} --base <image>@sha256:<digest>`",
        )
    # None: the renderer's own checks speak first, then image_for refuses (NoTrainingImage, caught in run).
    return None if record is None else record.images.get(region.region)


def _job_arguments(parser: argparse.ArgumentParser) -> None:
    from hubspoke.k8s.job import JOB_KINDS

    parser.add_argument(
        "--kind",
        choices=JOB_KINDS,
        default="pytorchjob",
        help="pytorchjob: Kubeflow training operator; hyperpod: HyperPod training operator (default pytorchjob)",
    )
    parser.add_argument(
        "--image",
        help="training image (default: compute.training_image, else the digest `hubspoke image build` recorded)",
    )
    parser.add_argument(
        "--job-name",
        help="the job's name and its checkpoint directory: a new name starts a new run, the same name "
        "resumes it (default hubspoke-reference)",
    )
    parser.add_argument(
        "--max-steps", type=int, help="the step the run stops at, counted from its first start (default 999)"
    )
    parser.add_argument(
        "--container-restart-limit",
        type=int,
        metavar="N",
        help="PyTorchJob only: fail the job after its running pods' containers restarted N times in all "
        "(runPolicy.backoffLimit; default nodes x 10 restarts per node replacement x (job retries + 1): "
        "a crash loop frees the GPUs, a node replacement does not fail the job)",
    )
    parser.add_argument(
        "--wait-for-cached-fraction",
        type=_fraction,
        metavar="F",
        help="spokes only: an init container waits before training starts until prewarm reports this fraction "
        "(0..1] of the dataset warm, for at most 6 hours from the job's first attempt (GPUs idle meanwhile; "
        "default: start at once)",
    )
    parser.add_argument(
        "--at-cache-deadline",
        choices=("start", "fail"),
        help="with --wait-for-cached-fraction, when the 6 hours pass: start training on the cold cache after a "
        "warning (default), or fail (train.py refuses to start)",
    )
    parser.add_argument(
        "--max-cache-status-age",
        type=float,
        metavar="SECONDS",
        help="with --wait-for-cached-fraction, a prewarm status older than this does not count (default 3600: "
        "re-running prewarm on a warm version is quick, an older status may predate an eviction)",
    )

    parser.add_argument(
        "--dataset-version",
        metavar="VERSION",
        help="read this sealed version of dataset.name instead of dataset.version (default: the config's pin)",
    )
    parser.add_argument(
        "--allow-dataset-change",
        action="store_true",
        help="let the job resume checkpoints trained on another dataset version (train.py refuses otherwise)",
    )


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; give a fraction such as 1.0") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not in (0, 1]; 1.0 waits for the whole dataset")
    return value


def _job(
    args: argparse.Namespace, config: HubSpokeConfig, region: RegionConfig, field: str
) -> Sequence[dict[str, Any]]:
    from hubspoke.dataset_manifest import ManifestError, check_segment
    from hubspoke.k8s.accelerators import UnknownAccelerator
    from hubspoke.k8s.job import training_job
    from hubspoke.k8s.run import DatasetNotPinned, TrainingSettings, job_name_problem

    if args.dataset_version is not None:
        try:
            check_segment("dataset version", args.dataset_version)
        except ManifestError as exc:
            raise RenderError("--dataset-version", str(exc)) from None

    if args.wait_for_cached_fraction is not None and (
        region.region == config.hub.region or not region.storage.enabled
    ):
        raise RenderError(
            f"{field}.region",
            "--wait-for-cached-fraction waits for a spoke's cache, and this Region has none: leave it out",
        )
    settings = TrainingSettings(wait_for_cached_fraction=args.wait_for_cached_fraction)
    if (
        args.at_cache_deadline or args.max_cache_status_age is not None
    ) and args.wait_for_cached_fraction is None:
        raise RenderError(
            "--at-cache-deadline",
            "--at-cache-deadline and --max-cache-status-age need --wait-for-cached-fraction",
        )
    if args.max_cache_status_age is not None:
        if args.max_cache_status_age <= 0:
            raise RenderError("--max-cache-status-age", "give a positive number of seconds, for example 3600")
        settings = replace(settings, cache_status_max_age_s=args.max_cache_status_age)
    if args.at_cache_deadline:
        settings = replace(settings, wait_at_deadline=args.at_cache_deadline)
    if args.job_name is not None:
        problem = job_name_problem(args.job_name)
        if problem:
            raise RenderError("--job-name", problem)
        settings = replace(settings, job_name=args.job_name)
    if args.container_restart_limit is not None:
        if args.container_restart_limit < 1:
            raise RenderError(
                "--container-restart-limit", "give 1 or more restarts, or leave it out for the default"
            )
        settings = replace(settings, container_restart_limit=args.container_restart_limit)
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise RenderError(
                "--max-steps", f"{args.max_steps} trains nothing: give a step count of 1 or more"
            )
        settings = replace(settings, max_steps=args.max_steps)
    try:
        return [
            training_job(
                config,
                region,
                kind=args.kind,
                image=args.image,
                settings=settings,
                dataset_version=args.dataset_version,
                allow_dataset_change=args.allow_dataset_change,
            )
        ]
    except UnknownAccelerator as exc:
        raise RenderError(f"{field}.compute.instance_groups[0].instance_type", str(exc)) from None
    except DatasetNotPinned as exc:
        key, _, message = str(exc).partition(": ")
        raise RenderError(key, message) from None


JOB = Renderer(
    help="the reference training job (LLaMA 3 ~1B, FSDP) for the Region's HyperPod cluster",
    add_arguments=_job_arguments,
    render=_job,
)
