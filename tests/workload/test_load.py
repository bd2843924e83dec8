"""workload/load.py, the load Job's program, run as the rendered Job runs it against the contract fake Qumulo.

The Job's own command (hubspoke/k8s/load.py) is taken from the rendered manifest, its $(VAR) references expanded
from the ConfigMap values as the kubelet does (Kubernetes docs, "Define a Command and Arguments for a Container":
"$(VAR_NAME)" in args is replaced by the variable's value), its script path mapped to workload/ and the
dataset mount path to a real local directory that holds the fake's export (tests/fakes/qumulo/mount.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hubspoke.config.schema import HubSpokeConfig
from hubspoke.k8s.load import SETTING_KEYS, load_job
from hubspoke.k8s.names import DATASET_MOUNT_PATH
from hubspoke.shift_from import KeySource
from tests.fakes.qumulo.mount import MountedQumulo
from tests.k8s.conftest import image
from tests.test_dataset_load import EXPECTED, KEY, Keys, seeded_hub

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "workload"))
import load

SECRET_ARN = "arn:aws:secretsmanager:us-east-2:123456789012:secret:hubspoke-loader-AbCdEf"


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[MountedQumulo]:
    with seeded_hub(tmp_path / "mnt") as fake:
        yield fake


def _config() -> HubSpokeConfig:
    return HubSpokeConfig.model_validate(
        {
            "environment": "dev",
            "account": "123456789012",
            "hub": {
                "region": "us-east-2",
                "cidr": "10.10.0.0/16",
                "compute": {"training_image": image("us-east-2")},
            },
            "dataset": {"name": "c4-llama3", "version": "v1", "source_buckets": ["hubspoke-datasets"]},
        }
    )


def job_argv(
    hub: MountedQumulo, *, version: str = "v2", source: str = "s3://hubspoke-datasets/c4/llama3/"
) -> list[str]:
    """The rendered Job's arguments to load.py, as the pod would receive them here."""
    job = load_job(
        _config(), name="c4-llama3", version=version, source=source, bucket_region="us-east-2", token_bytes=4,
        vocab_size=128256, poll_seconds=0,
    )  # fmt: skip
    (container,) = job["spec"]["template"]["spec"]["containers"]
    settings = {
        "rest-address": f"{hub.node_ips[0]}:{hub.port}",
        "shift-user": "shift-user",
        "secret-arn": SECRET_ARN,
    }
    env = {SETTING_KEYS[k]: v for k, v in settings.items()}
    command = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["command"]]
    assert command[:2] == ["python", "/opt/hubspoke/load.py"]
    # The dataset claim is mounted at DATASET_MOUNT_PATH; here the fake's export directory stands in for it.
    return [a.replace(f"--mount={DATASET_MOUNT_PATH}", f"--mount={hub.directory}") for a in command[2:]]


def _connect(secret: str, keys: Keys) -> Any:
    def connect(args: argparse.Namespace) -> tuple[str, KeySource]:
        assert args.secret_arn == SECRET_ARN and args.shift_user == "shift-user"
        return secret, keys

    return connect


