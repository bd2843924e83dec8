"""`hubspoke train --config PATH`: from a deployed environment to an exported model in one command.

In one Region (default: the first spoke with compute and a cache) it builds and pushes the image when none is
recorded (`hubspoke image build`), opens the tunnel to the private cluster (hubspoke/cli/tunnel.py), warms the
spoke's cache for the pinned dataset version (the Job `hubspoke render prewarm` prints), submits the reference job
(`hubspoke render job`'s), follows it to its end and exports its final checkpoint (`hubspoke render export`'s).
With --bench, a cold bench Job before the prewarm and a warm one after it (`hubspoke render bench`'s), each
result copied off after its Job ended and reported (`hubspoke bench report`) before the training job.
Each step is the manual one in docs/runbooks (cache-warm-up.md, checkpoints.md); a rerun continues: a running or
succeeded run is not submitted again, a finished prewarm or export is replaced (each skips what is done).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from hubspoke.cli.output import fail, missing_extra
from hubspoke.cli.train_jobs import Bench, bench_plan
from hubspoke.cli.tunnel import Runner, StepFailed, show, with_profile
from hubspoke.config import HubSpokeConfig, RegionConfig, format_problem, load
from hubspoke.config.sections import Problem

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
# Stand-ins in a dry run for what only the deployed stacks say (read at run time, never guessed).
REST_PLACEHOLDER = "<spoke Storage stack output RestAddress>"
BUCKET_PLACEHOLDER = "<Compute stack output ModelExportBucket>"
IMAGE_PLACEHOLDER = "<the digest hubspoke image build records>"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "train",
        help=summary,
        description="Train the reference job in one Region and export its final checkpoint: build and push the "
        "image if none is recorded (with --base), open the Session Manager tunnel (closed at the end), warm the "
        "spoke's cache for the pinned dataset version, submit the reference PyTorchJob, stream its log until it "
        "ends, export the checkpoint to S3. Prints each command it runs; run it again after a failure to "
        "continue. Needs the AWS CLI, its Session Manager plugin and kubectl. Exit 0 when exported, 1 when a step "
        "failed, 2 for bad input.",
        epilog="Example:\n  hubspoke train --config config/dev.yaml --profile ml-dev "
        "--base 763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training@sha256:<digest>",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument(
        "--region",
        metavar="REGION",
        help="where to train (default: the first spoke with compute and a cache)",
    )
    parser.add_argument(
        "--profile", metavar="NAME", help="AWS profile for every aws and kubectl call (default: the chain)"
    )
    parser.add_argument(
        "--base",
        metavar="IMAGE@sha256:DIGEST",
        help="build the image from this base when none is recorded (default: the config's training_base_image, "
        "as `hubspoke image build`)",
    )
    parser.add_argument(
        "--image",
        help="training image (default: compute.training_image, else the digest `hubspoke image build` recorded)",
    )
    parser.add_argument(
        "--job-name", help="the run's name and checkpoint directory (default hubspoke-reference)"
    )
    parser.add_argument("--max-steps", type=int, help="the step the run stops at (default 999)")
    parser.add_argument(
        "--wait-for-cached-fraction",
        type=float,
        metavar="F",
        help="spokes only: training starts once prewarm reports this fraction (0..1] warm (as `render job`)",
    )
    parser.add_argument("--role-arn", metavar="ARN", help="sign kubectl's tokens as this role (as `connect`)")
    parser.add_argument(
        "--poll-seconds", type=float, default=30.0, help="seconds between status reads (default 30)"
    )
    parser.add_argument(
        "--bench",
        action="store_true",
        help="spokes only: a cold read benchmark Job before the prewarm and a warm one after it, each followed to "
        "its end, its results then copied off the checkpoint volume, and `hubspoke bench report` on both before "
        "training; a rerun keeps a finished one (needs the plots extra)",
    )
    parser.add_argument(
        "--bench-dir",
        type=Path,
        metavar="DIR",
        help="where --bench writes cold.jsonl, warm.jsonl and the plot (default: <config>.bench/<region> beside "
        "the config)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the commands as YAML comments and the manifests as YAML; run nothing, read no AWS account",
    )
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class Plan:
    """What one train run submits, in order; each is a list of manifests (the last one is followed)."""

    prewarm: list[dict[str, Any]]
    training: dict[str, Any]
    export: list[dict[str, Any]]
    bench: Bench | None = None


def _bad(path: Path, field: str, message: str) -> int:
    print(format_problem(path, Problem(field, message)), file=sys.stderr)
    return EXIT_BAD_INPUT


def _region(config: HubSpokeConfig, given: str | None) -> RegionConfig | str:
    """The Region to train in, or why the choice is refused."""
    regions = list(config.regions())
    if given is not None:
        match = [r for r in regions if r.region == given]
        if not match:
            return f"--region: {given} is not a Region of {config.environment}; use one of " + ", ".join(
                r.region for r in regions
            )
        if not match[0].compute.enabled:
            return (
                f"--region: {given} has no compute (compute.enabled: false): train where there is a cluster"
            )
        return match[0]
    for region in [*config.spokes, config.hub]:
        if region.compute.enabled and (region.storage.enabled or region is config.hub):
            return region
    return "compute.enabled: no Region has compute, so there is no cluster to train on"


def _settings(args: argparse.Namespace) -> Any:
    from hubspoke.k8s.run import TrainingSettings, job_name_problem

    settings = TrainingSettings(wait_for_cached_fraction=args.wait_for_cached_fraction)
    if args.job_name is not None:
        problem = job_name_problem(args.job_name)
        if problem:
            raise ValueError(f"--job-name: {problem}")
        settings = replace(settings, job_name=args.job_name)
    if args.max_steps is not None:
        if args.max_steps < 1:
            raise ValueError(f"--max-steps: {args.max_steps} trains nothing: give 1 or more")
        settings = replace(settings, max_steps=args.max_steps)
    return settings


def run(args: argparse.Namespace, *, runner: Runner | None = None, clients: Any = None) -> int:
    from hubspoke.cli.render import RenderError, _recorded_image
    from hubspoke.images import DIGEST_REF
    from hubspoke.k8s.accelerators import ACCELERATORS, UnknownAccelerator, accelerator
    from hubspoke.k8s.cache_wait import has_cache
    from hubspoke.k8s.run import DatasetNotPinned, pinned_dataset

    path: Path = args.config
    config = load(path).config  # ConfigError -> exit 2 in main
    region = _region(config, args.region)
    if isinstance(region, str):
        return fail(region)
    try:
        pinned_dataset(config.dataset)
    except DatasetNotPinned as exc:
        key, _, message = str(exc).partition(": ")
        return _bad(path, key, message)
    group = region.compute.instance_groups[0]
    try:
        accelerator(group.instance_type)
    except UnknownAccelerator:
        return fail(
            f"--region: {region.region}'s nodes are {group.instance_type}; the reference job needs 8 GPUs a node "
            f"({', '.join(sorted(ACCELERATORS))}): train in a Region whose compute runs one (--region)"
        )
    cache = has_cache(config, region)
    if args.wait_for_cached_fraction is not None:
        if not cache:
            return fail(f"--wait-for-cached-fraction: {region.region} has no cache to wait for; leave it out")
        if not 0 < args.wait_for_cached_fraction <= 1:
            return fail(f"--wait-for-cached-fraction: {args.wait_for_cached_fraction} is not in (0, 1]")
    if args.bench and not cache:
        return fail(f"--bench: {region.region} has no cache to measure cold and warm; leave it out")
    if args.bench and (refused := missing_extra(["matplotlib"], extra="plots", command="--bench")):
        return refused
    if args.base is not None and not DIGEST_REF.match(args.base):
        return fail(f"--base: {args.base} is not pinned by digest: pass IMAGE@sha256:<64 hex>")
    if args.poll_seconds <= 0:
        return fail("--poll-seconds: give a positive number of seconds")
    try:
        settings = _settings(args)
        image = _recorded_image(args.image, path, config, region)
    except ValueError as exc:
        return fail(str(exc))
    except RenderError as exc:
        return _bad(path, exc.problem.field, exc.problem.message)
    if args.dry_run:
        return _dry_run(args, config, region, settings, image, cache)
    return _run(args, config, region, settings, image, cache, runner or Runner(), clients)


def _build_argv(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """`hubspoke image build` as shown, and as run (this interpreter, so the same install)."""
    # Without --base, image build pins the config's training_base_image by digest itself.
    base = ["--base", args.base] if args.base else []
    tail = with_profile(["image", "build", "--config", str(args.config), *base], args.profile)
    return ["hubspoke", *tail], [sys.executable, "-m", "hubspoke.cli.main", *tail]


def _plan(
    config: HubSpokeConfig,
    region: RegionConfig,
    settings: Any,
    image: str,
    *,
    rest_address: str | None,
    bucket: str,
    bench: Path | None = None,
) -> Plan:
    from hubspoke.k8s.export import export_job
    from hubspoke.k8s.job import training_job
    from hubspoke.k8s.prewarm import prewarm_job

    prewarm = (
        [] if rest_address is None else [prewarm_job(config, region, rest_address=rest_address, image=image)]
    )
    return Plan(
        prewarm=prewarm,
        training=training_job(config, region, image=image, settings=settings),
        export=export_job(config, region, bucket=bucket, run=settings.job_name, image=image),
        bench=None if bench is None else bench_plan(config, region, image=image, directory=bench),
    )


def _bench_dir(args: argparse.Namespace, region: RegionConfig) -> Path | None:
    config: Path = args.config
    return (
        (args.bench_dir or config.with_name(f"{config.stem}.bench") / region.region) if args.bench else None
    )


def _dry_run(
    args: argparse.Namespace,
    config: HubSpokeConfig,
    region: RegionConfig,
    settings: Any,
    image: str | None,
    cache: bool,
) -> int:
    from hubspoke.cli.render import _PlainDumper
    from hubspoke.cli.train_jobs import bench_dry_run
    from hubspoke.k8s.names import NAMESPACE
    from hubspoke.k8s.prewarm import QUMULO_SECRET

    lines = [f"hubspoke train (dry run): {config.environment} {region.region} from {args.config}"]
    if image is None:
        lines.append("+ " + shlex.join(_build_argv(args)[0]))
    connect = with_profile(["hubspoke", "connect", "--config", str(args.config), "--region", region.region],
                           args.profile)  # fmt: skip
    lines.append(
        f"+ the tunnel and kubeconfig commands `{shlex.join(connect)}` prints, with --profile and a temporary "
        "--kubeconfig; the tunnel is closed at the end"
    )
    plan = _plan(
        config, region, settings, image or IMAGE_PLACEHOLDER,
        rest_address=REST_PLACEHOLDER if cache else None, bucket=BUCKET_PLACEHOLDER, bench=_bench_dir(args, region),
    )  # fmt: skip
    follow = "kubectl logs --follow, then kubectl get until it ends"
    before, after = bench_dry_run(plan.bench, follow) if plan.bench else ([], [])
    lines.extend(before)
    if plan.prewarm:
        lines.append(
            f"+ kubectl apply --filename -   # Secret {NAMESPACE}/{QUMULO_SECRET}, from PrewarmSecretArn"
        )
        lines.append(f"+ kubectl apply --filename -   # the prewarm Job below; {follow}")
    lines.extend(after)
    lines.append(
        f"+ kubectl apply --filename -   # the training job below, unless running or succeeded; {follow}"
    )
    lines.append(f"+ kubectl apply --filename -   # the export below; {follow}")
    sys.stdout.write("".join(f"# {line}\n" for line in lines))
    bench = [plan.bench.cold.job, plan.bench.results_pod, plan.bench.warm.job] if plan.bench else []
    documents = [*bench[:2], *plan.prewarm, *bench[2:], plan.training, *plan.export]
    sys.stdout.write(yaml.dump_all(documents, Dumper=_PlainDumper, sort_keys=False, explicit_start=True))
    return 0


def _outputs(clients: Any, config: HubSpokeConfig, region: str, kind: str) -> dict[str, str]:
    from hubspoke.cli.connect import read_outputs
    from hubspoke.topology import plan_stacks

    plan = next(p for p in plan_stacks(config) if p.kind == kind and p.region == region)
    return read_outputs(clients, plan)


def _needed(outputs: dict[str, str], key: str, stack: str) -> str:
    if not outputs.get(key):
        raise StepFailed(f"the {stack} stack has no {key} output: deploy it again (hubspoke deploy)")
    return outputs[key]


def _run(
    args: argparse.Namespace,
    config: HubSpokeConfig,
    region: RegionConfig,
    settings: Any,
    image: str | None,
    cache: bool,
    runner: Runner,
    clients: Any,
) -> int:
    from botocore.exceptions import BotoCoreError, ClientError, ProfileNotFound

    from hubspoke.cli.checks import CREDENTIALS_FIX, session_clients
    from hubspoke.cli.connect import NotReady, steps

    try:
        clients = clients or session_clients(args.profile)
    except ProfileNotFound as exc:
        return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    try:
        # Everything read from AWS first: a refusal here leaves nothing started.
        found = steps(
            config, clients, config_path=str(args.config), region=region.region,
            local_port=runner.free_port(), role_arn=args.role_arn,
        )  # fmt: skip
        login, rest = _cache_access(clients, config, region.region) if cache else (None, None)
        bucket = _needed(
            _outputs(clients, config, region.region, "compute"), _key("MODEL_EXPORT_BUCKET"), "Compute"
        )
        if image is None:
            image = _build(args, config, region, runner)
        plan = _plan(
            config, region, settings, image, rest_address=rest, bucket=bucket, bench=_bench_dir(args, region)
        )
        return _submit(args, found, plan, login, runner)
    except NotReady as exc:
        print(f"hubspoke train: {exc.reason}\n  fix: {exc.fix}", file=sys.stderr)
    except (ClientError, BotoCoreError) as exc:
        print(
            f"hubspoke train: AWS refused or could not be reached: {exc}\n  fix: {CREDENTIALS_FIX}",
            file=sys.stderr,
        )
    except StepFailed as exc:
        print(f"hubspoke train: {exc}", file=sys.stderr)
    return EXIT_FAILED


def _key(name: str) -> str:
    import hubspoke.outputs as outputs

    return str(getattr(outputs, name).key())


def _cache_access(clients: Any, config: HubSpokeConfig, region: str) -> tuple[dict[str, str], str]:
    """The prewarm login (JSON {"username", "password"}, hubspoke/outputs.py PREWARM_SECRET) and the spoke CNQ's
    REST address, from the spoke Storage stack's outputs."""
    import json

    outputs = _outputs(clients, config, region, "storage")
    rest = _needed(outputs, _key("REST_ADDRESS"), "Storage")
    arn = _needed(outputs, _key("PREWARM_SECRET"), "Storage")
    secret = json.loads(clients("secretsmanager", region).get_secret_value(SecretId=arn)["SecretString"])
    return {"username": str(secret["username"]), "password": str(secret["password"])}, rest


