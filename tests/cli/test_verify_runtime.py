"""`hubspoke verify`: canary, compute, Kubernetes and alarm checks, pass and fail, against moto (both ways).

The canary metrics are published by running the canary's own handler and turning its EMF lines into
PutMetricData as CloudWatch Logs does; HyperPod and EKS come from moto (states its API cannot set are
written into its backend, see verify_world.py); Kubernetes from the loopback API stand-in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hubspoke.cli.checks import CheckResult
from hubspoke.cli.verify import run_verify
from tests.cli.test_verify import ALARMS, CACHE, CANARY, COMPUTE, NETWORK, only_areas, rows, verify
from tests.cli.verify_fixtures import Kube
from tests.cli.verify_world import DeployedWorld
from tests.conftest import ROOT
from tests.fakes.kube_api import claim, node

# The training spoke, the Region most rows here are read in: a test that reads no other Region's rows runs
# `hubspoke verify --region us-west-2` (run_verify's `only`), as an operator checking one Region would, and only
# the area of verify its rows come from (test_verify.only_areas).
SPOKE = {"us-west-2"}


def _only(results: list[CheckResult], check: str, region: str = "us-west-2") -> CheckResult:
    (row,) = rows(results, check, region)
    return row


def _at(
    world: DeployedWorld, config: Path, later: datetime, areas: Collection[str] = CANARY
) -> list[CheckResult]:
    """`hubspoke verify --region us-west-2` at a later moment: the spoke's canary rows (or those of `areas`) as
    they will read."""
    with only_areas(areas):
        return run_verify(
            world.config, world.clients, config_path=str(config), only=SPOKE, now=later, kubeconfig=()
        )


def test_canary_silent_for_five_minutes_fails(deployed: DeployedWorld, deployed_config: Path) -> None:
    """The issue's bar is 5 minutes of silence. The last report was 2 minutes ago (the fixture); CloudWatch
    may date a one-minute datapoint up to a minute early (the start of its period), so 1.5 minutes later
    it is 3.5 to 4.5 minutes old and passes, 4.5 minutes later 6.5 to 7.5 and fails."""
    start = datetime.now(UTC)
    assert _only(_at(deployed, deployed_config, start + timedelta(minutes=1.5)), "canary").status == "pass"
    results = _at(deployed, deployed_config, start + timedelta(minutes=4.5))
    canary = _only(results, "canary")
    assert canary.status == "fail" and re.search(r"has not reported for [67] minutes", canary.detail)
    assert "hubspoke-dev-ops-us-west-2" in canary.fix and "docs/runbooks/hub-outage.md" in canary.fix
    # The runbook section the fix names is one of the runbook's headings.
    (section,) = re.findall(r"'([^']+)'", canary.fix)
    headings = (ROOT / "docs/runbooks/hub-outage.md").read_text().splitlines()
    assert f"## {section}" in headings, section
    assert canary.fix.endswith("its log names what failed)"), canary.fix
    for check in ("hub reachable", "portal", "portal hub addresses"):
        row = _only(results, check)
        assert row.status == "not checked" and row.detail == "the canary has not reported for 5 minutes", row


def test_canary_that_never_reported_fails(deployed: DeployedWorld, deployed_config: Path) -> None:
    earlier = datetime.now(UTC) - timedelta(hours=2)
    results = _at(deployed, deployed_config, earlier)
    assert "no canary report in the last 60 minutes" in _only(results, "canary").detail
    for check in ("hub reachable", "portal", "portal hub addresses"):
        assert _only(results, check).detail == "the canary has not reported", check


def test_hub_unreachable_for_three_minutes_fails_with_the_runbook(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """As the alarm judges it: HubReachable below 1 for 3 one-minute datapoints in a row
    (docs/operations.md, "Alarms"); its runbook is hub-outage.md (docs/runbooks/README.md).

    Judged at a moment 30 s into a minute, with its own healthy minute before the outage: CloudWatch dates a
    datapoint at the start of its minute, so against the clock the fixture's newest report (2 minutes before
    the fixture ran) left the 3-minute window whenever the test began in a minute's last second or so, and the
    blip read as an outage (it failed that way once in a fresh-clone run)."""
    moment = datetime.now(UTC).replace(second=30, microsecond=0)
    deployed.canary("us-west-2", minutes_ago=[2], now=moment)
    deployed.canary("us-west-2", minutes_ago=[1], hub_up=False, now=moment)
    one = _only(_at(deployed, deployed_config, moment), "hub reachable")
    assert one.status == "warn" and "in 1 of the last 3 minutes" in one.detail
    later = moment + timedelta(minutes=4)
    deployed.canary("us-west-2", minutes_ago=[1, 2, 3], hub_up=False, now=later)
    row = _only(_at(deployed, deployed_config, later), "hub reachable")
    assert row.status == "fail" and "in us-east-2 answered from us-west-2 in the last 3 minutes" in row.detail
    assert row.fix == "follow docs/runbooks/hub-outage.md"


def test_hub_answering_from_some_addresses_only_warns(deployed: DeployedWorld, deployed_config: Path) -> None:
    """127.0.0.2 refuses (only 127.0.0.1 listens): the canary reaches the hub, through half its addresses."""
    deployed.canary("us-west-2", minutes_ago=[1], hub_addresses="127.0.0.1,127.0.0.2")
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CANARY), "hub reachable")
    assert row.status == "warn" and "only 50% of its floating IPs" in row.detail


def test_canary_without_a_portal_reading_fails(deployed: DeployedWorld, deployed_config: Path) -> None:
    """A canary run without the spoke's REST address publishes no PortalStatus (canary_feed, portal=None)."""
    deployed.canary("us-west-2", minutes_ago=[1], portal=None)
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CANARY), "portal")
    assert row.status == "fail" and row.detail.startswith("the canary reports the hub but no PortalStatus: ")
    assert row.detail.endswith("it has no spoke REST address or admin secret"), row.detail


def test_portal_on_hub_addresses_the_hub_no_longer_outputs_fails_with_the_storage_refresh(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The spoke's Storage stack gave the portal the hub's FloatingIps when it last deployed (Fn::GetStackOutput);
    the canary, which can reach the spoke's REST API, publishes PortalHubHostsCurrent 0 when a hub host of the
    portal is not among its HUB_ADDRESSES. Verify fails the row with the refresh of the spoke's Storage stack, whose
    portal resource modifies the portal's hub hosts; an unread portal is not judged."""
    deployed.canary("us-west-2", minutes_ago=[1], portal_hubs_current=False)
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CANARY), "portal hub addresses")
    assert row.status == "fail" and "hubspoke-dev-storage-us-east-2 no longer outputs" in row.detail
    assert "-c refresh=$(date +%s) --exclusively hubspoke-dev/storage-us-west-2" in row.fix
    # Later reports, each in a one-minute period of its own (a period's Minimum would mix them).
    later = datetime.now(UTC) + timedelta(minutes=3)
    deployed.canary("us-west-2", minutes_ago=[1], portal_hubs_current=True, now=later)
    assert _only(_at(deployed, deployed_config, later), "portal hub addresses").status == "pass"
    latest = later + timedelta(minutes=3)
    deployed.canary("us-west-2", minutes_ago=[1], portal="unreadable", now=latest)
    row = _only(_at(deployed, deployed_config, latest), "portal hub addresses")
    assert row.status == "not checked"
    assert row.detail.startswith(
        "the canary's last report has no PortalHubHostsCurrent (the portal was unreadable"
    )
    assert row.detail.endswith("or it predates the metric)"), row.detail


def test_portal_hub_addresses_are_not_judged_against_stale_canary_inputs(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The canary compares the portal with its HUB_ADDRESSES; once those are not the hub's output ("canary inputs"
    fails), a 1 from it proves nothing about the hub's current addresses."""
    deployed.canary("us-west-2", minutes_ago=[1], portal_hubs_current=True)
    deployed.redeploy_with("storage-us-east-2", FloatingIps="10.10.99.1,10.10.99.2,10.10.99.3")
    results = verify(deployed, deployed_config, only=SPOKE, areas=CANARY)
    assert _only(results, "canary inputs").status == "fail"
    row = _only(results, "portal hub addresses")
    assert row.status == "not checked" and row.detail == "the canary's inputs are not its producers' outputs"


@pytest.mark.parametrize(
    ("portal", "wording"),
    [
        ("DEGRADED", "is DEGRADED, not ACTIVE"),
        ("INACTIVE", "is INACTIVE"),
        ("unreadable", "the canary cannot read the portal (spoke REST API or admin secret"),
    ],
)
def test_portal_not_active_fails(
    deployed: DeployedWorld, deployed_config: Path, portal: str, wording: str
) -> None:
    deployed.canary("us-west-2", minutes_ago=[1], portal=portal)
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CANARY), "portal")
    assert row.status == "fail" and wording in row.detail and "docs/runbooks/portal.md" in row.fix


def test_hyperpod_node_not_running_and_cluster_failed(deployed: DeployedWorld, deployed_config: Path) -> None:
    cluster = deployed.hyperpod("us-west-2")
    broken = next(iter(cluster.nodes.values()))
    broken.status = "Failure"  # ListClusterNodes InstanceStatus.Status; moto creates every node Running
    cluster.status, cluster.failure_message = "Failed", "Lifecycle script on_create.sh exited with 1"
    cluster.instance_groups[0]["Status"] = "Degraded"  # InstanceGroupStatus (botocore sagemaker)
    results = verify(deployed, deployed_config, areas=COMPUTE)
    group = _only(results, "hyperpod group")
    assert group.status == "fail" and group.detail == "accelerated-worker-group-1: status Degraded"
    nodes = _only(results, "hyperpod nodes")
    assert (
        nodes.status == "fail"
        and f"{broken.instance_id} (accelerated-worker-group-1) Failure" in nodes.detail
    )
    state = _only(results, "hyperpod")
    assert state.detail == "hubspoke-dev-us-west-2 is Failed: Lifecycle script on_create.sh exited with 1"
    assert _only(results, "hyperpod", "us-east-2").status == "pass"


