"""Preflight rows for CNQ: the staged Qumulo Core package, the release, the pinned Ubuntu image, and room for
the floating IPs on the nodes' interfaces.

Read-only, like every preflight check. Sources: Qumulo's CNQ-on-AWS guide (qumulo-core.deb and
host_configuration.tar.gz staged at <bucket>/<prefix>/qumulo-core-install/<version>/), Canonical's public SSM parameters for
Ubuntu images on AWS (/aws/service/canonical/ubuntu/server/<release>/stable/current/<arch>/hvm/ebs-gp3/ami-id)
and Canonical's AWS account 099720109477, which owns its Ubuntu images.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import re
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from hubspoke.cli.checks import error_code, pages
from hubspoke.cli.preflight.checks import CheckResult, region_path
from hubspoke.cnq_boot import node_boot_script
from hubspoke.config import HubSpokeConfig, RegionConfig
from hubspoke.config.cnq import QUMULO_CORE_MIN_VERSION, QUMULO_HOST_CONFIGURATION
from hubspoke.mtu import peer_mtu_parameter_path
from hubspoke.names import CNQ_CLUSTER_TAG, cnq_cluster_name
from hubspoke.topology import stack_name

# Qumulo's own AWS deployments default to Ubuntu 24.04 (qumulo-terraform-aws, variable ami_id); every
# instance family Qumulo supports (hubspoke.config.storage_rules.CNQ_INSTANCE_FAMILIES) is x86_64.
UBUNTU_PARAMETER = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
CANONICAL_OWNER = "099720109477"
# ASSUMED: an image older than this has missed enough kernel and security updates to say so (warning only).
IMAGE_MAX_AGE_DAYS = 90
_MISSING = {"404", "NoSuchKey", "NotFound"}
# S3 API Reference, HeadObject, Permissions (the same text is the HeadObject documentation in botocore's s3
# 2006-03-01 model): "If the object you request doesn't exist, the error that Amazon S3 returns depends on
# whether you also have the s3:ListBucket permission": 404 with it, 403 Forbidden without. A HEAD error has no
# body, so botocore's code is the status ("403"). A 403 therefore means "missing" or "denied"; only
# s3:ListBucket on the bucket tells the two apart.
_AMBIGUOUS = {"403", "AccessDenied", "Forbidden"}


def _ambiguous(uri: str, bucket: str, key: str) -> tuple[str, str]:
    """The detail and fix of a 403 to HeadObject: the object is missing, or reading it is denied."""
    return (
        f"S3 answered 403 to HeadObject on {uri}: either it does not exist, or these credentials may not read "
        "it. Without s3:ListBucket on the bucket S3 answers 403, not 404, for a missing object (S3 API "
        "Reference, HeadObject), so preflight cannot tell which",
        f"grant these credentials s3:ListBucket on arn:aws:s3:::{bucket} and s3:GetObject on "
        f"arn:aws:s3:::{bucket}/{key} (then a missing object answers 404 and is named), or check with "
        f"credentials that have them: `aws s3 ls {uri}`",
    )


def _aws_managed_s3_key(kms: Any, key_id: str) -> bool | None:
    """Whether `key_id` is the Region's AWS managed key for S3 (alias aws/s3); None if KMS would not say.

    ListAliases lists AWS managed aliases with their TargetKeyId (KMS API reference, ListAliases); S3 names
    the object's key as an ARN or ID in SSEKMSKeyId (S3 API, HeadObject). ListAliases answers at most 50
    aliases per page unless asked for up to 100 (KMS API reference, ListAliases, Limit) and is paginated
    (botocore kms 2014-11-01 paginators-1.json: Marker, NextMarker, Truncated): every page is read."""
    try:
        aliases = list(pages(kms, "list_aliases", "Aliases"))
    except ClientError:
        return None
    target = next(
        (str(a.get("TargetKeyId") or "") for a in aliases if a.get("AliasName") == "alias/aws/s3"), ""
    )
    return bool(target) and (key_id == target or key_id.endswith(f"/{target}"))


def check_staged_package(
    s3: Any, *, config: HubSpokeConfig, region: RegionConfig, kms: Any = None
) -> CheckResult:
    """The configured release's qumulo-core.deb exists where the nodes will download it."""
    name, core = region.region, region.storage.qumulo_core
    assert core is not None  # required with storage (hubspoke.config.storage_rules)
    field = f"{region_path(config, region)}.storage.qumulo_core"
    upload = f"aws s3 cp qumulo-core.deb {core.package_uri} --region {name}"
    try:
        head = s3.head_object(Bucket=core.bucket, Key=core.package_key)
    except ClientError as exc:
        code = error_code(exc)
        if code in _MISSING:
            return CheckResult(
                name,
                "qumulo core package",
                "fail",
                f"{core.package_uri} does not exist",
                f"download Qumulo Core {core.version} (qumulo-core.deb) from Qumulo Nexus and run `{upload}`, "
                f"or fix {field} (docs/runbooks/qumulo-core.md)",
            )
        if code in _AMBIGUOUS:
            detail, fix = _ambiguous(core.package_uri, core.bucket, core.package_key)
            return CheckResult(name, "qumulo core package", "fail", detail, fix)
        raise
    size = int(head.get("ContentLength", 0))
    # HeadObject names the object's server-side encryption (S3 API, HeadObject ServerSideEncryption,
    # SSEKMSKeyId): the node role holds no KMS permission on a key of the user's, so it could not decrypt.
    encryption = str(head.get("ServerSideEncryption") or "")
    key_id = str(head.get("SSEKMSKeyId") or "")
    managed = (
        _aws_managed_s3_key(kms, key_id) if encryption.startswith("aws:kms") and kms and key_id else None
    )
    if managed:
        # ASSUMED (no stored source): the key policy AWS gives its managed key aws/s3 lets every principal of
        # the account use it through S3 (conditions kms:ViaService s3.<region>.amazonaws.com and
        # kms:CallerAccount; AWS KMS Developer Guide, "AWS managed keys"), so the nodes' role, which may read
        # the bucket, can download it. A warning, not a pass: if the download fails, SSE-S3 is the way out.
        return CheckResult(
            name,
            "qumulo core package",
            "warn",
            f"{core.package_uri} is encrypted with the AWS managed key aws/s3 ({key_id}); principals of this "
            f"account decrypt it through S3, so the nodes should download it ({size / 2**20:.0f} MiB)",
            f"if a node's install log shows AccessDenied on the download, upload it again with SSE-S3: "
            f"`{upload} --sse AES256` (docs/runbooks/qumulo-core.md)",
        )
    if encryption.startswith("aws:kms"):
        return CheckResult(
            name,
            "qumulo core package",
            "fail",
            f"{core.package_uri} is encrypted with {encryption} (key {head.get('SSEKMSKeyId', '?')}); the "
            "nodes' role has no KMS permission on it and could not download it",
            f"upload it again with SSE-S3: `{upload} --sse AES256` (docs/runbooks/qumulo-core.md)",
        )
    return CheckResult(
        name, "qumulo core package", "pass", f"{core.package_uri} is staged ({size / 2**20:.0f} MiB)"
    )


