"""`hubspoke stage`: upload the Qumulo Core release to each storage Region's staging folder and pin it in config.

docs/runbooks/qumulo-core.md, "1. Stage the package", is the manual equivalent: both files Qumulo Nexus offers
(`qumulo-core.deb`, `host_configuration.tar.gz`) under `<install_uri><version>/`, one SSE-S3 bucket per Region
(the nodes download in-Region through the VPC's S3 gateway endpoint, and hold no KMS permission). The release is
pinned in the file only once every Region holds it; a rerun skips what is already staged with the same sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from boto3.exceptions import S3UploadFailedError
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from pydantic import TypeAdapter, ValidationError

from hubspoke.cli.checks import CREDENTIALS_FIX, Clients
from hubspoke.cli.envfile import (
    BadInput,
    profile_clients,
    replace_validated,
    set_in_regions,
    validate_text,
    with_profile,
)
from hubspoke.cli.output import fail
from hubspoke.cli.preflight.cnq import bundled_sdk_version
from hubspoke.config import ConfigError, load
from hubspoke.config.cnq import QumuloCoreConfig

PACKAGE = "qumulo-core.deb"
HOST_CONFIGURATION = "host_configuration.tar.gz"
# deb(5): a binary package is an ar(5) archive, whose first 8 bytes are "!<arch>\n"; RFC 1952 (gzip): every
# member starts with ID1 0x1f, ID2 0x8b. A file without them is not what Nexus offers under these names.
_MAGIC = {PACKAGE: b"!<arch>\n", HOST_CONFIGURATION: b"\x1f\x8b"}
# User-defined object metadata (S3 User Guide, "Working with object metadata": x-amz-meta-<name>): the whole
# file's sha256, which S3's own checksum of a multipart upload is not (it is a checksum of part checksums).
SHA_KEY = "sha256"
# S3 API Reference, PutPublicAccessBlock: the four settings, all on.
PUBLIC_ACCESS_BLOCK = {
    "BlockPublicAcls": True,
    "IgnorePublicAcls": True,
    "BlockPublicPolicy": True,
    "RestrictPublicBuckets": True,
}
# S3 API Reference, PutBucketEncryption: SSEAlgorithm AES256 is SSE-S3 (the runbook: the nodes have no KMS grant).
SSE_S3 = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
NEXUS = "Qumulo Nexus (needs your Qumulo login): Downloads > Cloud Native Qumulo Downloads > AWS"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], summary: str) -> None:
    parser = sub.add_parser(
        "stage",
        help=summary,
        description=f"Upload {PACKAGE} and {HOST_CONFIGURATION} of one Qumulo Core release to the staging "
        "folder (storage.qumulo_core.install_uri) of every storage Region, creating a missing bucket (SSE-S3, "
        "public access blocked), then pin the release (qumulo_core.version) in the config, keeping its "
        f"comments. Download both files first from {NEXUS}; hubspoke cannot fetch them. A rerun "
        "skips objects already staged with the same sha256. Exit 0 when staged and pinned, 1 when AWS failed "
        "(nothing pinned; run again), 2 for bad input. Manual equivalent: docs/runbooks/qumulo-core.md.",
        epilog="Example:\n  hubspoke stage --config config/team.yaml --version 7.10.2.1 --from ~/Downloads",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", required=True, type=Path, metavar="PATH", help="environment config file")
    parser.add_argument(
        "--version", required=True, metavar="RELEASE", help="the release downloaded, e.g. 7.10.2.1"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="folder holding both files (.)",
    )
    parser.add_argument(
        "--profile", metavar="NAME", help="AWS profile (default: AWS_PROFILE or the default chain)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the commands it would run, only")
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class Target:
    """Where one Region's copy of the release goes."""

    region: str
    account: str
    bucket: str
    folder: str  # the key prefix <prefix>/qumulo-core-install/<version>/


def _files(source: Path) -> dict[str, tuple[Path, str]]:
    """Each file name -> (path, sha256 hex); BadInput when one is missing or is not what its name says."""
    found: dict[str, tuple[Path, str]] = {}
    for name, magic in _MAGIC.items():
        path = source / name
        if not path.is_file():
            raise BadInput(f"--from {source}: no {name} there; download it from {NEXUS}")
        digest = hashlib.sha256()
        with path.open("rb") as f:
            if not f.read(len(magic)) == magic:
                raise BadInput(
                    f"{path} is not a {'Debian package' if name == PACKAGE else 'gzip file'}; download it again"
                )
            f.seek(0)
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        found[name] = (path, digest.hexdigest())
    return found


def _targets(config_path: Path, version: str) -> tuple[str, list[Target]]:
    """The config's text and every storage Region's staging folder for `version`."""
    text = config_path.read_text(encoding="utf-8")
    config = load(config_path).config
    targets = []
    for region in config.regions():
        core = region.storage.qumulo_core
        if not region.storage.enabled or core is None:
            continue
        prefix = core.install_uri.removeprefix(f"s3://{core.bucket}/")
        targets.append(Target(region.region, config.account_of(region), core.bucket, f"{prefix}{version}/"))
    if not targets:
        raise BadInput(f"{config_path}: no Region has storage enabled; nothing to stage")
    return text, targets