def test_hyperpod_group_smaller_than_configured_fails(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    from hubspoke.config import load
    from tests.cli.verify_fixtures import TWO_SPOKES
    from tests.conftest import write_config

    data = {
        **TWO_SPOKES,
        "spokes": [
            dict(TWO_SPOKES["spokes"][0], compute={"instance_groups": [{"count": 4}]}),
            TWO_SPOKES["spokes"][1],
        ],
    }
    bigger = write_config(tmp_path, data)
    row = _only(
        verify(deployed, bigger, config=load(bigger).config, only=SPOKE, areas=COMPUTE), "hyperpod group"
    )
    assert row.status == "fail"
    assert "target 2 nodes, config 4" in row.detail and "2 of 4 nodes running" in row.detail


def test_eks_addons_settling_or_off_the_pin(deployed: DeployedWorld, deployed_config: Path) -> None:
    addons = deployed.clients.addons["us-west-2", "hubspoke-dev-us-west-2"]
    addons["cert-manager"] |= {"status": "CREATING"}
    addons["vpc-cni"] |= {"addonVersion": "v1.19.0-eksbuild.1"}
    results = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)
    assert _only(results, "eks").status == "pass"
    warned = {r.detail: r.fix for r in rows(results, "eks add-ons", "us-west-2") if r.status == "warn"}
    assert set(warned) == {
        "cert-manager v1.0.0-eksbuild.1 is CREATING",
        "vpc-cni runs v1.19.0-eksbuild.1, the pin is v1.20.1-eksbuild.3",
    }
    # CREATING settles by itself (EKS DescribeAddon addon.status); a version off the pin is the deploy's to set.
    assert warned["cert-manager v1.0.0-eksbuild.1 is CREATING"] == "wait for it to settle"
    assert warned["vpc-cni runs v1.19.0-eksbuild.1, the pin is v1.20.1-eksbuild.3"].endswith(_COMPUTE_DEPLOY)


def _with_spoke_version(tmp_path: Path, version: str) -> Path:
    from tests.cli.verify_fixtures import TWO_SPOKES
    from tests.conftest import write_config

    data = {
        **TWO_SPOKES,
        "spokes": [
            dict(TWO_SPOKES["spokes"][0], compute={"kubernetes_version": version}),
            TWO_SPOKES["spokes"][1],
        ],
    }
    return write_config(tmp_path, data)


def test_eks_config_one_minor_ahead_is_the_next_deploys_upgrade(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    """EKS updates a control plane one minor version at a time (EKS User Guide, "Update existing cluster to new
    Kubernetes version"): a config one minor above the live cluster (EKS DescribeCluster cluster.version, here
    set to 1.34 under a config of 1.35) is what the next deploy does, said as a warning, not a fault."""
    from hubspoke.config import load

    deployed.eks_cluster("us-west-2").version = "1.34"
    ahead = _with_spoke_version(tmp_path, "1.35")
    row = _only(verify(deployed, ahead, config=load(ahead).config, only=SPOKE, areas=COMPUTE), "eks")
    assert row.status == "warn", row.detail
    assert "Kubernetes 1.34; the config says 1.35" in row.detail
    assert "next deploy upgrades the control plane" in row.detail
    assert "spokes[0].compute.kubernetes_version back to 1.34" in row.fix


@pytest.mark.parametrize(
    ("live", "version", "fix"),
    [
        # Two minors ahead: EKS refuses the jump, so the fix is the one step it allows.
        (
            "1.33",
            "1.35",
            "set spokes[0].compute.kubernetes_version to 1.34 and deploy, then raise it one minor",
        ),
        # Behind the cluster: EKS has no downgrade; the config must follow the cluster.
        ("1.35", "1.34", "set spokes[0].compute.kubernetes_version to 1.35, the cluster's version"),
    ],
)
def test_eks_config_the_next_deploy_cannot_reach_fails_with_the_step(
    deployed: DeployedWorld, tmp_path: Path, live: str, version: str, fix: str
) -> None:
    from hubspoke.config import load

    deployed.eks_cluster("us-west-2").version = live
    path = _with_spoke_version(tmp_path, version)
    row = _only(verify(deployed, path, config=load(path).config, only=SPOKE, areas=COMPUTE), "eks")
    assert row.status == "fail", row.detail
    assert f"runs Kubernetes {live}, the config says {version}" in row.detail
    assert row.fix.startswith(fix), row.fix


def test_eks_cluster_not_active_and_addons_unhealthy(deployed: DeployedWorld, deployed_config: Path) -> None:
    deployed.eks_cluster("us-west-2").status = "UPDATING"  # moto creates clusters ACTIVE
    addons = deployed.clients.addons["us-west-2", "hubspoke-dev-us-west-2"]
    addons["coredns"] |= {
        "status": "DEGRADED",
        "health": {
            "issues": [
                {
                    "code": "InsufficientNumberOfReplicas",
                    "message": "0 of 2 replicas ready",
                    "resourceIds": [],
                }
            ]
        },
    }
    del addons["amazon-cloudwatch-observability"]
    results = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)
    assert "status UPDATING" in _only(results, "eks").detail
    failed = {r.detail: r.fix for r in rows(results, "eks add-ons", "us-west-2") if r.status == "fail"}
    assert set(failed) == {
        "coredns v1.14.3-eksbuild.3 is DEGRADED: InsufficientNumberOfReplicas: 0 of 2 replicas ready",
        "amazon-cloudwatch-observability is not installed on hubspoke-dev-us-west-2",
    }
    degraded = failed[
        "coredns v1.14.3-eksbuild.3 is DEGRADED: InsufficientNumberOfReplicas: 0 of 2 replicas ready"
    ]
    assert degraded.startswith("docs/runbooks/compute.md, then ") and degraded.endswith(_COMPUTE_DEPLOY)
    assert failed["amazon-cloudwatch-observability is not installed on hubspoke-dev-us-west-2"].endswith(
        _COMPUTE_DEPLOY
    )


def test_kubernetes_nodes_not_ready_and_claims_pending(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    server = kube.servers["us-west-2"]
    server.nodes[1] = node(
        server.nodes[1]["metadata"]["name"],
        ready="False",
        reason="KubeletNotReady",
        message="PLEG is not healthy",
    )
    # The node controller sets Ready to Unknown when the kubelet stops posting status (Kubernetes docs,
    # "Nodes", Node status: Ready "Unknown if the node controller has not heard from the node").
    server.nodes[0] = node(
        server.nodes[0]["metadata"]["name"],
        ready="Unknown",
        reason="NodeStatusUnknown",
        message="Kubelet stopped posting node status.",
    )
    server.claims[1] = claim(server.claims[1], phase="Pending")
    results = verify(deployed, deployed_config, kube, areas=COMPUTE)
    nodes = _only(results, "kubernetes nodes")
    assert (
        nodes.status == "fail"
        and "2 of 2 nodes not Ready" in nodes.detail
        and "PLEG is not healthy" in nodes.detail
        and "Kubelet stopped posting node status." in nodes.detail
    )
    volumes = _only(results, "kubernetes volumes")
    assert volumes.status == "fail" and "hubspoke-checkpoints is Pending" in volumes.detail
    assert _only(results, "kubernetes nodes", "us-east-2").status == "pass"


def test_kubernetes_nodes_that_never_joined_fail(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    kube.servers["us-west-2"].nodes.pop()
    kube.servers["us-west-2"].claims.clear()
    results = verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE)
    nodes = _only(results, "kubernetes nodes")
    assert nodes.status == "fail" and "1 nodes registered, the HyperPod groups have 2" in nodes.detail
    assert nodes.fix == "nodes that never joined: docs/runbooks/compute.md"
    volumes = _only(results, "kubernetes volumes")
    assert "hubspoke-dataset-ro does not exist" in volumes.detail
    assert volumes.fix.startswith("kubectl -n hyperpod-training describe pvc; ")


def _storage_ips(deployed: DeployedWorld, region: str) -> list[str]:
    (stack,) = deployed.clients("cloudformation", region).describe_stacks(
        StackName=f"hubspoke-dev-storage-{region}"
    )["Stacks"]
    return next(o["OutputValue"] for o in stack["Outputs"] if o["OutputKey"] == "FloatingIps").split(",")


def test_volumes_on_addresses_the_storage_stack_no_longer_outputs_fail_with_the_refresh(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    """The Compute stack wrote the CNQ floating IPs into the PersistentVolumes (spec.nfs.server) from the Storage
    stack's FloatingIps output, resolved only when the Compute stack is deployed (CloudFormation, "Fn::GetStackOutput").
    After the Storage stack's addresses change, verify compares what the cluster holds (Kubernetes core/v1
    PersistentVolumeList) with the output: the volumes on old addresses fail, and the fix says the claims and
    volumes must go first (a PersistentVolume's source is immutable after creation) and then the refresh."""
    old = _storage_ips(deployed, "us-west-2")
    row = _only(verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE), "volume addresses")
    assert row.status == "pass" and old[0] in row.detail, row.detail
    deployed.redeploy_with("storage-us-west-2", FloatingIps="10.20.99.1,10.20.99.2,10.20.99.3")
    results = verify(deployed, deployed_config, kube, areas=COMPUTE)
    row = _only(results, "volume addresses")
    assert row.status == "fail", row.detail
    assert (
        f"hyperpod-training-hubspoke-dataset-ro-us-west-2 mounts {old[0]}, not one of 10.20.99.1,10.20.99.2,10.20.99.3"
        in row.detail
    )
    assert "hyperpod-training-hubspoke-checkpoints-us-west-2 mounts" in row.detail
    assert "delete the claims and volumes" in row.fix
    assert "-c refresh=$(date +%s) --exclusively hubspoke-dev/compute-us-west-2" in row.fix
    # The hub's own volumes are on the hub's unchanged addresses.
    assert _only(results, "volume addresses", "us-east-2").status == "pass"


def test_a_volume_still_on_a_current_address_passes_and_a_missing_one_fails(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    """A floating IP that is still in the list works wherever it sits in it: a reordered output is no fault. A
    volume the cluster does not hold fails with the deploy that applies it."""
    ips = _storage_ips(deployed, "us-west-2")
    deployed.redeploy_with("storage-us-west-2", FloatingIps=",".join(["10.20.99.9", *reversed(ips)]))
    assert (
        _only(verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE), "volume addresses").status
        == "pass"
    )
    server = kube.servers["us-west-2"]
    server.volumes = [
        v
        for v in server.volumes
        if v["metadata"]["name"] != "hyperpod-training-hubspoke-checkpoints-us-west-2"
    ]
    row = _only(verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE), "volume addresses")
    assert (
        row.status == "fail"
        and row.detail == "no PersistentVolume hyperpod-training-hubspoke-checkpoints-us-west-2"
    )
    assert "--exclusively hubspoke-dev/compute-us-west-2" in row.fix


