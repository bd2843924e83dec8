"""Compute stack invariants: HyperPod shape and placement, EFA rules, lifecycle asset, volume key and provisioning
mode, image pulls, access entries, add-on ordering, applied volumes. cfn-lint: tests/test_cfn_lint.py, every shape."""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hubspoke.config import HubSpokeConfig, load
from hubspoke.config.schema import DatasetConfig
from hubspoke.k8s.job import JOB_KINDS, training_job
from hubspoke.k8s.names import CHECKPOINT_CLAIM, DATASET_CLAIM
from hubspoke.topology import plan_stacks, stack_name
from tests.conftest import ROOT, Shape, Templates, cli_app, options, resources, synth

# Any image pinned by digest: these tests read the job's arguments, not its image.
ANY_IMAGE = "registry.example/train@sha256:" + "ab" * 32

Template = dict[str, Any]


@pytest.fixture(scope="module")
def dev() -> HubSpokeConfig:
    return load(ROOT / "config" / "dev.yaml").config


def synth_to(config: HubSpokeConfig, outdir: Path) -> Path:
    """Synthesize an environment into `outdir` (never the shared synth cache), policy included."""
    from hubspoke.stage import HubSpokeStage

    app = cli_app(str(outdir))
    stage = HubSpokeStage(app, config=config)
    app.synth()
    return outdir / f"assembly-{stage.stage_name}"


@pytest.fixture(scope="module")
def synth_scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Python's temp directory while the dev environment synthesizes (see the leak test below)."""
    return tmp_path_factory.mktemp("synth-scratch")


@pytest.fixture(scope="module")
def assembly(dev: HubSpokeConfig, tmp_path_factory: pytest.TempPathFactory, synth_scratch: Path) -> Path:
    outdir = tmp_path_factory.mktemp("compute-assembly")
    # Importing CDK starts the jsii kernel, whose own scratch directory lives as long as the test process.
    import hubspoke.stage  # noqa: F401

    saved, tempfile.tempdir = tempfile.tempdir, str(synth_scratch)
    try:
        return synth_to(dev, outdir)
    finally:
        tempfile.tempdir = saved


def test_synth_leaves_nothing_in_the_temp_directory(assembly: Path, synth_scratch: Path) -> None:
    """Everything a synth renders (the lifecycle scripts included) lives in its cdk.out: a synth that left a
    directory in /tmp each time filled a CI runner's disk (837 leftover directories of 65 MB were seen here)."""
    assert sorted(p.name for p in synth_scratch.iterdir()) == []
    assert [p.name for p in assembly.glob("lifecycle-src-*")], "the lifecycle scripts render into cdk.out"


def templates(assembly: Path) -> dict[str, Template]:
    manifest = json.loads((assembly / "manifest.json").read_text())
    found = {}
    for artifact in manifest["artifacts"].values():
        if artifact["type"] == "aws:cloudformation:stack":
            name = artifact["properties"].get("stackName", "")
            found[name] = json.loads((assembly / artifact["properties"]["templateFile"]).read_text())
    return found


def compute_template(assembly: Path, config: HubSpokeConfig, region: str) -> Template:
    return templates(assembly)[f"hubspoke-{config.environment}-compute-{region}"]


def compute_regions(config: HubSpokeConfig) -> list[str]:
    return [r.region for r in config.regions() if r.compute.enabled]


def test_every_compute_region_has_two_p5_in_the_configured_group(shape: Shape) -> None:
    config = shape.config
    for code in compute_regions(config):
        region = config.region_config(code)
        [(_, cluster)] = resources(shape.templates[f"compute-{code}"], "AWS::SageMaker::Cluster")
        groups = cluster["Properties"]["InstanceGroups"]
        assert [(g["InstanceType"], g["InstanceCount"]) for g in groups] == [
            (g.instance_type, g.count) for g in region.compute.instance_groups
        ]
        assert ("ml.p5.48xlarge", 2) in [(g["InstanceType"], g["InstanceCount"]) for g in groups]
        assert cluster["Properties"]["NodeRecovery"] == "Automatic"
        assert cluster["Properties"]["Orchestrator"]["Eks"]["ClusterArn"]
        for group in groups:
            assert group["OnStartDeepHealthChecks"]
            [storage] = group["InstanceStorageConfigs"]
            assert storage["EbsVolumeConfig"]["VolumeKmsKeyId"], "the node volume must use our KMS key"


