"""`hubspoke dataset load`: start the load Job on the hub's cluster, next to the data, and stream its progress.

The load itself (Qumulo Shift-From into `<dataset_path>/<name>/<version>`, checksums through the dataset mount, the
seal) is hubspoke.dataset_load, run by workload/load.py in the Job hubspoke/k8s/load.py renders: the hub's REST
API answers only inside the hub VPC. This command checks its input, renders the Job and, unless --dry-run, opens
the hub's tunnel and a temporary kubeconfig as `hubspoke train` does (hubspoke/cli/tunnel.py; --kube-context uses
a context of the user's own kubeconfig instead), applies the Job, follows its log (`kubectl logs -f`) and exits
with the Job's outcome. Running it again for the same version resumes: a finished Job of that version is
replaced by a new one (whose program carries on where Shift-From left off); a running one is followed.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from hubspoke.cli.dataset_follow import Kubectl, kubectl, start_and_follow
from hubspoke.cli.output import fail
from hubspoke.cli.train import IMAGE_PLACEHOLDER, _build, _build_argv
from hubspoke.cli.tunnel import Runner, StepFailed, with_profile
from hubspoke.config import HubSpokeConfig, format_problem, load
from hubspoke.config.sections import Problem
from hubspoke.dataset_load import DEFAULT_HASH_WORKERS
from hubspoke.dataset_manifest import ManifestError, check_segment, validate
from hubspoke.images import DIGEST_REF
from hubspoke.shift_from import EXIT_BAD_INPUT, EXIT_FAILED, LoadError, Source


# ----- the command
def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "dataset",
        help=summary,
        description="Load dataset versions into the hub.",
    )
    actions = parser.add_subparsers(dest="dataset_action", required=True, metavar="ACTION")
    loader = actions.add_parser(
        "load",
        help="copy an S3 folder into a new hub version with Qumulo Shift-From, then seal it with its manifest",
        description=(
            "Start a Job on the hub's cluster that copies an S3 folder into <dataset_path>/<name>/<version> with "
            "Qumulo Shift-From, checksums it through the dataset volume and seals it with MANIFEST.json "
            "(docs/datasets.md); follow its progress. Opens the hub's Session Manager tunnel itself (as `hubspoke "
            "connect --region <hub>` prints it) and closes it at the end. Run the same command again to resume."
        ),
        epilog=(
            "Example: hubspoke dataset load --config config/dev.yaml --name c4-llama3 --version v2 "
            "--source s3://hubspoke-dev-datasets/c4/llama3/"
        ),
    )
    loader.add_argument("--config", required=True, type=Path, metavar="PATH")
    loader.add_argument("--name", help="the dataset's name (default: dataset.name)")
    loader.add_argument(
        "--version", help="a new version; an existing one is refused (default: dataset.version)"
    )
    loader.add_argument(
        "--source", required=True, help="s3://bucket/folder/ in one of dataset.source_buckets"
    )
    loader.add_argument("--bucket-region", help="the bucket's Region (default: the hub's)")
    loader.add_argument(
        "--token-bytes",
        type=int,
        choices=(2, 4),
        help="token width of the shards (default: dataset.token_bytes)",
    )
    loader.add_argument(
        "--vocab-size", type=int, help="vocabulary of the shards (default: dataset.vocab_size)"
    )
    loader.add_argument("--poll-seconds", type=float, default=30.0, help="seconds between status reads (30)")
    loader.add_argument(
        "--hash-workers",
        type=int,
        default=DEFAULT_HASH_WORKERS,
        help=f"files checksummed at once when sealing (default {DEFAULT_HASH_WORKERS})",
    )
    loader.add_argument(
        "--image",
        help="image with workload/ (default: hub.compute.training_image, else the digest `hubspoke image build` "
        "recorded)",
    )
    loader.add_argument(
        "--base",
        metavar="IMAGE@sha256:DIGEST",
        help="build the image from this base when none is recorded (default: the config's training_base_image, "
        "as `hubspoke image build`)",
    )
    loader.add_argument("--profile", metavar="NAME", help="AWS profile for every aws and kubectl call")
    loader.add_argument("--role-arn", metavar="ARN", help="sign kubectl's tokens as this role (as `connect`)")
    loader.add_argument(
        "--kube-context",
        metavar="NAME",
        help="use this context of your own kubeconfig, reaching the hub already (`hubspoke connect`), and "
        "open no tunnel",
    )
    loader.add_argument(
        "--dry-run", action="store_true", help="print the Job as YAML for kubectl apply; start nothing"
    )
    # What --dry-run prints: the Job, which the image tests check against what the image holds.
    loader.set_defaults(run=run, dry_run_prints="manifests")


def _problem(path: Path, field: str, message: str) -> int:
    print(format_problem(path, Problem(field, message)), file=sys.stderr)
    return EXIT_BAD_INPUT


def run(
    args: argparse.Namespace,
    *,
    kube: Kubectl = kubectl,
    sleep: Callable[[float], None] = time.sleep,
    runner: Runner | None = None,
    clients: Any = None,
) -> int:
    path: Path = args.config
    config = load(path).config
    name = args.name or config.dataset.name
    version = args.version or config.dataset.version
    if name is None or version is None:
        flag, field = ("--name", "dataset.name") if name is None else ("--version", "dataset.version")
        return _problem(path, field, f"not set: give the version to load with {flag}, or set {field}")
    try:
        source = Source.parse(args.source)
        check_segment("--name", name)
        check_segment("--version", version)
    except LoadError as exc:
        return _problem(path, "--source", str(exc).removeprefix("--source "))
    except ManifestError as exc:
        return _problem(path, str(exc).split(" ", 1)[0], str(exc).split(" ", 1)[1])
    if source.bucket not in config.dataset.source_buckets:
        listed = ", ".join(config.dataset.source_buckets) or "none"
        return _problem(
            path,
            "dataset.source_buckets",
            f"bucket {source.bucket} is not listed (listed: {listed}); add it and deploy the hub Storage stack, "
            "which grants the Shift user read on exactly these buckets",
        )
    if not config.hub.storage.enabled:
        return _problem(path, "hub.storage.enabled", "the hub has no CNQ cluster to load into")
    if not config.hub.compute.enabled:
        return _problem(
            path, "hub.compute.enabled", "the load runs as a Job on the hub's cluster: set it to true"
        )
    token_bytes = args.token_bytes or config.dataset.token_bytes
    vocab_size = args.vocab_size or config.dataset.vocab_size
    try:
        validate(name=name, version=version, token_bytes=token_bytes, vocab_size=vocab_size, files=[])
    except ManifestError as exc:
        return _problem(path, "--vocab-size", str(exc).split(": ", 1)[1])
    if not 1 <= args.hash_workers <= 32:
        return _problem(path, "--hash-workers", f"{args.hash_workers}: give 1 to 32 files at once")
    if args.base is not None and not DIGEST_REF.match(args.base):
        return fail(f"--base: {args.base} is not pinned by digest: pass IMAGE@sha256:<64 hex>")
    settings: dict[str, Any] = dict(
        name=name, version=version, source=source, token_bytes=token_bytes, vocab_size=vocab_size
    )
    job = _render(args, path, config, **settings)
    if isinstance(job, int):
        return job
    runner = runner or Runner()
    if job is None:  # no image yet, and --base given: build it, as `hubspoke train` does
        if args.dry_run:
            print("# + " + shlex.join(_build_argv(args)[0]))
            job = _render(args, path, config, **settings, image=IMAGE_PLACEHOLDER)
        else:
            try:
                built = _build(args, config, config.hub, runner)
            except StepFailed as exc:
                print(f"hubspoke dataset load: {exc}", file=sys.stderr)
                return EXIT_FAILED
            job = _render(args, path, config, **settings, image=built)
        assert isinstance(job, dict)
    connect = shlex.join(
        with_profile(
            ["hubspoke", "connect", "--config", str(path), "--region", config.hub.region], args.profile
        )
    )
    if args.dry_run:
        if not args.kube_context:
            print(f"# + the tunnel and kubeconfig commands `{connect}` prints, with a temporary --kubeconfig; "
                  "the tunnel is closed at the end")  # fmt: skip
        sys.stdout.write(yaml.safe_dump(job, sort_keys=False, explicit_start=True))
        return 0
    if not args.kube_context:
        return _through_tunnel(args, config, job, runner=runner, clients=clients, sleep=sleep)
    context = args.kube_context

    def own(argv: Sequence[str], stdin: str | None, capture: bool) -> subprocess.CompletedProcess[str]:
        # A global flag, accepted after the verb (kubectl reference, "kubectl options": --context).
        return kube([*argv, "--context", context], stdin, capture)

    hint = (
        f"kubectl must reach the hub's cluster as context {context}: follow `{connect}` (the tunnel stays open "
        "in its own terminal), or leave out --kube-context and this command opens the tunnel itself"
    )
    try:
        return start_and_follow(job, kube=own, sleep=sleep, hint=hint, deploy=_deploy(config, path))
    except LoadError as exc:
        print(f"hubspoke dataset load: {exc}", file=sys.stderr)
        return exc.code


def _through_tunnel(
    args: argparse.Namespace,
    config: HubSpokeConfig,
    job: dict[str, Any],
    *,
    runner: Runner,
    clients: Any,
    sleep: Callable[[float], None],
) -> int:
    """The load through the hub's tunnel and a temporary kubeconfig (hubspoke/cli/tunnel.py), closed at the end."""
    from botocore.exceptions import BotoCoreError, ClientError, ProfileNotFound

    from hubspoke.cli.checks import CREDENTIALS_FIX, session_clients
    from hubspoke.cli.connect import NotReady, steps
    from hubspoke.cli.tunnel import open_cluster

    try:
        clients = clients or session_clients(args.profile)
    except ProfileNotFound as exc:
        return fail(f"--profile: {exc}; list profiles with `aws configure list-profiles`")
    hint = "the tunnel was reopened once and kubectl still failed (its output is above); run this again"
    try:
        # Everything read from AWS first: a refusal here leaves nothing started.
        found = steps(
            config, clients, config_path=str(args.config), region=config.hub.region,
            local_port=runner.free_port(), role_arn=args.role_arn,
        )  # fmt: skip
        with open_cluster(found, runner=runner, profile=args.profile) as cluster:

            def through(
                argv: Sequence[str], stdin: str | None, capture: bool
            ) -> subprocess.CompletedProcess[str]:
                return cluster.kubectl(*argv, stdin=stdin, capture=capture)

            return start_and_follow(
                job, kube=through, sleep=sleep, hint=hint, deploy=_deploy(config, args.config)
            )
    except NotReady as exc:
        print(f"hubspoke dataset load: {exc.reason}\n  fix: {exc.fix}", file=sys.stderr)
    except (ClientError, BotoCoreError) as exc:
        print(
            f"hubspoke dataset load: AWS refused or could not be reached: {exc}\n  fix: {CREDENTIALS_FIX}",
            file=sys.stderr,
        )
    except StepFailed as exc:
        print(f"hubspoke dataset load: {exc}", file=sys.stderr)
    except LoadError as exc:
        print(f"hubspoke dataset load: {exc}", file=sys.stderr)
        return exc.code
    return EXIT_FAILED


