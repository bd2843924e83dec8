"""`hubspoke render export`: the Job that copies a run's final checkpoint and results to the Region's export bucket.

The bucket's name is the Compute stack's ModelExportBucket output (hubspoke/outputs.py), read with CloudFormation
DescribeStacks (Stacks[].Outputs[].OutputKey/OutputValue, botocore cloudformation service-2.json) unless --bucket
gives it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any

from hubspoke.cli.render import Renderer, RenderError
from hubspoke.config import HubSpokeConfig, RegionConfig

# Amazon S3 User Guide, "General purpose bucket naming rules": 3 to 63 characters, lowercase letters, digits,
# dots and hyphens, beginning and ending with a letter or digit.
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def _arguments(parser: argparse.ArgumentParser) -> None:
    from hubspoke.k8s.export import DEFAULT_RUN

    parser.add_argument(
        "--run",
        dest="run_name",
        default=DEFAULT_RUN,
        help=f"the training job's name, which is its checkpoint directory (default {DEFAULT_RUN})",
    )
    parser.add_argument(
        "--step", type=int, help="export this checkpoint step (default: the run's newest complete checkpoint)"
    )
    parser.add_argument(
        "--bucket",
        help="the export bucket (default: the Region's Compute stack output ModelExportBucket, read with your AWS "
        "credentials)",
    )
    parser.add_argument(
        "--image",
        help="image with workload/ (default: compute.training_image, else the digest `hubspoke image build` "
        "recorded)",
    )


def _render(
    args: argparse.Namespace, config: HubSpokeConfig, region: RegionConfig, field: str
) -> Sequence[dict[str, Any]]:
    from hubspoke.k8s.export import export_job
    from hubspoke.k8s.run import job_name_problem

    if not region.storage.enabled:
        raise RenderError(
            f"{field}.storage.enabled",
            "the Region has no CNQ, so no checkpoint volume to export from: render for the Region that trained",
        )
    problem = job_name_problem(args.run_name)
    if problem:
        raise RenderError("--run", problem)
    if args.step is not None and args.step < 0:
        raise RenderError(
            "--step", f"{args.step} is not a step; leave it out for the newest complete checkpoint"
        )
    bucket = args.bucket if args.bucket is not None else _stack_bucket(config, region)
    if not _BUCKET_NAME.match(bucket):
        raise RenderError(
            "--bucket", f"'{bucket}' is not an S3 bucket name: give the ModelExportBucket output"
        )
    return export_job(config, region, bucket=bucket, run=args.run_name, step=args.step, image=args.image)


def _stack_bucket(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The ModelExportBucket output of the Region's Compute stack; RenderError saying what to do without it."""
    from botocore.exceptions import BotoCoreError, ClientError

    from hubspoke.cli.checks import session_clients
    from hubspoke.cli.connect import NotReady, compute_plan, read_outputs
    from hubspoke.outputs import MODEL_EXPORT_BUCKET

    plan = compute_plan(config, region.region)
    assert plan is not None, "render checks the Region has compute"
    try:
        outputs = read_outputs(session_clients(), plan)
    except NotReady as exc:
        raise RenderError("--bucket", f"{exc.reason}: deploy it, or pass --bucket") from None
    except (BotoCoreError, ClientError) as exc:
        raise RenderError(
            "--bucket", f"cannot read stack {plan.name} ({exc}): set AWS credentials, or pass --bucket"
        ) from None
    bucket = outputs.get(MODEL_EXPORT_BUCKET.key())
    if not bucket:
        raise RenderError(
            "--bucket",
            f"stack {plan.name} has no {MODEL_EXPORT_BUCKET.key()} output: deploy it again (the export bucket is "
            "newer than the stack)",
        )
    return bucket


EXPORT = Renderer(
    help="the Job that copies a run's newest complete checkpoint and the results to the Region's export bucket",
    add_arguments=_arguments,
    render=_render,
)
