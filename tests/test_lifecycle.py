"""The deploys after the first, replayed over config/dev.yaml's templates in a model of CloudFormation
(tests/lifecycle.py, which cites what it follows): every stack kind survives a failed create, a rolled-back update
and a delete, and the model finds a retained fixed name it was never told about.

The model's semantics are pinned first on small templates, each case from the page tests/lifecycle.py names.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from hubspoke.config import HubSpokeConfig
from hubspoke.topology import stack_name
from tests.conftest import Templates, synth_dependencies, synth_regions, upstream
from tests.lifecycle import Account, InjectedFailure, StackFailed, creation_order, without_leaves

REGION = "us-west-2"


def _repo(*, name: Any = None, deletion: str = "Retain", encryption: str = "AES256") -> dict[str, Any]:
    props: dict[str, Any] = {"EncryptionConfiguration": {"EncryptionType": encryption}}
    if name is not None:
        props["RepositoryName"] = name
    return {"Type": "AWS::ECR::Repository", "DeletionPolicy": deletion, "UpdateReplacePolicy": deletion,
            "Properties": props}  # fmt: skip


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    # "Last" fails on request: it depends on the rest, so everything else exists when it fails.
    last = {"Type": "AWS::SQS::Queue", "DependsOn": sorted(resources), "Properties": {}}
    return {"Resources": {**resources, "Last": last}}


# The model's semantics, case by case.


@pytest.mark.parametrize(
    ("deletion", "retry_ok", "recreate_ok"),
    [
        # Retain keeps it on the create's rollback and on delete: the fixed name blocks both.
        ("Retain", False, False),
        # RetainExceptOnCreate deletes it on the rollback of its create, keeps it on delete.
        ("RetainExceptOnCreate", True, False),
        ("Delete", True, True),
        ("Snapshot", True, True),
    ],
)
def test_a_fixed_name_under_each_deletion_policy(deletion: str, retry_ok: bool, recreate_ok: bool) -> None:
    template = _template(Repo=_repo(name="training", deletion=deletion))
    account = Account()
    with pytest.raises(InjectedFailure):
        account.deploy(REGION, "s", template, fail_at="Last")
    if retry_ok:
        account.deploy(REGION, "s", template)
    else:
        with pytest.raises(StackFailed, match="AWS::ECR::Repository training already exists"):
            account.deploy(REGION, "s", template)
        return
    account.delete(REGION, "s")
    if recreate_ok:
        account.deploy(REGION, "s", template)
    else:
        with pytest.raises(StackFailed, match="already exists"):
            account.deploy(REGION, "s", template)


def test_a_generated_name_never_blocks_and_a_stack_id_name_is_new_per_create() -> None:
    unique = {
        "Fn::Join": ["-", ["training", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]]
    }
    for repo in (_repo(), _repo(name=unique)):
        account = Account()
        template = _template(Repo=repo)
        with pytest.raises(InjectedFailure):
            account.deploy(REGION, "s", template, fail_at="Last")
        account.deploy(REGION, "s", template)
        account.delete(REGION, "s")
        account.deploy(REGION, "s", template)
        assert len(account.kept) == 2  # each retained repository stays, under its own name


def test_a_name_is_taken_per_region_except_global_services() -> None:
    account = Account()
    account.deploy("us-east-2", "a", _template(Repo=_repo(name="training")))
    account.deploy("us-west-2", "a", _template(Repo=_repo(name="training")))
    bucket = {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "data"}}
    account.deploy("us-east-2", "b", _template(Bucket=bucket))
    with pytest.raises(StackFailed, match="AWS::S3::Bucket data already exists"):
        account.deploy("us-west-2", "b", _template(Bucket=bucket))


def test_a_create_only_change_replaces_and_a_named_one_cannot_be_replaced() -> None:
    """AWS::ECR::Repository EncryptionConfiguration is create-only in its schema ("Update requires: Replacement")."""
    account = Account()
    account.deploy(REGION, "s", _template(Repo=_repo()))
    first = account.stacks[(REGION, "s")].resources["Repo"].physical_id
    account.deploy(REGION, "s", _template(Repo=_repo(encryption="KMS")))
    assert account.stacks[(REGION, "s")].resources["Repo"].physical_id != first
    assert [k.physical_id for k in account.kept] == [first]  # UpdateReplacePolicy Retain kept the old one
    named = Account()
    named.deploy(REGION, "s", _template(Repo=_repo(name="training")))
    with pytest.raises(StackFailed, match="custom-named resource requires replacing"):
        named.deploy(REGION, "s", _template(Repo=_repo(name="training", encryption="KMS")))
    # A new name is a new resource: the replacement goes through.
    named.deploy(REGION, "s", _template(Repo=_repo(name="training-2", encryption="KMS")))


def test_an_update_rollback_keeps_what_it_created_only_under_retain() -> None:
    account = Account()
    account.deploy(REGION, "s", _template())
    grown = _template(Repo=_repo(name="training"))
    with pytest.raises(InjectedFailure):
        account.deploy(REGION, "s", grown, fail_at="Last")
    assert account.stacks[(REGION, "s")].status == "UPDATE_ROLLBACK_COMPLETE"
    with pytest.raises(StackFailed, match="already exists"):
        account.deploy(REGION, "s", grown)
    account = Account()
    account.deploy(REGION, "s", _template())
    grown = _template(Repo=_repo(name="training", deletion="RetainExceptOnCreate"))
    with pytest.raises(InjectedFailure):
        account.deploy(REGION, "s", grown, fail_at="Last")
    account.deploy(REGION, "s", grown)


# The replays over config/dev.yaml's templates. Each starts with every other stack of the environment deployed
# into one account and this one not yet created.


def _environment(config: HubSpokeConfig, templates: Templates, *, leave_out: str) -> Account:
    """Every stack of the environment but `leave_out`, deployed into one account in `cdk deploy`'s order."""
    waits = upstream(synth_dependencies(config))
    account = Account()
    for sid in sorted(templates, key=lambda sid: (len(waits[sid]), sid)):
        if sid != leave_out:
            _deploy(account, config, sid, templates[sid])
    return account


