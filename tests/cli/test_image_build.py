"""`hubspoke image build`: the exact programs it runs, in order, against a fake docker and aws on PATH and moto's
ECR; what it records; and that bad input or a failed step leaves no record behind.

Sources (the oracle, written out here):
- Amazon ECR User Guide, "Private registry authentication": `aws ecr get-login-password --region REGION |
  docker login --username AWS --password-stdin AWS_ACCOUNT_ID.dkr.ecr.REGION.amazonaws.com`.
- Amazon ECR User Guide, "Pushing a Docker image": `docker tag` to `REGISTRY/REPOSITORY:TAG`, then `docker push`.
- docker push prints `TAG: digest: sha256:<64 hex> size: <n>` for the pushed manifest; `docker inspect`
  RepoDigests lists `REPOSITORY@sha256:<hex>` for every registry the image was pushed to.
- AWS DLC "Available Images" (aws/deep-learning-containers docs/reference/available_images.md): the EC2 PyTorch
  2.9.0 GPU training image is pytorch-training:2.9.0-gpu-py312-cu130-ubuntu22.04-ec2; "Region Availability": the
  DLC registry account in us-west-2 is 763104351884. Its Dockerfile (pytorch/training/docker/2.9/py3/cu130/
  Dockerfile.gpu) puts EFA in /opt/amazon/efa and the aws-ofi-nccl plugin in /opt/amazon/ofi-nccl/lib; an EKS
  guide's `ls` inside such an image shows libfabric.so in /opt/amazon/efa/lib and libnccl-net.so in
  /opt/amazon/ofi-nccl/lib/x86_64-linux-gnu (the layout DLC_LAYOUT copies).
- botocore ecr BatchGetImage: "When an image is pulled, the BatchGetImage API is called once to retrieve the image
  manifest"; the digest a tag names is the registry's (here moto's put_image answer), not one hubspoke computes.
- Docker docs, "Build variables": BUILDX_NO_DEFAULT_ATTESTATIONS turns off the default provenance attestation;
  buildx (build/opt.go, toSolveOpt) parses it with Go's strconv.ParseBool, whose true values are 1, t, T, TRUE,
  true and True (Go standard library, strconv.ParseBool).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from hubspoke.cli.main import main
from tests.conftest import ROOT, with_pins

ACCOUNT = "123456789012"
# The local image name the build tags (hubspoke.names.training_image_repository), and a name CloudFormation
# generated for a Region's repository: the command reads it from the compute stack's TrainingImageRepositoryUri
# output (CloudFormation User Guide, "Name type": without a name CloudFormation generates a unique one).
LOCAL = "hubspoke-dev-training"
REPO = "hubspoke-dev-compute-trainingimagesrepository-a1b2c3d4e5f6"
BASE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training@sha256:" + "1" * 64
DLC_REGISTRY = "763104351884.dkr.ecr.us-west-2.amazonaws.com"
DLC_TAG = "2.9.0-gpu-py312-cu130-ubuntu22.04-ec2"
# Files of a DLC EC2 GPU training image the network check looks for (sources above); a plain PyTorch image has none.
DLC_LAYOUT = ("opt/amazon/efa/lib/libfabric.so.1", "opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so")
TAG = "0a1b2c3"
CONFIG = {
    "environment": "dev",
    "account": ACCOUNT,
    "hub": {"region": "us-east-2", "cidr": "10.10.0.0/16"},
    "spokes": [{"region": "us-west-2", "cidr": "10.20.0.0/16"}],
}

# One program for both fakes: it logs argv (and docker login's stdin) and answers as the real tool does. A POSIX
# shell script, not Python: a build runs the two a dozen times, and a shell starts in a fraction of the time.
FAKE = r"""#!/bin/sh
name=${0##*/}
quoted() {  # $1 as a JSON string (the arguments here hold no control characters)
    case $1 in
    *[\\\"]*) printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')" ;;
    *) printf '"%s"' "$1" ;;
    esac
}
# argv as logged (docker run's script, its last argument, is not), the --region and --entrypoint values, the last.
argv=$(quoted "$name") n=0 region= entrypoint= last= previous=
for arg; do
    n=$((n + 1))
    last=$arg
    if [ "$n" -lt "$#" ] || [ "$name $1" != "docker run" ]; then argv="$argv, $(quoted "$arg")"; fi
    [ "$previous" = --region ] && region=$arg
    [ "$previous" = --entrypoint ] && entrypoint=$arg
    previous=$arg
done
extra=
if [ "$name $1" = "docker login" ]; then extra=", \"stdin\": $(quoted "$(cat)")"; fi
if [ "$name $1" = "docker build" ]; then
    if [ -n "${BUILDX_NO_DEFAULT_ATTESTATIONS+set}" ]; then
        extra=", \"BUILDX_NO_DEFAULT_ATTESTATIONS\": $(quoted "$BUILDX_NO_DEFAULT_ATTESTATIONS")"
    else
        extra=", \"BUILDX_NO_DEFAULT_ATTESTATIONS\": null"
    fi
fi
printf '{"argv": [%s]%s}\n' "$argv" "$extra" >> "$FAKE_LOG"
if [ "$name $1" = "docker run" ]; then
    # Run the command's shell script on a fake image root: /opt is FAKE_IMAGE_ROOT/opt.
    exec "$entrypoint" -c "$(printf '%s' "$last" | sed "s|/opt|$FAKE_IMAGE_ROOT/opt|g")"
fi
case "$name $*" in
*"${FAKE_FAIL:-}"*) if [ -n "${FAKE_FAIL:-}" ]; then echo "denied: simulated failure" >&2; exit 1; fi ;;
esac
digest() { printf 'sha256:%s' "$(printf '%s' "$1" | sha256sum | cut -d ' ' -f 1)"; }
if [ "$name $1 $2" = "aws ecr get-login-password" ]; then
    echo "PASSWORD-$region"