def _render(
    args: argparse.Namespace,
    path: Path,
    config: HubSpokeConfig,
    *,
    name: str,
    version: str,
    source: Source,
    token_bytes: int,
    vocab_size: int,
    image: str | None = None,
) -> dict[str, Any] | int | None:
    """The load Job, the exit status of a refusal, or None when no image is found and --base will build one (the
    image: `image`, else as `hubspoke render` finds it)."""
    from hubspoke.cli.render import RenderError, _recorded_image
    from hubspoke.k8s.load import load_job
    from hubspoke.k8s.run import NoTrainingImage

    try:
        found = _recorded_image(args.image or image, path, config, config.hub)
        if found is None:  # image build makes one, from --base or the config's training_base_image
            return None
        return load_job(
            config,
            name=name,
            version=version,
            source=str(source),
            bucket_region=args.bucket_region or config.hub.region,
            token_bytes=token_bytes,
            vocab_size=vocab_size,
            image=found,
            poll_seconds=args.poll_seconds,
            hash_workers=args.hash_workers,
        )
    except RenderError as exc:
        return _problem(path, exc.problem.field, exc.problem.message)
    except NoTrainingImage:
        return _problem(
            path,
            "hub.compute.training_image",
            f"no training image for {config.hub.region}: pass --base <image>@sha256:<digest> to build one "
            "(docs/getting-started.md), or set this field to an image pinned by digest, or pass --image",
        )


def _deploy(config: HubSpokeConfig, path: Path) -> str:
    """The command that deploys the hub's Compute stack alone, as `hubspoke connect` prints it."""
    from hubspoke.cli.plan import cdk_command
    from hubspoke.topology import stack_id, stage_id

    return cdk_command(
        "deploy", str(path), "--exclusively", f"{stage_id(config)}/{stack_id('compute', config.hub.region)}"
    )
