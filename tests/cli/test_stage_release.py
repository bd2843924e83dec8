"""`hubspoke stage` against moto: buckets made as docs/runbooks/qumulo-core.md asks, both files under
`<install_uri><version>/`, the release pinned in the file with its comments kept, and reruns that skip.

Sources of the expected values: the runbook, "1. Stage the package" (Qumulo's CNQ-on-AWS guide: copy qumulo-core.deb
and host_configuration.tar.gz into the folder named after the version; SSE-S3; one bucket per Region); S3 API
Reference, PutBucketEncryption (SSEAlgorithm AES256 is SSE-S3) and PutPublicAccessBlock (four settings); deb(5)
(an ar archive, "!<arch>\\n") and RFC 1952 (gzip starts 1f 8b) for the two files.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from hubspoke.cli import stage_release
from hubspoke.cli.checks import Clients, session_clients
from hubspoke.cli.envfile import set_in_regions
from hubspoke.config import load
from tests.cli.preflight_world import Hooked, isolate_from_real_aws

CONFIG = """\
# Team environment: a comment stage must keep.
environment: team
account: "123456789012"
hub:
  region: us-east-2
  cidr: 10.10.0.0/16
  storage:
    ami_id: ami-0123456789abcdef0
    qumulo_core:
      version: 7.9.2.1   # the release staged before
      install_uri: s3://team-staging-east/cnq/qumulo-core-install/
spokes:
  - region: us-west-2
    cidr: 10.20.0.0/16
    storage:
      ami_id: ami-0fedcba9876543210
      qumulo_core:
        version: "7.9.2.1"
        install_uri: s3://team-staging-west/cnq/qumulo-core-install/
ops:
  alarms_notify_nobody: true
