"""`hubspoke render export`: the bucket from --bucket or from the Compute stack's output, bad input as exit 2.

The stack output is read as CloudFormation DescribeStacks returns it (moto's CloudFormation, a template whose
Outputs carry ModelExportBucket).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from hubspoke.cli.main import main

DEV = Path(__file__).resolve().parents[2] / "config" / "dev.yaml"
IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/hubspoke-dev-training@sha256:" + "ab" * 32
STACK = "hubspoke-dev-compute-us-west-2"


def _render(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict], str]:
    code = main(["render", "export", "--config", str(DEV), "--image", IMAGE, *argv])
    out, err = capsys.readouterr()
    return code, ([d for d in yaml.safe_load_all(out) if d] if code == 0 else []), err


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


def _deploy(outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in outputs.items()},
    }
    boto3.client("cloudformation", region_name="us-west-2").create_stack(
        StackName=STACK, TemplateBody=json.dumps(template)
    )


def _command(docs: list[dict]) -> list[str]:
    [job] = [d for d in docs if d["kind"] == "Job"]
    return list(job["spec"]["template"]["spec"]["containers"][0]["command"])


def test_the_bucket_given_is_used_and_nothing_is_read(capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, _ = _render(capsys, "--region", "us-west-2", "--bucket", "my-exports")
    assert code == 0
    assert [d["kind"] for d in docs] == ["ServiceAccount", "Job"]
    assert "--bucket=my-exports" in _command(docs)


def test_the_bucket_defaults_to_the_compute_stack_output(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy({"ModelExportBucket": "compute-usw2-modelexportbucket-1a2b3c"})
    code, docs, err = _render(capsys, "--region", "us-west-2", "--step", "500")
    assert code == 0, err
    assert "--bucket=compute-usw2-modelexportbucket-1a2b3c" in _command(docs)


@pytest.mark.parametrize(
    ("outputs", "message"),
    [(None, "does not exist"), ({"EksClusterName": "c"}, "has no ModelExportBucket output")],
)
def test_without_the_output_it_says_what_to_deploy(
    aws: None, capsys: pytest.CaptureFixture[str], outputs: dict[str, str] | None, message: str
) -> None:
    if outputs is not None:
        _deploy(outputs)
    code, _, err = _render(capsys, "--region", "us-west-2")
    assert code == 2 and err.startswith(f"{DEV}: --bucket: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--run", "Bad_Name"], "--run"),
        (["--step", "-1"], "--step"),
        (["--bucket", "Not A Bucket"], "--bucket"),
    ],
)
def test_render_export_rejects(capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> None:
    code, _, err = _render(capsys, "--region", "us-west-2", *argv)
    assert code == 2 and err.startswith(f"{DEV}: {field}: ") and "Traceback" not in err