elif [ "$name $1" = "docker push" ]; then
    echo "The push refers to repository [${2%:*}]"
    echo "${2##*:}: digest: $(digest "$2") size: 4321"
elif [ "$name $1" = "docker inspect" ]; then
    printf '["%s@%s"]\n' "${last%:*}" "${FAKE_INSPECT_DIGEST:-$(digest "$last")}"
fi
"""


def digest_of(ref: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(ref.encode()).hexdigest()


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """docker and aws on PATH that record what they were asked; returns the log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("docker", "aws"):
        script = bin_dir / tool
        script.write_text(FAKE)
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "calls.jsonl"
    image_root = tmp_path / "image"
    for file in DLC_LAYOUT:
        (image_root / file).parent.mkdir(parents=True, exist_ok=True)
        (image_root / file).write_text("")
    monkeypatch.setenv("FAKE_IMAGE_ROOT", str(image_root))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_LOG", str(log))
    monkeypatch.chdir(ROOT)  # the command builds workload/Dockerfile from the repository root
    return log


@pytest.fixture
def ecr(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-2",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield lambda region: boto3.client("ecr", region_name=region)


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "dev.yaml"
    # config/dev.yaml's dataset pin: render refuses a training job that names no version (docs/datasets.md).
    path.write_text(yaml.safe_dump(with_pins({**CONFIG, "dataset": {"name": "c4-llama3", "version": "v1"}})))
    return path


def _compute_stack(region: str, outputs: dict[str, str]) -> None:
    """The Region's compute stack in moto's CloudFormation, with `outputs` (its name as `cdk deploy` gives it)."""
    from hubspoke.config import load
    from hubspoke.topology import plan_stacks

    config = load(ROOT / "config" / "dev.yaml").config
    [plan] = [p for p in plan_stacks(config) if p.kind == "compute" and p.region == region]
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation", region_name=region).create_stack(
        StackName=plan.name, TemplateBody=json.dumps(template)
    )