def _build(args: argparse.Namespace, config: HubSpokeConfig, region: RegionConfig, runner: Runner) -> str:
    from hubspoke.cli.render import _recorded_image

    shown, argv = _build_argv(args)
    show(shown)
    if runner.run(argv, capture=False).returncode != 0:
        raise StepFailed("the image build failed (its output is above); fix it and run this again")
    image = _recorded_image(None, args.config, config, region)
    if image is None:
        raise StepFailed(f"the image build recorded no image for {region.region}; run this again")
    return image


def _submit(
    args: argparse.Namespace, found: Any, plan: Plan, login: dict[str, str] | None, runner: Runner
) -> int:
    from hubspoke.cli.train_jobs import (
        BATCH_JOB,
        PYTORCH_JOB,
        JobFailed,
        bench_report,
        follow_command,
        run_bench,
        stop_pods,
        submit_and_follow,
    )
    from hubspoke.cli.tunnel import open_cluster
    from hubspoke.k8s.names import NAMESPACE
    from hubspoke.k8s.prewarm import QUMULO_SECRET

    poll = args.poll_seconds
    name = plan.training["metadata"]["name"]
    nodes = int(plan.training["spec"]["elasticPolicy"]["maxReplicas"])
    with open_cluster(found, runner=runner, profile=args.profile) as cluster:
        if plan.bench:
            run_bench(cluster, plan.bench.cold, plan.bench, poll_seconds=poll)
        if plan.prewarm:
            assert login is not None
            secret = {
                "apiVersion": "v1", "kind": "Secret", "metadata": {"name": QUMULO_SECRET, "namespace": NAMESPACE},
                "type": "Opaque", "stringData": login,
            }  # fmt: skip
            # The login goes on stdin, never onto a command line (the runbook's `create secret | apply`, in one).
            cluster.checked("apply", "--filename", "-", stdin=yaml.safe_dump(secret))
            submit_and_follow(
                cluster,
                plan.prewarm,
                kind=BATCH_JOB,
                what="prewarm Job",
                keep_succeeded=False,
                poll_seconds=poll,
            )
        if plan.bench:
            run_bench(cluster, plan.bench.warm, plan.bench, poll_seconds=poll)
            bench_report(plan.bench)
        try:
            submit_and_follow(
                cluster, [plan.training], kind=PYTORCH_JOB, what="training job", keep_succeeded=True,
                poll_seconds=poll, nodes=nodes,
            )  # fmt: skip
        except JobFailed:
            # Only a run the operator reports Failed frees its GPUs. A running run's deleted pods are recreated by the
            # operator (training-operator pkg/controller.v1/common/pod.go ReconcilePods creates missing replicas): a
            # restart from the last checkpoint, so kubectl's or the tunnel's failure deletes nothing.
            stop_pods(cluster, name)
            raise
        except StepFailed as exc:
            follow = follow_command(PYTORCH_JOB, name, nodes)
            connect = shlex.join(
                ["hubspoke", "connect", "--config", str(args.config), "--region", found.region]
            )
            raise StepFailed(
                f"{exc}\n  nothing of the training job {name} was deleted: if it runs, follow it through `{connect}`'s "
                f"steps with `{follow}`, or run hubspoke train again (it follows a running job, never resubmits it)"
            ) from None
        submit_and_follow(
            cluster, plan.export, kind=BATCH_JOB, what="export Job", keep_succeeded=False, poll_seconds=poll
        )
    print(f"trained {name} and exported its final checkpoint to s3://{_bucket(plan)}/", flush=True)
    return 0


def _bucket(plan: Plan) -> str:
    args: Sequence[str] = plan.export[-1]["spec"]["template"]["spec"]["containers"][0]["command"]
    bucket = next(a for a in args if a.startswith("--bucket=")).removeprefix("--bucket=")
    prefix = next(a for a in args if a.startswith("--prefix=")).removeprefix("--prefix=")
    return f"{bucket}/{prefix}"