def test_instance_groups_sit_in_the_accelerator_az_id_subnet(shape: Shape) -> None:
    config = shape.config
    stacks = {
        stack_name(config, p.kind, p.spoke or p.region): shape.templates[p.id] for p in plan_stacks(config)
    }
    for code in compute_regions(config):
        [(_, cluster)] = resources(shape.templates[f"compute-{code}"], "AWS::SageMaker::Cluster")
        [subnet_ref] = cluster["Properties"]["VpcConfig"]["Subnets"]
        ref = subnet_ref["Fn::GetStackOutput"]
        network = stacks[ref["StackName"]]
        subnet_id = network["Outputs"][ref["OutputName"]]["Value"]["Ref"]
        subnet = network["Resources"][subnet_id]
        assert subnet["Type"] == "AWS::EC2::Subnet"
        assert (
            subnet["Properties"]["AvailabilityZoneId"]
            == config.region_config(code).resolved_accelerator_az_id
        )


def test_every_security_group_given_to_the_cluster_has_efa_self_rules(shape: Shape) -> None:
    config = shape.config
    for code in compute_regions(config):
        template = shape.templates[f"compute-{code}"]
        [(_, cluster)] = resources(template, "AWS::SageMaker::Cluster")
        groups = cluster["Properties"]["VpcConfig"]["SecurityGroupIds"]
        assert groups
        for group in groups:
            logical = group["Fn::GetAtt"][0]
            ingress = [
                r["Properties"]
                for _, r in resources(template, "AWS::EC2::SecurityGroupIngress")
                if r["Properties"]["GroupId"] == group
                and r["Properties"].get("SourceSecurityGroupId") == group
            ]
            egress = [
                r["Properties"]
                for _, r in resources(template, "AWS::EC2::SecurityGroupEgress")
                if r["Properties"]["GroupId"] == group
                and r["Properties"].get("DestinationSecurityGroupId") == group
            ]
            assert [r["IpProtocol"] for r in ingress] == ["-1"], f"{logical}: self ingress, all traffic"
            assert [r["IpProtocol"] for r in egress] == ["-1"], f"{logical}: self egress, all traffic"


def test_lifecycle_asset_is_the_script_alone_and_pins_no_mtu(assembly: Path, dev: HubSpokeConfig) -> None:
    """HyperPod nodes talk NFS to the Region's own CNQ inside the VPC; the peering's MTU is the CNQ nodes' job."""
    scripts = list(assembly.parent.glob("asset.*/on_create.sh"))
    assert scripts
    for script in scripts:
        assert [p.name for p in script.parent.iterdir()] == ["on_create.sh"]
        assert "ip route" not in script.read_text() and "8500" not in script.read_text()
    for code in compute_regions(dev):
        template = compute_template(assembly, dev, code)
        statements = [
            s
            for _, p in resources(template, "AWS::IAM::Policy")
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        ]
        assert not [s for s in statements if "ssm:GetParametersByPath" in json.dumps(s["Action"])]


def test_customer_managed_volume_key_comes_with_continuous_provisioning(shape: Shape) -> None:
    """SageMaker developer guide, "Customer managed AWS KMS key encryption for SageMaker HyperPod": customer
    managed keys only with continuous node provisioning; no encryption-context condition in the key policy."""
    config = shape.config
    for code in compute_regions(config):
        template = shape.templates[f"compute-{code}"]
        [(_, cluster)] = resources(template, "AWS::SageMaker::Cluster")
        assert cluster["Properties"]["NodeProvisioningMode"] == "Continuous"
        for group in cluster["Properties"]["InstanceGroups"]:
            key_ref = group["InstanceStorageConfigs"][0]["EbsVolumeConfig"]["VolumeKmsKeyId"]
            key = template["Resources"][key_ref["Fn::GetAtt"][0]]
            assert "kms:EncryptionContext" not in json.dumps(key["Properties"]["KeyPolicy"])