def check_host_configuration(s3: Any, *, region: RegionConfig) -> CheckResult:
    """host_configuration.tar.gz beside the package, as the guide stages it (a warning: the nodes do not read it)."""
    core = region.storage.qumulo_core
    assert core is not None
    uri = f"s3://{core.bucket}/{core.host_configuration_key}"
    try:
        s3.head_object(Bucket=core.bucket, Key=core.host_configuration_key)
    except ClientError as exc:
        code = error_code(exc)
        if code in _AMBIGUOUS:
            detail, fix = _ambiguous(uri, core.bucket, core.host_configuration_key)
            return CheckResult(region.region, "qumulo host configuration", "warn", detail, fix)
        if code not in _MISSING:
            raise
        return CheckResult(
            region.region,
            "qumulo host configuration",
            "warn",
            f"{uri} does not exist; Qumulo's guide stages it beside the package (hubspoke's nodes do not read "
            "it: ASSUMED, see the runbook)",
            f"download {QUMULO_HOST_CONFIGURATION} for Qumulo Core {core.version} from Qumulo Nexus and run "
            f"`aws s3 cp {QUMULO_HOST_CONFIGURATION} {uri} --region {region.region}`",
        )
    return CheckResult(region.region, "qumulo host configuration", "pass", f"{uri} is staged")


