"""mypy's view of aws-cdk-lib: every aws_cdk module hubspoke imports is type-checked, not skipped.

pyproject.toml skips aws_cdk's modules but those it names (a cold mypy read all 352 of them: 54 s, now 9).
Skipping one hubspoke imports would silently make its classes Any, so a wrong argument to, say, ec2.Port.tcp
would pass.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _cdk_package() -> Path:
    # find_spec of a top-level package locates it without importing it (no jsii kernel started).
    spec = importlib.util.find_spec("aws_cdk")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def imported_cdk_modules(package: Path) -> set[str]:
    """The aws_cdk submodules the code under `package` imports, in any of Python's import forms."""
    cdk = _cdk_package()
    found: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "aws_cdk":
                    found |= {
                        f"aws_cdk.{a.name}" for a in node.names if (cdk / a.name / "__init__.py").exists()
                    }
                elif node.module.startswith("aws_cdk."):
                    found.add(".".join(node.module.split(".")[:2]))
            elif isinstance(node, ast.Import):
                found |= {
                    ".".join(a.name.split(".")[:2]) for a in node.names if a.name.startswith("aws_cdk.")
                }
    return found


def followed_cdk_modules() -> set[str]:
    """The aws_cdk submodules pyproject.toml has mypy follow (follow_imports = "normal")."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    followed = set()
    for override in config.get("overrides", []):
        if override.get("follow_imports") == "normal":
            followed |= {m for m in override["module"] if m == "aws_cdk" or m.startswith("aws_cdk.")}
    return followed


def test_every_cdk_module_hubspoke_imports_is_followed_and_no_other() -> None:
    imported = imported_cdk_modules(ROOT / "hubspoke")
    assert {"aws_cdk.aws_ec2", "aws_cdk.aws_eks_v2", "aws_cdk.lambda_layer_kubectl_v34"} <= imported, (
        "the scan must see the three import forms hubspoke uses"
    )
    followed = followed_cdk_modules()
    # aws_cdk itself (App, Stack, Duration...) is matched by the skipping pattern too: it must be named.
    assert "aws_cdk" in followed, "add aws_cdk itself to the override that follows aws_cdk modules"
    followed.discard("aws_cdk")
    assert imported - followed == set(), (
        "add these to pyproject.toml's mypy override that follows aws_cdk modules"
    )
    assert followed - imported == set(), "nothing imports these: remove them from that override"


def test_the_scan_sees_each_import_form(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from aws_cdk import aws_sqs as sqs, Duration\nimport aws_cdk.aws_sns\nfrom aws_cdk.aws_kms import Key\n"
    )
    assert imported_cdk_modules(tmp_path) == {"aws_cdk.aws_sqs", "aws_cdk.aws_sns", "aws_cdk.aws_kms"}


@pytest.mark.thorough
def test_mypy_still_types_a_followed_module(tmp_path: Path) -> None:
    """A wrong argument to a followed module's class is an error (ec2.Port.tcp takes a number)."""
    bad = tmp_path / "bad.py"
    bad.write_text("from aws_cdk import aws_ec2 as ec2\nec2.Port.tcp('443')\n")
    command = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")]
    command += ["--config-file", str(ROOT / "pyproject.toml"), str(bad)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1 and 'Argument 1 to "tcp" of "Port"' in result.stdout, result.stdout