def test_kubernetes_without_a_usable_kubeconfig_is_not_checked(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube, tmp_path: Path
) -> None:
    none = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)  # no kubeconfig file at all
    row = _only(none, "kubernetes nodes")
    # DescribeCluster says endpointPublicAccess false (the Compute template's setting): a private endpoint.
    assert row.status == "not checked" and "the endpoint is private" in row.detail
    assert row.fix == "aws eks update-kubeconfig --region us-west-2 --name hubspoke-dev-us-west-2"
    kube.servers["us-west-2"].token = "rotated"  # the API server now refuses the plugin's token: 401
    refused = _only(verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE), "kubernetes volumes")
    assert (
        refused.status == "not checked" and "refused these credentials (401: Unauthorized)" in refused.detail
    )
    down = kube.servers["us-east-2"]
    down.__exit__()
    unreachable = _only(
        verify(deployed, deployed_config, kube, only={"us-east-2"}, areas=COMPUTE),
        "kubernetes nodes",
        "us-east-2",
    )
    assert unreachable.status == "not checked" and f"cannot reach {down.url}" in unreachable.detail
    # kubectl's own fix-less failure, on a private endpoint: the tunnel is what reaches it.
    assert unreachable.detail.endswith("(the endpoint is private: normal outside the VPC)"), (
        unreachable.detail
    )
    tunnel = f"`hubspoke connect --config {deployed_config} --region us-east-2`"
    assert unreachable.fix == f"open the tunnel {tunnel} prints, then run verify again", unreachable.fix

    def public(parsed: dict[str, Any], **_: Any) -> None:
        parsed["cluster"]["resourcesVpcConfig"]["endpointPublicAccess"] = True

    eks = deployed.clients("eks", "us-east-2")
    eks.meta.events.register("after-call.eks.DescribeCluster", public)
    try:
        results = verify(deployed, deployed_config, kube, only={"us-east-2"}, areas=COMPUTE)
    finally:
        eks.meta.events.unregister("after-call.eks.DescribeCluster", public)
    # A public endpoint that cannot be reached is no tunnel's business (EKS DescribeCluster
    # resourcesVpcConfig.endpointPublicAccess true): every Kubernetes row says why, none prescribes the tunnel.
    for check in ("kubernetes nodes", "kubernetes volumes", "volume addresses"):
        row = _only(results, check, "us-east-2")
        assert row.status == "not checked" and "private" not in row.detail and row.fix == "", row


def test_alarm_in_alarm_fails_with_its_runbook(deployed: DeployedWorld, deployed_config: Path) -> None:
    deployed.alarm(
        "us-west-2", "hubspoke-dev-ops-us-west-2-hub-unreachable-page", "ALARM", "3 out of 3 datapoints < 1"
    )
    deployed.alarm(
        "us-east-2", "hubspoke-dev-dashboard-us-east-2-gpu-utilization-low", "INSUFFICIENT_DATA", "no data"
    )
    deployed.clients("cloudwatch", "us-west-2").delete_alarms(
        AlarmNames=["hubspoke-dev-ops-us-west-2-cache-hit-ratio-low"]
    )
    results = verify(deployed, deployed_config, areas=ALARMS)
    hub = _only(results, "alarm hub-unreachable-page")
    assert hub.status == "fail" and "3 out of 3 datapoints < 1" in hub.detail
    # The runbook for this alarm, as the runbook index names it (docs/runbooks/README.md: "…-hub-unreachable-page
    # or …-portal-not-active-page alarm" -> hub-outage.md); the Ops template's description says the same.
    assert hub.fix == "follow docs/runbooks/hub-outage.md"
    description = next(
        r["Properties"]["AlarmDescription"]
        for r in deployed.templates["ops-us-west-2"]["Resources"].values()
        # A composite of the probes alarm and the canary's gate (docs/operations.md, "A fresh deploy does not page").
        if r["Type"] == "AWS::CloudWatch::CompositeAlarm"
        and r["Properties"]["AlarmName"].endswith("hub-unreachable-page")
    )
    assert description.endswith("Runbook: docs/runbooks/hub-outage.md")
    assert _only(results, "alarm gpu-utilization-low", "us-east-2").status == "warn"
    missing = _only(results, "alarm cache-hit-ratio-low")
    assert missing.status == "fail" and missing.fix.endswith("--exclusively hubspoke-dev/ops-us-west-2")


