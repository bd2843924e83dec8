"""Preflight's CNQ rows against moto (in-process and as a server): the staged package, the release and
the pinned Ubuntu image; and `hubspoke ami`, which needs no config.

Sources: the package path is Qumulo's (<bucket>/<prefix>/qumulo-core-install/<version>/qumulo-core.deb,
CNQ-on-AWS guide); Canonical publishes its current Ubuntu image per Region as the public SSM parameter
/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id and owns its images
from account 099720109477.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from hubspoke.cli.main import main
from hubspoke.cli.preflight import run_preflight
from hubspoke.cli.preflight.checks import CheckResult
from hubspoke.config import load
from tests.cli.preflight_world import Unsupported, World, only_checks
from tests.conftest import QUMULO_CORE, ROOT, minimal, pinned_ami, write_config

CANONICAL = "099720109477"
PACKAGE = QUMULO_CORE["install_uri"] + QUMULO_CORE["version"] + "/qumulo-core.deb"
# Checks a test runs alone (only_checks): the two staged objects; the package with the release and the image.
CNQ_OBJECTS = {"qumulo core package", "qumulo host configuration"}
CNQ_FILES = {"qumulo core package", "qumulo core release", "ubuntu image"}


def _rows(results: list[CheckResult], check: str, region: str) -> list[CheckResult]:
    return [r for r in results if r.check == check and r.region == region]


def _ready(world: World) -> None:
    """The account of `minimal()`: bootstrapped, its pinned images Canonical's and current, packages staged."""
    for region in ("us-east-2", "us-west-2"):
        world.bootstrap(region)
        world.image(region, pinned_ami(region))
        world.stage(PACKAGE, region)


def _run(
    tmp_path: Path,
    world: World,
    *,
    checks: Collection[str] | None,
    images: dict[str, str] | None = None,
    **overrides: Any,
) -> list[CheckResult]:
    """preflight of minimal() with `overrides`, every Region: its `checks` (only_checks), None for every one."""
    config = load(write_config(tmp_path, minimal(**overrides))).config
    current = images if images is not None else {r: pinned_ami(r) for r in ("us-east-2", "us-west-2")}
    with only_checks(checks):
        return run_preflight(config, Unsupported(world.clients, ubuntu_images=current))


def test_staged_package_and_current_image_pass(world: World, tmp_path: Path) -> None:
    _ready(world)
    world.stage(PACKAGE, "us-west-2", mib=2)  # HeadObject's ContentLength is in bytes (S3 API Reference)
    results = _run(tmp_path, world, checks=CNQ_FILES)
    for region in ("us-east-2", "us-west-2"):
        (package,) = _rows(results, "qumulo core package", region)
        assert package.status == "pass" and PACKAGE in package.detail
        (release,) = _rows(results, "qumulo core release", region)
        assert release.status == "pass" and "7.10.2.1" in release.detail
        # The floor it is held to, the other storage Region it matches, and the SDK it was checked against.
        other = "us-west-2" if region == "us-east-2" else "us-east-2"
        pattern = rf"Qumulo Core 7\.10\.2\.1 \(>= \d+\.\d+\.\d+(\.\d+)?, the same as {other}; the bundled qumulo-api is 7\.10\.2\.1\)"
        assert re.fullmatch(pattern, release.detail), release.detail
        (image,) = _rows(results, "ubuntu image", region)
        assert (
            image.status == "pass"
            and image.detail == f"{pinned_ami(region)} is Canonical's current Ubuntu 24.04"
        )
    assert "is staged (2 MiB)" in _rows(results, "qumulo core package", "us-west-2")[0].detail