def bundled_sdk_version() -> str:
    """The qumulo-api the provisioning Lambda bundles: the installed distribution (cnq/bundling.py copies it)."""
    return metadata.version("qumulo-api")


def check_release(config: HubSpokeConfig, region: RegionConfig) -> CheckResult:
    """The release every storage Region installs, and that the bundled SDK speaks it.

    Validation already refused old or mismatched releases. The handlers and the contract fake are tested
    with the bundled qumulo-api against the same Qumulo Core release only (7.10.2.1 today); the v2 portal
    API they drive is marked preview in Qumulo's REST guide in some versions and its request bodies differ
    between versions of the guide, so any other release is refused until the SDK is pinned to it.
    """
    core = region.storage.qumulo_core
    assert core is not None
    others = sorted({r.region for r in config.regions() if r.storage.enabled} - {region.region})
    minimum = ".".join(map(str, QUMULO_CORE_MIN_VERSION))
    same = f", the same as {', '.join(others)}" if others else ""
    sdk = bundled_sdk_version()
    if core.version != sdk:
        return CheckResult(
            region.region,
            "qumulo core release",
            "fail",
            f"Qumulo Core {core.version}, but the provisioning Lambda bundles qumulo-api {sdk}, the only SDK "
            "and Core pair hubspoke is tested with; the Cloud Data Fabric v2 API it uses has changed between "
            "releases",
            f"stage Qumulo Core {sdk}, or pin qumulo-api=={core.version} in pyproject.toml, reinstall, run "
            "tests/constructs/cnq and deploy from that checkout (docs/runbooks/qumulo-core.md)",
        )
    return CheckResult(
        region.region,
        "qumulo core release",
        "pass",
        f"Qumulo Core {core.version} (>= {minimum}{same}; the bundled qumulo-api is {sdk})",
    )


def check_ubuntu_image(
    ssm: Any, ec2: Any, *, config: HubSpokeConfig, region: RegionConfig, now: datetime | None = None
) -> list[CheckResult]:
    """The Region's current Canonical Ubuntu 24.04 image as a line to paste, and how the pinned one compares."""
    name, pinned = region.region, region.storage.ami_id
    current = str(ssm.get_parameter(Name=UBUNTU_PARAMETER)["Parameter"]["Value"])
    field = f"{region_path(config, region)}.storage.ami_id"
    paste = f"set {field}: {current}"
    try:
        images = ec2.describe_images(ImageIds=[pinned])["Images"]
    except ClientError as exc:
        if error_code(exc) != "InvalidAMIID.NotFound":
            raise
        images = []
    if not images:
        return [
            CheckResult(name, "ubuntu image", "fail", f"{field} {pinned} does not exist in {name}", paste)
        ]
    image = images[0]
    rows = []
    if image.get("OwnerId") != CANONICAL_OWNER:
        rows.append(
            CheckResult(
                name,
                "ubuntu image",
                "warn",
                f"{pinned} is owned by {image.get('OwnerId')}, not Canonical ({CANONICAL_OWNER}); the node "
                "script expects a stock Ubuntu 24.04 (snapd, apt)",
                paste,
            )
        )
    age = _age_days(image.get("CreationDate"), now or datetime.now(UTC))
    if pinned == current:
        rows.append(
            CheckResult(name, "ubuntu image", "pass", f"{pinned} is Canonical's current Ubuntu 24.04")
        )
    elif age is None:
        rows.append(
            CheckResult(
                name,
                "ubuntu image",
                "warn",
                f"EC2 gave no readable creation date for {pinned}, so its age is unknown; Canonical's current "
                f"Ubuntu 24.04 is {current}",
                f"pin the current image before the first deploy: {paste}",
            )
        )
    elif age > IMAGE_MAX_AGE_DAYS:
        rows.append(
            CheckResult(
                name,
                "ubuntu image",
                "warn",
                f"{pinned} is {age} days old; Canonical's current Ubuntu 24.04 is {current}",
                f"before the first deploy: {paste}. A running cluster refuses a new image (it would replace "
                "every node): move with Qumulo's cluster-replacement procedure (docs/runbooks/qumulo-core.md)",
            )
        )
    else:
        rows.append(
            CheckResult(name, "ubuntu image", "pass", f"{pinned} is {age} days old (current: {current})")
        )
    return rows