def test_a_composite_alarm_is_read_and_its_silent_input_only_warns(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """CloudWatch returns composite alarms only when DescribeAlarms asks for them (AlarmTypes, botocore
    cloudwatch service-2.json), and `…-cache-hit-ratio-low` is one. Its input `…-cache-hit-ratio-below-floor`
    notifies nobody and is in ALARM on every cold first pass (docs/operations.md, "Alarms"): a warning, not a
    failure. The composite itself in ALARM fails with its runbook (docs/runbooks/README.md: cache-warm-up.md)."""
    deployed.alarm(
        "us-west-2", "hubspoke-dev-ops-us-west-2-cache-hit-ratio-below-floor", "ALARM", "3 out of 3 < 0.9"
    )
    results = verify(deployed, deployed_config, only=SPOKE, areas=ALARMS)
    below = _only(results, "alarm cache-hit-ratio-below-floor")
    assert below.status == "warn" and "notifies nobody" in below.detail
    assert _only(results, "alarm cache-hit-ratio-low").status == "pass"
    deployed.alarm("us-west-2", "hubspoke-dev-ops-us-west-2-cache-hit-ratio-low", "ALARM", "both inputs")
    low = _only(verify(deployed, deployed_config, only=SPOKE, areas=ALARMS), "alarm cache-hit-ratio-low")
    assert low.status == "fail" and low.fix == "follow docs/runbooks/cache-warm-up.md"


def test_the_canary_pages_inputs_in_alarm_only_warn(deployed: DeployedWorld, deployed_config: Path) -> None:
    """`…-hub-probes-failing` notifies nobody and pages only through the composite `…-hub-unreachable-page`
    (docs/operations.md): in ALARM by itself it is a warning that points at the page's row, not a failure."""
    key = "hub-probes-failing"
    deployed.alarm("us-west-2", f"hubspoke-dev-ops-us-west-2-{key}", "ALARM", "3 out of 3 datapoints < 1")
    results = verify(deployed, deployed_config, only=SPOKE, areas=ALARMS)
    row = _only(results, f"alarm {key}")
    assert row.status == "warn" and "notifies nobody" in row.detail, row
    assert "hub-unreachable-page" in row.fix and row.fix.endswith("docs/runbooks/hub-outage.md"), row.fix
    assert _only(results, "alarm hub-unreachable-page").status != "fail"


def test_an_active_addon_with_health_issues_is_not_reported_healthy(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """EKS DescribeAddon answers the add-on's status and, separately, addon.health.issues (AddonIssue: code,
    message, resourceIds; botocore eks 2017-11-01 model): ACTIVE with issues is a warning, not a pass."""
    addons = deployed.clients.addons["us-west-2", "hubspoke-dev-us-west-2"]
    issue = {"code": "ConfigurationConflict", "message": "Conflicts found", "resourceIds": []}
    addons["kube-proxy"] |= {"status": "ACTIVE", "health": {"issues": [issue]}}
    results = rows(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "eks add-ons", "us-west-2")
    (warned,) = [r for r in results if r.status == "warn"]
    assert (
        warned.detail.startswith("kube-proxy ") and "ConfigurationConflict: Conflicts found" in warned.detail
    )
    (passed,) = [r for r in results if r.status == "pass"]
    assert "kube-proxy" not in passed.detail
    # The fix names the runbook and a describe-addon the AWS CLI accepts (tests/docs/checker.py, botocore's models).
    from tests.cli.test_verify import quoted_command_problems

    assert warned.fix.startswith("docs/runbooks/compute.md; ")
    command = "aws eks describe-addon --cluster-name hubspoke-dev-us-west-2 --addon-name kube-proxy --region us-west-2"
    assert quoted_command_problems(warned.fix) == {command: []}


def test_metric_data_that_is_not_complete_is_not_read_as_silence(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """GetMetricData's MetricDataResult.StatusCode is Complete, InternalError, PartialData or Forbidden (botocore
    cloudwatch 2010-08-01). Anything but Complete after the last page is a series that is not all there: the row
    says the metrics could not be read, not that the canary stopped or the hub is down."""
    deployed.canary("us-west-2", minutes_ago=[1])
    cloudwatch = deployed.clients("cloudwatch", "us-west-2")
    for code in ("InternalError", "Forbidden", "PartialData"):

        def incomplete(parsed: dict[str, Any], code: str = code, **_: Any) -> None:
            for result in parsed.get("MetricDataResults", []):
                result["StatusCode"] = code
                result["Timestamps"], result["Values"] = [], []

        cloudwatch.meta.events.register("after-call.cloudwatch.GetMetricData", incomplete)
        try:
            results = verify(deployed, deployed_config, only=SPOKE, areas=CANARY)
        finally:
            cloudwatch.meta.events.unregister("after-call.cloudwatch.GetMetricData", incomplete)
        row = _only(results, "canary")
        assert row.status == "fail" and "did not return the complete series" in row.detail, (code, row)
        # Every query of the canary's, named by its Id, with what CloudWatch answered for it.
        assert f"(fraction {code}, hubhosts {code}, portal {code}, reachable {code})" in row.detail, (
            row.detail
        )
        assert "has not reported" not in row.detail
        assert row.fix.startswith(
            "retry; Forbidden means these credentials may not read HubSpoke/Canary metrics"
        )
        assert row.fix.endswith("(cloudwatch:GetMetricData)"), row.fix
        for check in ("hub reachable", "portal", "portal hub addresses"):
            assert _only(results, check).detail == "the canary's metrics could not be read", check


def test_the_hub_reachable_window_ends_now_not_at_the_newest_datapoint(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The hub-unreachable-page alarm judges the last 3 one-minute periods before it evaluates, a minute without data
    counting as breaching (docs/operations.md, "Alarms"). A canary whose newest report, about 2 minutes before
    verify runs, said the hub was down, and that has said nothing since, has 1 minute down and 2 without data in
    the last 3: the alarm fires, so verify fails it (measured from the newest datapoint, the fixture's older 'up'
    minutes hid that). CloudWatch dates a one-minute datapoint at the start of its minute."""
    start = datetime.now(UTC)
    deployed.canary("us-west-2", minutes_ago=[1], hub_up=False, now=start)
    results = _at(deployed, deployed_config, start + timedelta(minutes=1))
    assert _only(results, "canary").status == "pass"
    assert _only(results, "hub reachable").status == "fail"


def test_dataset_cached_row_warns_until_prewarm_reports_the_whole_dataset(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """docs/cli.md, "dataset cached": pass at 1 (the cache alarm's bar), warn on a partial or no report."""
    whole = _only(verify(deployed, deployed_config, only=SPOKE, areas=CACHE), "dataset cached")
    assert whole.status == "pass"  # the fixture's 1.0
    # The row names the version it judged and the metric's limit (no version dimension; review of issue 24).
    assert "c4-llama3/v1 whole" in whole.detail and "no version dimension" in whole.detail  # TWO_SPOKES' pin
    assert "; taken as the config's pin: the metric" in whole.detail and whole.detail.endswith(
        "under it too)"
    )
    deployed.prewarm("us-west-2", 0.42, minutes_ago=1)  # a newer report: a new version being warmed
    part = _only(verify(deployed, deployed_config, only=SPOKE, areas=CACHE), "dataset cached")
    assert part.status == "warn" and "42.0% of c4-llama3/v1 warm" in part.detail
    assert "hubspoke render prewarm" in part.fix
    none = _only(
        _at(deployed, deployed_config, datetime.now(UTC) + timedelta(days=2), areas=CACHE), "dataset cached"
    )
    assert none.status == "warn" and "no cached fraction reported" in none.detail
    # The hub holds a CNQ cluster and a HyperPod cluster, as a caching spoke does (its config, and its HyperPod rows,
    # which verify makes in the same branch as this one), so only being the hub keeps the row away; a hub pass that
    # produced no rows at all must not pass for that.
    from hubspoke.config import load

    assert load(deployed_config).config.hub.storage.enabled, "the hub of this world holds a CNQ cluster"
    hub = verify(deployed, deployed_config, only={"us-east-2"}, areas=COMPUTE | CACHE)
    assert rows(hub, "hyperpod", "us-east-2"), "the hub's pass reached its compute and cache rows"
    assert not rows(hub, "dataset cached", "us-east-2"), "the hub caches nothing"


# ----- compute: the clusters, their groups, nodes and access -----

_COMPUTE_DEPLOY = "--exclusively hubspoke-dev/compute-us-west-2"  # `cdk deploy` of the spoke's Compute stack


def _answer_error(client: Any, operation: str, code: str, message: str) -> Any:
    """Make `client` answer `operation` with an AWS error (a before-call hook, as botocore lets a stub answer);
    returns the hook, for unregister."""
    from botocore.awsrequest import AWSResponse

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        return AWSResponse("https://stub", 400, {}, None), {
            "Error": {"Code": code, "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }

    event = f"before-call.{client.meta.service_model.service_name}.{operation}"
    client.meta.events.register(event, answer)
    return lambda: client.meta.events.unregister(event, answer)


def test_a_cluster_that_is_not_there_fails_with_the_compute_deploy_and_other_errors_are_named(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """SageMaker DescribeCluster refuses an unknown cluster with ResourceNotFound (botocore sagemaker 2017-07-24
    service-2.json, DescribeCluster errors; moto 5.2.5 answers ValidationException "Could not find cluster '<name>'."),
    EKS DescribeCluster with ResourceNotFoundException (botocore eks 2017-11-01). A missing cluster fails its row
    with the Compute stack's deploy and nothing that reads the cluster is judged; any other error is named as AWS
    answered it, never taken for a missing cluster."""
    sagemaker = deployed.clients("sagemaker", "us-west-2")
    for code, message, missing in (
        ("ResourceNotFound", "Resource hubspoke-dev-us-west-2 not found.", True),
        ("ValidationException", "1 validation error detected: Value at 'clusterName' failed", False),
        ("ThrottlingException", "Rate exceeded", False),
    ):
        undo = _answer_error(sagemaker, "DescribeCluster", code, message)
        try:
            row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "hyperpod")
        finally:
            undo()
        assert row.status == "fail", (code, row)
        if missing:
            assert row.detail == "no HyperPod cluster hubspoke-dev-us-west-2", row.detail
            assert row.fix.endswith(_COMPUTE_DEPLOY), row.fix
        else:
            assert code in row.detail and message in row.detail and "no HyperPod" not in row.detail, (
                row.detail
            )
    sagemaker.delete_cluster(ClusterName="hubspoke-dev-us-west-2")
    deployed.clients("eks", "us-west-2").delete_cluster(name="hubspoke-dev-us-west-2")
    results = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)
    assert _only(results, "hyperpod").detail == "no HyperPod cluster hubspoke-dev-us-west-2"
    eks = _only(results, "eks")
    assert eks.status == "fail" and eks.detail == "no EKS cluster hubspoke-dev-us-west-2"
    assert eks.fix.endswith(_COMPUTE_DEPLOY)
    for check in (
        "hyperpod group",
        "hyperpod nodes",
        "hyperpod placement",
        "eks placement",
        "eks add-ons",
        "eks access",
        "eks caller",
        "access host",
        "kubernetes nodes",
    ):
        assert not rows(results, check, "us-west-2"), check
    undo = _answer_error(deployed.clients("eks", "us-west-2"), "DescribeCluster", "ServerException", "down")
    try:
        eks = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "eks")
    finally:
        undo()
    assert eks.status == "fail" and "ServerException: down" in eks.detail and "no EKS" not in eks.detail


def test_healthy_compute_rows_name_what_they_checked(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    """The pass rows say which cluster, group, nodes, caller and volumes they found, as the spoke's Compute
    template names them (AWS::SageMaker::Cluster ClusterName and InstanceGroups, AWS::EKS::Cluster Name and
    Version); moto's default credentials are the IAM user arn:aws:iam::123456789012:user/moto, an administrator in
    TWO_SPOKES."""
    template = deployed.templates["compute-us-west-2"]["Resources"].values()
    (hyperpod,) = [r["Properties"] for r in template if r["Type"] == "AWS::SageMaker::Cluster"]
    (eks,) = [r["Properties"] for r in template if r["Type"] == "AWS::EKS::Cluster"]
    results = verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE)
    passed = {r.check: r.detail for r in results if r.status == "pass"}
    assert passed["hyperpod"] == f"{hyperpod['ClusterName']} is InService"
    for group in hyperpod["InstanceGroups"]:
        wanted = f"{group['InstanceGroupName']}: {group['InstanceCount']} x {group['InstanceType']}"
        assert wanted in {r.detail for r in rows(results, "hyperpod group", "us-west-2")}
    nodes = sum(g["InstanceCount"] for g in hyperpod["InstanceGroups"])
    assert passed["hyperpod nodes"] == f"all {nodes} nodes Running"
    assert passed["eks"] == f"{eks['Name']} ACTIVE, Kubernetes {eks['Version']}"
    assert passed["eks access"] == f"{eks['Name']}: all 1 listed administrators have entries"
    user = "arn:aws:iam::123456789012:user/moto"
    assert passed["eks caller"] == f"you ({user}) have the access entry {user}"
    assert passed["kubernetes nodes"] == f"all {nodes} nodes Ready"
    assert "hubspoke-dataset-ro and hubspoke-checkpoints Bound in" in passed["kubernetes volumes"]
    assert "current CNQ floating IPs" in passed["volume addresses"]
    assert passed["access host"].endswith(" is running, its SSM Agent Online")


def test_hyperpod_settling_waits_and_a_stopped_cluster_follows_the_runbook(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """SageMaker DescribeCluster ClusterStatus (botocore sagemaker 2017-07-24, ClusterStatus: Creating | Deleting |
    Failed | InService | RollingBack | SystemUpdating | Updating): a cluster being created or updated settles by
    itself, so the fix is to wait; any other state needs the runbook and a deploy. FailureMessage is shown only
    when SageMaker gives one."""
    cluster = deployed.hyperpod("us-west-2")
    cluster.failure_message = ""
    for status, settles in (
        ("Creating", True),
        ("Updating", True),
        ("SystemUpdating", True),
        ("RollingBack", False),
        ("Deleting", False),
    ):
        cluster.status = status
        row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "hyperpod")
        assert row.status == "fail" and row.detail == f"hubspoke-dev-us-west-2 is {status}", row.detail
        if settles:
            assert row.fix.startswith("wait for it to finish") and "hubspoke verify" in row.fix, row.fix
        else:
            assert row.fix.startswith("follow docs/runbooks/compute.md, then "), row.fix
            assert row.fix.endswith(_COMPUTE_DEPLOY), row.fix


def test_hyperpod_groups_and_nodes_the_config_does_not_match(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """DescribeCluster InstanceGroups[] (InstanceGroupName, InstanceType, CurrentCount, TargetCount, Status;
    botocore sagemaker ClusterInstanceGroupDetails) against the config's groups, and ListClusterNodes
    (ClusterNodeSummaries[].InstanceStatus: Status of ClusterInstanceStatus, Message): a group the config names
    that the cluster lacks fails, one the config does not name warns, another instance type fails, and a cluster
    without nodes fails."""
    cluster = deployed.hyperpod("us-west-2")
    (group,) = cluster.instance_groups
    group["InstanceGroupName"] = "old-workers"
    results = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)
    groups = {r.status: r for r in rows(results, "hyperpod group", "us-west-2")}
    assert set(groups) == {"fail", "warn"}
    assert groups["fail"].detail == "hubspoke-dev-us-west-2 has no instance group accelerated-worker-group-1"
    assert groups["fail"].fix.endswith(_COMPUTE_DEPLOY)
    assert "instance group old-workers, which the config does not name" in groups["warn"].detail
    group["InstanceGroupName"], group["InstanceType"] = "accelerated-worker-group-1", "ml.p4d.24xlarge"
    (node_id, first), *_ = cluster.nodes.items()
    first.status = "Pending"
    results = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)
    row = _only(results, "hyperpod group")
    assert row.status == "fail" and row.detail == (
        "accelerated-worker-group-1: type ml.p4d.24xlarge, config ml.p5.48xlarge"
    )
    assert "docs/runbooks/compute.md" in row.fix and row.fix.endswith(_COMPUTE_DEPLOY), row.fix
    nodes = _only(results, "hyperpod nodes")
    # moto 5.2.5 reports every node's InstanceStatus.Message as "message".
    assert nodes.status == "fail" and nodes.detail.startswith("1 of 2 nodes not Running: "), nodes.detail
    assert f"{node_id} (accelerated-worker-group-1) Pending: message" in nodes.detail
    assert "docs/runbooks/compute.md" in nodes.fix
    cluster.nodes.clear()
    nodes = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "hyperpod nodes")
    assert nodes.status == "fail" and nodes.detail == "hubspoke-dev-us-west-2 has no nodes"
    assert nodes.fix == "see docs/runbooks/compute.md"


def test_the_access_host_must_be_running_with_its_agent_online(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """EC2 DescribeInstances State.Name (botocore ec2 InstanceStateName: pending | running | shutting-down |
    terminated | stopping | stopped) and SSM DescribeInstanceInformation PingStatus (botocore ssm PingStatus:
    Online | ConnectionLost | Inactive; an instance whose agent never registered is not listed). The tunnel
    `hubspoke connect` prints opens only through a running host whose agent is Online; the fixes are commands the
    AWS CLI accepts (tests/docs/checker.py, against botocore's models)."""
    from tests.cli.test_verify import quoted_command_problems

    instance = deployed.outputs["hubspoke-dev-compute-us-west-2"]["AccessHostInstanceId"]
    agents = deployed.clients.agents["us-west-2"]
    agents[instance] = "ConnectionLost"
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "access host")
    assert row.status == "fail" and row.detail.startswith(
        f"{instance} is running but its SSM Agent is ConnectionLost"
    )
    assert "Session Manager cannot open the tunnel" in row.detail
    # The fix says where the agent's traffic goes and names a runbook section that exists.
    assert row.fix.startswith(
        "the agent reaches Systems Manager through the NAT gateway: check the network rows"
    )
    assert row.fix.endswith('(docs/runbooks/compute.md, "Reach the cluster")'), row.fix
    assert "## Reach the cluster (before any kubectl)" in (ROOT / "docs/runbooks/compute.md").read_text()
    del agents[instance]
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "access host")
    assert row.status == "fail" and row.detail.startswith(
        f"{instance} is running but its SSM Agent has not registered with Systems Manager: "
    ), row.detail
    ec2 = deployed.clients("ec2", "us-west-2")
    ec2.stop_instances(InstanceIds=[instance])
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "access host")
    assert row.status == "fail" and row.detail == f"{instance} is stopped", row.detail
    assert f"--instance-ids {instance} --region us-west-2" in row.fix
    assert quoted_command_problems(row.fix) == {
        f"aws ec2 start-instances --instance-ids {instance} --region us-west-2": []
    }
    ec2.terminate_instances(InstanceIds=[instance])
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "access host")
    assert row.status == "fail" and row.detail == f"{instance} is terminated", row.detail
    assert "redeploy of an unchanged template does not re-create it" in row.fix
    assert "--stack-name hubspoke-dev-compute-us-west-2" in row.fix
    # An instance EC2 no longer lists at all (DescribeInstances answers no reservation for it).
    deployed.redeploy_with("compute-us-west-2", AccessHostInstanceId="i-0123456789abcdef0")
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "access host")
    assert row.status == "fail" and row.detail == "i-0123456789abcdef0 is gone", row.detail
    assert "--stack-name hubspoke-dev-compute-us-west-2" in row.fix