def _deploy(
    account: Account, config: HubSpokeConfig, sid: str, template: Any, fail_at: str | None = None
) -> None:
    kind, _, region = sid.partition("-")
    name = stack_name(config, kind, region)  # type: ignore[arg-type]
    account.deploy(synth_regions(config)[sid], name, template, fail_at=fail_at)


def _last(template: Any) -> str:
    """The resource a replay fails at: the last one created, so a rollback has the most to delete or keep."""
    return creation_order(template)[-1]


def failed_create_then_retry(
    account: Account, config: HubSpokeConfig, templates: Templates, sid: str
) -> None:
    """The stack's first create fails and rolls back; then `cdk deploy` again."""
    with pytest.raises(InjectedFailure):
        _deploy(account, config, sid, templates[sid], _last(templates[sid]))
    _deploy(account, config, sid, templates[sid])


def update_rollback_then_redeploy(
    account: Account, config: HubSpokeConfig, templates: Templates, sid: str
) -> None:
    """An update that adds the resources nothing else uses fails and rolls back; then the same update again."""
    smaller, added = without_leaves(templates[sid])
    assert added, sid
    _deploy(account, config, sid, smaller)
    with pytest.raises(InjectedFailure):
        _deploy(account, config, sid, templates[sid], _last(templates[sid]))
    _deploy(account, config, sid, templates[sid])


def delete_then_recreate(account: Account, config: HubSpokeConfig, templates: Templates, sid: str) -> None:
    """The stack is created, deleted (the documented teardown), and created again."""
    _deploy(account, config, sid, templates[sid])
    kind, _, region = sid.partition("-")
    account.delete(synth_regions(config)[sid], stack_name(config, kind, region))  # type: ignore[arg-type]
    _deploy(account, config, sid, templates[sid])


REPLAYS: list[Callable[[Account, HubSpokeConfig, Templates, str], None]] = [
    failed_create_then_retry,
    update_rollback_then_redeploy,
    delete_then_recreate,
]