def _age_days(created: object, now: datetime) -> int | None:
    """Whole days since an image's CreationDate, None when EC2 gave none or one that does not read as a date.

    CreationDate is an optional string (botocore ec2 2016-11-15 model: the Image shape has no required member),
    ISO 8601 with a Z as EC2 answers it (ASSUMED: the model gives no format, hence None for any other);
    Python 3.11's datetime.fromisoformat reads the Z itself.
    """
    try:
        return (now - datetime.fromisoformat(str(created))).days if created else None
    except (TypeError, ValueError):  # not ISO 8601, or without a time zone to subtract from an aware now
        return None


def check_floating_ip_room(ec2: Any, *, config: HubSpokeConfig, region: RegionConfig) -> CheckResult:
    """Every node's one interface carries its primary address and its share of the floating IPs, within the
    IPv4 addresses EC2 allows one interface of the instance type (DescribeInstanceTypes,
    NetworkInfo.Ipv4AddressesPerInterface). Past it the Storage stack fails creating the interface."""
    storage = region.storage
    # The first nodes carry one more when the total does not divide evenly (StorageConfig.floating_ips_on_node).
    need = 1 + storage.floating_ips_on_node(0)
    [info] = ec2.describe_instance_types(InstanceTypes=[storage.instance_type])["InstanceTypes"]
    room = int(info["NetworkInfo"]["Ipv4AddressesPerInterface"])
    field = f"{region_path(config, region)}.storage.floating_ip_count"
    if need > room:
        return CheckResult(
            region.region,
            "floating ip room",
            "fail",
            f"{storage.floating_ips} floating IPs over {storage.node_count} nodes put {need - 1} on one interface "
            f"besides its primary address; {storage.instance_type} allows {room} IPv4 addresses per interface",
            f"set {field} to at most {(room - 1) * storage.node_count}, or raise node_count",
        )
    return CheckResult(
        region.region,
        "floating ip room",
        "pass",
        f"{need} of {room} IPv4 addresses per {storage.instance_type} interface (primary + floating IPs)",
    )


# The persistent-storage buckets' logical IDs in a Storage stack: CDK joins the construct path (Cnq, then
# PersistentStorage<n>: stacks/storage.py and constructs/cnq/infrastructure.py) and appends an 8-character
# hash (tests/cli/test_preflight_cnq.py checks this against the synthesized template).
PERSISTENT_STORAGE_LOGICAL_ID = re.compile(r"^CnqPersistentStorage\d+[0-9A-F]{8}$")
_LIVE_NODES = ["pending", "running", "stopping", "stopped"]


def _deployed_buckets(cloudformation: Any, stack: str) -> int | None:
    """The persistent-storage buckets the deployed Storage stack holds; None before its first deploy."""
    try:
        found = list(pages(cloudformation, "list_stack_resources", "StackResourceSummaries", StackName=stack))
    except ClientError as exc:
        # CloudFormation answers a stack that does not exist with ValidationError "... does not exist".
        if error_code(exc) == "ValidationError" and "does not exist" in str(exc):
            return None
        raise
    # LogicalResourceId is a required member of StackResourceSummary (botocore cloudformation 2010-05-15 model).
    return sum(
        1
        for r in found
        if r.get("ResourceType") == "AWS::S3::Bucket"
        and PERSISTENT_STORAGE_LOGICAL_ID.match(r["LogicalResourceId"])
    )


