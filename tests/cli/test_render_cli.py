"""`hubspoke render job`: YAML for kubectl on stdout, clear exit-2 errors on bad input, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from hubspoke.cli import render
from hubspoke.cli.main import main
from hubspoke.k8s import DATASET_CLAIM
from tests.conftest import with_pins

DEV = """\
environment: dev
account: "123456789012"
hub:
  region: us-east-2
  cidr: 10.10.0.0/16
spokes:
  - region: us-west-2
    cidr: 10.20.0.0/16
dataset:
  name: c4-llama3
  version: v1
"""


def digest_ref(region: str, hex_pair: str = "ab") -> str:
    return f"123456789012.dkr.ecr.{region}.amazonaws.com/hubspoke-dev-training@sha256:{hex_pair * 32}"


def write_record(config_path: Path, environment: str = "dev", **images: str) -> Path:
    """What `hubspoke image build` leaves beside the config (docs/cli.md, "hubspoke image build")."""
    record = config_path.with_name(config_path.stem + ".images.json")
    record.write_text(
        json.dumps(
            {
                "environment": environment,
                "tag": "0123abc",
                "base": "base@sha256:" + "0" * 64,
                "images": images,
            }
        )
    )
    return record


@pytest.fixture
def bare_yaml(tmp_path: Path) -> Path:
    """The dev config with no image built yet."""
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump(with_pins(yaml.safe_load(DEV))))
    return path


@pytest.fixture
def dev_yaml(bare_yaml: Path) -> Path:
    write_record(bare_yaml, **{"us-east-2": digest_ref("us-east-2"), "us-west-2": digest_ref("us-west-2")})
    return bare_yaml


def test_job_runs_the_recorded_digest_of_its_own_region(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for region in ("us-east-2", "us-west-2"):
        assert main(["render", "job", "--config", str(dev_yaml), "--region", region]) == 0
        (job,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
        (container,) = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
        assert container["image"] == digest_ref(region)
        assert container["imagePullPolicy"] == "IfNotPresent"


def test_given_image_and_config_image_come_before_the_record(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = digest_ref("us-west-2", "cd")
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "us-west-2", "--image", given]) == 0
    assert f"image: {given}" in capsys.readouterr().out
    data = yaml.safe_load(dev_yaml.read_text())
    data["spokes"][0]["compute"] = {"training_image": digest_ref("us-west-2", "ef")}
    dev_yaml.write_text(yaml.safe_dump(data))
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "us-west-2"]) == 0
    assert f"image: {digest_ref('us-west-2', 'ef')}" in capsys.readouterr().out


def test_no_image_built_exits_2_with_the_command_that_builds_it(
    bare_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", "job", "--config", str(bare_yaml), "--region", "us-west-2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{bare_yaml}: spokes[0].compute.training_image: ")
    assert f"hubspoke image build --config {bare_yaml}" in captured.err
    # The command as given must be one `image build` accepts: it requires --config and --base (docs/cli.md).
    suggested = captured.err.split("`")[1].split()
    assert suggested[:3] == ["hubspoke", "image", "build"]
    assert {"--config", "--base"} <= set(suggested)
    assert "Traceback" not in captured.err and ":latest" not in captured.err


def test_a_record_of_another_environment_or_without_digests_is_refused(
    bare_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_record(bare_yaml, "prod", **{"us-west-2": digest_ref("us-west-2")})
    assert main(["render", "job", "--config", str(bare_yaml), "--region", "us-west-2"]) == 2
    assert "environment prod, not dev" in capsys.readouterr().err
    write_record(bare_yaml, **{"us-west-2": "123456789012.dkr.ecr.us-west-2.amazonaws.com/x:latest"})
    assert main(["render", "job", "--config", str(bare_yaml), "--region", "us-west-2"]) == 2
    assert "without a digest" in capsys.readouterr().err


def test_latest_in_the_config_is_refused(bare_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(bare_yaml.read_text())
    data["spokes"][0]["compute"] = {"training_image": "123456789012.dkr.ecr.us-west-2.amazonaws.com/t:latest"}
    bare_yaml.write_text(yaml.safe_dump(data))
    assert main(["render", "job", "--config", str(bare_yaml), "--region", "us-west-2"]) == 2
    err = capsys.readouterr().err
    assert "spokes[0].compute.training_image" in err and "digest" in err


@pytest.mark.parametrize(
    ("kind", "expected"), [("pytorchjob", "PyTorchJob"), ("hyperpod", "HyperPodPyTorchJob")]
)
def test_render_job_prints_one_manifest_for_kubectl(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str], kind: str, expected: str
) -> None:
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "us-west-2", "--kind", kind]) == 0
    out = capsys.readouterr().out
    assert "&id" not in out and "*id" not in out, "no YAML anchors in a manifest people read"
    (job,) = [doc for doc in yaml.safe_load_all(out) if doc]
    assert job["kind"] == expected
    assert "us-west-2" in yaml.safe_dump(job)
    assert DATASET_CLAIM in yaml.safe_dump(job)


def _command(job: dict[str, object]) -> list[str]:
    spec = yaml.safe_dump(job)
    (container,) = yaml.safe_load(spec)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"][
        "containers"
    ]
    return list(container["command"])


def test_the_job_pins_the_configs_dataset_version_and_the_reference_format(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LLaMA 3's tokenizer has 128,256 IDs (vocab_size in Meta's Llama 3 params.json; meta-llama/llama3
    llama/tokenizer.py: 256 reserved special tokens after the 128K BPE ranks), so IDs need 4 bytes."""
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "us-west-2"]) == 0
    (job,) = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    command = _command(job)
    for arg in ("--dataset-name=c4-llama3", "--dataset-version=v1", "--token-bytes=4", "--vocab-size=128256"):
        assert arg in command
    assert job["metadata"]["labels"]["hubspoke/dataset-version"] == "v1"
    argv = ["render", "job", "--config", str(dev_yaml), "--region", "us-west-2", "--dataset-version", "v2"]
    assert main(argv) == 0
    (job,) = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    assert "--dataset-version=v2" in _command(job) and "--dataset-version=v1" not in _command(job)
    assert "--allow-dataset-change" not in _command(job)  # a resume onto another version is asked for
    assert main([*argv, "--allow-dataset-change"]) == 0
    (job,) = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    assert "--allow-dataset-change" in _command(job)