def test_a_missing_package_fails_with_the_upload_command(world: World, tmp_path: Path) -> None:
    _ready(world)
    bucket, key = PACKAGE.removeprefix("s3://").split("/", 1)
    world.clients("s3", "us-east-2").delete_object(Bucket=bucket, Key=key)
    rows = [
        r for r in _run(tmp_path, world, checks={"qumulo core package"}) if r.check == "qumulo core package"
    ]
    assert {(r.region, r.status) for r in rows} == {("us-east-2", "fail"), ("us-west-2", "fail")}, (
        "one staging bucket"
    )
    for row in rows:
        assert f"{PACKAGE} does not exist" in row.detail
        assert row.fix == (
            "download Qumulo Core 7.10.2.1 (qumulo-core.deb) from Qumulo Nexus and run "
            f"`aws s3 cp qumulo-core.deb {PACKAGE} --region {row.region}`, or fix "
            f"{'hub' if row.region == 'us-east-2' else 'spokes[0]'}.storage.qumulo_core (docs/runbooks/qumulo-core.md)"
        )


def test_an_old_pinned_image_warns_with_the_line_to_paste(world: World, tmp_path: Path) -> None:
    _ready(world)
    world.image("us-west-2", pinned_ami("us-west-2"), age_days=200)
    world.image("us-west-2", "ami-0fedcba9876543210")
    results = _run(
        tmp_path,
        world,
        checks={"ubuntu image"},
        images={"us-east-2": pinned_ami("us-east-2"), "us-west-2": "ami-0fedcba9876543210"},
    )
    (row,) = _rows(results, "ubuntu image", "us-west-2")
    assert row.status == "warn"
    assert (
        row.detail
        == f"{pinned_ami('us-west-2')} is 200 days old; Canonical's current Ubuntu 24.04 is ami-0fedcba9876543210"
    )
    assert row.fix.startswith(
        "before the first deploy: set spokes[0].storage.ami_id: ami-0fedcba9876543210. A running"
    )
    assert row.fix.endswith(
        "(it would replace every node): move with Qumulo's cluster-replacement procedure (docs/runbooks/qumulo-core.md)"
    )
    assert "Qumulo's cluster-replacement procedure" in row.fix, "a running cluster refuses a new image"


@pytest.mark.parametrize(("age", "status"), [(30, "pass"), (90, "pass"), (91, "warn")])
def test_a_pinned_image_that_is_not_current_passes_until_it_is_old(
    world: World, tmp_path: Path, age: int, status: str
) -> None:
    """Canonical's parameter names a newer image than the pin: a pin up to 90 days old (ASSUMED limit,
    hubspoke.cli.preflight.cnq, documented as a warning only) passes and says how old it is and which image is
    current; older warns."""
    _ready(world)
    world.image("us-west-2", pinned_ami("us-west-2"), age_days=age)
    world.image("us-west-2", "ami-0fedcba9876543210")
    images = {"us-east-2": pinned_ami("us-east-2"), "us-west-2": "ami-0fedcba9876543210"}
    (row,) = _rows(_run(tmp_path, world, checks={"ubuntu image"}, images=images), "ubuntu image", "us-west-2")
    assert row.status == status, row
    if status == "pass":
        assert row.detail == f"{pinned_ami('us-west-2')} is {age} days old (current: ami-0fedcba9876543210)"