def test_an_access_host_the_compute_stack_does_not_name_is_not_checked_and_the_fix_deploys_it(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """A Compute stack from before the access host (no AccessHostInstanceId output): nothing to look up, and the
    fix is the Compute stack's deploy."""
    deployed.redeploy_without("compute-us-west-2", "AccessHostInstanceId")
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "access host")
    assert row.status == "not checked" and "AccessHostInstanceId" in row.detail, row.detail
    assert row.fix.endswith(_COMPUTE_DEPLOY), row.fix


def test_access_entries_and_the_callers_own(deployed: DeployedWorld, deployed_config: Path) -> None:
    """EKS ListAccessEntries (botocore eks 2017-11-01: accessEntries, principal ARNs) must hold every
    access.administrators ARN; the caller (STS GetCallerIdentity Arn) is told whether kubectl would let them in.
    An access entry names an IAM role or user only (EKS User Guide, "Create access entries"); a federated user's
    ARN is arn:aws:sts::<account>:federated-user/<name> (IAM User Guide, "IAM identifiers")."""
    entries = deployed.clients.access_entries["us-west-2", "hubspoke-dev-us-west-2"]
    user = "arn:aws:iam::123456789012:user/moto"
    entries.remove(user)
    results = verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE)
    access = _only(results, "eks access")
    assert (
        access.status == "fail" and access.detail == f"hubspoke-dev-us-west-2 has no access entry for {user}"
    )
    assert access.fix.endswith(_COMPUTE_DEPLOY)
    me = _only(results, "eks caller")
    assert me.status == "warn" and f"you ({user}) have no access entry on hubspoke-dev-us-west-2" in me.detail
    assert f"add your user's ARN to access.administrators in {deployed_config}" in me.fix
    assert f"hubspoke connect --config {deployed_config} --region us-west-2" in me.fix
    assert me.fix.count(_COMPUTE_DEPLOY) == 1
    federated = "arn:aws:sts::123456789012:federated-user/ops"

    def as_federated(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Arn"] = federated

    sts = deployed.clients("sts", "us-west-2")
    sts.meta.events.register("after-call.sts.GetCallerIdentity", as_federated)
    try:
        me = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "eks caller")
    finally:
        sts.meta.events.unregister("after-call.sts.GetCallerIdentity", as_federated)
    assert me.status == "warn" and f"you ({federated}) are not an IAM role or user" in me.detail, me.detail
    assert "access.administrators" in me.fix and "hubspoke connect --config" in me.fix