"""
# CONFIG with the release pinned: the two values alone changed, each in its own quoting.
PINNED = CONFIG.replace("version: 7.9.2.1   #", "version: 7.10.2.1   #").replace(
    'version: "7.9.2.1"', 'version: "7.10.2.1"'
)
DEB = b"!<arch>\ndebian-binary   0           0     0     100644  4         `\n2.0\n"
HOST = gzip.compress(b"host configuration")
FOLDER = "cnq/qumulo-core-install/7.10.2.1/"


class Recorded(Hooked):
    """The suite's clients, counting every S3 call by Region and failing the ones a test names."""

    def __init__(self, base: Clients) -> None:
        super().__init__(base)
        self.calls: Counter[tuple[str, str]] = Counter()
        self.fail: set[tuple[str, str]] = set()

    def hook(self, client: Any, service: str, region: str) -> None:
        def record(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            self.calls[region, model.name] += 1
            if (region, model.name) in self.fail:
                # S3 Error Responses: 500 InternalError "We encountered an internal error. Please try again."
                body = {"Error": {"Code": "InternalError", "Message": "We encountered an internal error."}}
                return AWSResponse("https://stub", 500, {}, None), {
                    **body,
                    "ResponseMetadata": {"HTTPStatusCode": 500},
                }
            return None

        if service in {"s3", "sts"}:
            client.meta.events.register("before-call", record, unique_id="test-stage-record")


@pytest.fixture
def world(backend: str, tmp_path: Path) -> tuple[Path, Path, Recorded]:
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    (downloads / "qumulo-core.deb").write_bytes(DEB)
    (downloads / "host_configuration.tar.gz").write_bytes(HOST)
    # No retries: the failure test counts the one call it refuses.
    return config, downloads, Recorded(session_clients())


def parse(config: Path, downloads: Path, *more: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    stage_release.add_parser(parser.add_subparsers(), "stage a Qumulo Core release")
    return parser.parse_args(
        ["stage", "--config", str(config), "--version", "7.10.2.1", "--from", str(downloads), *more]
    )


def test_stages_every_region_and_pins_the_release(world: tuple[Path, Path, Recorded]) -> None:
    config, downloads, clients = world
    assert stage_release.run(parse(config, downloads), clients=clients) == 0
    for region, bucket in (("us-east-2", "team-staging-east"), ("us-west-2", "team-staging-west")):
        s3 = clients("s3", region)
        assert s3.get_bucket_location(Bucket=bucket)["LocationConstraint"] == region
        rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
        assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
        assert s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        }
        for name, body in (("qumulo-core.deb", DEB), ("host_configuration.tar.gz", HOST)):
            got = s3.get_object(Bucket=bucket, Key=f"{FOLDER}{name}")
            assert got["Body"].read() == body
            assert got["ServerSideEncryption"] == "AES256"
            assert got["Metadata"] == {"sha256": hashlib.sha256(body).hexdigest()}
    assert config.read_text() == PINNED
    assert {
        r.storage.qumulo_core.version for r in load(config).config.regions() if r.storage.qumulo_core
    } == {"7.10.2.1"}


def test_a_rerun_skips_what_is_staged(
    world: tuple[Path, Path, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    config, downloads, clients = world
    assert stage_release.run(parse(config, downloads), clients=clients) == 0
    clients.calls.clear()
    capsys.readouterr()
    assert stage_release.run(parse(config, downloads), clients=clients) == 0
    writes = {op for (_, op) in clients.calls if op.startswith(("Put", "Create", "Upload"))}
    assert writes == set()
    out = capsys.readouterr().out
    assert out.count("is staged with this sha256: skipped") == 4
    assert "qumulo_core.version is already 7.10.2.1" in out


def test_upload_failing_in_the_second_region_pins_nothing_and_a_rerun_continues(
    world: tuple[Path, Path, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    config, downloads, clients = world
    clients.fail.add(("us-west-2", "PutObject"))
    assert stage_release.run(parse(config, downloads), clients=clients) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "(InternalError) when calling the PutObject" in err
        and "nothing pinned" in err
    )
    assert config.read_text() == CONFIG
    assert sorted(p.name for p in config.parent.iterdir()) == ["downloads", "team.yaml"]  # no temporary file
    west = clients("s3", "us-west-2").list_objects_v2(Bucket="team-staging-west")
    assert west.get("KeyCount") == 0  # nothing half-uploaded
    clients.fail.clear()
    clients.calls.clear()
    assert stage_release.run(parse(config, downloads), clients=clients) == 0
    assert clients.calls["us-east-2", "PutObject"] == 0  # already staged there
    assert clients.calls["us-west-2", "PutObject"] == 2
    assert config.read_text() == PINNED


def test_a_different_file_under_the_same_name_is_replaced(world: tuple[Path, Path, Recorded]) -> None:
    config, downloads, clients = world
    east = clients("s3", "us-east-2")
    east.create_bucket(
        Bucket="team-staging-east", CreateBucketConfiguration={"LocationConstraint": "us-east-2"}
    )
    stale = {
        "Bucket": "team-staging-east",
        "Key": f"{FOLDER}qumulo-core.deb",
        "ServerSideEncryption": "AES256",
    }
    east.put_object(**stale, Body=b"!<arch>\nan older download", Metadata={"sha256": "0" * 64})
    assert stage_release.run(parse(config, downloads), clients=clients) == 0
    assert east.get_object(Bucket="team-staging-east", Key=f"{FOLDER}qumulo-core.deb")["Body"].read() == DEB


def test_a_bucket_in_another_region_is_refused(
    world: tuple[Path, Path, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    config, downloads, clients = world
    clients("s3", "us-east-1").create_bucket(Bucket="team-staging-west")  # us-east-1: no LocationConstraint
    assert stage_release.run(parse(config, downloads), clients=clients) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "team-staging-west is in us-east-1, not us-west-2" in err
    assert config.read_text() == CONFIG


def test_credentials_of_another_account_are_refused(
    world: tuple[Path, Path, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    config, downloads, clients = world
    config.write_text(CONFIG.replace("123456789012", "111122223333"))
    assert stage_release.run(parse(config, downloads), clients=clients) == 2
    assert "these credentials are account 123456789012" in capsys.readouterr().err
    assert not any(op == "CreateBucket" for (_, op) in clients.calls)


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        (
            "qumulo-core.deb",
            None,
            "no qumulo-core.deb there; download it from Qumulo Nexus (needs your Qumulo login)",
        ),
        ("qumulo-core.deb", b"<html>login</html>", "is not a Debian package"),
        ("host_configuration.tar.gz", b"PK\x03\x04", "is not a gzip file"),
    ],
)
def test_files_that_are_not_the_release(
    name: str, content: bytes | None, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    if content is None:
        (tmp_path / name).unlink()
    else:
        (tmp_path / name).write_bytes(content)
    assert stage_release.run(parse(config, tmp_path, "--dry-run")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_unknown_profile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch)
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    assert stage_release.run(parse(config, tmp_path, "--profile", "nope")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no AWS profile named 'nope'" in err
    assert config.read_text() == CONFIG


def test_dry_run_prints_the_runbook_commands_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_from_real_aws(monkeypatch, credentials=False)  # any AWS call would fail for want of credentials
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    assert stage_release.run(parse(config, tmp_path, "--dry-run", "--profile", "p")) == 0
    out = capsys.readouterr().out
    assert (
        "aws s3api create-bucket --bucket team-staging-west --region us-west-2 "
        "--create-bucket-configuration LocationConstraint=us-west-2"
    ) in out
    assert (
        f"aws s3 cp {tmp_path}/qumulo-core.deb s3://team-staging-east/{FOLDER}qumulo-core.deb --sse AES256 "
        f"--metadata sha256={hashlib.sha256(DEB).hexdigest()} --region us-east-2"
    ) in out
    assert all(line.endswith("--profile p") for line in out.splitlines() if line.startswith("aws "))
    assert config.read_text() == CONFIG


def test_a_config_the_loader_refuses_is_not_staged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG.replace("version: 7.9.2.1   #", "version: latest   #"))
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    assert stage_release.run(parse(config, tmp_path, "--dry-run")) == 2
    assert "hub.storage.qumulo_core.version" in capsys.readouterr().err


def test_a_release_validation_refuses_stages_nothing(
    world: tuple[Path, Path, Recorded], capsys: pytest.CaptureFixture[str]
) -> None:
    config, downloads, clients = world
    args = parse(config, downloads)
    args.version = (
        "7.1.0"  # a release number, older than the 7.9.2.1 config/cnq.py requires (its source there)
    )
    assert stage_release.run(args, clients=clients) == 2
    assert "qumulo_core.version" in capsys.readouterr().err
    assert clients.calls == Counter()
    assert config.read_text() == CONFIG


def test_the_edit_keeps_style_and_reaches_flow_mappings_and_anchors() -> None:
    text = (
        "hub:\n  storage:\n    qumulo_core: &core {version: '7.9.2.1', install_uri: s3://a/qumulo-core-install/}\n"
        "spokes:\n  - storage:\n      qumulo_core: *core\n  - storage: {qumulo_core: {version: 7.9.2.1}}  # kept\n"
    )
    assert set_in_regions(text, ("storage", "qumulo_core", "version"), "7.10.2.1") == (
        'hub:\n  storage:\n    qumulo_core: &core {version: "7.10.2.1", install_uri: s3://a/qumulo-core-install/}\n'
        "spokes:\n  - storage:\n      qumulo_core: *core\n  - storage: {qumulo_core: {version: 7.10.2.1}}  # kept\n"
    )


def test_through_the_console_entry_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As `hubspoke stage` runs once the lead registers it in hubspoke/cli/commands.py: one line, exit 2."""
    from hubspoke.cli import commands, main

    isolate_from_real_aws(monkeypatch)
    monkeypatch.setitem(commands.COMMANDS, "stage", commands.Command(lambda: stage_release, "stage"))
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    assert (
        main.main(
            [
                "stage",
                "--config",
                str(config),
                "--version",
                "7.10.2.1",
                "--from",
                str(tmp_path),
                "--profile",
                "nope",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "aws configure" in err


def test_a_config_path_that_is_not_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped --config is bad input (exit 2, one line naming the file and the fix), not a retryable failure."""
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    missing = tmp_path / "tema.yaml"
    assert stage_release.run(parse(missing, tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--config {missing}: no such file" in err and "hubspoke init" in err
    assert "run the same command again" not in err


@pytest.mark.parametrize(
    ("version", "says"),
    [
        ("7.10", "not a Qumulo Core release number"),
        ("v7.10.2.1", "not a Qumulo Core release number"),
        ("7.10.2.1.zip", "not a Qumulo Core release number"),
    ],
)
def test_a_version_that_is_not_a_release(
    version: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nexus names releases like 7.10.2.1 (four numbers, GET /v1/version's form); anything else is refused first."""
    config = tmp_path / "team.yaml"
    config.write_text(CONFIG)
    (tmp_path / "qumulo-core.deb").write_bytes(DEB)
    (tmp_path / "host_configuration.tar.gz").write_bytes(HOST)
    args = parse(config, tmp_path, "--dry-run")
    args.version = version
    assert stage_release.run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--version {version}: {says}" in err and "e.g. 7.10.2.1" in err
    assert config.read_text() == CONFIG