class _Answered:
    """A creation date moto writes into its DescribeImages answer as given (moto formats it with strftime)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def strftime(self, _: str) -> str:
        return self.text


@pytest.mark.parametrize("creation_date", ["", "last Tuesday"])
def test_a_pinned_image_without_a_readable_creation_date_warns_instead_of_stopping_preflight(
    world: World, tmp_path: Path, creation_date: str
) -> None:
    """The botocore ec2 2016-11-15 model's Image shape has no required member, and its own DescribeImages example
    answers without CreationDate: a pin that is not current, answered with an empty or unreadable date, is of
    unknown age; it warns with the line to paste, and every other row still prints."""
    _ready(world)
    world.image("us-west-2", pinned_ami("us-west-2"))
    world.image("us-west-2", "ami-0fedcba9876543210")
    from moto.ec2.models import ec2_backends

    image = ec2_backends["123456789012"]["us-west-2"].amis[pinned_ami("us-west-2")]
    image.creation_date = _Answered(creation_date)
    images = {"us-east-2": pinned_ami("us-east-2"), "us-west-2": "ami-0fedcba9876543210"}
    results = _run(tmp_path, world, checks=None, images=images)  # every check: the others still print
    (row,) = _rows(results, "ubuntu image", "us-west-2")
    assert row.status == "warn", row
    assert pinned_ami("us-west-2") in row.detail and "age is unknown" in row.detail
    assert row.fix.endswith("set spokes[0].storage.ami_id: ami-0fedcba9876543210")
    assert _rows(results, "qumulo core package", "us-west-2"), "the rows after it still print"


def test_a_missing_or_foreign_image_is_reported(world: World, tmp_path: Path) -> None:
    _ready(world)
    world.image("us-east-2", pinned_ami("us-east-2"), owner="123456789012")
    world.clients("ec2", "us-west-2")  # the spoke's pinned image is not registered below
    from moto.ec2.models import ec2_backends

    del ec2_backends["123456789012"]["us-west-2"].amis[pinned_ami("us-west-2")]
    results = _run(tmp_path, world, checks={"ubuntu image"})
    hub = _rows(results, "ubuntu image", "us-east-2")
    assert [r.status for r in hub] == ["warn", "pass"] and "not Canonical" in hub[0].detail
    # Canonical publishes its Ubuntu images from account 099720109477 (Ubuntu on AWS docs, "Find Ubuntu images").
    assert (
        "is owned by 123456789012, not Canonical (099720109477); the node script expects a stock Ubuntu 24.04 (snapd, apt)"
        in hub[0].detail
    )
    assert hub[0].fix == f"set hub.storage.ami_id: {pinned_ami('us-east-2')}"
    (spoke,) = _rows(results, "ubuntu image", "us-west-2")
    assert spoke.status == "fail" and "does not exist in us-west-2" in spoke.detail
    assert spoke.fix == f"set spokes[0].storage.ami_id: {pinned_ami('us-west-2')}"


def test_regions_without_storage_get_no_cnq_rows(world: World, tmp_path: Path) -> None:
    _ready(world)
    spoke = {
        "region": "us-west-2",
        "cidr": "10.20.0.0/16",
        "storage": {"enabled": False},
        "compute": {"enabled": False},
    }
    results = _run(tmp_path, world, checks=CNQ_FILES, spokes=[spoke])
    assert not [
        r for r in results if r.region == "us-west-2" and r.check in ("qumulo core package", "ubuntu image")
    ]
    # The hub's release has no other storage Region to match.
    (release,) = _rows(results, "qumulo core release", "us-east-2")
    assert re.fullmatch(
        r"Qumulo Core 7\.10\.2\.1 \(>= [\d.]+; the bundled qumulo-api is 7\.10\.2\.1\)", release.detail
    )


def test_preflight_refuses_mismatched_releases_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A portal needs the same release on both sides: the config does not get as far as AWS."""
    data = minimal()
    data["spokes"][0]["storage"]["qumulo_core"] = {**QUMULO_CORE, "version": "7.11.0"}
    assert main(["preflight", "--config", str(write_config(tmp_path, data))]) == 2
    assert "spokes[0].storage.qumulo_core.version: 7.11.0 differs from hub" in capsys.readouterr().err


