"""The provisioning Lambda's asset is assembled at synth from the installed environment (no Docker, no network)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_

from hubspoke.constructs.cnq import bundling
from hubspoke.constructs.cnq.bundling import (
    IS_COMPLETE_HANDLER,
    ON_EVENT_HANDLER,
    RUNTIME,
    RUNTIME_DIR,
    InstalledEnvironmentBundling,
    provisioner_code,
    required_distributions,
)
from tests.constructs.cnq.conftest import UNDER_MUTMUT

HANDLER = ON_EVENT_HANDLER


def _asset_dir(outdir: Path, stack: Stack) -> Path:
    template = json.loads((outdir / f"{stack.stack_name}.template.json").read_text())
    (function,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert function["Properties"]["Handler"] == HANDLER
    # The code's S3 key is the asset hash; the cloud assembly stages the bundle as asset.<hash>/.
    asset_hash = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    return outdir / f"asset.{asset_hash}"


def test_synth_bundles_handler_and_qumulo_sdk_without_docker(tmp_path: Path) -> None:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Bare")
    lambda_.Function(stack, "Provisioner", runtime=RUNTIME, handler=HANDLER, code=provisioner_code())
    app.synth()
    asset = _asset_dir(tmp_path, stack)
    package, module, function = HANDLER.rsplit(".", 2)[0], HANDLER.split(".")[1], HANDLER.rsplit(".", 1)[1]
    handler_source = (asset / package / f"{module}.py").read_text()
    assert f"def {function}(" in handler_source
    assert IS_COMPLETE_HANDLER.rsplit(".", 1)[0] == HANDLER.rsplit(".", 1)[0], "both entry points, one module"
    assert f"def {IS_COMPLETE_HANDLER.rsplit('.', 1)[1]}(" in handler_source
    assert (asset / "qumulo" / "rest_client.py").is_file() and (
        asset / "qumulo" / "rest" / "portal.py"
    ).is_file()
    assert (asset / "dataclasses_json").is_dir() and (asset / "marshmallow").is_dir()
    assert not (asset / "boto3").exists() and not (asset / "botocore").exists(), (
        "the Lambda runtime ships boto3"
    )
    assert not list(asset.rglob("__pycache__")), (
        "bytecode of this machine's Python does not belong in the asset"
    )


def test_closure_follows_markers_and_leaves_out_the_aws_sdk() -> None:
    names = {
        d.metadata["Name"].lower().replace("_", "-")
        for d in required_distributions("qumulo-api", python_version="3.13")
    }
    assert {"qumulo-api", "dataclasses-json", "marshmallow", "typing-inspect", "mypy-extensions"} <= names
    assert "python-dateutil" not in names and "boto3" not in names
    assert "argcomplete" not in names, "optional extras are not installed into the Lambda"
    assert "colorama" not in names, "Windows-only requirements do not apply to Lambda"


@UNDER_MUTMUT
def test_bundle_imports_with_only_what_lambda_provides(tmp_path: Path) -> None:
    """Import the handler from the asset in a Python without site-packages; a stub stands in for boto3."""
    app = App(outdir=str(tmp_path / "out"))
    stack = Stack(app, "Bare")
    lambda_.Function(stack, "Provisioner", runtime=RUNTIME, handler=HANDLER, code=provisioner_code())
    app.synth()
    asset = _asset_dir(tmp_path / "out", stack)
    provided = tmp_path / "lambda-runtime"
    (provided / "boto3").mkdir(parents=True)
    (provided / "boto3" / "__init__.py").write_text(
        "def client(*args, **kwargs): raise RuntimeError('stub')\n"
    )
    module = HANDLER.rsplit(".", 1)[0]
    probe = f"import sys; sys.path[:0] = [{str(asset)!r}, {str(provided)!r}]; import {module}; import qumulo.rest_client"
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _local(source: Path, cache: Path, python_version: str = "3.12") -> InstalledEnvironmentBundling:
    return InstalledEnvironmentBundling(
        source=source, package="pkg", root_distribution="qumulo-api", python_version=python_version,
        cache_root=cache,
    )  # fmt: skip


def test_a_cached_bundle_is_the_bundle_a_fresh_build_makes(tmp_path: Path) -> None:
    """The second synth links the first's bundle (same inodes) and gets byte for byte the same files."""
    local = _local(RUNTIME_DIR, tmp_path / "cache")
    first, second = tmp_path / "first", tmp_path / "second"
    local.try_bundle(str(first))
    local.try_bundle(str(second))
    assert _tree(first) == _tree(second)
    assert (second / "pkg" / "provisioner.py").read_bytes() == (RUNTIME_DIR / "provisioner.py").read_bytes()
    assert (second / "qumulo" / "rest_client.py").is_file()
    [bundle] = (tmp_path / "cache" / "lambda-bundles").iterdir()
    cached = bundle / "qumulo" / "rest_client.py"
    assert (second / "qumulo" / "rest_client.py").stat().st_ino == cached.stat().st_ino, "linked, not rebuilt"