def test_an_eks_cluster_with_health_issues_fails_and_names_the_version_it_runs(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """EKS DescribeCluster cluster.health.issues (botocore eks 2017-11-01 ClusterIssue: code, message,
    resourceIds) are faults of an ACTIVE cluster too; with a fault, a version other than the config's is named
    beside it (EKS cluster.version)."""
    issue = {
        "code": "ClusterUnreachable",
        "message": "control plane cannot reach the nodes",
        "resourceIds": [],
    }

    def unhealthy(parsed: dict[str, Any], **_: Any) -> None:
        parsed["cluster"]["health"] = {"issues": [issue]}

    eks = deployed.clients("eks", "us-west-2")
    eks.meta.events.register("after-call.eks.DescribeCluster", unhealthy)
    try:
        row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "eks")
        assert row.status == "fail"
        assert (
            row.detail == "hubspoke-dev-us-west-2: ClusterUnreachable: control plane cannot reach the nodes"
        )
        assert row.fix.startswith("docs/runbooks/compute.md; a version change: ") and row.fix.endswith(
            _COMPUTE_DEPLOY
        )
        deployed.eks_cluster("us-west-2").version = "1.34"
        row = _only(verify(deployed, deployed_config, only=SPOKE, areas=COMPUTE), "eks")
    finally:
        eks.meta.events.unregister("after-call.eks.DescribeCluster", unhealthy)
    assert row.status == "fail" and row.detail.endswith("nodes; Kubernetes 1.34, config 1.35"), row.detail


def test_a_node_without_a_ready_condition_and_a_storage_stack_without_addresses(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    """A Node whose status has no Ready condition is not Ready (Kubernetes core/v1 NodeStatus.conditions; the node
    controller has not heard from it), and one Ready False says its kubelet's reason when it gives no message. The
    volumes are judged against the Storage stack's FloatingIps output: without that output they are not checked,
    and an empty one fails, naming the output."""
    server = kube.servers["us-west-2"]
    first, second = (n["metadata"]["name"] for n in server.nodes)
    server.nodes[0]["status"]["conditions"] = [
        c for c in server.nodes[0]["status"]["conditions"] if c["type"] != "Ready"
    ]
    server.nodes[1] = node(second, ready="False", reason="KubeletNotReady")
    del next(c for c in server.nodes[1]["status"]["conditions"] if c["type"] == "Ready")["message"]
    deployed.redeploy_without("storage-us-west-2", "FloatingIps")
    results = verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE)
    nodes = _only(results, "kubernetes nodes")
    assert nodes.status == "fail" and nodes.detail == (
        f"2 of 2 nodes not Ready: {first} (no Ready condition); {second} (KubeletNotReady)"
    )
    assert nodes.fix.startswith("kubectl describe node <node>")
    addresses = _only(results, "volume addresses")
    assert addresses.status == "not checked" and "FloatingIps" in addresses.detail, addresses
    assert addresses.fix == "see the stack rows of that stack"
    deployed.redeploy_with("storage-us-west-2", FloatingIps="")
    addresses = _only(verify(deployed, deployed_config, kube, only=SPOKE, areas=COMPUTE), "volume addresses")
    assert addresses.status == "fail"
    assert addresses.detail == "hubspoke-dev-storage-us-west-2 outputs no floating IP (FloatingIps is '')"
    assert "docs/runbooks/compute.md" in addresses.fix


# ----- the canary's rows and inputs, the prewarm's -----


def _ops_alarm(world: DeployedWorld, suffix: str) -> dict[str, Any]:
    """The spoke's Ops template's alarm whose name ends with `suffix`, its Properties."""
    (props,) = [
        r["Properties"]
        for r in world.templates["ops-us-west-2"]["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"]["AlarmName"].endswith(suffix)
    ]
    return dict(props)


def test_healthy_canary_rows_say_what_they_read(deployed: DeployedWorld, deployed_config: Path) -> None:
    """The pass rows name the hub Region, the portal state and the minutes since the last report; the spoke without
    a CNQ has no Ops stack (topology: an Ops stack per spoke with a CNQ), so no canary, and says so."""
    results = verify(deployed, deployed_config, only={"us-west-2", "eu-west-1"}, areas=CANARY | NETWORK)
    canary = _only(results, "canary")
    assert canary.status == "pass" and re.fullmatch(
        r"last report at \d\d:\d\d UTC \([0-3] min ago\)", canary.detail
    ), canary.detail
    reachable = _only(results, "hub reachable")
    assert reachable.status == "pass"
    assert reachable.detail == "every hub CNQ address in us-east-2 answers from us-west-2"
    assert _only(results, "portal").detail == "the spoke portal is ACTIVE"
    hosts = _only(results, "portal hub addresses")
    assert hosts.status == "pass" and "us-east-2's current floating IPs" in hosts.detail
    inputs = _only(results, "canary inputs")
    assert inputs.status == "pass"
    assert inputs.detail == "the canary's addresses and secret are its producers' current outputs"
    none = _only(results, "canary", "eu-west-1")
    assert (
        none.status == "not checked"
        and none.detail == "no canary here: this spoke has no CNQ, so no Ops stack"
    )
    # A hub without a CNQ has nothing for a canary to probe: no spoke has an Ops stack (topology.plan_stacks).
    hub = deployed.config.hub.model_copy(
        update={"storage": deployed.config.hub.storage.model_copy(update={"enabled": False})}
    )
    no_hub_cnq = deployed.config.model_copy(update={"hub": hub})
    (alone,) = rows(
        verify(deployed, deployed_config, config=no_hub_cnq, only=SPOKE, areas=CANARY), "canary", "us-west-2"
    )
    assert alone.detail == "no canary here: the hub has no CNQ, so no Ops stack"
    # The spoke's cross-Region group admits the hub's CIDR (TWO_SPOKES: 10.10.0.0/16) and nothing else.
    group = _only(results, "security group")
    assert group.status == "pass"
    assert group.detail.startswith(f"{deployed.security_group('us-west-2')} admits exactly 10.10.0.0/16 on ")


def test_a_canary_function_without_its_inputs_fails_with_the_ops_deploy(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """Lambda GetFunctionConfiguration Environment.Variables of the Ops stack's functions (CloudFormation
    ListStackResources): a canary without one of its inputs names what its producer outputs now and is refreshed;
    an Ops stack with no function carrying HUB_ADDRESSES has no canary to judge and is deployed again."""
    cloudformation = deployed.clients("cloudformation", "us-west-2")
    (function,) = [
        r["PhysicalResourceId"]
        for r in cloudformation.list_stack_resources(StackName="hubspoke-dev-ops-us-west-2")[
            "StackResourceSummaries"
        ]
        if r["ResourceType"] == "AWS::Lambda::Function"
    ]
    lam = deployed.clients("lambda", "us-west-2")
    variables = dict(lam.get_function_configuration(FunctionName=function)["Environment"]["Variables"])
    rest, secret = variables.pop("SPOKE_REST_ADDRESS"), variables.pop("ADMIN_SECRET_ARN")
    lam.update_function_configuration(FunctionName=function, Environment={"Variables": variables})
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CANARY), "canary inputs")
    assert row.status == "fail"
    # Each stale input said on its own, "; " between them.
    assert row.detail == (
        "the canary runs with values its producers no longer output: "
        f"SPOKE_REST_ADDRESS is not set, but hubspoke-dev-storage-us-west-2 RestAddress is {rest!r}; "
        f"ADMIN_SECRET_ARN is not set, but hubspoke-dev-storage-us-west-2 AdminSecretArn is {secret!r}"
    ), row.detail
    assert "-c refresh=$(date +%s) --exclusively hubspoke-dev/ops-us-west-2" in row.fix
    del variables["HUB_ADDRESSES"]
    lam.update_function_configuration(FunctionName=function, Environment={"Variables": variables})
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CANARY), "canary inputs")
    assert row.status == "fail" and row.detail == (
        "hubspoke-dev-ops-us-west-2 has no function with the canary's environment (HUB_ADDRESSES)"
    )
    assert row.fix.endswith("--exclusively hubspoke-dev/ops-us-west-2") and "refresh" not in row.fix


