"""Issue 13's storage rules: a pinned image and a staged, supported, identical Qumulo Core, and egress.

Each expected number is the documented one, written here with its source, not imported from the rules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config import ConfigError, load
from tests.conftest import QUMULO_CORE, minimal, write_config


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load(path)
    return [line.removeprefix(f"{path}: ") for line in str(caught.value).splitlines()]


def test_storage_without_pins_names_each_field_and_the_fix(tmp_path: Path) -> None:
    data = minimal()
    del data["hub"]["storage"]["ami_id"]
    del data["spokes"][0]["storage"]["qumulo_core"]
    found = problems(tmp_path, data)
    ami = next(f for f in found if f.startswith("hub.storage.ami_id: "))
    assert "`hubspoke ami --region us-east-2`" in ami, "the fix: the command that prints it"
    core = next(f for f in found if f.startswith("spokes[0].storage.qumulo_core: "))
    assert "install_uri" in core and "qumulo-core-install/" in core
    assert len(found) == 2


def test_regions_without_storage_need_no_pins(tmp_path: Path) -> None:
    data = minimal()
    data["spokes"][0]["storage"] = {"enabled": False}
    data["spokes"][0]["compute"] = {"enabled": False}
    assert load(write_config(tmp_path, data)).config.spokes[0].storage.qumulo_core is None


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("https://bucket.s3.amazonaws.com/qumulo-core-install/", "not an S3 folder URI"),
        ("s3://Bucket/qumulo-core-install/", "not an S3 folder URI"),
        ("s3://bucket/qumulo-core-install", "not an S3 folder URI"),
        ("s3://bucket/prefix/", "does not end with 'qumulo-core-install/'"),
        ("s3://bucket/prefix/qumulo-core-install/7.10.2.1/", "does not end with 'qumulo-core-install/'"),
    ],
)
def test_install_uri_follows_qumulos_layout(tmp_path: Path, uri: str, words: str) -> None:
    data = minimal()
    data["hub"]["storage"]["qumulo_core"] = {**QUMULO_CORE, "install_uri": uri}
    (line,) = [f for f in problems(tmp_path, data) if f.startswith("hub.storage.qumulo_core.install_uri")]
    assert words in line


def test_package_location_is_qumulos_layout(tmp_path: Path) -> None:
    """<bucket>/<prefix>/qumulo-core-install/<version>/qumulo-core.deb (Qumulo CNQ-on-AWS guide, Step 1)."""
    data = minimal()
    for region in (data["hub"], data["spokes"][0]):
        region["storage"]["qumulo_core"] = {
            "version": "7.9.2.1",
            "install_uri": "s3://my-bucket/a/b/qumulo-core-install/",
        }
    core = load(write_config(tmp_path, data)).config.hub.storage.qumulo_core
    assert core is not None
    assert core.package_uri == "s3://my-bucket/a/b/qumulo-core-install/7.9.2.1/qumulo-core.deb"
    assert (core.bucket, core.package_key) == ("my-bucket", "a/b/qumulo-core-install/7.9.2.1/qumulo-core.deb")


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("7.8.4", False),
        ("7.9.1", False),
        ("7.9.2", False),
        ("7.9.2.1", True),
        ("7.9.3", True),
        ("8.0.0", True),
    ],
)
def test_versions_before_host_managed_deployments_are_refused(tmp_path: Path, version: str, ok: bool) -> None:
    """The nodes install host-managed networking, the default of Qumulo's AWS Terraform, whose README says
    'Qumulo Core >= 7.9.2.1 is required' (Qumulo/qumulo-terraform-aws @ 8a6e4d57, README.md, variables.tf
    networking_mode)."""
    data = minimal()
    for region in (data["hub"], data["spokes"][0]):
        region["storage"]["qumulo_core"] = {**QUMULO_CORE, "version": version}
    if ok:
        load(write_config(tmp_path, data))
        return
    found = problems(tmp_path, data)
    assert {f.split(": ")[0] for f in found} == {
        "hub.storage.qumulo_core.version",
        "spokes[0].storage.qumulo_core.version",
    }
    assert all("older than 7.9.2.1" in f and "host-managed" in f for f in found)


def test_hub_and_spoke_must_run_one_release(tmp_path: Path) -> None:
    """'A spoke portal is inaccessible if the hub ... and the spoke ... run different versions' (Qumulo docs)."""
    data = minimal()
    data["spokes"][0]["storage"]["qumulo_core"] = {**QUMULO_CORE, "version": "7.10.3"}
    (line,) = problems(tmp_path, data)
    assert line.startswith("spokes[0].storage.qumulo_core.version: 7.10.3 differs from hub.storage")


def test_no_nat_with_storage_or_compute_is_refused_with_the_fix(tmp_path: Path) -> None:
    """Qumulo: nodes must reach api.missionq.qumulo.com and api.nexus.qumulo.com for deployment and quorum.
    SageMaker HyperPod developer guide ("custom Amazon VPC"): without internet access, nodes need an interface
    endpoint per service (ECR, EKS, SageMaker, CloudWatch), and the VPC here has only the S3 gateway endpoint."""
    data = minimal()
    data["spokes"][0]["nat"] = "none"
    storage_line, compute_line = problems(tmp_path, data)
    assert storage_line.startswith("spokes[0].nat: none") and "storage.enabled: false" in storage_line
    assert compute_line.startswith("spokes[0].nat: none") and "compute.enabled: false" in compute_line
    assert "ECR" in compute_line and "nat: single" in compute_line
    data["spokes"][0]["compute"] = {"enabled": False}
    (line,) = problems(tmp_path, data)
    assert line == storage_line
    data["spokes"][0]["storage"] = {"enabled": False}
    load(write_config(tmp_path, data))


def test_cli_reports_missing_pins_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    data = minimal()
    del data["hub"]["storage"]["ami_id"]
    path = write_config(tmp_path, data)
    result = subprocess.run(
        [sys.executable, "-m", "hubspoke.cli.main", "validate", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert f"{path}: hub.storage.ami_id: required with storage" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


def test_a_spoke_cache_without_a_hub_cluster_is_refused_with_the_fix(tmp_path: Path) -> None:
    """A spoke's CNQ is a cache of the hub's, through a portal (docs/design.md §1): with storage off in the hub,
    synth used to fail with a KeyError traceback looking for the hub's Storage stack."""
    data = minimal()
    data["hub"]["storage"] = {"enabled": False}
    data["hub"]["compute"] = {"enabled": False}
    (line,) = problems(tmp_path, data)
    assert line.startswith("spokes[0].storage: a CNQ spoke caches the hub's CNQ through a portal")
    assert (
        "hub.storage.enabled is false" in line and "storage.enabled: false and compute.enabled: false" in line
    )
    data["spokes"][0]["storage"] = {"enabled": False}
    data["spokes"][0]["compute"] = {"enabled": False}
    load(write_config(tmp_path, data))