def test_ami_prints_the_line_to_paste_without_a_config(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hubspoke.cli.ami as ami

    images = {"us-east-2": "ami-0123456789abcdef0", "us-west-2": "ami-0fedcba9876543210"}
    monkeypatch.setattr(
        ami, "session_clients", lambda profile=None: Unsupported(world.clients, ubuntu_images=images)
    )
    assert main(["ami", "--region", "us-east-2", "--region", "us-west-2"]) == 0
    out = capsys.readouterr().out
    assert "ami_id: ami-0123456789abcdef0" in out and "ami_id: ami-0fedcba9876543210" in out
    assert main(["ami", "--region", "eu-north-1", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["images"]["eu-north-1"].startswith("error")
    assert main(["ami", "--region", "mars-1"]) == 2


def test_a_release_other_than_the_bundled_sdks_fails_the_release_row(world: World, tmp_path: Path) -> None:
    """The provisioning Lambda bundles the installed qumulo-api (hubspoke.constructs.cnq.bundling), 7.10.2.1,
    and the handlers and the contract fake are tested against that pair only. The v2 portal API it drives
    changed shape between versions of Qumulo's REST guide, so a release the bundled SDK was not built for is
    refused before deploying, with the two ways out (stage the SDK's release, or pin the SDK to yours)."""
    _ready(world)
    data = minimal()
    for region in (data["hub"], data["spokes"][0]):
        region["storage"]["qumulo_core"] = {**QUMULO_CORE, "version": "7.10.3"}
    config = load(write_config(tmp_path, data)).config
    current = {r: pinned_ami(r) for r in ("us-east-2", "us-west-2")}
    with only_checks({"qumulo core release"}):
        results = run_preflight(config, Unsupported(world.clients, ubuntu_images=current))
    for region in ("us-east-2", "us-west-2"):
        (release,) = _rows(results, "qumulo core release", region)
        assert release.status == "fail" and "qumulo-api 7.10.2.1" in release.detail, release
        assert release.detail.startswith(
            "Qumulo Core 7.10.3, but the provisioning Lambda bundles qumulo-api 7.10.2.1, the only SDK and Core pair hubspoke is tested with"
        )
        assert release.fix == (
            "stage Qumulo Core 7.10.2.1, or pin qumulo-api==7.10.3 in pyproject.toml, reinstall, run "
            "tests/constructs/cnq and deploy from that checkout (docs/runbooks/qumulo-core.md)"
        )


def test_dev_config_passes_in_a_deployed_account(world: World) -> None:
    world.deployed_dev()
    results = run_preflight(load(ROOT / "config" / "dev.yaml").config, Unsupported(world.clients))
    cnq = [r for r in results if r.check in ("qumulo core package", "qumulo core release", "ubuntu image")]
    assert len(cnq) == 6 and all(r.status == "pass" for r in cnq), cnq


def test_a_package_encrypted_with_sse_kms_fails(world: World, tmp_path: Path) -> None:
    """HeadObject names the object's encryption (S3 API: ServerSideEncryption, SSEKMSKeyId); the nodes' role
    has no permission on a customer key, so the package could not be downloaded."""
    _ready(world)
    key = world.clients("kms", "us-east-2").create_key()["KeyMetadata"]["Arn"]
    world.stage(PACKAGE, "us-east-2", ServerSideEncryption="aws:kms", SSEKMSKeyId=key)
    rows = {
        r.region: r
        for r in _run(tmp_path, world, checks={"qumulo core package"})
        if r.check == "qumulo core package"
    }
    assert rows["us-east-2"].status == "fail"
    assert rows["us-east-2"].detail == (
        f"{PACKAGE} is encrypted with aws:kms (key {key}); the nodes' role has no KMS permission on it and could "
        "not download it"
    )
    assert rows["us-east-2"].fix == (
        f"upload it again with SSE-S3: `aws s3 cp qumulo-core.deb {PACKAGE} --region us-east-2 --sse AES256` "
        "(docs/runbooks/qumulo-core.md)"
    )


def test_a_package_encrypted_with_the_aws_managed_s3_key_is_not_refused(world: World, tmp_path: Path) -> None:
    """The AWS managed key aws/s3 is not a key of the user's: its key policy lets the account's principals
    use it through S3 (AWS KMS Developer Guide, 'AWS managed keys'; ASSUMED, not in the stored sources), so
    the nodes' role can read the package. The row warns with the way out instead of failing. Which key is
    aws/s3 comes from ListAliases (TargetKeyId), as KMS lists AWS managed aliases."""
    _ready(world)
    kms = world.clients("kms", "us-east-2")
    target = next(a["TargetKeyId"] for a in kms.list_aliases()["Aliases"] if a["AliasName"] == "alias/aws/s3")
    key = f"arn:aws:kms:us-east-2:123456789012:key/{target}"
    # HeadObject's ContentLength is the object's size in bytes (S3 API Reference, HeadObject): 3 MiB staged.
    world.stage(PACKAGE, "us-east-2", mib=3, ServerSideEncryption="aws:kms", SSEKMSKeyId=key)
    rows = {
        r.region: r
        for r in _run(tmp_path, world, checks={"qumulo core package"})
        if r.check == "qumulo core package"
    }
    assert rows["us-east-2"].status == "warn"
    assert rows["us-east-2"].detail.startswith(
        f"{PACKAGE} is encrypted with the AWS managed key aws/s3 ({key}); principals of this account decrypt it "
        "through S3, so the nodes should download it ("
    )
    assert rows["us-east-2"].fix.startswith(
        "if a node's install log shows AccessDenied on the download, upload it again with SSE-S3: `aws s3 cp "
    )
    assert "(3 MiB)" in rows["us-east-2"].detail
    assert "--sse AES256" in rows["us-east-2"].fix


def test_a_kms_package_whose_key_kms_will_not_name_fails(world: World, tmp_path: Path) -> None:
    """Only ListAliases tells the AWS managed key aws/s3 from a key of the user's (KMS API Reference,
    ListAliases); when KMS refuses it (AccessDeniedException, 400, as KMS's JSON API answers a caller without
    kms:ListAliases) the key may be the user's, which the nodes' role cannot use: the row fails as for one."""
    _ready(world)
    kms = world.clients("kms", "us-east-2")
    target = next(a["TargetKeyId"] for a in kms.list_aliases()["Aliases"] if a["AliasName"] == "alias/aws/s3")
    key = f"arn:aws:kms:us-east-2:123456789012:key/{target}"
    world.stage(PACKAGE, "us-east-2", ServerSideEncryption="aws:kms", SSEKMSKeyId=key)

    def refuse(model: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        body = {
            "Error": {"Code": "AccessDeniedException", "Message": "not authorized to perform kms:ListAliases"}
        }
        return AWSResponse("https://stub", 400, {}, None), body

    world.clients("kms", "us-east-2").meta.events.register("before-call.kms.ListAliases", refuse)
    rows = {
        r.region: r
        for r in _run(tmp_path, world, checks={"qumulo core package"})
        if r.check == "qumulo core package"
    }
    assert rows["us-east-2"].status == "fail" and f"aws:kms (key {key})" in rows["us-east-2"].detail
    assert "--sse AES256" in rows["us-east-2"].fix


def test_the_host_configuration_file_is_staged_beside_the_package_or_warned(
    world: World, tmp_path: Path
) -> None:
    """Qumulo's guide: copy qumulo-core.deb and host_configuration.tar.gz into the release's folder."""
    _ready(world)
    bucket, key = PACKAGE.removeprefix("s3://").split("/", 1)
    host = key.rsplit("/", 1)[0] + "/host_configuration.tar.gz"
    assert {
        r.status
        for r in _run(tmp_path, world, checks={"qumulo host configuration"})
        if r.check == "qumulo host configuration"
    } == {"pass"}
    world.clients("s3", "us-east-2").delete_object(Bucket=bucket, Key=host)
    rows = [
        r
        for r in _run(tmp_path, world, checks={"qumulo host configuration"})
        if r.check == "qumulo host configuration"
    ]
    assert {r.status for r in rows} == {"warn"}
    for row in rows:
        assert row.detail.startswith(
            f"s3://{bucket}/{host} does not exist; Qumulo's guide stages it beside the"
        )
        assert row.fix == (
            "download host_configuration.tar.gz for Qumulo Core 7.10.2.1 from Qumulo Nexus and run "
            f"`aws s3 cp host_configuration.tar.gz s3://{bucket}/{host} --region {row.region}`"
        )


@pytest.mark.parametrize("missing", ["package", "host configuration"])
def test_a_403_without_list_bucket_is_the_documented_ambiguity_and_names_the_permission(
    world: World, tmp_path: Path, missing: str
) -> None:
    """S3 API Reference, HeadObject, Permissions: for an object that does not exist S3 answers 404 to a caller
    with s3:ListBucket on the bucket and 403 Forbidden to one without. A 403 is "missing or denied": the row says
    so and names s3:ListBucket on the bucket's ARN; the other object's row is still its own, and nothing
    suggests a retry (the answer would be the same)."""
    _ready(world)
    bucket, key = PACKAGE.removeprefix("s3://").split("/", 1)
    host = key.rsplit("/", 1)[0] + "/host_configuration.tar.gz"
    gone = key if missing == "package" else host
    world.clients("s3", "us-east-2").delete_object(Bucket=bucket, Key=gone)
    config = load(write_config(tmp_path, minimal())).config
    current = {r: pinned_ami(r) for r in ("us-east-2", "us-west-2")}
    with only_checks(CNQ_OBJECTS):
        results = run_preflight(
            config, Unsupported(world.clients, ubuntu_images=current, s3_list_bucket=False)
        )
    check = f"qumulo {'core package' if missing == 'package' else 'host configuration'}"
    other = "qumulo host configuration" if missing == "package" else "qumulo core package"
    for region in ("us-east-2", "us-west-2"):
        (row,) = _rows(results, check, region)
        assert row.status == ("fail" if missing == "package" else "warn")
        assert row.detail.startswith(
            f"S3 answered 403 to HeadObject on s3://{bucket}/{gone}: either it does not"
        )
        # The reason, with its source, so the reader can check it: the words as S3's API Reference has them.
        assert "Without s3:ListBucket on the bucket S3 answers 403, not 404" in row.detail
        assert "(S3 API Reference, HeadObject)" in row.detail
        assert f"s3:ListBucket on arn:aws:s3:::{bucket} " in row.fix
        assert (
            f"s3:GetObject on arn:aws:s3:::{bucket}/{gone} (then a missing object answers 404 and is named)"
            in row.fix
        )
        assert row.fix.endswith(
            f", or check with credentials that have them: `aws s3 ls s3://{bucket}/{gone}`"
        )
        assert "retry" not in row.fix
        (kept,) = _rows(results, other, region)
        assert kept.status == "pass"


@pytest.mark.parametrize(
    ("nodes", "floating", "status"), [(4, 100, "pass"), (3, 100, "fail"), (3, 87, "pass")]
)
def test_the_floating_ips_fit_the_node_interfaces(
    world: World, tmp_path: Path, nodes: int, floating: int, status: str
) -> None:
    """EC2 allows an i4i.8xlarge interface 30 IPv4 addresses (EC2 User Guide, "Maximum IP addresses per
    network interface"; DescribeInstanceTypes NetworkInfo.Ipv4AddressesPerInterface). Each node's one
    interface holds its primary address and its share of the cluster's floating IPs: 100 over 4 nodes is
    25 + 1 = 26, over 3 nodes 34 + 1 = 35 (too many); 87 over 3 is 29 + 1 = 30 (exactly fits)."""
    _ready(world)
    data = minimal()
    data["hub"]["storage"].update(node_count=nodes, floating_ip_count=floating, instance_type="i4i.8xlarge")
    config = load(write_config(tmp_path, data)).config
    current = {r: pinned_ami(r) for r in ("us-east-2", "us-west-2")}
    with only_checks({"floating ip room"}):
        results = run_preflight(config, Unsupported(world.clients, ubuntu_images=current))
    (row,) = _rows(results, "floating ip room", "us-east-2")
    assert row.status == status, row
    if status == "fail":
        assert row.detail == (
            "100 floating IPs over 3 nodes put 34 on one interface besides its primary address; i4i.8xlarge "
            "allows 30 IPv4 addresses per interface"
        )
        assert row.fix == "set hub.storage.floating_ip_count to at most 87, or raise node_count"
    else:
        need = {(4, 100): 26, (3, 87): 30}[nodes, floating]  # the docstring's sums
        assert row.detail == f"{need} of 30 IPv4 addresses per i4i.8xlarge interface (primary + floating IPs)"


# --- An existing cluster: its buckets and its nodes' first-boot script ---------------------------------------

STORAGE_STACK = (
    "hubspoke-dev-storage-us-east-2"  # written out: environment prefix, kind, Region (topology.py)
)
HUB_CLUSTER = "dev-use2"  # Qumulo cluster name dev.yaml's hub gets (docs/runbooks/qumulo-core.md)


def _deployed(world: World, *, buckets: int, node_script: str | None, nodes: int = 3) -> None:
    """The hub's Storage stack as a deploy left it: `buckets` persistent-storage buckets (logical IDs
    as CDK names them, Cnq/PersistentStorage<n> plus an 8-character hash), the access-log bucket, and nodes
    launched with `node_script`, tagged as the node-shape guard finds them (hubspoke:cnq-cluster)."""
    template = {
        "Resources": {
            **{f"CnqPersistentStorage{i}{i:08X}": {"Type": "AWS::S3::Bucket"} for i in range(1, buckets + 1)},
            "CnqAccessLogsA1B2C3D4": {"Type": "AWS::S3::Bucket"},
        }
    }
    world.clients("cloudformation", "us-east-2").create_stack(
        StackName=STORAGE_STACK, TemplateBody=json.dumps(template)
    )
    if node_script is None:
        return
    world.clients("ec2", "us-east-2").run_instances(
        ImageId=pinned_ami("us-east-2"), MinCount=nodes, MaxCount=nodes, InstanceType="i4i.8xlarge",
        UserData=node_script,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "hubspoke:cnq-cluster", "Value": HUB_CLUSTER}]}],
    )  # fmt: skip