def test_a_changed_byte_or_python_version_is_never_served_the_old_bundle(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(RUNTIME_DIR, source, ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "cache"
    _local(source, cache).try_bundle(str(tmp_path / "before"))
    handler = source / "provisioner.py"
    handler.write_text(handler.read_text() + "\n# changed\n")
    _local(source, cache).try_bundle(str(tmp_path / "after"))
    assert (tmp_path / "after" / "pkg" / "provisioner.py").read_text().endswith("# changed\n")
    assert not (tmp_path / "before" / "pkg" / "provisioner.py").read_text().endswith("# changed\n")
    _local(source, cache, python_version="3.13").try_bundle(str(tmp_path / "other-python"))
    assert len(list((cache / "lambda-bundles").iterdir())) == 3


def test_a_failed_build_leaves_no_bundle_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that stops half way (a full disk) is never found under its key by the next synth."""
    real, copies = shutil.copyfile, []

    def full_disk(source: Any, target: Any, **kwargs: Any) -> Any:
        copies.append(target)
        if len(copies) > 5:
            raise OSError(28, "No space left on device")
        return real(source, target, **kwargs)

    monkeypatch.setattr(bundling.shutil, "copyfile", full_disk)
    with pytest.raises(OSError, match="No space"):
        _local(RUNTIME_DIR, tmp_path / "cache").try_bundle(str(tmp_path / "out"))
    assert list((tmp_path / "cache" / "lambda-bundles").iterdir()) == []


@pytest.mark.parametrize("damage", ["edited", "deleted", "added"])
def test_a_cached_bundle_changed_after_it_was_made_is_rebuilt_not_shipped(
    tmp_path: Path, damage: str
) -> None:
    """The asset's files are hard links to the cache: an edit in cdk.out/asset.* is an edit of the cache. The next
    synth must ship the source's bytes again, not the edit (the reviewer's finding on the first cache)."""
    local = _local(RUNTIME_DIR, tmp_path / "cache")
    local.try_bundle(str(tmp_path / "first"))
    shipped = tmp_path / "first" / "pkg" / "provisioner.py"
    if damage == "edited":
        shipped.write_text("raise SystemExit('debugging edit')\n")  # through the hard link
    elif damage == "deleted":
        [bundle] = (tmp_path / "cache" / "lambda-bundles").iterdir()
        (bundle / "pkg" / "provisioner.py").unlink()
    else:
        [bundle] = (tmp_path / "cache" / "lambda-bundles").iterdir()
        (bundle / "pkg" / "stray.py").write_text("x = 1\n")
    local.try_bundle(str(tmp_path / "second"))
    shipped_pkg = {
        k.removeprefix("pkg/"): v for k, v in _tree(tmp_path / "second").items() if k.startswith("pkg/")
    }
    assert shipped_pkg == {k: v for k, v in _tree(RUNTIME_DIR).items() if "__pycache__" not in k}
