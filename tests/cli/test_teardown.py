"""`hubspoke teardown` against moto: the dry run, the order, the typed confirmation, what stays, and resuming.

Sources for what the fake account does: CloudFormation keeps a resource whose DeletionPolicy is Retain when its
stack is deleted (CloudFormation User Guide, "DeletionPolicy attribute"); S3 deletes only a bucket without
objects, versions or delete markers (S3 API reference, DeleteBucket); KMS deletes a key only after a waiting
period of 7 to 30 days (KMS API reference, ScheduleKeyDeletion); ECR's DeleteRepository with force deletes the
images too; Secrets Manager's ForceDeleteWithoutRecovery deletes at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from hubspoke.cli import teardown
from hubspoke.cli.checks import session_clients
from hubspoke.cli.main import main
from tests.cli.preflight_world import isolate_from_real_aws
from tests.cli.teardown_world import (
    CLUSTERS,
    DEPLOY_ORDER,
    ENV,
    HUB,
    SPOKE,
    Refusals,
    deploy,
    service_log_groups,
    stack_name,
)
from tests.conftest import minimal, write_config
from tests.fakes.moto_state import MotoState


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Refusals]:
    isolate_from_real_aws(monkeypatch)
    with mock_aws():
        yield Refusals()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path, minimal())


# The deployed environment as moto holds it once teardown_world.deploy has run, taken by the first test of a process
# that needs it: deploying it through moto's API for every test cost more than the teardown under test.
_DEPLOYED: list[MotoState] = []


def _deploy() -> None:
    """teardown_world.deploy's environment in the test's fresh mock_aws: deployed once, a copy of it after that."""
    if _DEPLOYED:
        _DEPLOYED[0].restore()
        return
    deploy(session_clients())
    _DEPLOYED.append(MotoState.of())


def _args(config: Path, *extra: str) -> argparse.Namespace:
    from hubspoke.cli.main import build_parser

    return build_parser(["teardown"]).parse_args(["teardown", "--config", str(config), *extra])


def _run(config: Path, refusals: Refusals, *extra: str, typed: str = "") -> int:
    clients = refusals.wrap(session_clients())
    return teardown.run(_args(config, *extra), clients=clients, ask=lambda _: typed, poll_seconds=0)


# Without --delete-dataset the hub's Storage stack, and the Network it runs in, stay standing: once that stack is
# gone its retained buckets and volumes can never be attached again (docs/runbooks/teardown.md, quoting Qumulo's
# CNQ guide, "Deleting an Existing Cluster"), so keeping the dataset means keeping them.
DATASET_STACKS = {stack_name("storage", HUB), stack_name("network", HUB)}


def _secrets(region: str) -> set[str]:
    return {s["Name"] for s in session_clients()("secretsmanager", region).list_secrets()["SecretList"]}


def _live_stacks() -> set[str]:
    clients = session_clients()
    return {
        s["StackName"]
        for region in (HUB, SPOKE)
        for s in clients("cloudformation", region).describe_stacks()["Stacks"]
        if s["StackStatus"] != "DELETE_COMPLETE"
    }


def _buckets(region: str) -> set[str]:
    return {b["Name"] for b in session_clients()("s3", region).list_buckets(BucketRegion=region)["Buckets"]}


def _volumes(region: str) -> int:
    return len(session_clients()("ec2", region).describe_volumes()["Volumes"])


def _keys(region: str) -> dict[str, str]:
    kms = session_clients()("kms", region)
    return {
        k["KeyId"]: kms.describe_key(KeyId=k["KeyId"])["KeyMetadata"]["KeyState"]
        for k in kms.list_keys()["Keys"]
    }


def test_the_dry_run_changes_nothing_and_lists_what_stays(aws: Refusals, config: Path, capsys: Any) -> None:
    _deploy()
    assert _run(config, aws) == 0
    out = capsys.readouterr().out
    assert _live_stacks() == {stack_name(k, r) for k, r in DEPLOY_ORDER}
    # Reverse deploy order: the dashboard first, the hub's network last, spoke storage before the hub's.
    listed = [
        line.split()[1] for line in out.splitlines() if line.strip()[:1].isdigit() and "hubspoke-dev-" in line
    ]
    assert listed == [
        stack_name(k, r) for k, r in reversed(DEPLOY_ORDER) if stack_name(k, r) not in DATASET_STACKS
    ]
    kept = out.split("Kept standing", 1)[1]
    assert all(f"\n{name} " in kept for name in DATASET_STACKS)
    # Spoke storage goes with no flag of its own, and the dry run says what that costs.
    assert "its cache and its checkpoints (no flag keeps them: export models first)" in out
    assert f"{SPOKE}: its Storage stack, buckets and volumes go with no flag of their own" in out
    assert f"hubspoke render export --config {config} --region {SPOKE} --run <job-name>" in out
    # The log groups the services made, untagged, are listed by their documented names; another environment's not.
    assert all(name in out for region in (HUB, SPOKE) for name in service_log_groups(region))
    assert "hubspoke-prod-" not in out
    # The access-log bucket the storage template retains is listed with its stack; the log group it deletes is not.
    assert (
        "cnq-access-logs-us-west-2" in out
        and f"retained when {stack_name('storage', SPOKE)} is deleted" in out
    )
    assert "/test/storage-us-west-2/function" not in out
    assert "prod-data-" not in out
    assert "Dry run: nothing changed" in out


def test_dry_run_is_the_default_spelled_out_and_refused_beside_yes(
    aws: Refusals, config: Path, capsys: Any
) -> None:
    """`--dry-run`, as every other command spells it, changes nothing; with --yes it is a contradiction."""
    _deploy()
    assert _run(config, aws, "--dry-run") == 0
    assert "Dry run: nothing changed" in capsys.readouterr().out
    assert _run(config, aws, "--dry-run", "--yes") == 2
    assert "choose one" in capsys.readouterr().err
    assert _live_stacks() == {stack_name(k, r) for k, r in DEPLOY_ORDER}


def test_yes_without_the_typed_name_deletes_the_stacks_and_nothing_retained(
    aws: Refusals, config: Path, capsys: Any
) -> None:
    _deploy()
    before = {r: (_buckets(r), _volumes(r)) for r in (HUB, SPOKE)}
    assert _run(config, aws, "--yes", typed="prod") == 1
    assert _live_stacks() == DATASET_STACKS
    # The buckets the storage stacks retained are left, the rest as it was: nothing retained was deleted.
    for region in (HUB, SPOKE):
        assert _buckets(region) == before[region][0] | {f"cnq-access-logs-{region}"}
        assert _volumes(region) == before[region][1]
    assert "Not confirmed: nothing retained was deleted" in capsys.readouterr().err


def test_the_typed_name_deletes_what_nothing_needs_and_keeps_the_dataset_and_models(
    aws: Refusals, config: Path
) -> None:
    _deploy()
    assert _run(config, aws, "--yes", typed=ENV) == 0
    clients = session_clients()
    # Hub: the dataset buckets and volumes stay, with the key that encrypts them; the export bucket and its key too.
    hub = _buckets(HUB)
    assert {"cnq-storage-0-us-east-2", "cnq-storage-1-us-east-2", "cnq-access-logs-us-east-2"} <= hub
    assert f"hubspoke-{ENV}-compute-{HUB}-modelexportbucket-x1y2z3" in hub
    assert f"sagemaker-hubspoke-{ENV}-{HUB}-0a1b2c3d" not in hub  # lifecycle scripts: versions and all
    assert _volumes(HUB) == 3
    assert sorted(_keys(HUB).values()) == ["Enabled", "Enabled"]  # the CNQ key and the export key
    # Spoke: its cache goes, the export bucket stays; keys of what went are scheduled, not deleted at once.
    spoke = _buckets(SPOKE)
    assert spoke == {f"hubspoke-{ENV}-compute-{SPOKE}-modelexportbucket-x1y2z3", f"prod-data-{SPOKE}"}
    assert _volumes(SPOKE) == 0
    assert sorted(_keys(SPOKE).values()) == ["Enabled", "PendingDeletion"]
    for region in (HUB, SPOKE):
        assert clients("ecr", region).describe_repositories()["repositories"] == []
    # The hub's Storage and Network stacks stand, and what they hold stays: its admin secret, its flow logs.
    assert _live_stacks() == DATASET_STACKS
    assert _secrets(HUB) == {f"cnq-admin-{HUB}"} and _secrets(SPOKE) == set()
    logs = {
        r: {g["logGroupName"] for g in clients("logs", r).describe_log_groups()["logGroups"]}
        for r in (HUB, SPOKE)
    }
    assert f"/test/network-{HUB}/flow-logs" in logs[HUB]
    # The services' own log groups go too, in both Regions; another environment's stays.
    for region in (HUB, SPOKE):
        assert not logs[region] & set(service_log_groups(region))
    assert logs[SPOKE] == {f"/aws/eks/hubspoke-prod-{SPOKE}/cluster"}


def test_the_flags_delete_the_dataset_and_the_models_too(aws: Refusals, config: Path) -> None:
    _deploy()
    assert _run(config, aws, "--yes", "--confirm", ENV, "--delete-dataset", "--delete-models") == 0
    for region in (HUB, SPOKE):
        assert _buckets(region) == {f"prod-data-{region}"}
        assert _volumes(region) == 0
        assert set(_keys(region).values()) == {"PendingDeletion"}
        assert _secrets(region) == set()
    assert _live_stacks() == set()


def test_delete_dataset_without_the_typed_name_deletes_nothing_of_the_hubs_storage(
    aws: Refusals, config: Path, capsys: Any
) -> None:
    """--delete-dataset asks before the hub's Storage stack goes: the other stacks are deleted, the dataset's
    stacks, buckets, volumes and secret are all still there, and the run exits 1."""
    _deploy()
    hub_buckets, hub_volumes = _buckets(HUB), _volumes(HUB)
    assert _run(config, aws, "--yes", "--delete-dataset", typed="") == 1
    assert _live_stacks() == DATASET_STACKS
    assert _buckets(HUB) == hub_buckets and _volumes(HUB) == hub_volumes
    assert _secrets(HUB) == {f"cnq-admin-{HUB}"}
    assert "none of the dataset was deleted" in capsys.readouterr().err
    # Typed, the same command finishes: the dataset's stacks go, then what they retained.
    assert _run(config, aws, "--yes", "--delete-dataset", typed=ENV) == 0
    assert _live_stacks() == set() and _volumes(HUB) == 0 and _secrets(HUB) == set()


def test_a_refused_stack_stops_the_run_and_a_rerun_continues(
    aws: Refusals, config: Path, capsys: Any
) -> None:
    """DeleteStack refused half-way (termination protection on the spoke's storage stack): the stacks before it
    are gone, it and the ones after stay, nothing retained is touched; the rerun, once allowed, finishes."""
    _deploy()
    aws.protected.add(stack_name("storage", SPOKE))
    assert _run(config, aws, "--yes", "--confirm", ENV) == 1
    err = capsys.readouterr().err
    assert stack_name("storage", SPOKE) in err and "run the same command again" in err
    after = [stack_name(k, r) for k, r in DEPLOY_ORDER][: DEPLOY_ORDER.index(("storage", SPOKE)) + 1]
    assert _live_stacks() == set(after)
    assert _volumes(SPOKE) == 3  # nothing retained deleted before every stack is gone
    aws.protected.clear()
    assert _run(config, aws, "--yes", "--confirm", ENV) == 0
    assert _live_stacks() == DATASET_STACKS and _volumes(SPOKE) == 0


def test_a_delete_that_fails_stops_the_run_and_a_rerun_retries_it(
    aws: Refusals, config: Path, capsys: Any
) -> None:
    """A stack whose delete ends DELETE_FAILED (say a HyperPod cluster SageMaker could not delete): the run stops
    there with its status, later stacks untouched; DeleteStack on a DELETE_FAILED stack retries the delete."""
    _deploy()
    failing = stack_name("compute", SPOKE)
    aws.failing.add(failing)
    assert _run(config, aws, "--yes", "--confirm", ENV) == 1
    err = capsys.readouterr().err
    assert f"{failing} (us-west-2) was not deleted: status DELETE_FAILED" in err
    assert stack_name("compute", HUB) in _live_stacks() and stack_name("ops", SPOKE) not in _live_stacks()
    aws.failing.clear()
    assert _run(config, aws, "--yes", "--confirm", ENV) == 0
    assert _live_stacks() == DATASET_STACKS


def test_no_answer_at_the_prompt_deletes_nothing_retained(aws: Refusals, config: Path) -> None:
    _deploy()

    def closed(_: str) -> str:
        raise EOFError  # stdin closed: no terminal, nobody to type

    assert (
        teardown.run(_args(config, "--yes"), clients=aws.wrap(session_clients()), ask=closed, poll_seconds=0)
        == 1
    )
    assert _volumes(SPOKE) == 3


def test_a_refused_resource_stops_the_run_and_a_rerun_continues(
    aws: Refusals, config: Path, capsys: Any
) -> None:
    """S3 refuses one bucket's delete: volumes deleted before it stay deleted, keys (last) are not yet scheduled;
    the rerun finds the stacks gone and the volumes gone, and deletes the rest."""
    _deploy()
    lifecycle = f"sagemaker-hubspoke-{ENV}-{SPOKE}-0a1b2c3d"
    aws.denied_buckets.add(lifecycle)
    assert _run(config, aws, "--yes", "--confirm", ENV) == 1
    assert lifecycle in capsys.readouterr().err
    assert _volumes(SPOKE) == 0 and lifecycle in _buckets(SPOKE)
    assert "PendingDeletion" not in _keys(SPOKE).values()
    aws.denied_buckets.clear()
    assert _run(config, aws, "--yes", "--confirm", ENV) == 0
    assert lifecycle not in _buckets(SPOKE) and "PendingDeletion" in _keys(SPOKE).values()
    # A third run has nothing left to do.
    assert _run(config, aws, "--yes", "--confirm", ENV) == 0
    assert "Nothing left to delete" in capsys.readouterr().out


def test_credentials_for_another_account_change_nothing(aws: Refusals, tmp_path: Path, capsys: Any) -> None:
    _deploy()
    other = write_config(tmp_path, minimal(account="111111111111"), name="other.yaml")
    assert _run(other, aws, "--yes", "--confirm", ENV) == 2
    assert "these credentials are for 123456789012" in capsys.readouterr().err
    assert len(_live_stacks()) == len(DEPLOY_ORDER)


def test_the_command_is_registered_and_refuses_bad_input(config: Path, capsys: Any) -> None:
    assert main(["teardown", "--config", str(config), "--region", "eu-west-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hubspoke: --region: eu-west-1 not in") and "Traceback" not in err
    assert CLUSTERS[SPOKE] == "dev-usw2"


def test_the_dry_run_without_credentials_prints_the_order_then_the_fix(
    monkeypatch: pytest.MonkeyPatch, config: Path, capsys: Any
) -> None:
    """A new user's first dry run: no credentials anywhere (FAKE_CREDENTIALS and instance metadata off). The
    order needs only the config, so it is printed; reading the stacks then stops with exit 1 (docs/cli.md,
    "teardown") and a fix naming the account and where the permissions are listed."""
    isolate_from_real_aws(monkeypatch, credentials=False)
    assert main(["teardown", "--config", str(config)]) == 1
    captured = capsys.readouterr()
    listed = [line.split()[1] for line in captured.out.splitlines() if line.strip()[:1].isdigit()]
    assert listed == [
        stack_name(k, r) for k, r in reversed(DEPLOY_ORDER) if stack_name(k, r) not in DATASET_STACKS
    ]
    assert "credentials for account 123456789012" in captured.out
    assert "Traceback" not in captured.err
    assert "fix: use credentials for account 123456789012" in captured.err
    assert 'docs/cli.md, "teardown"' in captured.err