def test_the_job_loads_seals_and_prints_progress(
    hub: MountedQumulo, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = Keys()
    assert load.main(job_argv(hub), connect=_connect("secret", keys), sleep=lambda _: None) == 0
    out = capsys.readouterr().out
    assert "estimating the work" in out and "%" in out and "sealed c4-llama3/v2" in out
    sealed = json.loads(hub.read_back("/dataset/c4-llama3/v2/MANIFEST.json"))
    assert sorted(f["path"] for f in sealed["files"]) == sorted(EXPECTED)
    assert keys.created == keys.deleted == [KEY.access_key_id]


def test_a_json_login_secret_names_its_user(hub: MountedQumulo, capsys: pytest.CaptureFixture[str]) -> None:
    """The loader identity's secret is JSON {"username", "password"}; the fake has no user of that name, so it
    is refused by Qumulo (401) and reported in one line, exit 1."""
    good = json.dumps({"username": "admin", "password": "secret"})
    assert load.main(job_argv(hub), connect=_connect(good, Keys()), sleep=lambda _: None) == 0
    bad = json.dumps({"username": "hubspoke-loader", "password": "secret"})
    assert load.main(job_argv(hub, version="v3"), connect=_connect(bad, Keys())) == 1
    err = capsys.readouterr().err
    assert "cannot log in to the hub's REST API" in err and "as hubspoke-loader" in err
    assert "/dataset/c4-llama3/v3" not in hub.files


def test_refusals_exit_2_and_a_failed_job_exits_1_then_resumes(
    hub: MountedQumulo, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 fails the Job at once (its podFailurePolicy); exit 1 lets the rerun resume."""
    hub.s3_objects["hubspoke-datasets"]["c4/llama3/zz/../escape.bin"] = b"x"
    connect = _connect("secret", Keys())
    assert load.main(job_argv(hub), connect=connect, sleep=lambda _: None) == 1
    assert "run the same command again to resume" in capsys.readouterr().err
    del hub.s3_objects["hubspoke-datasets"]["c4/llama3/zz/../escape.bin"]
    assert load.main(job_argv(hub, source="s3://hubspoke-datasets/other/"), connect=connect) == 2
    assert "is being loaded from" in capsys.readouterr().err
    assert load.main(job_argv(hub), connect=connect, sleep=lambda _: None) == 0
    assert "resuming the load" in capsys.readouterr().out
    assert load.main(job_argv(hub), connect=connect) == 2
    assert "already loaded and sealed" in capsys.readouterr().err


def test_aws_connect_reads_the_secret_and_makes_the_shift_users_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through boto3 as the pod runs it (moto standing in for Secrets Manager and IAM)."""
    import boto3
    from moto import mock_aws

    from tests.cli.preflight_world import isolate_from_real_aws

    isolate_from_real_aws(monkeypatch)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-2")
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="loader", SecretString='{"username": "u", "password": "p"}'
        )["ARN"]
        boto3.client("iam").create_user(UserName="shift-user")
        args = load.parser().parse_args(
            ["--rest-address=10.0.0.1", "--dataset-path=/d", "--mount=/m", "--name=n", "--version=v", "--source=s3://b/",
             "--bucket-region=us-east-2", "--token-bytes=4", "--vocab-size=10", "--shift-user=shift-user", f"--secret-arn={arn}"]
        )  # fmt: skip
        secret, keys = load.aws_connect(args)
        assert load.credentials(secret) == ("u", "p")
        made = keys.create()
        listed = boto3.client("iam").list_access_keys(UserName="shift-user")["AccessKeyMetadata"]
        assert [k["AccessKeyId"] for k in listed] == [made.access_key_id]
        keys.delete(made.access_key_id)
        assert boto3.client("iam").list_access_keys(UserName="shift-user")["AccessKeyMetadata"] == []


def test_the_admin_secret_is_a_bare_password_for_admin() -> None:
    """hubspoke/constructs/cnq/infrastructure.py generates the admin secret without a JSON template."""
    assert load.credentials("Zx9!generated") == ("admin", "Zx9!generated")
    with pytest.raises(load.LoadError, match="not"):
        load.credentials('{"user": "x"}')


def test_the_image_holds_the_program_the_job_runs_and_every_module_it_imports() -> None:
    """The rendered load Job's command checked as tests/workload/test_dockerfile.py checks what `hubspoke render`
    renders: load.py and the hubspoke modules it imports are COPY'd, the packages they import are installed."""
    from tests.workload import image
    from tests.workload.test_dockerfile import problems

    job = load_job(_config(), name="n", version="v", source="s3://b/", bucket_region="us-east-2", token_bytes=4,
                   vocab_size=10)  # fmt: skip
    (container,) = job["spec"]["template"]["spec"]["containers"]
    loaded = image.Container("dataset load --dry-run", container["name"], container["command"])
    assert problems(loaded, image.image_files()) == []
    needed = image.needed(loaded.scripts()[0])
    assert {"/opt/hubspoke/lib/hubspoke/dataset_load.py", "/opt/hubspoke/lib/hubspoke/shift_from.py"} <= set(
        needed
    )


# The pod's program with the test's AWS side: the Shift user's keys are printed when made and removed.
_POD = """
import sys
sys.path.insert(0, "workload")
import load
from hubspoke.shift_from import ShiftKeys

class Keys:
    def create(self):
        print("created AKIAIOSFODNN7EXAMPLE", flush=True)
        return ShiftKeys("AKIAIOSFODNN7EXAMPLE", "not-a-real-secret")

    def delete(self, access_key_id):
        print("deleted", access_key_id, flush=True)

sys.exit(load.main(sys.argv[1:], connect=lambda args: ("secret", Keys())))
"""


def test_sigterm_undoes_the_key_and_the_version_directory(hub: MountedQumulo) -> None:
    """Deleting the pod sends SIGTERM, then SIGKILL after the grace period (Kubernetes docs, "Pod Lifecycle",
    "Termination of Pods"). The program runs as a process, is sent SIGTERM while Qumulo keeps refusing the new key
    (no grant: retried poll-seconds apart) and must delete the key and the directories it made, exit 143."""
    import signal
    import subprocess

    hub.grant(KEY.access_key_id, [])  # Qumulo refuses the relationship: the load retries, sleeping 30 s
    argv = [*job_argv(hub), "--poll-seconds", "30"]
    root = Path(__file__).resolve().parents[2]
    pod = subprocess.Popen([sys.executable, "-c", _POD, *argv], cwd=root, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert pod.stdout is not None
    seen = []
    for line in pod.stdout:
        seen.append(line)
        if "retrying" in line:
            break
    assert "/dataset/c4-llama3/v2" in hub.files, seen
    pod.send_signal(signal.SIGTERM)
    out, err = pod.communicate(timeout=30)
    assert pod.returncode == 128 + 15, (pod.returncode, err)
    assert f"deleted {KEY.access_key_id}" in "".join(seen) + out
    assert "/dataset/c4-llama3/v2" not in hub.files and "/dataset/c4-llama3" not in hub.files
    assert "run the same command again" in err


def test_a_rerun_takes_over_an_empty_version_directory_no_relationship_uses(
    hub: MountedQumulo, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGKILL (after the grace period) leaves the empty version directory: the next run takes it over; a
    directory holding anything is still refused (versions are never written twice)."""
    hub.add_file("/dataset/c4-llama3/v2/.gone", 0)
    del hub.files["/dataset/c4-llama3/v2/.gone"]
    keys = Keys()
    assert load.main(job_argv(hub), connect=_connect("secret", keys), sleep=lambda _: None) == 0
    assert "taking over /dataset/c4-llama3/v2" in capsys.readouterr().out
    hub.add_file("/dataset/c4-llama3/v3/stray.bin", 4)
    assert load.main(job_argv(hub, version="v3"), connect=_connect("secret", keys)) == 2
    assert "exists and no load is copying into it" in capsys.readouterr().err