def _repositories(ecr: Any, *regions: str) -> None:
    """Each Region's deployed compute stack: its repository and the output naming it."""
    for region in regions:
        ecr(region).create_repository(repositoryName=REPO, imageTagMutability="IMMUTABLE")
        uri = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{REPO}"
        _compute_stack(region, {"TrainingImageRepositoryUri": uri})


def _calls(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _build(config_path: Path, *extra: str) -> int:
    return main(["image", "build", "--config", str(config_path), "--base", BASE, "--tag", TAG, *extra])


def test_builds_once_and_pushes_to_every_compute_region_by_digest(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    assert _build(config_path) == 0
    expected: list[list[str]] = [
        ["aws", "ecr", "get-login-password", "--region", "us-west-2"],  # the base's registry: build pulls it
        ["docker", "login", "--username", "AWS", "--password-stdin", DLC_REGISTRY],
        ["docker", "build", "--platform", "linux/amd64", "--file", "workload/Dockerfile", "--build-arg", f"BASE_IMAGE={BASE}",
         "--tag", f"{LOCAL}:{TAG}", str(ROOT)],
        ["docker", "run", "--rm", "--entrypoint", "/bin/sh", f"{LOCAL}:{TAG}", "-c"],
    ]  # fmt: skip
    for region in ("us-east-2", "us-west-2"):
        registry = f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com"
        ref = f"{registry}/{REPO}:{TAG}"
        expected += [
            ["aws", "ecr", "get-login-password", "--region", region],
            ["docker", "login", "--username", "AWS", "--password-stdin", registry],
            ["docker", "tag", f"{LOCAL}:{TAG}", ref],
            ["docker", "push", ref],
            ["docker", "inspect", "--format", "{{json .RepoDigests}}", ref],
        ]
    calls = _calls(fakes)
    assert [c["argv"] for c in calls] == expected
    # The password reaches docker on stdin, and is never printed.
    logins = [c for c in calls if c["argv"][:2] == ["docker", "login"]]
    assert [c["stdin"].strip() for c in logins] == [
        "PASSWORD-us-west-2",
        "PASSWORD-us-east-2",
        "PASSWORD-us-west-2",
    ]
    captured = capsys.readouterr()
    assert "PASSWORD" not in captured.out + captured.err
    record = json.loads((config_path.parent / "dev.images.json").read_text())
    assert record == {
        "environment": "dev",
        "tag": TAG,
        "base": BASE,
        "images": {
            region: f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{REPO}@"
            + digest_of(f"{ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{REPO}:{TAG}")
            for region in ("us-east-2", "us-west-2")
        },
    }


def test_the_build_runs_with_buildx_default_attestation_off(
    fakes: Path, ecr: Any, config_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docker build runs with buildx's default provenance attestation off, even when the user's environment
    turned it on (what buildx then pushes is buildx's business; this fake shows only the environment)."""
    monkeypatch.setenv("BUILDX_NO_DEFAULT_ATTESTATIONS", "false")
    _repositories(ecr, "us-east-2", "us-west-2")
    assert _build(config_path) == 0
    builds = [c for c in _calls(fakes) if c["argv"][:2] == ["docker", "build"]]
    assert len(builds) == 1
    assert builds[0]["BUILDX_NO_DEFAULT_ATTESTATIONS"] in {"1", "t", "T", "TRUE", "true", "True"}


def test_render_then_runs_the_recorded_digest(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    assert _build(config_path) == 0
    capsys.readouterr()
    assert main(["render", "job", "--config", str(config_path), "--region", "us-west-2"]) == 0
    (job,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    (container,) = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    uri = f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/{REPO}"
    assert container["image"] == f"{uri}@{digest_of(f'{uri}:{TAG}')}"
    assert container["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--base", "nvcr.io/nvidia/pytorch:25.01-py3", "--tag", TAG], "--base"),
        (["--base", BASE, "--tag", "latest"], "--tag"),
        (["--base", BASE, "--tag=.hidden"], "--tag"),
    ],
)
def test_bad_input_exits_2_runs_nothing_and_records_nothing(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], field: str
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    assert main(["image", "build", "--config", str(config_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{config_path}: {field}: ") and "Traceback" not in err
    assert _calls(fakes) == []
    assert not (config_path.parent / "dev.images.json").exists()


def test_a_region_without_its_compute_stack_stops_before_building(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repositories(ecr, "us-east-2")  # us-west-2's compute stack not deployed yet
    assert _build(config_path) == 1
    err = capsys.readouterr().err
    assert "does not exist in us-west-2: deploy that Region's compute stack first" in err
    assert _calls(fakes) == []


def test_a_stack_whose_repository_is_gone_stops_before_building(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The output names a repository that no longer exists (deleted by hand): the command says so, runs nothing."""
    _repositories(ecr, "us-east-2")
    _compute_stack(
        "us-west-2", {"TrainingImageRepositoryUri": f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/gone"}
    )
    assert _build(config_path) == 1
    assert "no ECR repository gone in us-west-2: deploy" in capsys.readouterr().err
    assert _calls(fakes) == []


def test_a_stack_without_the_repository_output_stops_before_building(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repositories(ecr, "us-east-2")
    _compute_stack("us-west-2", {})
    assert _build(config_path) == 1
    assert "has no TrainingImageRepositoryUri output" in capsys.readouterr().err
    assert _calls(fakes) == []


def test_a_tag_already_pushed_is_refused_because_tags_are_immutable(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    manifest = json.dumps(
        {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}
    )
    ecr("us-west-2").put_image(repositoryName=REPO, imageManifest=manifest, imageTag=TAG)
    assert _build(config_path) == 1
    assert f"already holds tag {TAG}" in capsys.readouterr().err
    assert _calls(fakes) == []


def test_a_failed_push_leaves_no_record(
    fakes: Path,
    ecr: Any,
    config_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    monkeypatch.setenv("FAKE_FAIL", "push 123456789012.dkr.ecr.us-west-2")
    assert _build(config_path) == 1
    assert "exited 1: denied: simulated failure" in capsys.readouterr().err
    assert not (config_path.parent / "dev.images.json").exists()


def test_push_and_inspect_must_agree_on_the_digest(
    fakes: Path,
    ecr: Any,
    config_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    monkeypatch.setenv("FAKE_INSPECT_DIGEST", "sha256:" + "f" * 64)
    assert _build(config_path) == 1
    assert "docker push reported" in capsys.readouterr().err
    assert not (config_path.parent / "dev.images.json").exists()


def test_the_default_tag_is_the_commit_of_a_clean_tree_only(tmp_path: Path) -> None:
    from hubspoke.cli.image import git_tag

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "f").write_text("1")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x")
    assert git_tag(tmp_path) == git("rev-parse", "HEAD")
    (tmp_path / "f").write_text("2")
    with pytest.raises(ValueError, match="uncommitted changes"):
        git_tag(tmp_path)


def test_the_profile_reaches_the_aws_cli_too(
    fakes: Path, ecr: Any, config_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--profile chooses the credentials of the ECR reads (boto3) and of the login (the AWS CLI's --profile)."""
    _repositories(ecr, "us-east-2", "us-west-2")
    monkeypatch.setattr(
        "hubspoke.cli.checks.session_clients", lambda profile: lambda s, r: boto3.client(s, region_name=r)
    )
    assert _build(config_path, "--profile", "ops") == 0
    logins = [c["argv"] for c in _calls(fakes) if c["argv"][:2] == ["aws", "ecr"]]
    assert logins == [
        ["aws", "ecr", "get-login-password", "--region", region, "--profile", "ops"]
        for region in ("us-west-2", "us-east-2", "us-west-2")  # the base's registry, then each push's
    ]


def _dlc_image(ecr: Any) -> str:
    """The DLC tag in its registry (moto): returns the digest the registry gives it."""
    ecr("us-west-2").create_repository(registryId="763104351884", repositoryName="pytorch-training")
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "layers": [{"digest": "sha256:" + "2" * 64}],  # moto digests the layers (the value is moto's)
        }
    )
    pushed = ecr("us-west-2").put_image(
        registryId="763104351884", repositoryName="pytorch-training", imageManifest=manifest, imageTag=DLC_TAG
    )
    return str(pushed["image"]["imageId"]["imageDigest"])


def test_without_base_the_documented_dlc_tag_is_resolved_to_its_digest_and_recorded(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _repositories(ecr, "us-east-2", "us-west-2")
    digest = _dlc_image(ecr)
    pinned = f"{DLC_REGISTRY}/pytorch-training@{digest}"
    assert main(["image", "build", "--config", str(config_path), "--tag", TAG]) == 0
    builds = [c["argv"] for c in _calls(fakes) if c["argv"][:2] == ["docker", "build"]]
    assert [b[b.index("--build-arg") + 1] for b in builds] == [f"BASE_IMAGE={pinned}"]
    assert json.loads((config_path.parent / "dev.images.json").read_text())["base"] == pinned
    assert pinned in capsys.readouterr().out


def test_base_overrides_the_configured_default(
    fakes: Path, ecr: Any, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--base wins over training_base_image; the default's registry is not asked (moto has no DLC repository)."""
    data = yaml.safe_load(config_path.read_text())
    config_path.write_text(
        yaml.safe_dump({**data, "training_base_image": f"{DLC_REGISTRY}/pytorch-training:2.6"})
    )
    _repositories(ecr, "us-east-2", "us-west-2")
    assert _build(config_path) == 0
    builds = [c["argv"] for c in _calls(fakes) if c["argv"][:2] == ["docker", "build"]]
    assert [b[b.index("--build-arg") + 1] for b in builds] == [f"BASE_IMAGE={BASE}"]
    assert json.loads((config_path.parent / "dev.images.json").read_text())["base"] == BASE


@pytest.mark.parametrize(
    ("layout", "missing"),
    [((), "EFA"), (DLC_LAYOUT[:1], "aws-ofi-nccl")],
)
def test_a_base_without_efa_or_aws_ofi_nccl_is_refused_before_any_push(
    fakes: Path,
    ecr: Any,
    config_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    layout: tuple[str, ...],
    missing: str,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for file in layout:
        (plain / file).parent.mkdir(parents=True, exist_ok=True)
        (plain / file).write_text("")
    monkeypatch.setenv("FAKE_IMAGE_ROOT", str(plain))
    _repositories(ecr, "us-east-2", "us-west-2")
    assert _build(config_path) == 2
    err = capsys.readouterr().err
    assert f"{config_path}: --base: the base image has no {missing}" in err and "Traceback" not in err
    assert not [c for c in _calls(fakes) if c["argv"][:2] == ["docker", "push"]]
    assert not (config_path.parent / "dev.images.json").exists()


@pytest.mark.parametrize(
    ("default", "status", "message"),
    [
        (
            "nvcr.io/nvidia/pytorch:25.01-py3",
            2,
            "training_base_image: nvcr.io/nvidia/pytorch:25.01-py3 is a tag outside",
        ),
        (f"{DLC_REGISTRY}/pytorch-training:0.0.0-gone", 1, "cannot resolve"),
    ],
)
def test_a_default_that_cannot_be_pinned_builds_nothing(
    fakes: Path,
    ecr: Any,
    config_path: Path,
    capsys: pytest.CaptureFixture[str],
    default: str,
    status: int,
    message: str,
) -> None:
    data = yaml.safe_load(config_path.read_text())
    config_path.write_text(yaml.safe_dump({**data, "training_base_image": default}))
    _repositories(ecr, "us-east-2", "us-west-2")
    _dlc_image(ecr)
    assert main(["image", "build", "--config", str(config_path), "--tag", TAG]) == status
    assert message in capsys.readouterr().err
    assert _calls(fakes) == []