def test_nodes_can_pull_from_aws_owned_registries(shape: Shape) -> None:
    """The add-ons' and the health agent's images live in AWS accounts' ECR repositories, not ours."""
    config = shape.config
    for code in compute_regions(config):
        template = shape.templates[f"compute-{code}"]
        [(_, cluster)] = resources(template, "AWS::SageMaker::Cluster")
        role_id = cluster["Properties"]["InstanceGroups"][0]["ExecutionRole"]["Fn::GetAtt"][0]
        statements = [
            s
            for _, p in resources(template, "AWS::IAM::Policy")
            if {"Ref": role_id} in p["Properties"]["Roles"]
            for s in p["Properties"]["PolicyDocument"]["Statement"]
        ]
        pull = {"ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:GetAuthorizationToken"}
        assert any(pull <= set(s["Action"]) and s["Resource"] == "*" for s in statements)


# EKS User Guide, "Review access policy permissions": AmazonEKSClusterAdminPolicy's ARN in the aws partition.
CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def test_the_two_kubernetes_installers_get_access_entries_and_hyperpod_makes_the_nodes(shape: Shape) -> None:
    """The cluster authenticates through access entries only (AuthenticationMode API), so whoever the stack runs
    against the Kubernetes API needs one: CDK's kubectl provider (our manifests; aws-cdk-lib aws-eks-v2, "onEvent
    handler for EKS kubectl resource provider") and our dependencies installer (the HyperPod chart installs CRDs,
    cluster roles and DaemonSets across namespaces), and besides them only the administrators config lists. Each gets a STANDARD entry (AWS::EKS::AccessEntry Type's
    default) with AmazonEKSClusterAdminPolicy over the whole cluster, and nobody else gets one. Not the HyperPod
    execution role: HyperPod creates its entry ("EksRoleAccessEntries ... created by HyperPod on your behalf",
    SageMaker API reference, ClusterMetadata), and EKS allows one entry per principal (CreateAccessEntry,
    principalArn), so one of ours would collide with it."""
    config = shape.config
    for code in compute_regions(config):
        template = shape.templates[f"compute-{code}"]
        [(cluster_id, eks_cluster)] = resources(template, "AWS::EKS::Cluster")
        assert eks_cluster["Properties"]["AccessConfig"]["AuthenticationMode"] == "API"
        functions = [f["Properties"] for _, f in resources(template, "AWS::Lambda::Function")]
        installers = {
            f["Role"]["Fn::GetAtt"][0]
            for f in functions
            if f["Handler"] == "dependencies.on_event"
            or f.get("Description") == "onEvent handler for EKS kubectl resource provider"
        }
        assert len(installers) == 2, f"{code}: the installer and the kubectl provider, each with its role"
        all_entries = [e["Properties"] for _, e in resources(template, "AWS::EKS::AccessEntry")]
        # The configured administrators (literal ARNs from config.access) get theirs too (test_cluster_access.py).
        people = [e for e in all_entries if isinstance(e["PrincipalArn"], str)]
        assert sorted(e["PrincipalArn"] for e in people) == sorted(config.access.administrators), code
        entries = {
            e["PrincipalArn"]["Fn::GetAtt"][0]: e
            for e in all_entries
            if not isinstance(e["PrincipalArn"], str)
        }
        assert set(entries) == installers, f"{code}: access entries for exactly the Kubernetes installers"
        for role, entry in entries.items():
            assert entry["ClusterName"] == {"Ref": cluster_id}
            assert entry.get("Type", "STANDARD") == "STANDARD", f"{code}: {role}"
            [policy] = entry["AccessPolicies"]
            assert policy["AccessScope"] == {"Type": "cluster"}, f"{code}: {role}"
            parts = policy["PolicyArn"]["Fn::Join"][1]
            in_aws = "".join("aws" if p == {"Ref": "AWS::Partition"} else p for p in parts)
            assert in_aws == CLUSTER_ADMIN, f"{code}: {role}"
        [(_, cluster)] = resources(template, "AWS::SageMaker::Cluster")
        executions = {g["ExecutionRole"]["Fn::GetAtt"][0] for g in cluster["Properties"]["InstanceGroups"]}
        assert executions and not executions & set(entries), f"{code}: HyperPod makes the nodes' entry"