def test_the_hub_reachable_row_reads_each_minute_as_the_probes_alarm_does(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The Ops template's `…-hub-probes-failing` alarm reads HubReachable's one-minute Maximum (its Statistic and
    Period): a minute with one probe down and one up is a minute the hub answered, not a blip (the share of
    addresses answering is that minute's worst, NodesReachableFraction's Minimum: a warning of its own)."""
    alarm = _ops_alarm(deployed, "-hub-probes-failing")
    assert (alarm["MetricName"], alarm["Statistic"], alarm["Period"]) == ("HubReachable", "Maximum", 60)
    moment = datetime.now(UTC).replace(second=30, microsecond=0)
    deployed.canary("us-west-2", minutes_ago=[1], hub_up=False, now=moment)
    deployed.canary("us-west-2", minutes_ago=[1], hub_up=True, now=moment)
    row = _only(_at(deployed, deployed_config, moment), "hub reachable")
    assert row.status == "warn" and "no hub CNQ address" not in row.detail, row.detail
    assert row.detail == "the hub answers, but only 0% of its floating IPs do"
    assert row.fix == "check the hub CNQ nodes and the peering routes (docs/runbooks/hub-outage.md)"


def test_the_dataset_cached_row_reads_the_lowest_report_as_the_alarm_does(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """The Ops template's `…-dataset-not-fully-cached` alarm reads DatasetPrewarmedFraction's Minimum: a period
    holding a whole report (the fixture's, 3 minutes ago) and a partial one (a version being re-warmed, in the
    same minute) is partial. The row's date is the report's minute, in UTC; with no report in a day the row says
    how long it looked."""
    alarm = _ops_alarm(deployed, "-dataset-not-fully-cached")
    assert (alarm["MetricName"], alarm["Statistic"]) == ("DatasetPrewarmedFraction", "Minimum")
    deployed.prewarm("us-west-2", 0.5, minutes_ago=3)
    row = _only(verify(deployed, deployed_config, only=SPOKE, areas=CACHE), "dataset cached")
    assert row.status == "warn" and "50.0% of c4-llama3/v1 warm" in row.detail, row.detail
    assert re.search(r"\(\d{4}-\d\d-\d\d \d\d:\d\d UTC; taken as the config's pin", row.detail), row.detail
    # A config that pins no version (dataset.version unset): the row cannot name one, and says so.
    unpinned = deployed.config.model_copy(
        update={"dataset": deployed.config.dataset.model_copy(update={"version": None})}
    )
    row = _only(verify(deployed, deployed_config, config=unpinned, only=SPOKE, areas=CACHE), "dataset cached")
    assert "50.0% of the dataset (the config pins no version) warm" in row.detail, row.detail
    later = datetime.now(UTC) + timedelta(days=1, minutes=5)
    none = _only(_at(deployed, deployed_config, later, areas=CACHE), "dataset cached")
    assert none.status == "warn" and "no cached fraction reported in the last 24 hours" in none.detail
    assert none.detail.endswith("a job's first pass reads cold and the cache-hit alarm cannot page")
    assert none.fix.startswith("run the prewarm Job: hubspoke render prewarm --config ")
    assert none.fix.endswith("| kubectl apply -f - (docs/runbooks/cache-warm-up.md)")


# ----- the cross-Region security group -----


def _revoked(fix: str) -> list[dict[str, Any]]:
    """The IpPermissions of a revoke fix, validated against EC2 RevokeSecurityGroupIngress's input shape (botocore
    ec2 service-2.json: IpPermission IpProtocol, FromPort, ToPort, IpRanges, Ipv6Ranges, PrefixListIds,
    UserIdGroupPairs)."""
    import botocore.session
    from botocore.validate import ParamValidator

    permissions: list[dict[str, Any]] = json.loads(fix.split("--ip-permissions '", 1)[1].rstrip("'"))
    model = botocore.session.get_session().get_service_model("ec2")
    shape = model.operation_model("RevokeSecurityGroupIngress").input_shape
    report = ParamValidator().validate({"GroupId": "sg-1", "IpPermissions": permissions}, shape)
    assert not report.has_errors(), report.generate_report()
    return permissions


def test_prefix_list_ipv6_and_all_traffic_sources_are_not_ours_and_the_revoke_names_each(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """Security groups cannot be referenced across Regions (VPC peering guide), so the cross-Region group admits
    peer CIDRs only: a managed prefix list (EC2 IpPermission.PrefixListIds), an IPv6 range (Ipv6Ranges) or all
    traffic (IpProtocol -1, no ports) is another's rule, removed with exactly the permission EC2 listed."""
    group = deployed.security_group("us-east-2")
    ec2 = deployed.clients("ec2", "us-east-2")
    prefix_list = ec2.create_managed_prefix_list(
        PrefixListName="office", MaxEntries=1, AddressFamily="IPv4", Entries=[{"Cidr": "192.0.2.0/24"}]
    )["PrefixList"]["PrefixListId"]
    prefix = {
        "IpProtocol": "tcp",
        "FromPort": 443,
        "ToPort": 443,
        "PrefixListIds": [{"PrefixListId": prefix_list}],
    }
    ipv6 = {
        "IpProtocol": "tcp",
        "FromPort": 8000,
        "ToPort": 8000,
        "Ipv6Ranges": [{"CidrIpv6": "2600:1f14::/56"}],
    }
    everything = {"IpProtocol": "-1", "IpRanges": [{"CidrIp": "198.51.100.0/24"}]}
    # A spoke's own CIDR on a port the path does not use: a configured peer, still not ours on that port.
    ssh = {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "10.20.0.0/16"}]}
    ec2.authorize_security_group_ingress(GroupId=group, IpPermissions=[prefix, ipv6, everything, ssh])
    failed = {
        r.detail.split(" (", 1)[0]: r
        for r in verify(deployed, deployed_config, only={"us-east-2"}, areas=NETWORK)
        if r.check == "security group" and r.status == "fail"
    }
    assert set(failed) == {
        f"{group} admits prefix list {prefix_list}",
        f"{group} admits 2600:1f14::/56",
        f"{group} admits 198.51.100.0/24",
        f"{group} admits 10.20.0.0/16",
    }
    assert (
        f"{group} admits 10.20.0.0/16 (a configured peer CIDR) on TCP 22: "
        in failed[f"{group} admits 10.20.0.0/16"].detail
    )
    assert failed[f"{group} admits prefix list {prefix_list}"].detail.endswith(
        "on TCP 443: the cross-Region group admits only peer CIDRs on the cross-Region ports"
    )
    assert "not a configured peer CIDR) on all traffic" in failed[f"{group} admits 198.51.100.0/24"].detail
    assert _revoked(failed[f"{group} admits prefix list {prefix_list}"].fix) == [prefix]
    assert _revoked(failed[f"{group} admits 2600:1f14::/56"].fix) == [ipv6]
    assert _revoked(failed[f"{group} admits 198.51.100.0/24"].fix) == [everything]


# ----- alarm delivery -----


def test_only_hubspokes_own_sns_topics_are_judged_for_subscriptions(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """An alarm's actions are ARNs (CloudWatch PutMetricAlarm AlarmActions/OKActions: SNS topics, Auto Scaling,
    EC2, Systems Manager actions; botocore cloudwatch 2010-08-01); only an SNS topic (arn:aws:sns:...) has
    subscriptions, and a topic listed in ops.alarm_topic_arns is another owner's (docs/operations.md, "Who is
    told"), so neither gets a subscription row, while hubspoke's own topic does."""
    sns = deployed.clients("sns", "us-west-2")
    ours, theirs = (sns.create_topic(Name=name)["TopicArn"] for name in ("hubspoke-dev-alarms", "on-call"))
    sns.subscribe(TopicArn=ours, Protocol="email", Endpoint="ops@example.com")
    opsitem = "arn:aws:ssm:us-west-2:123456789012:opsitem:3"  # a Systems Manager OpsItem action
    deployed.clients("cloudwatch", "us-west-2").put_metric_alarm(
        AlarmName="hubspoke-dev-ops-us-west-2-training-stalled",
        Namespace="HubSpoke/Training",
        MetricName="SamplesPerSecond",
        Statistic="Maximum",
        Period=60,
        EvaluationPeriods=10,
        Threshold=0,
        ComparisonOperator="LessThanOrEqualToThreshold",
        AlarmActions=[ours, theirs, opsitem],
        OKActions=[ours],
    )
    ops = deployed.config.ops.model_copy(
        update={"alarm_topic_arns": [theirs], "alarm_emails": ["ops@example.com"]}
    )
    config = deployed.config.model_copy(update={"ops": ops})
    subscriptions = rows(
        verify(deployed, deployed_config, config=config, only=SPOKE, areas=ALARMS), "alarm subscriptions"
    )
    assert [(r.status, r.detail) for r in subscriptions] == [
        ("pass", "1 confirmed subscription(s) on hubspoke-dev-alarms")
    ]


# ----- the requests themselves -----

# CloudWatch API Reference, MetricDataQuery Id: "The first character must be a lowercase letter", then letters,
# numbers and underscores; MetricStat Period: a regular-resolution metric's period is a multiple of 60; Stat: a
# statistic CloudWatch names (SampleCount, Average, Sum, Minimum, Maximum; percentiles pNN are not used here).
_METRIC_ID = re.compile(r"[a-z][a-zA-Z0-9_]*")
_STATISTICS = {"SampleCount", "Average", "Sum", "Minimum", "Maximum"}


def _enum_problems(shape: Any, value: Any, path: str) -> list[str]:
    """Values of `value` outside their shape's enum (botocore validates types and names client-side, not enums)."""
    if shape.type_name == "structure" and isinstance(value, dict):
        return [
            p
            for k, v in value.items()
            if k in shape.members
            for p in _enum_problems(shape.members[k], v, f"{path}.{k}")
        ]
    if shape.type_name == "list" and isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _enum_problems(shape.member, v, f"{path}[{i}]")]
    if shape.type_name == "string" and shape.enum and value not in shape.enum:
        return [f"{path}={value!r} is not one of {shape.enum}"]
    return []