@pytest.mark.parametrize("replay", REPLAYS, ids=lambda r: r.__name__)
def test_every_stack_kind_survives_the_replay(
    dev_config: HubSpokeConfig, dev_templates: Templates, replay: Callable[..., None]
) -> None:
    kinds = {sid.partition("-")[0] for sid in dev_templates}
    assert kinds == {"network", "storage", "compute", "link", "ops", "dashboard"}
    failures = []
    for sid in sorted(dev_templates):
        account = _environment(dev_config, dev_templates, leave_out=sid)
        try:
            replay(account, dev_config, dev_templates, sid)
        except StackFailed as exc:
            failures.append(str(exc))
    assert failures == []


def _pre_fix(templates: Templates) -> tuple[Templates, str]:
    """The training image repository as it was: fixed name `hubspoke-dev-training`, Retain."""
    broken = copy.deepcopy(templates)
    resources = broken["compute-us-west-2"]["Resources"]
    [lid] = [k for k, v in resources.items() if v["Type"] == "AWS::ECR::Repository"]
    resources[lid]["Properties"]["RepositoryName"] = "hubspoke-dev-training"
    return broken, lid


@pytest.mark.parametrize("replay", [failed_create_then_retry, delete_then_recreate], ids=lambda r: r.__name__)
def test_the_replays_catch_the_retained_fixed_repository_name(
    dev_config: HubSpokeConfig, dev_templates: Templates, replay: Callable[..., None]
) -> None:
    """Nothing in the model names ECR: the name property comes from the registry schema, the policy from the
    template. The first create goes through; the one after the rollback or the delete fails."""
    broken, lid = _pre_fix(dev_templates)
    account = _environment(dev_config, broken, leave_out="compute-us-west-2")
    with pytest.raises(
        StackFailed, match="AWS::ECR::Repository hubspoke-dev-training already exists"
    ) as caught:
        replay(account, dev_config, broken, "compute-us-west-2")
    assert caught.value.logical_id == lid and not isinstance(caught.value, InjectedFailure)


def test_retain_except_on_create_fixes_the_retry_but_not_the_recreate(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """Why the repository's name is generated rather than RetainExceptOnCreate: a torn-down Compute stack (the
    documented way to stop the GPU bill) must be created again."""
    broken, lid = _pre_fix(dev_templates)
    broken["compute-us-west-2"]["Resources"][lid]["DeletionPolicy"] = "RetainExceptOnCreate"
    account = _environment(dev_config, broken, leave_out="compute-us-west-2")
    failed_create_then_retry(account, dev_config, broken, "compute-us-west-2")
    account = _environment(dev_config, broken, leave_out="compute-us-west-2")
    with pytest.raises(StackFailed, match="already exists"):
        delete_then_recreate(account, dev_config, broken, "compute-us-west-2")


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        # compute.service_cidr: EKS sets the service CIDR only at creation (its schema: create-only).
        ("AWS::EKS::Cluster", ("KubernetesNetworkConfig", "ServiceIpv4Cidr"), "172.21.0.0/16"),
        # Another security group or subnet for the HyperPod cluster: VpcConfig is create-only.
        ("AWS::SageMaker::Cluster", ("VpcConfig", "SecurityGroupIds"), ["sg-0123456789abcdef0"]),
    ],
)
def test_a_change_that_replaces_a_fixed_name_cluster_fails_the_update(
    dev_config: HubSpokeConfig, dev_templates: Templates, kind: str, path: tuple[str, str], value: Any
) -> None:
    """The EKS and HyperPod clusters carry fixed names (metrics and logs are keyed on them), so CloudFormation
    refuses any change that would replace them, and the update rolls back with nothing changed. Nothing before
    deploy compares a config with what is deployed: this is where such a change is stopped today."""
    sid = "compute-us-west-2"
    account = _environment(dev_config, dev_templates, leave_out=sid)
    _deploy(account, dev_config, sid, dev_templates[sid])
    changed = copy.deepcopy(dev_templates[sid])
    [lid] = [k for k, v in changed["Resources"].items() if v["Type"] == kind]
    changed["Resources"][lid]["Properties"][path[0]][path[1]] = value
    with pytest.raises(StackFailed, match="custom-named resource requires replacing") as caught:
        _deploy(account, dev_config, sid, changed)
    assert caught.value.logical_id == lid