def test_node_bound_addons_wait_for_running_nodes(shape: Shape) -> None:
    """With continuous provisioning the cluster is InService before its nodes: add-ons wait for NodesReady.

    The wait is resources in turn, each with CloudFormation's hour (AWS::CloudFormation::CustomResource
    ServiceTimeout: at most 3600 s): nodes launched; with on-start deep health checks (the default, both
    checks), waits while a new node runs them "for about 2 hours" (SageMaker developer guide, "Recommended
    resiliency configuration"): 120 min plus a quarter's margin is 150 min, 3 waits of 55 min after Launched,
    so 2 Checking waits; then Running.
    """
    config = shape.config
    for code in compute_regions(config):
        template = shape.templates[f"compute-{code}"]
        checks = any(
            g.on_start_deep_health_checks for g in config.region_config(code).compute.instance_groups
        )
        waits = {
            (r["Properties"]["Until"], r["Properties"].get("Step")): (i, r)
            for i, r in resources(template, "Custom::HyperPodNodesReady")
        }
        chain = [
            ("Launched", None),
            *([("Checking", "1"), ("Checking", "2")] if checks else []),
            ("Running", None),
        ]
        assert sorted(waits, key=chain.index) == chain, f"{code}: {sorted(waits, key=str)}"
        assert all(int(r["Properties"]["ServiceTimeout"]) <= 3600 for _, r in waits.values())
        for before, after in itertools.pairwise(chain):
            assert waits[before][0] in waits[after][1].get("DependsOn", []), (
                f"{code}: {after} must wait for {before}: one after the other"
            )
        ready_id = waits[("Running", None)][0]
        for name in (
            "cert-manager",
            "amazon-sagemaker-hyperpod-training-operator",
            "amazon-cloudwatch-observability",
        ):
            [(_, addon)] = [
                (i, r)
                for i, r in resources(template, "AWS::EKS::Addon")
                if r["Properties"]["AddonName"] == name
            ]
            assert ready_id in addon.get("DependsOn", []), f"{code}: {name} must wait for the nodes"


def _manifests(template: Template) -> list[dict[str, Any]]:
    """Every object the stack applies (the Region's storage; on a hub with source buckets, the load Job's too)."""
    docs: list[dict[str, Any]] = []
    for _, res in resources(template, "Custom::AWSCDK-EKS-KubernetesResource"):
        body = res["Properties"]["Manifest"]
        if isinstance(body, dict):  # deploy-time floating IPs make the JSON a join of literal and token parts
            body = "".join(p if isinstance(p, str) else "203.0.113.10" for p in body["Fn::Join"][1])
        docs += json.loads(body)
    return docs


def test_applied_volumes_are_50ti_retain_bound_and_the_dataset_read_only(shape: Shape) -> None:
    """The dataset volume is read-only in itself since b01d507 (issue 40 item 4: versions are written inside
    Qumulo only): ReadOnlyMany, "the volume can be mounted as read-only by many nodes", and nfs.readOnly, which
    "will force the NFS export to be mounted with read-only permissions" (Kubernetes docs, "Persistent Volumes",
    Access Modes; API reference, core/v1 NFSVolumeSource); the checkpoint volume stays ReadWriteMany, since
    training writes it. The claims live in hyperpod-training since 95314a1 (issue 41 item 5): HyperPod resumes a
    job only in kubeflow or a hyperpod-prefixed namespace (SageMaker developer guide, "Running jobs using the
    SageMaker HyperPod CLI", Enabling job auto-resume)."""
    config = shape.config
    for code in compute_regions(config):
        docs = _manifests(shape.templates[f"compute-{code}"])
        volumes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PersistentVolume"}
        claims = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PersistentVolumeClaim"}
        assert set(claims) == {DATASET_CLAIM, CHECKPOINT_CLAIM}
        dataset = claims[DATASET_CLAIM]
        volume = volumes[dataset["spec"]["volumeName"]]
        assert volume["spec"]["capacity"]["storage"] == "50Ti"
        assert volume["spec"]["accessModes"] == dataset["spec"]["accessModes"] == ["ReadOnlyMany"]
        assert volume["spec"]["nfs"]["readOnly"] is True
        assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert volume["spec"]["claimRef"]["name"] == DATASET_CLAIM
        assert (
            volume["spec"]["claimRef"]["namespace"] == dataset["metadata"]["namespace"] == "hyperpod-training"
        )
        checkpoints = volumes[claims[CHECKPOINT_CLAIM]["spec"]["volumeName"]]
        assert checkpoints["spec"]["accessModes"] == ["ReadWriteMany"]
        assert not checkpoints["spec"]["nfs"].get("readOnly")
        for claim in claims.values():
            bound = volumes[claim["spec"]["volumeName"]]
            assert bound["spec"]["claimRef"]["name"] == claim["metadata"]["name"]