def _node_user_data(ec2: Any, cluster: str) -> set[str]:
    """sha256 of the user data each live node of `cluster` was launched with, found by the tag the node-shape
    guard reads (DescribeInstances by tag, DescribeInstanceAttribute userData, base64)."""
    reservations = pages(
        ec2,
        "describe_instances",
        "Reservations",
        Filters=[
            {"Name": f"tag:{CNQ_CLUSTER_TAG}", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": _LIVE_NODES},
        ],
    )
    found = set()
    for instance in (i for r in reservations for i in r["Instances"]):
        answer = ec2.describe_instance_attribute(InstanceId=instance["InstanceId"], Attribute="userData")
        encoded = (answer.get("UserData") or {}).get("Value") or ""
        found.add(hashlib.sha256(base64.b64decode(encoded)).hexdigest())
    return found


def check_deployed_cluster(
    cloudformation: Any, ec2: Any, *, config: HubSpokeConfig, region: RegionConfig
) -> list[CheckResult]:
    """What this config would change on a cluster already deployed here that the user did not ask for: the
    nodes' first-boot script (the node-shape guard refuses new user data on running nodes) and more buckets
    (Qumulo cannot remove persistent storage, so an add is for good)."""
    name, storage = region.region, region.storage
    field = f"{region_path(config, region)}.storage"
    check = "cnq deployed shape"
    stack = stack_name(config, "storage", name)
    have = _deployed_buckets(cloudformation, stack)
    if have is None:
        return [CheckResult(name, check, "pass", f"no Storage stack {stack} yet: nothing deployed to keep")]
    rows: list[CheckResult] = []
    want = storage.buckets
    if want > have and storage.bucket_count is None:
        rows.append(CheckResult(
            name, check, "fail",
            f"{stack} holds {have} persistent-storage buckets; this config states no bucket_count, so Qumulo's rule "
            f"for {storage.soft_capacity_limit_tb} TB, max(16, ceil(TB / 500)) = {want}, would add {want - have} "
            "buckets to the cluster for good (Qumulo cannot remove persistent storage)",
            f"to keep the cluster as it is, set {field}.bucket_count: {have}; to grow it, set "
            f"{field}.bucket_count: {want} (docs/runbooks/qumulo-core.md, 'Upgrading an existing cluster')",
        ))  # fmt: skip
    elif want > have:
        rows.append(CheckResult(
            name, check, "warn",
            f"{field}.bucket_count {want} adds {want - have} buckets to the {have} in {stack}: irreversible "
            "(Qumulo cannot remove persistent storage)",
            f"if that is not meant, set {field}.bucket_count: {have}",
        ))  # fmt: skip
    elif want < have:
        rows.append(CheckResult(
            name, check, "fail",
            f"{stack} holds {have} persistent-storage buckets and this config {want}: Qumulo cannot remove "
            "persistent storage, so the deploy would be refused",
            f"set {field}.bucket_count: {have}",
        ))  # fmt: skip
    else:
        rows.append(CheckResult(name, check, "pass", f"{have} persistent-storage buckets, as deployed"))
    cluster = cnq_cluster_name(config.environment, name)
    running = _node_user_data(ec2, cluster)
    if not running:
        return [*rows, CheckResult(name, check, "pass", f"no running node of {cluster} to compare")]
    script = node_boot_script(storage, region=name, environment=config.environment, cluster=cluster,
                              peer_mtu_path=peer_mtu_parameter_path(config))  # fmt: skip
    if running == {hashlib.sha256(script.encode()).hexdigest()}:
        rows.append(
            CheckResult(name, check, "pass", f"the nodes of {cluster} run this config's first-boot script")
        )
    else:
        rows.append(CheckResult(
            name, check, "fail",
            f"the nodes of {cluster} run a first-boot script this config does not render (another hubspoke "
            "release built them, or cache_volumes changed): the node-shape guard will refuse the deploy",
            "deploy this Region's Storage stack from the hubspoke release that built the nodes, or set "
            f"{field}.cache_volumes back (docs/runbooks/qumulo-core.md, 'When the node-shape guard refuses')",
        ))  # fmt: skip
    return rows
