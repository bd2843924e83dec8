"""`hubspoke image build --config FILE [--base IMAGE@sha256:...]`: build the training image once, push it to every
compute Region's ECR repository, and record each Region's digest where `hubspoke render` finds it.

Without --base the base is the config's training_base_image (an AWS DLC tag), resolved to its digest through ECR's
BatchGetImage, the call a pull makes for the manifest (botocore ecr BatchGetImage documentation), so nothing is
pulled to pin it; the digest is what the build uses and the record keeps. A built image must hold the EFA
installer's libfabric and the aws-ofi-nccl plugin, or it is refused before any push.

The steps are the ones the Amazon ECR User Guide gives ("Pushing a Docker image to an Amazon ECR private
repository"): authenticate Docker to the registry with `aws ecr get-login-password --region R | docker login
--username AWS --password-stdin ACCOUNT.dkr.ecr.R.amazonaws.com` ("Private registry authentication"), tag the
image with the repository URI, `docker push`. The digest is the registry's: `docker push` prints
`<tag>: digest: sha256:<hex> size: <n>` and `docker inspect` lists it in RepoDigests once pushed; the two
must agree. Docker and the AWS CLI are run as programs (found on PATH); boto3 only reads ECR.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hubspoke.config import HubSpokeConfig, format_problem, load
from hubspoke.config.sections import Problem

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
DOCKERFILE = Path("workload") / "Dockerfile"
# The nodes' platform, whatever the build host's (an arm64 laptop builds arm64 by default: Docker docs, "docker
# build --platform"). The GPU types the job runs on (hubspoke/k8s/accelerators.py: p5, p5e, p5en, p4d, p4de) are
# x86_64 (EC2 User Guide, "Accelerated computing instances": AMD EPYC / Intel Xeon processors).
NODE_PLATFORM = "linux/amd64"
# What `docker push` prints when the registry accepted the manifest.
_PUSHED = re.compile(r"digest: (sha256:[0-9a-f]{64}) size: \d+")
# A tag ECR and Docker accept: 1-128 of [A-Za-z0-9_.-], not starting with . or - (Docker reference grammar,
# distribution/reference: tag := [\w][\w.-]{0,127}).
_TAG = re.compile(r"^\w[\w.-]{0,127}$")
# HOST/REPOSITORY:TAG, and an Amazon ECR private registry host (Amazon ECR User Guide, "Private registry": the
# URL is https://aws_account_id.dkr.ecr.region.amazonaws.com).
_TAGGED = re.compile(r"^(?P<host>[^/@]+)/(?P<repository>[a-z0-9._/-]+):(?P<tag>[\w.-]+)$")
_ECR_HOST = re.compile(r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com$")
# What the nodes' NCCL needs in the image to use EFA: libfabric from the EFA installer, which installs under
# /opt/amazon/efa (the DLC 2.9 Dockerfile sets EFA_PATH=/opt/amazon/efa and /opt/amazon/efa/lib on
# LD_LIBRARY_PATH), and the aws-ofi-nccl NCCL net plugin, libnccl-net*.so (DLC 2.9: /opt/amazon/ofi-nccl/lib;
# other images put it elsewhere under /opt, ASSUMED: so the whole of /opt is searched). Exit 3 names what is missing.
NETWORK_CHECK = (
    "ls /opt/amazon/efa/lib/libfabric.so* >/dev/null 2>&1 || "
    "{ echo 'no EFA installer libfabric in /opt/amazon/efa/lib'; exit 3; }; "
    "find /opt -name 'libnccl-net*.so*' 2>/dev/null | grep -q . || "
    "{ echo 'no aws-ofi-nccl plugin (libnccl-net*.so) under /opt'; exit 3; }"
)
_CHECK_MISSING = 3
# One image manifest per build, so the repository's lifecycle rules see one image per build
# (constructs/image_repository.py). Without it, buildx adds a provenance attestation by default wherever the
# builder supports attestations (the docker driver with the containerd image store, the docker-container driver;
# buildx driver/docker/driver.go Features): the push is then an image index over the image and an attestation
# manifest. The two children are untagged, so the 7-day untagged rule selects them while ECR refuses to delete a
# manifest an index references (botocore ecr ImageFailureCode ImageReferencedByManifestList), and users report
# that count rules count an index and its children as images alike (aws/containers-roadmap#2613, a user's
# report, not AWS documentation). BUILDX_NO_DEFAULT_ATTESTATIONS turns the default off (Docker docs, "Build
# variables"; buildx build/opt.go toSolveOpt reads it with Go's strconv.ParseBool, which takes "1") from buildx
# 0.10.4; buildx 0.10.0 to 0.10.3 add the attestation and ignore it. Builders without attestations and the legacy
# builder ignore it, and an explicit --provenance would still win.
ONE_MANIFEST_BUILD = {"BUILDX_NO_DEFAULT_ATTESTATIONS": "1"}


class StepFailed(Exception):
    """A program the build runs exited non-zero; carries what to show (never a password)."""


class BaseRefused(ValueError):
    """The base image cannot be used: not pinnable, or without EFA or aws-ofi-nccl."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "image",
        help=summary,
        description="Build and push the training image (workload/Dockerfile).",
    )
    actions = parser.add_subparsers(dest="image_action", required=True, metavar="ACTION")
    build = actions.add_parser(
        "build",
        help="build workload/Dockerfile from a base pinned by digest, push it to every compute Region by digest",
        description="Build workload/Dockerfile once from --base (pinned by digest; default: the config's "
        "training_base_image, an AWS DLC tag resolved to its digest in ECR), refuse it without EFA and aws-ofi-nccl, "
        "tag it with the git commit (or --tag), push it to the ECR repository of every Region with compute, and record each Region's "
        "digest and the base's in <config>.images.json beside the config, where `hubspoke render` reads it. Needs docker and "
        "the AWS CLI on PATH and credentials that may push to the repositories; run from the repository root. "
        "Exit 0 when every Region has the image, 1 when a step failed, 2 for bad input.",
        epilog="Example:\n  hubspoke image build --config config/dev.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument("--config", required=True, type=Path, metavar="PATH")
    build.add_argument(
        "--base",
        metavar="IMAGE@sha256:DIGEST",
        help="the base image, pinned by digest (a PyTorch 2.6-2.11 GPU training image with EFA and aws-ofi-nccl); "
        "default: training_base_image in the config",
    )
    build.add_argument(
        "--tag", help="the immutable tag to push (default: the git commit; refused when the tree has changes)"
    )
    build.add_argument(
        "--profile", metavar="NAME", help="AWS profile (default: AWS_PROFILE or the default chain)"
    )
    build.set_defaults(run=run)


def _bad(path: Path, field: str, message: str) -> int:
    print(format_problem(path, Problem(field, message)), file=sys.stderr)
    return EXIT_BAD_INPUT


def _run(
    argv: Sequence[str],
    *,
    stdin: str | None = None,
    show: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run a program, echo what runs (`show`, without secrets), return its stdout; StepFailed when it fails."""
    print("+ " + " ".join(show or argv), file=sys.stderr)
    try:
        done = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **env} if env else None,
        )
    except FileNotFoundError:
        raise StepFailed(f"{argv[0]} is not on PATH: install it (docs/runbooks/compute.md)") from None
    if done.returncode != 0:
        raise StepFailed(f"{' '.join(show or argv)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def git_tag(root: Path) -> str:
    """The commit the image is built from; refused when the tree differs from it (the tag would lie)."""
    head = _run(["git", "-C", str(root), "rev-parse", "HEAD"]).strip()
    changes = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"]).strip()
    if changes:
        raise ValueError(
            "the working tree has uncommitted changes, so the commit would not name what is built: commit them "
            "or pass --tag"
        )
    return head


def repository_uris(
    config: HubSpokeConfig, regions: Sequence[str], profile: str | None
) -> dict[str, str] | str:
    """Each Region's repository URI from its compute stack's TrainingImageRepositoryUri output (CloudFormation
    generates the repository's name per create), or why it cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    from hubspoke.cli.checks import session_clients
    from hubspoke.cli.connect import NotReady, compute_plan, read_outputs
    from hubspoke.images import registry
    from hubspoke.outputs import TRAINING_IMAGE_REPOSITORY

    clients = session_clients(profile)
    uris = {}
    for region in regions:
        plan = compute_plan(config, region)
        assert plan is not None, "the caller passes Regions with compute"
        try:
            outputs = read_outputs(clients, plan)
        except NotReady as exc:
            return f"{exc.reason}: deploy that Region's compute stack first (it creates the repository)"
        except (BotoCoreError, ClientError) as exc:
            return f"cannot read stack {plan.name} in {region}: {exc}"
        uri = outputs.get(TRAINING_IMAGE_REPOSITORY.key(), "")
        host = registry(config, config.region_config(region))
        if not uri.startswith(host + "/"):
            return (
                f"stack {plan.name} in {region} has no {TRAINING_IMAGE_REPOSITORY.key()} output in {host} "
                f"(got {uri!r}): deploy that Region's compute stack again"
            )
        uris[region] = uri
    return uris


def _check_repositories(uris: Mapping[str, str], tag: str, profile: str | None) -> str | None:
    """Why the push cannot start (the repository is gone; the tag exists), or None."""
    from botocore.exceptions import BotoCoreError, ClientError

    from hubspoke.cli.checks import session_clients

    clients = session_clients(profile)
    for region, uri in uris.items():
        name = uri.split("/", 1)[1]
        ecr = clients("ecr", region)
        try:
            ecr.describe_repositories(repositoryNames=[name])
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "RepositoryNotFoundException":
                return (
                    f"there is no ECR repository {name} in {region}: deploy that Region's compute stack first "
                    "(it creates the repository)"
                )
            return f"cannot read ECR repository {name} in {region}: {exc}"
        except BotoCoreError as exc:
            return f"cannot reach ECR in {region}: {exc}"
        try:
            found = ecr.describe_images(repositoryName=name, imageIds=[{"imageTag": tag}])["imageDetails"]
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ImageNotFoundException":
                return f"cannot read the images of {name} in {region}: {exc}"
            found = []
        if found:
            return (
                f"{name} in {region} already holds tag {tag} (digest {found[0]['imageDigest']}); tags there are "
                "immutable: pass another --tag, or commit and build again"
            )
    return None


def resolve_base(reference: str, profile: str | None) -> str:
    """`reference` pinned by digest: as given when it already is; a tag in Amazon ECR resolved through
    BatchGetImage (the manifest call a pull makes, so the user's pull rights suffice and nothing is pulled)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from hubspoke.cli.checks import session_clients
    from hubspoke.images import DIGEST_REF

    if DIGEST_REF.match(reference):
        return reference
    tagged = _TAGGED.match(reference)
    host = _ECR_HOST.match(tagged["host"]) if tagged else None
    if tagged is None or host is None:
        raise BaseRefused(
            f"{reference} is a tag outside Amazon ECR, which hubspoke cannot pin: give it as IMAGE@sha256:<64 hex>"
        )
    ecr = session_clients(profile)("ecr", host["region"])
    try:
        found = ecr.batch_get_image(
            registryId=host["account"],
            repositoryName=tagged["repository"],
            imageIds=[{"imageTag": tagged["tag"]}],
        )
    except (BotoCoreError, ClientError) as exc:
        raise StepFailed(f"cannot resolve {reference} to a digest: {exc}") from None
    digests = {image["imageId"]["imageDigest"] for image in found.get("images", [])}
    if len(digests) != 1:
        why = "; ".join(f.get("failureReason", "") for f in found.get("failures", [])) or "not found"
        raise StepFailed(f"cannot resolve {reference} to a digest: {why}")
    return f"{tagged['host']}/{tagged['repository']}@{digests.pop()}"


def _login(host: str, profile: str | None) -> None:
    """Log docker in to an ECR registry; the password goes from one program to the other through this process,
    never onto a command line."""
    region = _ECR_HOST.match(host)
    assert region is not None, "callers pass ECR hosts"
    as_profile = ["--profile", profile] if profile else []
    password = _run(["aws", "ecr", "get-login-password", "--region", region["region"], *as_profile])
    _run(["docker", "login", "--username", "AWS", "--password-stdin", host], stdin=password)


def check_network_stack(image: str) -> None:
    """Refuse an image without EFA's libfabric or the aws-ofi-nccl plugin: NCCL would fall back to TCP sockets."""
    argv = ["docker", "run", "--rm", "--entrypoint", "/bin/sh", image, "-c", NETWORK_CHECK]
    print("+ " + " ".join(argv[:-1]) + " <EFA and aws-ofi-nccl check>", file=sys.stderr)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise StepFailed("docker is not on PATH: install it (docs/runbooks/compute.md)") from None
    if done.returncode == _CHECK_MISSING:
        raise BaseRefused(
            f"the base image has {done.stdout.strip() or 'no EFA or aws-ofi-nccl'}: multi-node NCCL needs both; "
            "use an AWS DLC pytorch-training GPU EC2 image (docs/runbooks/compute.md)"
        )
    if done.returncode != 0:
        raise StepFailed(f"docker run {image} exited {done.returncode}: {done.stderr.strip()[-2000:]}")


def _pushed_digest(push_output: str, inspect_output: str, uri: str) -> str:
    """The digest the registry gave `uri`: docker push's line, confirmed by docker inspect's RepoDigests."""
    pushed = _PUSHED.findall(push_output)
    repo_digests: Any = json.loads(inspect_output or "null") or []
    inspected = [d.split("@", 1)[1] for d in repo_digests if isinstance(d, str) and d.startswith(uri + "@")]
    if not pushed or not inspected:
        raise StepFailed(
            f"docker did not report the digest of {uri} (push said {pushed}, inspect {inspected})"
        )
    if pushed[-1] not in inspected:
        raise StepFailed(f"docker push reported {pushed[-1]} for {uri}, docker inspect {inspected}")
    return str(pushed[-1])


def build_and_push(
    config: HubSpokeConfig,
    *,
    uris: Mapping[str, str],
    base: str,
    tag: str,
    context: Path,
    profile: str | None = None,
) -> dict[str, str]:
    """Build once from `base` (pinned by digest), refuse it without EFA or aws-ofi-nccl, push to each Region's
    repository (`uris`); Region -> `repository@sha256:...`."""
    from hubspoke.names import training_image_repository

    local = f"{training_image_repository(config)}:{tag}"
    base_host = base.split("/", 1)[0]
    if _ECR_HOST.match(base_host):  # docker build pulls the base: an ECR registry needs a login first
        _login(base_host, profile)
    _run(
        [
            "docker",
            "build",
            "--platform",
            NODE_PLATFORM,
            "--file",
            str(DOCKERFILE),
            "--build-arg",
            f"BASE_IMAGE={base}",
            "--tag",
            local,
            str(context),
        ],
        env=ONE_MANIFEST_BUILD,
    )
    check_network_stack(local)
    images = {}
    for region, uri in uris.items():
        _login(uri.split("/", 1)[0], profile)
        _run(["docker", "tag", local, f"{uri}:{tag}"])
        pushed = _run(["docker", "push", f"{uri}:{tag}"])
        inspected = _run(["docker", "inspect", "--format", "{{json .RepoDigests}}", f"{uri}:{tag}"])
        images[region] = f"{uri}@{_pushed_digest(pushed, inspected, uri)}"
    return images


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` whole or not at all: a half-written record would point render at nothing."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as handle:
        handle.write(text + "\n")
    os.replace(handle.name, path)


def run(args: argparse.Namespace) -> int:
    from hubspoke.images import DIGEST_REF, ImageRecord, record_path

    path: Path = args.config
    config = load(path).config  # ConfigError -> exit 2 in main
    # --base overrides the config's default, and must already be pinned; the default may be a tag in ECR.
    base_field = "--base" if args.base is not None else "training_base_image"
    if args.base is not None and not DIGEST_REF.match(args.base):
        return _bad(
            path,
            "--base",
            f"{args.base} is not pinned by digest: pass IMAGE@sha256:<64 hex> (docs/runbooks/compute.md, "
            "'Build and push the training image', shows how to read a base image's digest)",
        )
    regions = [r.region for r in config.regions() if r.compute.enabled]
    if not regions:
        return _bad(path, "compute.enabled", "no Region has compute, so no repository to push to")
    context = Path.cwd()
    if not (context / DOCKERFILE).is_file():
        return _bad(path, "--config", f"no {DOCKERFILE} here: run from the repository root")
    tag = args.tag
    if tag is None:
        try:
            tag = git_tag(context)
        except (ValueError, StepFailed) as exc:
            return _bad(path, "--tag", str(exc))
    elif not _TAG.match(tag):
        return _bad(path, "--tag", f"{tag!r} is not a Docker tag: use 1-128 of A-Z a-z 0-9 _ . -")
    if tag == "latest":
        return _bad(path, "--tag", "latest is the tag every untagged push moves: use the commit or a version")
    wanted = args.base or config.training_base_image
    try:
        base = resolve_base(wanted, args.profile)
    except BaseRefused as exc:
        return _bad(path, base_field, str(exc))
    except StepFailed as exc:
        print(f"hubspoke image build: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"Base image: {base}" + (f" (the digest of {wanted})" if base != wanted else ""), file=sys.stderr)
    uris = repository_uris(config, regions, args.profile)
    why = uris if isinstance(uris, str) else _check_repositories(uris, tag, args.profile)
    if why:
        print(f"hubspoke image build: {why}", file=sys.stderr)
        return EXIT_FAILED
    assert isinstance(uris, dict)
    try:
        images = build_and_push(config, uris=uris, base=base, tag=tag, context=context, profile=args.profile)
    except BaseRefused as exc:
        return _bad(path, base_field, str(exc))
    except StepFailed as exc:
        print(f"hubspoke image build: {exc}", file=sys.stderr)
        return EXIT_FAILED
    record = ImageRecord(environment=config.environment, tag=tag, base=base, images=images)
    record_file = record_path(path)
    _write_atomically(record_file, record.to_json())
    print(f"Pushed {tag} to {len(images)} Region(s) from {base}; recorded in {record_file} (render uses it):")
    for region, ref in images.items():
        print(f"  {region}: {ref}")
    return 0