def _hub_script(tmp_path: Path) -> str:
    """What a node of the hub was launched with: the first-boot script (seeding, not the oracle)."""
    from hubspoke.cnq_boot import node_boot_script

    config = load(write_config(tmp_path, minimal())).config
    return node_boot_script(config.hub.storage, region="us-east-2", environment="dev", cluster=HUB_CLUSTER,
                            peer_mtu_path="/hubspoke/dev/peer-mtu/")  # fmt: skip


def _shape_rows(tmp_path: Path, world: World, **storage: Any) -> list[CheckResult]:
    data = minimal()
    data["hub"]["storage"].update(storage)
    config = load(write_config(tmp_path, data)).config
    with only_checks({"cnq deployed shape"}):
        results = run_preflight(
            config,
            Unsupported(world.clients, ubuntu_images={r: pinned_ami(r) for r in ("us-east-2", "us-west-2")}),
        )
    return _rows(results, "cnq deployed shape", "us-east-2")  # fmt: skip


def test_a_cluster_with_fewer_buckets_than_the_rule_gets_both_lines_to_write(
    world: World, tmp_path: Path
) -> None:
    """4 buckets deployed and a config without bucket_count, whose rule (Qumulo's max(16, ceil(TB / 500)))
    says 16: the deploy would add 12 for good, so preflight fails with the line to keep and the line to grow."""
    _ready(world)
    _deployed(world, buckets=4, node_script=_hub_script(tmp_path))
    rows = _shape_rows(tmp_path, world)
    assert [r.status for r in rows] == ["fail", "pass"]
    buckets, _ = rows
    assert buckets.detail.startswith(
        f"{STORAGE_STACK} holds 4 persistent-storage buckets; this config states no bucket_count, so Qumulo's rule for "
    )
    assert buckets.detail.endswith(
        ", max(16, ceil(TB / 500)) = 16, would add 12 buckets to the cluster for good (Qumulo cannot remove "
        "persistent storage)"
    )
    assert buckets.fix == (
        "to keep the cluster as it is, set hub.storage.bucket_count: 4; to grow it, set hub.storage.bucket_count: "
        "16 (docs/runbooks/qumulo-core.md, 'Upgrading an existing cluster')"
    )


