"""The provisioning Lambda's asset is assembled at synth from the installed environment (no Docker, no network)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from aws_cdk import App, Stack
from aws_cdk import aws_lambda as lambda_

from hubspoke.constructs.cnq.bundling import (
    IS_COMPLETE_HANDLER,
    ON_EVENT_HANDLER,
    RUNTIME,
    provisioner_code,
    required_distributions,
)

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