def test_one_ami_id_pinned_in_two_regions_is_refused_with_the_command_for_the_second(tmp_path: Path) -> None:
    """EC2 User Guide, "Copy an AMI": AMIs are regional, and a copy in another Region gets a new AMI ID, so one ID
    in two Regions' pins is always a paste error."""
    data = minimal()
    data["spokes"][0]["storage"]["ami_id"] = data["hub"]["storage"]["ami_id"]
    found = problems(tmp_path, data)
    (pasted,) = [f for f in found if f.startswith("spokes[0].storage.ami_id: ")]
    assert data["hub"]["storage"]["ami_id"] in pasted and "hub.storage.ami_id (us-east-2)" in pasted
    assert "`hubspoke ami --region us-west-2`" in pasted
    result = subprocess.run(
        [sys.executable, "-m", "hubspoke.cli.main", "validate", str(write_config(tmp_path, data))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "spokes[0].storage.ami_id" in result.stderr


def test_a_hub_that_loads_datasets_cannot_be_without_nat(tmp_path: Path) -> None:
    """Shift-From reads the source buckets from the hub's CNQ nodes (s3.<bucket Region>.amazonaws.com, SDK
    qumulo/commands/object_replication.py): a bucket in another Region is reachable only through the hub's NAT
    (the S3 gateway endpoint serves its own Region only: VPC User Guide, "Gateway endpoints for Amazon S3").
    The CNQ egress rule already refuses `nat: none` on the hub, naming the fix."""
    data = minimal()
    data["hub"]["nat"] = "none"
    data["dataset"] = {"source_buckets": ["c4-tokenized"]}
    lines = problems(tmp_path, data)
    assert any(line.startswith("hub.nat: none") and "nat: single" in line for line in lines), lines