def _plan(target: Target, files: dict[str, tuple[Path, str]], profile: str | None) -> list[str]:
    """The AWS CLI commands that stage one Region by hand (the runbook's, with SSE-S3 and the checksum)."""
    r, b = target.region, target.bucket
    where = "" if r == "us-east-1" else f" --create-bucket-configuration LocationConstraint={r}"
    block = ",".join(f"{k}=true" for k in PUBLIC_ACCESS_BLOCK)
    lines = [
        f"aws s3api head-bucket --bucket {b} --expected-bucket-owner {target.account} --region {r}",
        f"aws s3api create-bucket --bucket {b} --region {r}{where}   # only when absent",
        f"aws s3api put-bucket-encryption --bucket {b} --server-side-encryption-configuration "
        f"'{json.dumps(SSE_S3, separators=(',', ':'))}' --region {r}   # only when it has none",
        f"aws s3api put-public-access-block --bucket {b} --public-access-block-configuration {block} --region {r}",
    ]
    for name, (path, sha) in files.items():
        lines.append(
            f"aws s3 cp {path} s3://{b}/{target.folder}{name} --sse AES256 --metadata {SHA_KEY}={sha} "
            f"--region {r}   # skipped when staged with this sha256"
        )
    return [with_profile(line, profile) for line in lines]


# qumulo_core.version's own rules, so a mistyped --version is refused before anything is read.
_RELEASE: TypeAdapter[str] = TypeAdapter(Annotated[(str, *QumuloCoreConfig.model_fields["version"].metadata)])


def _inputs(config: Path, version: str) -> None:
    """BadInput when --config is not a file or --version is not a Qumulo Core release number."""
    if not config.is_file():
        raise BadInput(
            f"--config {config}: no such file; give an environment file, or write one with `hubspoke init`"
        )
    try:
        _RELEASE.validate_python(version)
    except ValidationError as exc:
        # A release older than the minimum is the config's refusal, worded there (validate_text below).
        if exc.errors()[0]["type"] == "string_pattern_mismatch":
            raise BadInput(
                f"--version {version}: not a Qumulo Core release number; give it as Qumulo Nexus names it, "
                f"e.g. {bundled_sdk_version()}"
            ) from None


def run(args: argparse.Namespace, *, clients: Clients | None = None) -> int:
    try:
        _inputs(args.config, args.version)
        files = _files(args.source)
        text, targets = _targets(args.config, args.version)
        pinned = set_in_regions(text, ("storage", "qumulo_core", "version"), args.version)
        # The pinned file must load before anything is uploaded: a release validation refuses stages nothing.
        validate_text(args.config, pinned)
        tested = bundled_sdk_version()
        if args.version != tested:
            print(
                f"hubspoke: warning: preflight fails Qumulo Core {args.version}: hubspoke is tested with {tested} "
                "(the bundled qumulo-api; docs/runbooks/qumulo-core.md)",
                file=sys.stderr,
            )
        pin = f"pin qumulo_core.version: {args.version} in {args.config} (every storage Region), then validate it"
        if args.dry_run:
            for target in targets:
                print("\n".join(_plan(target, files, args.profile)))
            print(pin)
            return 0
        clients = clients or profile_clients(args.profile)
        _same_account(targets, clients, args.profile)
        for target in targets:
            _stage(target, files, clients, args.profile)
        if pinned == text:
            print(f"{args.config}: qumulo_core.version is already {args.version}")
        else:
            print(pin)
            replace_validated(args.config, pinned)
        preflight = with_profile(f"hubspoke preflight --config {args.config}", args.profile)
        print(f"staged and pinned Qumulo Core {args.version}; next: {preflight}")
        return 0
    except BadInput as exc:
        return fail(str(exc))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    except NoCredentialsError:
        return fail(f"no AWS credentials: {CREDENTIALS_FIX}")
    except ClientError as exc:
        error = exc.response.get("Error", {})
        print(
            f"hubspoke: {exc.operation_name} answered {error.get('Code')}: {error.get('Message')}; nothing pinned, "
            "run the same command again (staged files are skipped)",
            file=sys.stderr,
        )
        return 1
    except S3UploadFailedError as exc:  # boto3's upload_file wraps the ClientError of the part that failed
        print(
            f"hubspoke: {exc}; nothing pinned, run the same command again (staged files are skipped)",
            file=sys.stderr,
        )
        return 1
    except (BotoCoreError, OSError) as exc:
        print(f"hubspoke: {exc}; nothing pinned, run the same command again", file=sys.stderr)
        return 1