def test_the_pins_written_pass_and_an_explicit_increase_only_warns(world: World, tmp_path: Path) -> None:
    _ready(world)
    _deployed(world, buckets=4, node_script=_hub_script(tmp_path))
    assert [r.status for r in _shape_rows(tmp_path, world, bucket_count=4)] == ["pass", "pass"]
    grow, _ = _shape_rows(tmp_path, world, bucket_count=6)
    assert grow.status == "warn" and grow.detail == (
        f"hub.storage.bucket_count 6 adds 2 buckets to the 4 in {STORAGE_STACK}: irreversible (Qumulo cannot "
        "remove persistent storage)"
    )
    assert grow.fix == "if that is not meant, set hub.storage.bucket_count: 4"


def test_fewer_buckets_than_deployed_fail_and_unknown_user_data_names_the_guard(
    world: World, tmp_path: Path
) -> None:
    _ready(world)
    _deployed(world, buckets=16, node_script="#!/bin/bash\necho another release\n")
    buckets, script = _shape_rows(tmp_path, world, bucket_count=8)
    assert buckets.status == "fail" and buckets.fix == "set hub.storage.bucket_count: 16"
    assert buckets.detail == (
        f"{STORAGE_STACK} holds 16 persistent-storage buckets and this config 8: Qumulo cannot remove persistent "
        "storage, so the deploy would be refused"
    )
    assert script.status == "fail" and script.detail.startswith(
        f"the nodes of {HUB_CLUSTER} run a first-boot script this config does not render ("
    )
    assert "node-shape guard will refuse" in script.detail
    assert script.fix == (
        "deploy this Region's Storage stack from the hubspoke release that built the nodes, or set "
        "hub.storage.cache_volumes back (docs/runbooks/qumulo-core.md, 'When the node-shape guard refuses')"
    )


