"""`hubspoke verify`: stack and network checks, pass and fail, against moto in-process and as a loopback server.

The deployed world (verify_world.py) is built from the synthesized templates of a hub and two spokes, so the
expected IDs, readers and rules below come from those templates, not from the code under test.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from hubspoke.cli.checks import CheckResult
from hubspoke.cli.verify import run_verify
from hubspoke.config import HubSpokeConfig, load
from tests.cli.verify_fixtures import TWO_SPOKES, Kube
from tests.cli.verify_world import DeployedWorld
from tests.conftest import ROOT, write_config
from tests.docs.checker import command_problems
from tests.docs.shell import parse

Templates = dict[str, dict[str, Any]]


def quoted_command_problems(fix: str) -> dict[str, list[str]]:
    """Each `command` quoted in a fix, with what the docs checker (botocore's models, the CLI's own
    customizations, the CDK CLI's help) finds wrong with it: the fixes verify prints pass the same bar as
    the docs. Empty lists when every command is one its tool accepts."""
    spans = re.findall(r"`([^`]+)`", fix)
    assert spans, f"no quoted command in {fix!r}"
    return {span: [p for c in parse(span) for p in command_problems(c)] for span in spans}


@contextmanager
def only_areas(areas: Collection[str] | None) -> Iterator[None]:
    """verify's list of areas (hubspoke.cli.verify.AREAS) cut to those named in `areas` while the block runs; all
    of them for None. Each Region still runs its account row first, which gates the areas.

    For a test that reads the rows of one area (a whole Region's run is about 45 moto calls, one area's a few):
    `--region` scopes a run to a Region, this to an area. Tests of the whole run (every row, the order, the exit
    code) run every area: test_healthy_environment_passes_every_check, tests/cli/test_verify_cli.py."""
    if areas is None:
        yield
        return
    import hubspoke.cli.verify as command

    kept = tuple(area for area in command.AREAS if area.name in areas)
    assert {a.name for a in kept} == set(areas), f"verify has no area {set(areas) - {a.name for a in kept}}"
    with mock.patch.object(command, "AREAS", kept):
        yield


# verify's areas (hubspoke.cli.verify.AREAS), one each, for only_areas.
STACKS, NETWORK, CANARY, COMPUTE, CACHE, ALARMS = (
    {"stacks"},
    {"network"},
    {"canary"},
    {"compute"},
    {"cache"},
    {"alarms"},
)
# The area each row comes from, by its check name (a run of each area alone, 2026-12-06); the rest by prefix below.
_AREA_OF_ROW = {
    **dict.fromkeys(("stack", "outputs", "stale reader"), "stacks"),
    **dict.fromkeys(("vpc", "peering", "routes", "security group"), "network"),
    **dict.fromkeys(("canary", "canary inputs", "hub reachable", "portal", "portal hub addresses"), "canary"),
    **dict.fromkeys(("access host", "volume addresses"), "compute"),
    "dataset cached": "cache",
}
_AREA_OF_PREFIX = {"hyperpod": "compute", "eks": "compute", "kubernetes": "compute", "alarm": "alarms"}


def area_of(check: str) -> str:
    """The area of verify whose run makes `check`'s rows."""
    prefix = check.split(" ", 1)[0]
    return _AREA_OF_ROW.get(check) or _AREA_OF_PREFIX[prefix]


def verify(
    world: DeployedWorld,
    config_path: Path,
    kube: Kube | None = None,
    config: HubSpokeConfig | None = None,
    only: set[str] | None = None,
    areas: Collection[str] | None = None,
) -> list[CheckResult]:
    """`hubspoke verify` over the world, every Region or (`--region`) those in `only`; every area, or (only_areas)
    those in `areas`."""
    with only_areas(areas):
        return run_verify(
            config or world.config,
            world.clients,
            config_path=str(config_path),
            only=only,
            kubeconfig=(kube.kubeconfig,) if kube else (),
        )


def rows(results: list[CheckResult], check: str, region: str | None = None) -> list[CheckResult]:
    return [r for r in results if r.check == check and (region is None or r.region == region)]


def region_rows(
    world: DeployedWorld,
    config_path: Path,
    check: str,
    region: str,
    *,
    kube: Kube | None = None,
    config: HubSpokeConfig | None = None,
) -> list[CheckResult]:
    """One check's rows from `hubspoke verify --region REGION`, its area alone (only_areas): for a test that reads
    no other Region's rows, nor other areas'."""
    return rows(
        verify(world, config_path, kube, config, only={region}, areas={area_of(check)}), check, region
    )


def readers_of(templates: Templates, producer_name: str, output: str | None = None) -> set[str]:
    """Stack ids whose template reads `producer_name` (one output, or any) with Fn::GetStackOutput."""

    def reads(node: Any) -> bool:
        if isinstance(node, dict):
            ref = node.get("Fn::GetStackOutput")
            if ref and ref["StackName"] == producer_name and output in (None, ref["OutputName"]):
                return True
            return any(reads(v) for v in node.values())
        return isinstance(node, list) and any(reads(v) for v in node)

    return {stack for stack, template in templates.items() if reads(template.get("Resources", {}))}


def outputs_read(template: dict[str, Any], producer_name: str) -> set[str]:
    """The OutputNames one template reads from `producer_name` with Fn::GetStackOutput."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("Fn::GetStackOutput")
            if ref and ref["StackName"] == producer_name:
                found.add(ref["OutputName"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(template.get("Resources", {}))
    return found


def test_healthy_environment_passes_every_check(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    results = verify(deployed, deployed_config, kube)
    assert [r for r in results if r.status in ("fail", "warn")] == []
    # The only row out of reach: the network-only spoke has no CNQ, hence no canary.
    assert [(r.region, r.check) for r in results if r.status == "not checked"] == [("eu-west-1", "canary")]
    present = {(r.region, r.check) for r in results}
    for region in ("us-east-2", "us-west-2", "eu-west-1"):
        for check in ("account", "stack", "outputs", "vpc", "routes", "security group"):
            assert (region, check) in present, (region, check)
    for region in ("us-west-2", "eu-west-1"):
        assert (region, "peering") in present
    for check in (
        "canary",
        "hub reachable",
        "portal",
        "portal hub addresses",
        "alarm hub-unreachable-page",
        "alarm portal-not-active-page",
    ):
        assert ("us-west-2", check) in present
    for region in ("us-east-2", "us-west-2"):
        for check in ("hyperpod", "hyperpod group", "hyperpod nodes", "eks", "eks add-ons"):
            assert (region, check) in present
        assert (region, "kubernetes nodes") in present and (region, "kubernetes volumes") in present
        assert (region, "volume addresses") in present
        assert (region, "alarm gpu-utilization-low") in present
    # Every add-on installed and ACTIVE at its pin, for the default Kubernetes 1.35 (this config names none). The
    # pins: kube-proxy and CoreDNS from the Amazon EKS User Guide's add-on tables for 1.35 (newest stored
    # snapshots, read 2026-12-01), vpc-cni the table's build for 1.27 to 1.33 (ASSUMED offered for 1.35 too).
    # The unpinned ones, CloudWatch observability among them for 1.35, run what EKS picked at create time: the
    # world reports v1.0.0-eksbuild.1 for them.
    for region in ("us-east-2", "us-west-2"):
        (addons,) = rows(results, "eks add-ons", region)
        assert dict(a.split(" ") for a in addons.detail.removeprefix("ACTIVE: ").split(", ")) == {
            "vpc-cni": "v1.20.1-eksbuild.3",
            "kube-proxy": "v1.35.3-eksbuild.13",
            "coredns": "v1.14.3-eksbuild.3",
            "amazon-cloudwatch-observability": "v1.0.0-eksbuild.1",
            "eks-pod-identity-agent": "v1.0.0-eksbuild.1",
            "cert-manager": "v1.0.0-eksbuild.1",
            "amazon-sagemaker-hyperpod-training-operator": "v1.0.0-eksbuild.1",
        }
    # One stack row per stack of the plan: 3 network, 2 link, 2 storage, 2 compute, 1 ops, 1 dashboard.
    assert len(rows(results, "stack")) == 11
    # Regions come hub first, then the spokes in config order, as plan lists them.
    assert list(dict.fromkeys(r.region for r in results)) == ["us-east-2", "us-west-2", "eu-west-1"]
    # The add-on hook was asked about the clusters the Compute templates create, and nothing else.
    assert {path for _, path in deployed.clients.asked} >= {
        "/clusters/hubspoke-dev-us-east-2/addons",
        "/clusters/hubspoke-dev-us-west-2/addons",
    }


def test_wrong_account_fails_and_leaves_the_region_unchecked(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    data = json.loads(json.dumps(TWO_SPOKES))
    data["spokes"][1]["account"] = "111111111111"
    other = write_config(tmp_path, data)
    # The Regions and the area (the routes) read below.
    scope = {"us-east-2", "eu-west-1"}
    results = verify(deployed, other, config=load(other).config, only=scope, areas=NETWORK)
    account = [r for r in results if r.region == "eu-west-1"]
    assert [(r.check, r.status) for r in account] == [("account", "fail"), ("checks", "not checked")]
    assert "111111111111" in account[0].detail
    assert account[1].detail == "the account check did not pass"
    # The hub's Link stack for that spoke reads its peering: in another account, that is said, not guessed.
    hub_routes = [r for r in rows(results, "routes", "us-east-2") if r.status == "not checked"]
    assert hub_routes and "lives in account 111111111111" in hub_routes[0].detail
    # The peering the world made is from this account, not 111111111111: the hub side finds none from
    # there, so the routes inside that spoke's CIDR are not judged (never a delete-route for them).
    assert [r for r in rows(results, "routes", "us-east-2") if r.status in ("warn", "fail")] == []


@pytest.mark.parametrize(
    ("status", "wording", "fix"),
    [
        ("UPDATE_IN_PROGRESS", "an operation is still running", "wait until it ends"),
        (
            "UPDATE_ROLLBACK_FAILED",
            "UPDATE_ROLLBACK_FAILED",
            "fix the cause, or `aws cloudformation continue",
        ),
        ("REVIEW_IN_PROGRESS", "never executed", "deploy it: npx cdk deploy"),
    ],
)
def test_stack_states_other_than_complete_fail(
    deployed: DeployedWorld, deployed_config: Path, status: str, wording: str, fix: str
) -> None:
    deployed._moto_stack(deployed.plans["link-us-west-2"]).status = status  # states moto's API never reaches
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-east-2") if r.status == "fail"]
    assert row.detail.startswith(f"hubspoke-dev-link-us-west-2 {status}") or row.detail.startswith(
        "hubspoke-dev-link-us-west-2 has"
    )
    assert wording in row.detail and row.fix.startswith(fix)


def test_missing_stack_fails_with_its_deploy_command(deployed: DeployedWorld, deployed_config: Path) -> None:
    deployed.clients("cloudformation", "us-west-2").delete_stack(StackName="hubspoke-dev-ops-us-west-2")
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert row.detail == "hubspoke-dev-ops-us-west-2 does not exist in account 123456789012"
    # Deployed after the stacks whose outputs its template reads (Fn::GetStackOutput), each named before the deploy.
    after, _, _ = row.fix.partition(": npx cdk deploy")
    producers = {
        name.removeprefix("hubspoke-dev-")
        for name in re.findall(r'"StackName": "([^"]+)"', json.dumps(deployed.templates["ops-us-west-2"]))
    }
    assert producers and after.startswith("deploy it after ")
    assert producers <= set(after.removeprefix("deploy it after ").split(", ")), (producers, after)
    # The command `hubspoke plan` prints for that stack (docs/cli.md, "hubspoke plan").
    assert row.fix.endswith(
        f"npx cdk deploy -c config={deployed_config} --exclusively hubspoke-dev/ops-us-west-2"
    )


def test_rolled_back_create_names_the_first_failed_resource_and_the_delete(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    cause = (
        "Received response status [FAILED] from custom resource. Message returned: "
        "portal proposal to 10.10.64.10 refused: hub not reachable on TCP 3713"
    )
    # The node's cancellation is written in the same second as the cause, before it: DescribeStackEvents's
    # order among tied events says nothing about which came first, so only its reason ("Resource creation
    # cancelled": CloudFormation stopped it because another resource failed) shows it is no cause.
    deployed.operation_failed(
        "storage-us-west-2",
        status="ROLLBACK_COMPLETE",
        failures=[
            ("CnqNode3", "AWS::EC2::Instance", "Resource creation cancelled"),
            ("PortalToHub", "AWS::CloudFormation::CustomResource", cause),
        ],
        tied=True,
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert row.detail == (
        "hubspoke-dev-storage-us-west-2 ROLLBACK_COMPLETE: PortalToHub (AWS::CloudFormation::CustomResource) "
        f"CREATE_FAILED: {cause}"
    )
    # A stack whose creation rolled back can only be deleted (CloudFormation, "Stack status codes").
    assert (
        "aws cloudformation delete-stack --stack-name hubspoke-dev-storage-us-west-2 --region us-west-2"
        in row.fix
    )
    assert "--exclusively hubspoke-dev/storage-us-west-2" in row.fix
    # A failed first create retains node volumes (DeleteOnTermination false), key, secret and buckets that hold
    # no data yet (issue 22, item 11): the fix says where the runbook lists and deletes them.
    assert "hubspoke:cnq-cluster" in row.fix and "After a failed first create of a Storage stack" in row.fix
    # Right after the deploy: what to delete first (each kind the runbook lists), then where, as a section that exists.
    retained = row.fix.split(
        "--exclusively hubspoke-dev/storage-us-west-2; first delete what the failed create "
    )[1]
    for kind in ("node volumes tagged hubspoke:cnq-cluster", "KMS key", "admin secret", "buckets"):
        assert kind in retained, kind
    runbook, _, section = retained.rpartition("): ")[2].partition(", ")
    assert f"\n## {section.strip(chr(39))}\n" in (ROOT / runbook).read_text()
    assert quoted_command_problems(row.fix) == {
        "aws cloudformation delete-stack --stack-name hubspoke-dev-storage-us-west-2 --region us-west-2": []
    }


@pytest.mark.parametrize("status", ["UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", "IMPORT_COMPLETE"])
def test_complete_states_pass(deployed: DeployedWorld, deployed_config: Path, status: str) -> None:
    """An update that succeeded and is removing replaced resources, or an import that completed: both run
    the current template ("Stack status codes", CloudFormation User Guide)."""
    deployed._moto_stack(deployed.plans["link-us-west-2"]).status = status  # states moto's API never reaches
    (row,) = [
        r
        for r in region_rows(deployed, deployed_config, "stack", "us-east-2")
        if "link-us-west-2" in r.detail
    ]
    assert row.status == "pass" and status in row.detail


def test_update_whose_rollback_failed_names_the_resource_blocking_it(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The update failed on the cluster, then its rollback failed on the role: the rollback waits for the
    role, so the role is what to fix or skip. ContinueUpdateRollback's ResourcesToSkip takes "only resources
    that are in the UPDATE_FAILED state because a rollback failed" (botocore, ContinueUpdateRollbackInput)."""
    blocker = "Role hubspoke-dev-us-west-2-node was deleted outside CloudFormation; cannot update it"
    deployed.operation_failed(
        "compute-us-west-2",
        status="UPDATE_ROLLBACK_FAILED",
        failures=[("HyperPodCluster", "AWS::SageMaker::Cluster", "Insufficient capacity for ml.p5.48xlarge")],
        rollback_failures=[("NodeRole", "AWS::IAM::Role", blocker)],
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert row.detail == (
        f"hubspoke-dev-compute-us-west-2 UPDATE_ROLLBACK_FAILED: NodeRole (AWS::IAM::Role) UPDATE_FAILED: {blocker}"
    )
    skip = (
        "aws cloudformation continue-update-rollback --stack-name hubspoke-dev-compute-us-west-2 "
        "--resources-to-skip NodeRole --region us-west-2"
    )
    # Fix first (the role can be restored), skipping second; the deploy only after the stack is usable again.
    assert row.fix == (
        f"fix the cause, or `{skip}`; then npx cdk deploy -c config={deployed_config} "
        "--exclusively hubspoke-dev/compute-us-west-2"
    )
    assert quoted_command_problems(row.fix) == {skip: []}


@pytest.mark.parametrize(
    ("status", "failures", "rollback_failures", "blamed", "command"),
    [
        # A delete that stopped: DeleteStack's RetainResources is for stacks in DELETE_FAILED (DeleteStackInput).
        (
            "DELETE_FAILED",
            [("DatasetBucket", "AWS::S3::Bucket", "The bucket you tried to delete is not empty")],
            [],
            "DatasetBucket (AWS::S3::Bucket) DELETE_FAILED: The bucket you tried to delete is not empty",
            "aws cloudformation delete-stack --stack-name hubspoke-dev-storage-us-west-2 "
            "--retain-resources DatasetBucket --region us-west-2",
        ),
        # A create that failed, whose rollback could not delete what it made: only a delete is allowed.
        (
            "ROLLBACK_FAILED",
            [("PortalToHub", "AWS::CloudFormation::CustomResource", "hub not reachable on TCP 3713")],
            [("NodeSecurityGroup", "AWS::EC2::SecurityGroup", "resource sg-0abc has a dependent object")],
            "NodeSecurityGroup (AWS::EC2::SecurityGroup) DELETE_FAILED: resource sg-0abc has a dependent object",
            "aws cloudformation delete-stack --stack-name hubspoke-dev-storage-us-west-2 --region us-west-2",
        ),
    ],
)
def test_stuck_delete_or_rollback_names_the_newest_failure(
    deployed: DeployedWorld,
    deployed_config: Path,
    status: str,
    failures: list[tuple[str, str, str]],
    rollback_failures: list[tuple[str, str, str]],
    blamed: str,
    command: str,
) -> None:
    deployed.operation_failed(
        "storage-us-west-2", status=status, failures=failures, rollback_failures=rollback_failures
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert row.detail == f"hubspoke-dev-storage-us-west-2 {status}: {blamed}"
    assert f"`{command}`" in row.fix
    # A stuck rollback names where it stopped; a stuck delete, what blocks it.
    stopped = {"ROLLBACK_FAILED": "the rollback stopped at ", "DELETE_FAILED": "a delete stopped at "}[status]
    assert row.fix.startswith(stopped + blamed.split(" ", 1)[0])
    assert all(problems == [] for problems in quoted_command_problems(row.fix).values()), row.fix


def test_rolled_back_update_blames_the_latest_operation_only(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    deployed.operation_failed(
        "compute-us-west-2",
        status="UPDATE_ROLLBACK_COMPLETE",
        failures=[("HyperPodCluster", "AWS::SageMaker::Cluster", "an old failure, fixed since")],
    )
    latest = 'Resource handler returned message: "Insufficient capacity for ml.p5.48xlarge in usw2-az1"'
    deployed.operation_failed(
        "compute-us-west-2",
        status="UPDATE_ROLLBACK_COMPLETE",
        failures=[("HyperPodCluster", "AWS::SageMaker::Cluster", latest)],
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert latest in row.detail and "old failure" not in row.detail
    assert "UPDATE_FAILED" in row.detail and "previous template" in row.fix


def test_reader_deployed_before_its_producers_update_is_stale(
    deployed: DeployedWorld, deployed_config: Path, deployed_templates: Templates
) -> None:
    deployed.update("network-us-east-2")
    results = verify(deployed, deployed_config)
    stale = {
        r.detail.split(" ", 1)[0].removeprefix("hubspoke-dev-")
        for r in rows(results, "stale reader")
        if r.status == "warn"
    }
    assert stale == readers_of(deployed_templates, "hubspoke-dev-network-us-east-2")
    (link,) = [r for r in rows(results, "stale reader") if r.detail.startswith("hubspoke-dev-link-us-west-2")]
    # The outputs it reads are the ones CDK added for its weak references, as its template names them.
    read = outputs_read(deployed_templates["link-us-west-2"], "hubspoke-dev-network-us-east-2")
    assert read and "network-us-east-2" in link.detail and all(o in link.detail for o in read), link.detail
    assert link.detail.startswith("hubspoke-dev-link-us-west-2 was deployed ")
    assert link.detail.endswith(": it may still hold their old values")
    # An unchanged template is not deployed (aws-cdk canSkipDeploy): the refresh token makes it an update.
    assert link.fix == (
        f"npx cdk deploy -c config={deployed_config} -c refresh=$(date +%s) --exclusively hubspoke-dev/link-us-west-2"
    )
    assert not [r for r in results if r.status == "fail"], "stale is a warning: only the times are visible"


def test_reader_updated_after_its_producer_is_current_again(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The refresh the stale row prints is an update of the reader: its LastUpdatedTime, not its creation,
    is when it last resolved its Fn::GetStackOutput references (CloudFormation Template Reference)."""
    start = datetime.now(UTC)
    deployed.update("network-us-east-2", at=start + timedelta(minutes=1))
    deployed.update("link-us-west-2", at=start + timedelta(minutes=2))
    results = verify(deployed, deployed_config, areas=STACKS)
    (link,) = [r for r in rows(results, "stale reader") if r.detail.startswith("hubspoke-dev-link-us-west-2")]
    assert link.status == "pass"
    # It names every stack its deployed template reads (Fn::GetStackOutput StackName), and only those.
    named = link.detail.removeprefix("hubspoke-dev-link-us-west-2 was deployed after every stack it reads (")
    producers = {
        n.removeprefix("hubspoke-dev-")
        for n in re.findall(r'"StackName": "([^"]+)"', json.dumps(deployed.templates["link-us-west-2"]))
    }
    assert named.endswith(")") and set(named[:-1].split(", ")) == producers
    # Its sibling, not updated since, is still stale.
    (other,) = [
        r for r in rows(results, "stale reader") if r.detail.startswith("hubspoke-dev-link-eu-west-1")
    ]
    assert other.status == "warn"


def test_a_reader_is_judged_by_its_deployed_template_without_a_local_cdk_out(
    deployed: DeployedWorld,
    deployed_config: Path,
    deployed_templates: Templates,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Who reads what comes from the templates CloudFormation holds (GetTemplate returns "the same template that
    was used", botocore cloudformation GetTemplateOutput.TemplateBody), not from a synth: verify runs where no
    cdk.out is, and a reader deployed from a version of it that reads nothing is not stale."""
    monkeypatch.chdir(tmp_path)
    start = datetime.now(UTC)
    deployed.update("link-us-west-2", at=start, reading=False)
    deployed.update("network-us-east-2", at=start + timedelta(minutes=1))
    stale = {
        r.detail.split(" ", 1)[0].removeprefix("hubspoke-dev-")
        for r in rows(verify(deployed, deployed_config, areas=STACKS), "stale reader")
        if r.status == "warn"
    }
    synthesized = readers_of(deployed_templates, "hubspoke-dev-network-us-east-2")
    assert "link-us-west-2" in synthesized and "link-eu-west-1" in synthesized
    assert stale == synthesized - {"link-us-west-2"}


def test_producer_replaced_after_its_readers_makes_them_stale(
    deployed: DeployedWorld, deployed_config: Path, deployed_templates: Templates
) -> None:
    """A re-created producer has a newer CreationTime, which moto records itself: no backend edit needed."""
    deployed.redeploy_without("storage-us-east-2")
    stale = {
        r.detail.split(" ", 1)[0].removeprefix("hubspoke-dev-")
        for r in rows(verify(deployed, deployed_config, areas=STACKS), "stale reader")
        if r.status == "warn"
    }
    assert stale == readers_of(deployed_templates, "hubspoke-dev-storage-us-east-2")


def test_canary_running_with_a_replaced_producers_old_addresses_fails_until_its_stack_is_refreshed(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The values a reader resolved, not only its times: the canary's environment holds what the Ops stack read
    with Fn::GetStackOutput at its last deploy ("resolved at stack create or update time", CloudFormation
    Template Reference), so a hub whose floating IPs changed since leaves every spoke's canary probing old ones."""
    # Every Region, the canary's area: eu-west-1 has no CNQ, so no canary.
    (row,) = rows(verify(deployed, deployed_config, areas=CANARY), "canary inputs")
    assert (row.region, row.status) == ("us-west-2", "pass")
    deployed.redeploy_with("storage-us-east-2", FloatingIps="10.10.99.1,10.10.99.2,10.10.99.3")
    deployed.update("compute-us-west-2")  # another reader's refresh leaves the canary's values as they were
    (row,) = rows(verify(deployed, deployed_config, areas=CANARY), "canary inputs")
    assert row.status == "fail"
    assert "HUB_ADDRESSES" in row.detail and "10.10.99.1,10.10.99.2,10.10.99.3" in row.detail
    assert "-c refresh=$(date +%s) --exclusively hubspoke-dev/ops-us-west-2" in row.fix
    deployed.update("ops-us-west-2")
    (row,) = rows(verify(deployed, deployed_config, areas=CANARY), "canary inputs")
    assert row.status == "pass"
    # A canary deployed without one of its inputs (another version of the Ops stack) is not silently passed.
    deployed.environments["ops-us-west-2"].pop("SPOKE_REST_ADDRESS")
    deployed.update("ops-us-west-2", keep_environment=True)
    (row,) = rows(verify(deployed, deployed_config, areas=CANARY), "canary inputs")
    assert row.status == "fail" and "SPOKE_REST_ADDRESS is not set" in row.detail


def test_output_a_reader_needs_missing_fails_and_names_the_readers(
    deployed: DeployedWorld, deployed_config: Path, deployed_templates: Templates
) -> None:
    outputs = deployed_templates["network-us-east-2"]["Outputs"]
    # The output CDK added for the weak reference to the same attribute the named PeerPathSecurityGroupId carries.
    (weak,) = [
        name
        for name, out in outputs.items()
        if name != "PeerPathSecurityGroupId" and out["Value"] == outputs["PeerPathSecurityGroupId"]["Value"]
    ]
    deployed.redeploy_without("network-us-east-2", "PeerPathSecurityGroupId", weak)
    deployed.redeploy_without("compute-us-west-2", "EksClusterName")
    results = verify(deployed, deployed_config, only={"us-east-2", "us-west-2"}, areas=STACKS | NETWORK)
    (missing,) = [r for r in rows(results, "outputs", "us-east-2") if r.status == "fail"]
    readers = readers_of(deployed_templates, "hubspoke-dev-network-us-east-2", weak)
    assert readers and weak in missing.detail and "PeerPathSecurityGroupId" not in missing.detail
    # Each stack whose template reads it, and only those, listed after it.
    named = missing.detail.split(f"{weak} (read by ", 1)[1].removesuffix(")")
    assert set(named.split(", ")) == readers, named
    assert missing.fix.startswith(
        f"npx cdk deploy -c config={deployed_config} --exclusively hubspoke-dev/network-us-east-2"
    )
    # Nobody can check the group's rules without its ID: said, not guessed.
    (group,) = rows(results, "security group", "us-east-2")
    assert group.status == "not checked" and "PeerPathSecurityGroupId" in group.detail
    assert group.fix == "see the stack rows of that stack"
    # The Region's other stacks still have every output: each says how many it has.
    passed = [r.detail for r in rows(results, "outputs", "us-east-2") if r.status == "pass"]
    assert passed and all(
        re.fullmatch(r"hubspoke-dev-\S+-us-east-2: all \d+ outputs present", d) for d in passed
    )
    # An output no stack reads (operators and verify do) is a warning.
    (unread,) = rows(results, "outputs", "us-west-2")[-1:]
    assert unread.status == "warn" and "EksClusterName" in unread.detail


def test_a_create_that_stopped_without_rollback_can_be_retried_or_rolled_back(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """CREATE_FAILED is a create that stopped with rollback disabled: it keeps what it provisioned. RollbackStack
    "rolls back the specified stack to the last known stable state from CREATE_FAILED or UPDATE_FAILED", and an
    update with DisableRollback preserves "the state of previously provisioned resources" (botocore
    cloudformation model: RollbackStack; UpdateStackInput.DisableRollback). So delete is not the only way."""
    deployed.operation_failed(
        "storage-us-west-2",
        status="CREATE_FAILED",
        failures=[("PortalToHub", "AWS::CloudFormation::CustomResource", "hub not reachable on TCP 3713")],
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert "nothing else is allowed" not in row.fix
    assert "--exclusively hubspoke-dev/storage-us-west-2 --no-rollback" in row.fix
    where = "--stack-name hubspoke-dev-storage-us-west-2 --region us-west-2"
    assert quoted_command_problems(row.fix) == {
        f"aws cloudformation rollback-stack {where}": [],
        f"aws cloudformation delete-stack {where}": [],
    }


def test_config_that_moved_the_fixed_az_keys_fails_with_the_field_and_the_deployed_zones(
    deployed: DeployedWorld, deployed_config: Path, deployed_templates: Templates, tmp_path: Path
) -> None:
    # What was deployed, read from the network template of us-west-2 (not from verify): its subnets' AZ IDs.
    network = deployed_templates["network-us-west-2"]["Resources"]
    zones = {
        logical: r["Properties"]["AvailabilityZoneId"]
        for logical, r in network.items()
        if r["Type"] == "AWS::EC2::Subnet"
    }
    accelerator = {z for logical, z in zones.items() if "accelerator" in logical.lower()}
    private = {z for logical, z in zones.items() if "private" in logical.lower()}
    assert len(accelerator) == 1 and len(private) == 2, zones
    # The same environment with both keys moved to AZ IDs none of the deployed subnets use.
    moved = copy.deepcopy(TWO_SPOKES)
    spare = sorted({"usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"} - private - accelerator)[:2]
    moved["spokes"][0] |= {"az_ids": spare, "accelerator_az_id": spare[0]}
    config = load(write_config(tmp_path, moved, "dev.yaml")).config

    results = verify(deployed, deployed_config, config=config, only={"us-east-2", "us-west-2"}, areas=COMPUTE)

    (hyperpod,) = rows(results, "hyperpod placement", "us-west-2")
    assert hyperpod.status == "fail"
    assert "spokes[0].accelerator_az_id" in hyperpod.detail and spare[0] in hyperpod.detail
    assert accelerator <= set(re.findall(r"usw2-az\d", hyperpod.fix)), hyperpod.fix
    assert "cannot change after the first deploy" in hyperpod.fix
    (eks,) = rows(results, "eks placement", "us-west-2")
    assert eks.status == "fail"
    assert "spokes[0].az_ids" in eks.detail
    assert set(re.findall(r"usw2-az\d", eks.fix)) == private, eks.fix
    # The hub kept its keys: its rows pass.
    hub = {r.status for r in results if r.region == "us-east-2" and r.check.endswith("placement")}
    assert hub == {"pass"}


def test_a_complete_stack_names_its_status_and_when_it_last_changed(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """DescribeStacks' StackStatus and, for a stack never updated, its CreationTime (LastUpdatedTime is absent
    until an update: botocore cloudformation service-2.json, Stack), in UTC."""
    (stack,) = deployed.clients("cloudformation", "us-west-2").describe_stacks(
        StackName="hubspoke-dev-network-us-west-2"
    )["Stacks"]
    created = stack["CreationTime"].astimezone(UTC)
    (row,) = [
        r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if "network" in r.detail
    ]
    assert (row.status, row.detail) == (
        "pass",
        f"hubspoke-dev-network-us-west-2 CREATE_COMPLETE ({created:%Y-%m-%d %H:%M:%S} UTC)",
    )


def test_a_failed_stack_without_failed_resource_events_says_so_and_leaves_the_logical_id_to_fill(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """DELETE_FAILED whose latest operation's events (DescribeStackEvents) name no failed resource: the row says no
    reason is recorded, and the retain command leaves the logical ID for the reader to fill (DeleteStack's
    RetainResources takes logical IDs: botocore cloudformation DeleteStackInput)."""
    deployed._moto_stack(deployed.plans["storage-us-west-2"]).status = "DELETE_FAILED"
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    assert row.detail == "hubspoke-dev-storage-us-west-2 DELETE_FAILED: no reason recorded"
    assert (
        "`aws cloudformation delete-stack --stack-name hubspoke-dev-storage-us-west-2 --retain-resources "
        "<logical-id> --region us-west-2`" in row.fix
    )


@pytest.mark.parametrize(
    ("status", "fix"),
    [
        # An update with rollback disabled stopped where it failed (UpdateStackInput.DisableRollback: "Preserve the
        # state of previously provisioned resources"): the next deploy retries it.
        ("UPDATE_FAILED", "the update stopped without rolling back; fix the cause, then npx cdk deploy"),
        # A state the fixes do not single out (StackStatus IMPORT_ROLLBACK_FAILED, botocore cloudformation model):
        # the events say what to fix.
        ("IMPORT_ROLLBACK_FAILED", "fix the cause (see the stack's events), then npx cdk deploy"),
    ],
)
def test_other_failed_states_name_the_failed_resource_and_what_to_do(
    deployed: DeployedWorld, deployed_config: Path, status: str, fix: str
) -> None:
    """A failed resource event without a ResourceStatusReason (optional in DescribeStackEvents' StackEvent) is
    named with its type and status all the same."""
    deployed.operation_failed(
        "compute-us-west-2",
        status=status,
        failures=[("HyperPodCluster", "AWS::SageMaker::Cluster", None)],  # type: ignore[list-item]
    )
    (row,) = [r for r in region_rows(deployed, deployed_config, "stack", "us-west-2") if r.status == "fail"]
    verb = "UPDATE" if status.startswith("UPDATE") else "CREATE"
    assert row.detail == (
        f"hubspoke-dev-compute-us-west-2 {status}: HyperPodCluster (AWS::SageMaker::Cluster) {verb}_FAILED: "
        "no reason recorded"
    )
    assert row.fix.startswith(fix) and row.fix.endswith("--exclusively hubspoke-dev/compute-us-west-2")


def test_a_reader_whose_template_is_not_json_is_not_judged(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """GetTemplate returns the body as it was submitted, and botocore parses only a JSON one (handlers.py,
    json_decode_template_body): a stack deployed from YAML has reads nobody can see here, which is said."""
    client = deployed.clients("cloudformation", "us-east-2")
    client.update_stack(
        StackName="hubspoke-dev-link-us-west-2",
        TemplateBody="Resources:\n  Placeholder:\n    Type: AWS::CloudFormation::WaitConditionHandle\n",
    )
    (row,) = [
        r
        for r in region_rows(deployed, deployed_config, "stale reader", "us-east-2")
        if "link-us-west-2" in r.detail
    ]
    assert (row.status, row.detail) == (
        "not checked",
        "the template of hubspoke-dev-link-us-west-2 is not JSON, so its reads are unknown",
    )


def test_a_reader_deployed_at_its_producers_last_change_is_current(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """Stale means deployed before the producer changed; deployed at the same moment, it read the new values."""
    moment = datetime.now(UTC) + timedelta(minutes=1)
    deployed.update("network-us-east-2", at=moment)
    deployed.update("link-us-west-2", at=moment)
    (link,) = [
        r
        for r in rows(verify(deployed, deployed_config, areas=STACKS), "stale reader")
        if r.detail.startswith("hubspoke-dev-link-us-west-2")
    ]
    assert link.status == "pass"


def test_a_reader_stale_against_two_producers_names_both(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    deployed.update("network-us-east-2")
    deployed.update("network-us-west-2")
    (link,) = [
        r
        for r in rows(verify(deployed, deployed_config, areas=STACKS), "stale reader")
        if r.detail.startswith("hubspoke-dev-link-us-west-2")
    ]
    assert link.status == "warn" and "); network-us-" in link.detail and link.detail.count("; reads ") == 2