def test_a_job_without_a_pinned_version_or_with_a_bad_one_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = with_pins(yaml.safe_load(DEV))
    del raw["dataset"]["version"]
    path = tmp_path / "unpinned.yaml"
    path.write_text(yaml.safe_dump(raw))
    assert main(["render", "job", "--config", str(path), "--region", "us-west-2"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "dataset.version" in captured.err and "Traceback" not in captured.err
    argv = ["render", "job", "--config", str(path), "--region", "us-west-2", "--dataset-version", "../v1"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--dataset-version" in captured.err


def test_default_kind_is_the_kubeflow_pytorchjob(dev_yaml: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "us-east-2"]) == 0
    (job,) = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    assert job["kind"] == "PyTorchJob"


def test_unknown_region_exits_2_naming_the_choices(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "eu-west-1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{dev_yaml}: --region: ")
    assert "us-east-2" in captured.err and "us-west-2" in captured.err
    assert "Traceback" not in captured.err


def test_region_without_compute_exits_2_with_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "off.yaml"
    data = with_pins(yaml.safe_load(DEV))
    data["spokes"][0]["compute"] = {"enabled": False}
    path.write_text(yaml.safe_dump(data))
    assert main(["render", "job", "--config", str(path), "--region", "us-west-2"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: spokes[0].compute.enabled: " in err


def test_invalid_config_exits_2_with_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(DEV.replace("10.20.0.0/16", "10.10.0.0/16"))
    assert main(["render", "job", "--config", str(path), "--region", "us-west-2"]) == 2
    assert "overlaps" in capsys.readouterr().err


def test_other_render_kinds_plug_in_through_the_registry(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A teammate's kind is one RENDERERS line: it gets --config/--region and the Region for free."""

    def _render(args, config, region, field):  # type: ignore[no-untyped-def]
        return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{field}-{args.extra}"}}]

    fake = render.Renderer(
        help="test kind", add_arguments=lambda p: p.add_argument("--extra"), render=_render
    )
    monkeypatch.setitem(render.RENDERERS, "fake", "tests_fake_renderer:FAKE")
    monkeypatch.setitem(__import__("sys").modules, "tests_fake_renderer", type("M", (), {"FAKE": fake}))
    assert main(["render", "fake", "--config", str(dev_yaml), "--region", "us-west-2", "--extra", "x"]) == 0
    (doc,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert doc["metadata"]["name"] == "spokes[0]-x"


def test_job_name_and_max_steps_start_a_new_run_under_a_new_checkpoint_directory(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """train.py refuses a rerun of a finished job name and points here: a new name is a new directory."""
    argv = ["render", "job", "--config", str(dev_yaml), "--region", "us-west-2"]
    assert main([*argv, "--job-name", "hubspoke-run-2", "--max-steps", "2000"]) == 0
    (job,) = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    assert job["metadata"]["name"] == "hubspoke-run-2"
    (worker,) = job["spec"]["pytorchReplicaSpecs"].values()
    command = worker["template"]["spec"]["containers"][0]["command"]
    assert "--checkpoint-dir=/mnt/checkpoints/hubspoke-run-2" in command
    assert "--job-name=hubspoke-run-2" in command and "--max-steps=2000" in command


def test_the_container_restart_limit_is_a_render_option(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """runPolicy.backoffLimit (training-operator@855e096 RunPolicy): the flag's number, as given."""
    argv = ["render", "job", "--config", str(dev_yaml), "--region", "us-west-2"]
    assert main([*argv, "--container-restart-limit", "40"]) == 0
    (job,) = [doc for doc in yaml.safe_load_all(capsys.readouterr().out) if doc]
    assert job["spec"]["runPolicy"]["backoffLimit"] == 40


@pytest.mark.parametrize(
    ("flag", "value"),
    # RFC 1035 labels (the pinned training operator's ValidateV1PyTorchJob): no capitals, no leading digit,
    # no trailing '-', no '_'; 41 characters is over the limit.
    [
        ("--job-name", "Run2"),
        ("--job-name", "2run"),
        ("--job-name", "run-"),
        ("--job-name", "run_2"),
        ("--job-name", "r" * 41),
        ("--max-steps", "0"),
        ("--container-restart-limit", "0"),
    ],
)
def test_bad_job_name_or_step_count_exits_2_naming_the_flag(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    assert main(["render", "job", "--config", str(dev_yaml), "--region", "us-west-2", flag, value]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{dev_yaml}: {flag}: ") and "Traceback" not in captured.err


def test_a_job_can_be_told_to_wait_for_a_whole_cache(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["render", "job", "--config", str(dev_yaml), "--region", "us-west-2"]
    assert main([*argv, "--wait-for-cached-fraction", "1.0"]) == 0
    assert "--wait-for-cached-fraction=1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("region", "value", "message"),
    [
        ("us-west-2", "1.5", "is not in (0, 1]"),
        ("us-west-2", "all", "is not a number"),
        ("us-east-2", "1.0", "this Region has none"),
    ],
)
def test_waiting_for_a_cache_that_cannot_be_whole_exits_2(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str], region: str, value: str, message: str
) -> None:
    argv = [
        "render",
        "job",
        "--config",
        str(dev_yaml),
        "--region",
        region,
        "--wait-for-cached-fraction",
        value,
    ]
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses the value itself, with exit code 2
        code = exc.code
    assert code == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == "" and "Traceback" not in captured.err


def test_the_cache_wait_deadline_and_status_age_are_render_options(
    dev_yaml: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["render", "job", "--config", str(dev_yaml), "--region", "us-west-2"]
    assert main([*argv, "--wait-for-cached-fraction", "1.0"]) == 0
    out = capsys.readouterr().out
    assert "--at-deadline=start" in out and "--max-status-age=3600" in out
    fail = [
        "--wait-for-cached-fraction",
        "1.0",
        "--at-cache-deadline",
        "fail",
        "--max-cache-status-age",
        "600",
    ]
    assert main([*argv, *fail]) == 0
    out = capsys.readouterr().out
    assert "--at-deadline=fail" in out and "--max-status-age=600" in out and "--cache-wait-refusal=" in out
    assert main([*argv, "--at-cache-deadline", "fail"]) == 2
    assert "need --wait-for-cached-fraction" in capsys.readouterr().err