def test_volumes_mount_the_regions_own_cnq(shape: Shape) -> None:
    config = shape.config
    for code in compute_regions(config):
        text = json.dumps(shape.templates[f"compute-{code}"]["Resources"])
        storages = set(re.findall(r'"StackName": "(hubspoke-[^"]*-storage-[^"]*)"', text))
        assert storages == {f"hubspoke-{config.environment}-storage-{code}"}


def test_no_compute_where_config_switches_it_off(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    assert {sid for sid in templates if sid.startswith("compute-")} == {
        f"compute-{c}" for c in compute_regions(config)
    }
    for sid, template in templates.items():
        if template["Metadata"]["hubspoke"]["region"] not in compute_regions(config):
            kinds = {r["Type"] for r in template["Resources"].values()}
            assert not kinds & {
                "AWS::SageMaker::Cluster",
                "AWS::EKS::Cluster",
                "Custom::AWSCDK-EKS-Cluster",
            }, sid


def test_listed_public_access_cidrs_open_the_endpoint_and_still_synthesize(config_from: Any) -> None:
    """README: `compute.public_access_cidrs` makes the EKS API endpoint public to those CIDRs only. Control Tower's
    CT.EKS.PR.1 (ct-eks-pr-1.guard) wants EndpointPublicAccess false, so a synth that runs it (every synth here)
    must carry the acknowledgment, and only when CIDRs are listed (the dev shape lists none and is private)."""
    data = options()  # the shared synth of several options (tests/conftest.py)
    assert data["spokes"][0]["compute"] == {"public_access_cidrs": ["198.51.100.0/24"]}
    assert data["hub"]["region"] == "us-east-2" and "compute" not in data["hub"]
    built = synth(config_from(data))
    for code, public in (("us-west-2", True), ("us-east-2", False)):
        (cluster,) = [
            r["Properties"]
            for r in built[f"compute-{code}"]["Resources"].values()
            if r["Type"] == "AWS::EKS::Cluster"
        ]
        vpc = cluster["ResourcesVpcConfig"]
        assert vpc["EndpointPrivateAccess"] is True
        assert vpc["EndpointPublicAccess"] is public
        assert vpc.get("PublicAccessCidrs") == (["198.51.100.0/24"] if public else None)


def with_dataset_pin(config: HubSpokeConfig) -> HubSpokeConfig:
    """`config` with a dataset version pinned where it has none: rendering a training job needs one."""
    if config.dataset.name and config.dataset.version:
        return config
    return config.model_copy(update={"dataset": DatasetConfig(name="c4-llama3", version="v1")})


def job_agent_endpoints(config: HubSpokeConfig, code: str) -> set[str]:
    """AWS_EMF_AGENT_ENDPOINT as every container of both rendered training jobs for the Region gets it."""
    found = set()
    pinned = with_dataset_pin(config)
    for kind in JOB_KINDS:
        job = training_job(pinned, pinned.region_config(code), kind=kind, image=ANY_IMAGE)
        specs = job["spec"].get("pytorchReplicaSpecs")
        for replica in specs.values() if specs else job["spec"]["replicaSpecs"]:
            for container in replica["template"]["spec"]["containers"]:
                env = {e["name"]: e.get("value") for e in container.get("env", [])}
                found.add(env.get("AWS_EMF_AGENT_ENDPOINT", ""))
    return found


def test_observability_addon_listens_for_emf_where_the_jobs_send_it(shape: Shape) -> None:
    config = shape.config
    for code in compute_regions(config):
        [addon] = [
            a["Properties"]
            for _, a in resources(shape.templates[f"compute-{code}"], "AWS::EKS::Addon")
            if a["Properties"]["AddonName"] == "amazon-cloudwatch-observability"
        ]
        settings = json.loads(addon["ConfigurationValues"])
        collected = settings["agent"]["config"]["logs"]["metrics_collected"]
        # GPU metrics and container logs stay as they were.
        assert collected["kubernetes"] == {
            "enhanced_container_insights": True,
            "accelerated_compute_metrics": True,
        }
        assert settings["containerLogs"]["enabled"] is True

        listen = urlsplit(collected["emf"]["service_address"])
        [endpoint] = job_agent_endpoints(config, code)
        target = urlsplit(endpoint)
        assert (target.scheme, target.port) == (listen.scheme, listen.port) == ("tcp", 25888), (
            "jobs must send on the protocol and port the agent listens on; the add-on's operator publishes "
            "EMF on its cloudwatch-agent Service at 25888 only"
        )
        assert listen.hostname in (None, "0.0.0.0"), "the agent must accept other pods, not only itself"
        assert target.hostname == "cloudwatch-agent.amazon-cloudwatch", "the add-on's agent Service"
        # Pinned for 1.33 like vpc-cni, kube-proxy and coredns: a new add-on build must not change the agent
        # under us. Add-on versions follow the helm chart's (aws-observability/helm-charts RELEASE_NOTES, e.g.
        # chart 3.7.0 -> v3.7.0-eksbuild.1); 6.4.0 is the chart of 2026-07-21. For 1.34 and 1.35 no stored EKS
        # table names a build, so EKS's default for the version is taken at create (hubspoke/eks_addons.py).
        version = config.region_config(code).compute.kubernetes_version
        assert addon.get("AddonVersion") == {"1.33": "v6.4.0-eksbuild.1"}.get(version), version
        # A given agent.config replaces the chart's default, which would enable Application Signals
        # (helm-charts templates/_helpers.tpl, build-default-config): off, as docs/operations.md says.
        assert "application_signals" not in collected and "traces" not in settings["agent"]["config"]


def test_training_metric_records_land_in_a_group_with_retention(shape: Shape) -> None:
    config = shape.config
    from hubspoke import training_metrics

    for code in compute_regions(config):
        groups = [
            r["Properties"]
            for _, r in resources(shape.templates[f"compute-{code}"], "AWS::Logs::LogGroup")
            if r["Properties"].get("LogGroupName") == training_metrics.log_group_name(config.environment)
        ]
        assert len(groups) == 1 and groups[0]["RetentionInDays"] > 0, code


def test_deployed_waits_keep_their_logical_ids(dev_templates: Templates) -> None:
    """Stacks deployed before the Checking waits existed hold the Launched and Running waits under these logical
    IDs (the dev snapshot before the change); a new ID would make CloudFormation replace a wait."""
    template = dev_templates["compute-us-west-2"]
    ids = {r["Properties"]["Until"]: i for i, r in resources(template, "Custom::HyperPodNodesReady")}
    assert ids["Launched"] == "HyperPodNodesReadyLaunched5A59CADC"
    assert ids["Running"] == "HyperPodNodesReady345B42B8"


def test_each_group_runs_the_configured_deep_health_checks(
    dev_config: HubSpokeConfig, dev_templates: Templates
) -> None:
    """OnStartDeepHealthChecks per instance group from config; dev keeps the default, both checks."""
    for code in compute_regions(dev_config):
        [(_, cluster)] = resources(dev_templates[f"compute-{code}"], "AWS::SageMaker::Cluster")
        got = {
            g["InstanceGroupName"]: g.get("OnStartDeepHealthChecks")
            for g in cluster["Properties"]["InstanceGroups"]
        }
        assert got == {
            g.name: ["InstanceStress", "InstanceConnectivity"]
            for g in dev_config.region_config(code).compute.instance_groups
        }


@pytest.mark.thorough
def test_without_deep_health_checks_no_property_and_no_checking_waits() -> None:
    """config/smoke.yaml turns the checks off. SageMaker takes 1 to 3 OnStartDeepHealthChecks (botocore's
    sagemaker service model, min 1), so none is the property left out; and the nodes need no Checking waits."""
    from hubspoke.config.loader import load

    config = load(ROOT / "config" / "smoke.yaml").config
    templates = synth(config)
    for code in compute_regions(config):
        template = templates[f"compute-{code}"]
        [(_, cluster)] = resources(template, "AWS::SageMaker::Cluster")
        assert all("OnStartDeepHealthChecks" not in g for g in cluster["Properties"]["InstanceGroups"])
        assert sorted(
            r["Properties"]["Until"] for _, r in resources(template, "Custom::HyperPodNodesReady")
        ) == [
            "Launched",
            "Running",
        ]