def test_before_the_first_deploy_there_is_nothing_to_keep(world: World, tmp_path: Path) -> None:
    _ready(world)
    [row] = _shape_rows(tmp_path, world)
    assert (
        row.status == "pass"
        and row.detail == f"no Storage stack {STORAGE_STACK} yet: nothing deployed to keep"
    )


def test_a_cluster_without_live_nodes_has_no_script_to_compare(world: World, tmp_path: Path) -> None:
    """A Storage stack with no node left in a live state (DescribeInstances, instance-state-name): nothing runs a
    first-boot script, so only the buckets are judged and the row says which cluster had no node."""
    _ready(world)
    _deployed(world, buckets=16, node_script=None)
    buckets, nodes = _shape_rows(tmp_path, world)
    assert buckets.status == "pass" and nodes.status == "pass"
    assert nodes.detail == f"no running node of {HUB_CLUSTER} to compare"


def test_a_current_cluster_on_the_defaults_passes(world: World, tmp_path: Path) -> None:
    _ready(world)
    _deployed(world, buckets=16, node_script=_hub_script(tmp_path))
    buckets, nodes = _shape_rows(tmp_path, world)
    assert buckets.status == nodes.status == "pass"
    assert buckets.detail == "16 persistent-storage buckets, as deployed"
    assert nodes.detail == f"the nodes of {HUB_CLUSTER} run this config's first-boot script"


def test_the_bucket_logical_ids_preflight_counts_are_the_templates(
    dev_templates: Any, dev_config: Any
) -> None:
    """The pattern preflight counts deployed buckets by matches every persistent-storage bucket of the
    synthesized Storage stacks (the KMS-encrypted ones) and nothing else."""
    from hubspoke.cli.preflight.cnq import PERSISTENT_STORAGE_LOGICAL_ID

    for region in ("us-east-2", "us-west-2"):
        resources = dev_templates[f"storage-{region}"]["Resources"]
        matched = {
            k
            for k, r in resources.items()
            if r["Type"] == "AWS::S3::Bucket" and PERSISTENT_STORAGE_LOGICAL_ID.match(k)
        }
        kms = {k for k, r in resources.items() if r["Type"] == "AWS::S3::Bucket" and "aws:kms" in json.dumps(r["Properties"].get("BucketEncryption"))}  # fmt: skip
        assert matched == kms and len(kms) == dev_config.region_config(region).storage.buckets