def _same_account(targets: list[Target], clients: Clients, profile: str | None) -> None:
    """The credentials belong to the account of every storage Region (the buckets must be that account's)."""
    first = targets[0].region
    print(with_profile(f"aws sts get-caller-identity --region {first}", profile))
    account = str(clients("sts", first).get_caller_identity()["Account"])
    others = [t for t in targets if t.account != account]
    if others:
        raise BadInput(
            f"these credentials are account {account}, but {', '.join(t.region for t in others)} "
            f"{'is' if len(others) == 1 else 'are'} in {others[0].account}: run with --profile for that account, "
            "or stage that Region by hand (docs/runbooks/qumulo-core.md, 1. Stage the package)"
        )


def _status(exc: ClientError) -> str:
    """A HEAD error has no body, so botocore's code is the HTTP status (S3 API Reference, HeadBucket)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def _stage(target: Target, files: dict[str, tuple[Path, str]], clients: Clients, profile: str | None) -> None:
    """One Region: the bucket as the runbook wants it, then each file unless already staged with its sha256."""
    s3 = clients("s3", target.region)
    plan = _plan(target, files, profile)
    print(plan[0])
    _bucket(s3, target, plan)
    for (name, (path, sha)), line in zip(files.items(), plan[4:], strict=True):
        key = f"{target.folder}{name}"
        print(line)
        try:
            head = s3.head_object(Bucket=target.bucket, Key=key, ExpectedBucketOwner=target.account)
        except ClientError as exc:
            if _status(exc) not in {"404", "NoSuchKey"}:
                raise
            head = None
        if (
            head
            and head.get("Metadata", {}).get(SHA_KEY) == sha
            and head.get("ServerSideEncryption") == "AES256"
        ):
            print(f"  s3://{target.bucket}/{key} is staged with this sha256: skipped")
            continue
        # upload_file (s3transfer) sends large files in parts and aborts the upload on failure, so a failed
        # upload leaves no object; PutObject/CompleteMultipartUpload make it appear whole or not at all.
        s3.upload_file(
            str(path),
            target.bucket,
            key,
            ExtraArgs={
                "ServerSideEncryption": "AES256",
                "Metadata": {SHA_KEY: sha},
                "ExpectedBucketOwner": target.account,
            },
        )
        print(f"  uploaded s3://{target.bucket}/{key}")


def _bucket(s3: Any, target: Target, plan: list[str]) -> None:
    """The staging bucket exists in the Region, is the account's, encrypts with SSE-S3 and blocks public access."""
    try:
        head = s3.head_bucket(Bucket=target.bucket, ExpectedBucketOwner=target.account)
    except ClientError as exc:
        if _status(exc) in {"403", "AccessDenied"}:
            # HeadBucket: 403 when the bucket is another account's (ExpectedBucketOwner) or access is denied.
            raise BadInput(
                f"bucket {target.bucket} ({target.region}'s install_uri) is another account's or denied to "
                f"these credentials; choose another bucket name in {target.region}'s storage.qumulo_core.install_uri"
            ) from None
        if _status(exc) not in {"404", "NoSuchBucket"}:
            raise
        print(plan[1])
        # CreateBucket: outside us-east-1 the Region is named as LocationConstraint (botocore s3 model).
        where = (
            {}
            if target.region == "us-east-1"
            else {"CreateBucketConfiguration": {"LocationConstraint": target.region}}
        )
        try:
            s3.create_bucket(Bucket=target.bucket, **where)
        except ClientError as create:
            if _status(create) == "BucketAlreadyExists":  # bucket names are global: another account holds it
                raise BadInput(
                    f"bucket name {target.bucket} is taken by another account; choose another in "
                    f"{target.region}'s storage.qumulo_core.install_uri"
                ) from None
            raise
    else:
        # HeadBucketOutput.BucketRegion (x-amz-bucket-region): the nodes read the package through their Region's
        # S3 gateway endpoint, which reaches buckets of that Region only.
        found = head.get("BucketRegion") or head.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get(
            "x-amz-bucket-region"
        )
        if found and found != target.region:
            raise BadInput(
                f"bucket {target.bucket} is in {found}, not {target.region}: give {target.region} its own staging "
                "bucket in its storage.qumulo_core.install_uri (docs/runbooks/qumulo-core.md)"
            )
        print(f"  bucket {target.bucket} exists in {target.region}")
    try:
        s3.get_bucket_encryption(Bucket=target.bucket, ExpectedBucketOwner=target.account)
    except ClientError as exc:
        if _status(exc) != "ServerSideEncryptionConfigurationNotFoundError":
            raise
        print(plan[2])
        s3.put_bucket_encryption(
            Bucket=target.bucket, ServerSideEncryptionConfiguration=SSE_S3, ExpectedBucketOwner=target.account
        )
    try:
        block = s3.get_public_access_block(Bucket=target.bucket, ExpectedBucketOwner=target.account)
        current = block["PublicAccessBlockConfiguration"]
    except ClientError as exc:
        if _status(exc) != "NoSuchPublicAccessBlockConfiguration":
            raise
        current = {}
    if current != PUBLIC_ACCESS_BLOCK:
        print(plan[3])
        s3.put_public_access_block(
            Bucket=target.bucket,
            PublicAccessBlockConfiguration=PUBLIC_ACCESS_BLOCK,
            ExpectedBucketOwner=target.account,
        )