def test_verify_asks_aws_in_the_shapes_its_apis_document(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """Every request of `hubspoke verify --region us-west-2` is checked before it is sent: enum values against
    botocore's service models (GetMetricData ScanBy, DescribeAlarmHistory HistoryItemType and AlarmTypes, ...), and
    GetMetricData's queries against the rules above, which the model does not carry and moto does not enforce."""
    problems: list[str] = []
    seen: set[str] = set()

    def check(params: dict[str, Any], model: Any, **_: Any) -> None:
        where = f"{model.service_model.service_name}:{model.name}"
        seen.add(where)
        problems.extend(_enum_problems(model.input_shape, params, where))
        for query in params.get("MetricDataQueries", []) if model.name == "GetMetricData" else []:
            stat = query.get("MetricStat", {})
            if not _METRIC_ID.fullmatch(query.get("Id", "")):
                problems.append(f"{where} Id {query.get('Id')!r}")
            if stat and (stat.get("Period", 0) % 60 or stat.get("Stat") not in _STATISTICS):
                problems.append(
                    f"{where} {query['Id']} Period {stat.get('Period')} Stat {stat.get('Stat')!r}"
                )

    services = ("cloudwatch", "cloudformation", "ec2", "eks", "lambda", "sagemaker", "sns", "ssm", "sts")
    clients = [deployed.clients(s, r) for s in services for r in ("us-west-2", "us-east-2")]
    for client in clients:
        client.meta.events.register("before-parameter-build", check)
    try:
        results = verify(deployed, deployed_config, only=SPOKE)
    finally:
        for client in clients:
            client.meta.events.unregister("before-parameter-build", check)
    assert problems == []
    # The check saw the calls it is about (a hook on the wrong clients would pass vacuously).
    assert {
        "cloudwatch:GetMetricData",
        "cloudwatch:DescribeAlarmHistory",
        "ssm:DescribeInstanceInformation",
        "sagemaker:DescribeCluster",
        "ec2:DescribeSecurityGroups",
    } <= seen, seen
    assert {"canary", "dataset cached", "alarm actions", "access host", "hyperpod"} <= {
        r.check for r in results
    }


def test_alarm_delivery_fixes_and_a_failure_known_by_its_summary_only(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """An unconfirmed subscription receives nothing and SNS deletes it 48 hours after it was made (SNS Developer
    Guide, "Deleting an Amazon SNS subscription and topic"): the row says so and the fix is SNS's confirmation
    email. An Action history item read only by its summary, "Failed to execute action <ARN>. Received error: ..."
    / "Successfully executed action <ARN>" (the console's wording; tests/cli/test_verify_alarm_delivery.py cites
    where), is judged as one with HistoryData: failed until a later success to the same topic."""
    from tests.cli.test_verify_alarm_delivery import PAGE, _pending, _topic_with

    topic = _topic_with(deployed, "ops@example.com")
    _pending(topic, "ops@example.com")
    ops = deployed.config.ops.model_copy(update={"alarm_emails": ["ops@example.com"]})
    config = deployed.config.model_copy(update={"ops": ops})
    (row,) = rows(
        verify(deployed, deployed_config, config=config, only=SPOKE, areas=ALARMS), "alarm subscriptions"
    )
    assert row.status == "warn" and row.detail.startswith(
        "1 subscription(s) of hubspoke-dev-alarms not confirmed"
    )
    assert row.detail.endswith("SNS deletes them 48 hours after they were made"), row.detail
    assert row.fix.startswith("confirm from SNS's 'Subscription Confirmation' email")
    assert row.fix.endswith("rerun verify for the command that subscribes the address again"), row.fix
    history = deployed.clients.history["us-west-2"]
    on_call = "arn:aws:sns:us-west-2:123456789012:on-call"
    now = datetime.now(UTC)

    def summary_only(summary: str, minutes_ago: int) -> None:
        history.items.append(
            {
                "AlarmName": PAGE,
                "AlarmType": "MetricAlarm",
                "Timestamp": now - timedelta(minutes=minutes_ago),
                "HistoryItemType": "Action",
                "HistorySummary": summary,
            }
        )

    summary_only(f'Failed to execute action {on_call}. Received error: "not authorized"', 30)
    (row,) = rows(verify(deployed, deployed_config, only=SPOKE, areas=ALARMS), "alarm actions")
    assert row.status == "fail" and row.detail.startswith("1 alarm action(s) failed on their latest attempt")
    assert f"{PAGE} at " in row.detail and "not authorized" in row.detail
    assert row.fix.startswith(
        "a topic's policy or its key's policy does not let cloudwatch.amazonaws.com publish"
    )
    assert row.fix.endswith("docs/operations.md, 'Who is told'")
    summary_only(f"Successfully executed action {on_call}", 10)
    (row,) = rows(verify(deployed, deployed_config, only=SPOKE, areas=ALARMS), "alarm actions")
    assert (
        row.status == "pass"
        and row.detail == "no alarm action whose latest attempt failed in the last 14 days"
    )


def test_placement_rows_name_the_zones_and_the_key_that_cannot_change(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    """Each cluster's subnets' AZ IDs (SageMaker DescribeCluster VpcConfig.Subnets, EKS resourcesVpcConfig.subnetIds,
    EC2 DescribeSubnets AvailabilityZoneId) against the config key that placed them, named by its path (`hub`,
    `spokes[N]`); a moved key fails with the zones deployed and the runbook section on keys fixed at the first
    deploy (docs/runbooks/deploy-environment.md)."""
    import copy

    from hubspoke.config import load
    from tests.cli.verify_fixtures import TWO_SPOKES
    from tests.conftest import write_config

    network = deployed.templates["network-us-west-2"]["Resources"]
    zones = {
        k: r["Properties"]["AvailabilityZoneId"]
        for k, r in network.items()
        if r["Type"] == "AWS::EC2::Subnet"
    }
    (accelerator,) = {z for k, z in zones.items() if "accelerator" in k.lower()}
    private = sorted({z for k, z in zones.items() if "private" in k.lower()})
    results = verify(deployed, deployed_config, only={"us-east-2", "us-west-2"}, areas=COMPUTE)
    assert _only(results, "hyperpod placement").detail == (
        f"HyperPod cluster hubspoke-dev-us-west-2 in {accelerator}, as spokes[0].accelerator_az_id says"
    )
    assert _only(results, "eks placement").detail == (
        f"EKS cluster hubspoke-dev-us-west-2 in {', '.join(private)}, as spokes[0].az_ids says"
    )
    hub = _only(results, "hyperpod placement", "us-east-2")
    assert hub.status == "pass" and hub.detail.endswith(", as hub.accelerator_az_id says"), hub.detail
    moved = copy.deepcopy(TWO_SPOKES)
    spare = sorted({"usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"} - {accelerator, *private})[0]
    moved["spokes"][0] |= {"accelerator_az_id": spare}
    config = load(write_config(tmp_path, moved, "dev.yaml")).config
    row = _only(
        verify(deployed, deployed_config, config=config, only=SPOKE, areas=COMPUTE), "hyperpod placement"
    )
    assert row.status == "fail" and re.fullmatch(
        rf"HyperPod cluster hubspoke-dev-us-west-2 was created in {accelerator} \(subnet-\w+ {accelerator}\); "
        rf"spokes\[0\]\.accelerator_az_id says {spare}",
        row.detail,
    ), row.detail
    assert row.fix.startswith(
        f"spokes[0].accelerator_az_id cannot change after the first deploy: set it back to {accelerator} "
    )
    assert row.fix.endswith("(docs/runbooks/deploy-environment.md, keys fixed at the first deploy)"), row.fix
    assert "### Keys fixed at the first deploy" in (ROOT / "docs/runbooks/deploy-environment.md").read_text()


def test_the_canary_row_counts_whole_minutes_since_the_last_report(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """CloudWatch dates a one-minute datapoint at the start of its minute (GetMetricData with Period 60); the row
    says when that was and how many whole minutes ago: 2 at exactly two minutes, and 7 once silent for seven."""
    moment = datetime.now(UTC).replace(second=30, microsecond=0)
    deployed.canary("us-west-2", minutes_ago=[1], now=moment)
    last = (moment - timedelta(minutes=1)).replace(second=0)
    row = _only(_at(deployed, deployed_config, last + timedelta(minutes=2)), "canary")
    assert row.status == "pass" and row.detail == f"last report at {last:%H:%M} UTC (2 min ago)", row.detail
    row = _only(_at(deployed, deployed_config, last + timedelta(minutes=7)), "canary")
    assert row.status == "fail"
    assert row.detail == f"the canary has not reported for 7 minutes (last at {last:%H:%M} UTC)", row.detail


def test_a_group_whose_rules_ec2_answers_by_protocol_number_still_admits_its_peers(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """EC2 IpPermission.IpProtocol is "the IP protocol name (tcp, udp, icmp, icmpv6) or number" (botocore ec2
    service-2.json): a peer rule answered as 6 (TCP) or 1 (ICMP), IANA's numbers, is the same rule."""
    numbers = {"tcp": "6", "icmp": "1"}

    def by_number(parsed: dict[str, Any], **_: Any) -> None:
        for group in parsed.get("SecurityGroups", []):
            for permission in group.get("IpPermissions", []):
                permission["IpProtocol"] = numbers.get(permission["IpProtocol"], permission["IpProtocol"])

    ec2 = deployed.clients("ec2", "us-west-2")
    ec2.meta.events.register("after-call.ec2.DescribeSecurityGroups", by_number)
    try:
        row = _only(verify(deployed, deployed_config, only=SPOKE, areas=NETWORK), "security group")
    finally:
        ec2.meta.events.unregister("after-call.ec2.DescribeSecurityGroups", by_number)
    assert row.status == "pass", row.detail


def test_a_cluster_without_a_cnq_beside_it_has_no_volume_rows(
    deployed: DeployedWorld, deployed_config: Path, kube: Kube
) -> None:
    """The Compute stack applies the dataset and checkpoint volumes only where the Region has a CNQ to mount
    (storage.enabled): without one, verify judges the nodes and nothing the volumes would hold, reachable or not."""
    spoke = deployed.config.spokes[0]
    bare = spoke.model_copy(update={"storage": spoke.storage.model_copy(update={"enabled": False})})
    config = deployed.config.model_copy(update={"spokes": [bare, *deployed.config.spokes[1:]]})
    for kubeconfig in (None, kube):
        results = verify(deployed, deployed_config, kubeconfig, config=config, only=SPOKE, areas=COMPUTE)
        kubernetes = {
            r.check for r in results if r.check.startswith("kubernetes") or r.check == "volume addresses"
        }
        assert kubernetes == {"kubernetes nodes"}, (kubeconfig, kubernetes)
    assert _only(results, "kubernetes nodes").status == "pass"
