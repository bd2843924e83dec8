"""Bundles the CNQ provisioning Lambda at synth from the installed environment: no network, no Docker.

The asset holds the runtime/ folder as the package `cnq_provisioner` plus every installed distribution
that qumulo-api needs and the Lambda Python runtime does not ship. Only pure-Python distributions are
accepted: a compiled one built for this machine could not run on Lambda, so synth fails and says so.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hubspoke.constructs.provider import LAMBDA_PYTHON

RUNTIME_DIR = Path(__file__).parent / "runtime"
PACKAGE = "cnq_provisioner"
# Plain Lambda handler entry points in the asset (module cnq_provisioner.provisioner).
ON_EVENT_HANDLER = f"{PACKAGE}.provisioner.on_event"
IS_COMPLETE_HANDLER = f"{PACKAGE}.provisioner.is_complete"
RUNTIME = LAMBDA_PYTHON
# The AWS SDK for Python and its dependencies, which every Lambda Python runtime provides.
RUNTIME_PROVIDED = frozenset(
    canonicalize_name(n)
    for n in ("boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six")
)
_NATIVE_SUFFIXES = (".so", ".pyd", ".dylib")


def required_distributions(root: str, *, python_version: str) -> list[metadata.Distribution]:
    """`root` and everything it requires (markers evaluated for `python_version`), minus RUNTIME_PROVIDED."""
    environment = {"python_version": python_version, "python_full_version": f"{python_version}.0",
                   "platform_system": "Linux", "sys_platform": "linux", "extra": ""}  # fmt: skip
    found: dict[str, metadata.Distribution] = {}
    pending = [canonicalize_name(root)]
    while pending:
        name = pending.pop()
        if name in found or name in RUNTIME_PROVIDED:
            continue
        dist = metadata.distribution(name)
        found[name] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate(environment):
                pending.append(canonicalize_name(requirement.name))
    return sorted(found.values(), key=lambda d: canonicalize_name(d.metadata["Name"]))


def copy_distribution(dist: metadata.Distribution, output: Path) -> int:
    """Copy the installed files of `dist` (from its RECORD) into `output`; return how many were copied."""
    copied = 0
    for entry in dist.files or []:
        relative = PurePosixPath(str(entry))
        if relative.parts[0] == ".." or "__pycache__" in relative.parts or relative.suffix == ".pyc":
            continue  # console scripts outside site-packages, and bytecode the Lambda compiles itself
        if relative.suffix in _NATIVE_SUFFIXES or ".so." in relative.name:
            raise RuntimeError(
                f"{dist.metadata['Name']} contains compiled code ({relative}); it cannot be bundled from this "
                "machine for Lambda. Pin a pure-Python version or build the asset for the Lambda platform"
            )
        source = Path(str(dist.locate_file(entry)))
        target = output / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied += 1
    return copied


@jsii.implements(ILocalBundling)
class InstalledEnvironmentBundling:
    """Local bundling: the runtime folder as a package, plus the distributions it needs, copied as installed."""

    def __init__(self, *, source: Path, package: str, root_distribution: str, python_version: str) -> None:
        self.source = source
        self.package = package
        self.root_distribution = root_distribution
        self.python_version = python_version

    def try_bundle(self, output_dir: str, *, image: Any = None, **_: Any) -> bool:
        output = Path(output_dir)
        shutil.copytree(
            self.source,
            output / self.package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            dirs_exist_ok=True,
        )
        for dist in required_distributions(self.root_distribution, python_version=self.python_version):
            copy_distribution(dist, output)
        return True


@functools.cache
def _bundling(source: Path, package: str) -> BundlingOptions:
    """One bundling per source folder for the process: aws-cdk-lib's AssetStaging caches a staged asset by a key
    that includes the bundling options (core/lib/asset-staging.js, calculateCacheKey), so every stack's asset
    after the first reuses the first's bundle instead of copying the distributions again."""
    return BundlingOptions(
        # Only used if local bundling declined, which it never does: it succeeds or raises.
        image=RUNTIME.bundling_image,
        local=InstalledEnvironmentBundling(
            source=source,
            package=package,
            root_distribution="qumulo-api",
            python_version=RUNTIME.name.removeprefix("python"),
        ),
    )


def bundled_code(source: Path, package: str) -> lambda_.Code:
    """`source` as the package `package` plus qumulo-api and what it needs; the hash follows the bundle, so an
    SDK upgrade ships a new asset."""
    return lambda_.Code.from_asset(
        str(source), asset_hash_type=AssetHashType.OUTPUT, bundling=_bundling(source, package)
    )


def provisioner_code() -> lambda_.Code:
    """The provisioning Lambda's code."""
    return bundled_code(RUNTIME_DIR, PACKAGE)
