"""Bundles the CNQ provisioning Lambda at synth from the installed environment: no network, no Docker.

The asset is runtime/ as the package `cnq_provisioner` plus qumulo-api's pure-Python dependencies the Lambda
runtime lacks (a compiled one fails synth: it would not run on Lambda). A bundle is cached (`hubspoke.cache`,
"lambda-bundles/") under a key of its files' bytes and paths, the Python version and this module's source, and
hard-linked into the asset: writing the SDK's ~250 files was about a tenth of a warm synth
(benchmarks/lab-notes.md, "Where a synth's time goes").
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata as metadata
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hubspoke.cache import cache_dir, writable
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


def _distribution_files(dist: metadata.Distribution) -> list[tuple[PurePosixPath, Path]]:
    """(path in the bundle, installed file) for what `dist` ships to Lambda, from its RECORD; refuses native code."""
    files = []
    for entry in dist.files or []:
        relative = PurePosixPath(str(entry))
        if relative.parts[0] == ".." or "__pycache__" in relative.parts or relative.suffix == ".pyc":
            continue  # console scripts outside site-packages, and bytecode the Lambda compiles itself
        if relative.suffix in _NATIVE_SUFFIXES or ".so." in relative.name:
            raise RuntimeError(
                f"{dist.metadata['Name']} contains compiled code ({relative}); it cannot be bundled from this "
                "machine for Lambda. Pin a pure-Python version or build the asset for the Lambda platform"
            )
        files.append((relative, Path(str(dist.locate_file(entry)))))
    return files


def _source_files(source: Path, package: str) -> list[tuple[PurePosixPath, Path]]:
    """(path in the bundle, file) for the runtime folder as the package `package`, without bytecode."""
    return [
        (PurePosixPath(package, *path.relative_to(source).parts), path)
        for path in sorted(source.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]


def _fact_files(facts: tuple[str, ...]) -> list[tuple[PurePosixPath, Path]]:
    """(path in the bundle, file) for hubspoke's standard-library-only fact modules `facts` (names such as
    "canary_metrics") and the package's __init__.py, which the runtime imports as `hubspoke.<name>`."""
    if not facts:
        return []
    package = Path(__file__).resolve().parents[2]
    return [
        (PurePosixPath("hubspoke", f"{name}.py"), package / f"{name}.py") for name in ("__init__", *facts)
    ]


# This module's source is part of every key: a change to what goes into a bundle is never served an old one.
_BUNDLER = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _digests(files: list[tuple[PurePosixPath, Path]]) -> dict[str, str]:
    """The sha-256 of every file of a bundle, by its path in the bundle."""
    return {str(relative): hashlib.sha256(path.read_bytes()).hexdigest() for relative, path in files}


def bundle_key(digests: dict[str, str], *, python_version: str) -> str:
    """The cache key of a bundle: every path and byte in it (their digests), the Python version, this module."""
    digest = hashlib.sha256(f"{_BUNDLER}\0{python_version}\0".encode())
    for relative, content in sorted(digests.items()):
        digest.update(f"{relative}\0{content}\0".encode())
    return digest.hexdigest()


def _intact(bundle: Path, digests: dict[str, str]) -> bool:
    """Whether `bundle` holds exactly the files of `digests`, byte for byte.

    The asset's files are hard links to the cache's: an edit made in cdk.out lands here too, and a folder can lose
    files. Checked on every hit (reading the bundle once), so neither ships in a later synth."""
    found = {str(p.relative_to(bundle)): p for p in bundle.rglob("*") if p.is_file()}
    return found.keys() == digests.keys() and all(
        hashlib.sha256(found[name].read_bytes()).hexdigest() == digest for name, digest in digests.items()
    )


def _cached_bundle(
    files: list[tuple[PurePosixPath, Path]], digests: dict[str, str], key: str, root: Path
) -> Path:
    """The bundle of `files` under `root`/lambda-bundles/`key`, built there first if no synth has yet (or if the
    one there is no longer intact).

    Built in a temporary folder beside it and renamed into place, so a reader never sees half a bundle; two
    synths racing build the same content and the second's rename loses harmlessly.
    """
    bundles = writable(root) / "lambda-bundles"
    bundle = bundles / key
    if bundle.is_dir():
        if _intact(bundle, digests):
            return bundle
        shutil.rmtree(bundle, ignore_errors=True)
    bundles.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=bundles))
    try:
        for relative, path in files:
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            # The installed file's mode, readable by all: a cache shared by several users stays readable by each.
            os.chmod(target, (path.stat().st_mode & 0o755) | 0o644)
        os.chmod(staging, 0o755)
        os.rename(staging, bundle)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not bundle.is_dir():
            raise
    return bundle


def _link_or_copy(source: str, target: str) -> None:
    """A hard link where the filesystem allows one (same device, linkable by this user), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


@jsii.implements(ILocalBundling)
class InstalledEnvironmentBundling:
    """Local bundling: the runtime folder as a package, plus the distributions it needs, as installed."""

    def __init__(
        self,
        *,
        source: Path,
        package: str,
        root_distribution: str,
        python_version: str,
        cache_root: Path | None = None,
        facts: tuple[str, ...] = (),
    ) -> None:
        self.source = source
        self.package = package
        self.facts = facts
        self.root_distribution = root_distribution
        self.python_version = python_version
        self.cache_root = cache_root

    def files(self) -> list[tuple[PurePosixPath, Path]]:
        """Every file of the bundle: (path in the bundle, where it is read from)."""
        files = _source_files(self.source, self.package) + _fact_files(self.facts)
        for dist in required_distributions(self.root_distribution, python_version=self.python_version):
            files.extend(_distribution_files(dist))
        return files

    def try_bundle(self, output_dir: str, *, image: Any = None, **_: Any) -> bool:
        files = self.files()
        digests = _digests(files)
        key = bundle_key(digests, python_version=self.python_version)
        bundle = _cached_bundle(files, digests, key, self.cache_root or cache_dir())
        shutil.copytree(bundle, output_dir, copy_function=_link_or_copy, dirs_exist_ok=True)
        return True


@functools.cache
def _bundling(source: Path, package: str, facts: tuple[str, ...]) -> BundlingOptions:
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
            facts=facts,
        ),
    )


def bundled_code(source: Path, package: str, *, facts: tuple[str, ...] = ()) -> lambda_.Code:
    """`source` as the package `package` plus qumulo-api and what it needs, and the hubspoke fact modules
    `facts`; the hash follows the bundle, so an SDK upgrade ships a new asset."""
    return lambda_.Code.from_asset(
        str(source), asset_hash_type=AssetHashType.OUTPUT, bundling=_bundling(source, package, facts)
    )


def provisioner_code() -> lambda_.Code:
    """The provisioning Lambda's code."""
    return bundled_code(RUNTIME_DIR, PACKAGE)
