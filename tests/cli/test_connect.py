"""`hubspoke connect` and verify's access rows, against the deployed two-spoke world in moto (verify_world.py).

The instance ID and endpoint the commands must carry come from the world (moto's run_instances and EKS
CreateCluster answers, put into the stack's outputs as CloudFormation would), not from the code under test.
Sources of the literals: Systems Manager User Guide, "Start a session" (document
AWS-StartPortForwardingSessionToRemoteHost, parameters host / portNumber / localPortNumber); EKS User Guide,
"Accessing a private only API server" (port 443); Kubernetes reference, `kubectl config set-cluster`
(`--server`, `--tls-server-name`); AWS CLI reference, `aws eks update-kubeconfig` (cluster entry named by the
cluster ARN arn:aws:eks:<region>:<account>:cluster/<name>, `--role-arn`; `--alias` names the context, which it
makes current: awscli 1.45.11 customizations/eks/update_kubeconfig.py and kubeconfig.py); Kubernetes reference,
`kubectl config use-context`. Ports: the world's config lists us-east-2 (hub), us-west-2, eu-west-1, and each
Region's default must differ so two tunnels can run at once (8443 for the hub, one more per spoke in order).
"""

from __future__ import annotations

import argparse
import base64
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from hubspoke.cli.checks import CheckResult
from hubspoke.cli.connect import run
from hubspoke.cli.verify import run_verify
from hubspoke.config import load
from tests.cli.test_verify import COMPUTE, only_areas
from tests.cli.verify_fixtures import CALLER, TWO_SPOKES
from tests.cli.verify_world import ACCOUNT, DeployedWorld, MotoGaps, assumed_clients
from tests.conftest import resources, write_config
from tests.docs.checker import command_problems
from tests.docs.shell import parse

CLUSTER = "hubspoke-dev-us-west-2"


def connect(world: DeployedWorld, config: Path, *extra: str, clients: Any = None) -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    from hubspoke.cli.connect import add_parser

    add_parser(sub, "connect")
    args = parser.parse_args(["connect", "--config", str(config), *extra])
    return run(args, clients=clients or world.clients)


def host_of(world: DeployedWorld, region: str) -> tuple[str, str]:
    """(instance ID, endpoint host name) of the Region's access host and cluster, as the world deployed them."""
    template = world.templates[f"compute-{region}"]
    [(instance, _)] = resources(template, "AWS::EC2::Instance")
    endpoint = world.eks_cluster(region).endpoint
    return world.physical[f"compute-{region}"][instance], endpoint.removeprefix("https://").rstrip("/")


def problems_of(line: str) -> list[str]:
    return [p for c in parse(line) for p in command_problems(c)]


def test_prints_the_tunnel_kubeconfig_and_check_for_the_region(
    deployed: DeployedWorld, deployed_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert connect(deployed, deployed_config, "--region", "us-west-2", "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    instance, host = host_of(deployed, "us-west-2")
    assert instance.startswith("i-") and host
    tunnel = shlex.split(printed["tunnel"])
    assert tunnel[:3] == ["aws", "ssm", "start-session"]
    assert tunnel[tunnel.index("--target") + 1] == instance
    assert tunnel[tunnel.index("--document-name") + 1] == "AWS-StartPortForwardingSessionToRemoteHost"
    assert json.loads(tunnel[tunnel.index("--parameters") + 1]) == {
        "host": [host],
        "portNumber": ["443"],
        "localPortNumber": ["8444"],
    }
    # The caller (moto's user) is listed under access.administrators: its own identity signs, no --role-arn.
    assert shlex.split(printed["kubeconfig"]) == [
        "aws", "eks", "update-kubeconfig", "--region", "us-west-2", "--name", CLUSTER, "--alias", CLUSTER,
    ]  # fmt: skip
    assert shlex.split(printed["through_tunnel"]) == [
        "kubectl", "config", "set-cluster", f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/{CLUSTER}",
        "--server", "https://localhost:8444", "--tls-server-name", host,
    ]  # fmt: skip
    assert shlex.split(printed["switch"]) == ["kubectl", "config", "use-context", CLUSTER]
    assert CALLER in printed["note"]
    # Every printed command is one its tool accepts (botocore's models and the CLI's customizations, kubectl's
    # conventions): the same bar as the commands quoted in the docs.
    for line in (
        printed["tunnel"],
        printed["kubeconfig"],
        printed["through_tunnel"],
        printed["check"],
        printed["switch"],
    ):
        assert problems_of(line) == [], line


def test_text_lists_the_steps_in_order(
    deployed: DeployedWorld, deployed_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert connect(deployed, deployed_config, "--region", "us-east-2", "--local-port", "9443") == 0
    out = capsys.readouterr().out
    order = [
        out.index(s)
        for s in ("aws ssm start-session", "aws eks update-kubeconfig", "kubectl config set-cluster")
    ]
    assert order == sorted(order)
    assert '"localPortNumber": ["9443"]' in out and "https://localhost:9443" in out
    assert f"hubspoke verify --config {deployed_config} --region us-east-2" in out
    assert "kubectl config use-context hubspoke-dev-us-east-2" in out


@pytest.fixture
def light(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Any]]:
    """config/dev.yaml and only its us-west-2 Compute stack's outputs in moto: what connect reads."""
    from moto import mock_aws

    from hubspoke.cli.checks import session_clients
    from tests.cli.preflight_world import isolate_from_real_aws
    from tests.conftest import ROOT

    isolate_from_real_aws(monkeypatch)
    config = tmp_path / "dev.yaml"
    config.write_text((ROOT / "config" / "dev.yaml").read_text())
    outputs = {"EksClusterName": CLUSTER, "EksEndpoint": "https://ABC.gr7.us-west-2.eks.amazonaws.com",
               "AccessHostInstanceId": "i-0123456789abcdef0"}  # fmt: skip
    template = {
        "Resources": {"Anything": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in outputs.items()},
    }
    with mock_aws():
        session_clients(None)("cloudformation", "us-west-2").create_stack(
            StackName="hubspoke-dev-compute-us-west-2", TemplateBody=json.dumps(template)
        )
        yield config, session_clients(None)


def test_the_profile_goes_on_every_aws_command_it_prints(
    light: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 44: connect dropped --profile, so the kubeconfig signed as the default identity. With `--profile`,
    update-kubeconfig writes AWS_PROFILE into the user entry's exec env (awscli customizations/eks/
    update_kubeconfig.py, EKSClient.get_user_entry); the tunnel and verify need it as well (AWS CLI global option
    --profile; `hubspoke verify --profile`)."""
    config, clients = light
    argv = ["--region", "us-west-2", "--profile", "ml-dev"]
    assert connect(None, config, *argv, "--json", clients=clients) == 0  # type: ignore[arg-type]
    printed = json.loads(capsys.readouterr().out)
    for line in (printed["tunnel"], printed["kubeconfig"]):
        words = shlex.split(line)
        assert words.count("--profile") == 1 and words[words.index("--profile") + 1] == "ml-dev", line
        assert problems_of(line) == [], line
    assert connect(None, config, *argv, clients=clients) == 0  # type: ignore[arg-type]
    assert f"hubspoke verify --config {config} --region us-west-2 --profile ml-dev" in capsys.readouterr().out


def test_a_tunnel_opened_from_connects_steps_names_the_profile_once(light: tuple[Path, Any]) -> None:
    """`hubspoke train` and `dataset load` open what connect's steps say (hubspoke/cli/tunnel.py), adding the
    profile; steps that carry it already keep one --profile (the AWS CLI takes one)."""
    from hubspoke.cli.connect import steps
    from hubspoke.cli.tunnel import open_cluster
    from tests.cli.train_cluster import PORT, FakeCluster

    config, clients = light
    found = steps(load(config).config, clients, config_path=str(config), region="us-west-2", local_port=PORT,
                  profile="ml-dev")  # fmt: skip
    runner = FakeCluster()
    with open_cluster(found, runner=runner, profile="ml-dev"):
        pass
    aws = [c for c in runner.calls if c[0] == "aws"]
    assert len(aws) == 2 and all(
        c.count("--profile") == 1 and c[c.index("--profile") + 1] == "ml-dev" for c in aws
    )


def test_the_hub_and_a_spoke_tunnel_on_different_default_ports(
    deployed: DeployedWorld, deployed_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = {}
    for region in ("us-east-2", "us-west-2"):
        assert connect(deployed, deployed_config, "--region", region, "--json") == 0
        ports[region] = json.loads(capsys.readouterr().out)["local_port"]
    assert ports == {"us-east-2": 8443, "us-west-2": 8444}


def test_a_caller_not_listed_gets_the_listed_role(
    deployed: DeployedWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session of an unlisted role: the kubeconfig assumes the one role access.administrators lists."""
    role = f"arn:aws:iam::{ACCOUNT}:role/ml/ClusterAdmins"
    config = write_config(tmp_path, {**TWO_SPOKES, "access": {"administrators": [role]}})
    other = assumed_clients(ACCOUNT)  # arn:aws:sts::<account>:assumed-role/hubspoke-verify-tests/...
    assert connect(deployed, config, "--region", "us-west-2", "--json", clients=other) == 0
    printed = json.loads(capsys.readouterr().out)
    assert shlex.split(printed["kubeconfig"])[-2:] == ["--role-arn", role]
    assert "assumed-role/hubspoke-verify-tests" in printed["note"]


def test_without_the_access_host_output_it_says_how_to_get_one(
    deployed: DeployedWorld, deployed_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployed.redeploy_without("compute-us-west-2", "AccessHostInstanceId")
    assert connect(deployed, deployed_config, "--region", "us-west-2") == 1
    err = capsys.readouterr().err
    assert "has no access host" in err and "access.administrators" in err
    assert "npx cdk deploy" in err and "compute-us-west-2" in err


def test_a_missing_stack_is_a_deploy_away(
    deployed: DeployedWorld, deployed_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan_name = "hubspoke-dev-compute-us-west-2"
    deployed.clients("cloudformation", "us-west-2").delete_stack(StackName=plan_name)
    assert connect(deployed, deployed_config, "--region", "us-west-2") == 1
    err = capsys.readouterr().err
    assert f"stack {plan_name} does not exist in us-west-2" in err and "npx cdk deploy" in err


@pytest.mark.parametrize(
    ("region", "message"),
    [
        ("ap-south-1", "--region: ap-south-1 not in"),
        ("eu-west-1", "--region: eu-west-1 has no compute"),
    ],
)
def test_a_region_without_a_cluster_is_bad_input(
    deployed: DeployedWorld,
    deployed_config: Path,
    capsys: pytest.CaptureFixture[str],
    region: str,
    message: str,
) -> None:
    assert connect(deployed, deployed_config, "--region", region) == 2
    assert message in capsys.readouterr().err


# ----- verify's rows -----
def access_rows(results: list[CheckResult], region: str) -> dict[str, CheckResult]:
    return {r.check: r for r in results if r.region == region and r.check in ("eks access", "eks caller")}


def test_verify_passes_a_listed_caller_whose_entry_exists(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    with only_areas(COMPUTE):  # every Region, the area of the access rows
        results = run_verify(
            deployed.config, deployed.clients, config_path=str(deployed_config), kubeconfig=()
        )
    for region in ("us-east-2", "us-west-2"):
        found = access_rows(results, region)
        assert found["eks access"].status == "pass", found
        assert found["eks caller"].status == "pass" and CALLER in found["eks caller"].detail, found
    assert ("ListAccessEntries", f"/clusters/{CLUSTER}/access-entries") in deployed.clients.asked


def test_verify_fails_a_listed_administrator_without_an_entry(
    deployed: DeployedWorld, deployed_config: Path, tmp_path: Path
) -> None:
    """Config lists someone the deployed cluster does not know: the compute stack needs a deploy."""
    added = f"arn:aws:iam::{ACCOUNT}:role/NewAdmins"
    config = load(
        write_config(tmp_path, {**TWO_SPOKES, "access": {"administrators": [CALLER, added]}})
    ).config
    with only_areas(COMPUTE):
        results = run_verify(
            config, deployed.clients, config_path=str(deployed_config), only={"us-west-2"}, kubeconfig=()
        )
    row = access_rows(results, "us-west-2")["eks access"]
    assert row.status == "fail" and added in row.detail
    assert "npx cdk deploy" in row.fix and "compute-us-west-2" in row.fix


def test_verify_warns_a_caller_without_an_entry_and_says_how_in(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    other: MotoGaps = assumed_clients(ACCOUNT)
    other.addons, other.access_entries = deployed.clients.addons, deployed.clients.access_entries
    with only_areas(COMPUTE):
        results = run_verify(
            deployed.config, other, config_path=str(deployed_config), only={"us-west-2"}, kubeconfig=()
        )
    row = access_rows(results, "us-west-2")["eks caller"]
    assert row.status == "warn" and "assumed-role/hubspoke-verify-tests" in row.detail
    assert "access.administrators" in row.fix
    assert f"`hubspoke connect --config {deployed_config} --region us-west-2`" in row.fix
    assert problems_of(f"hubspoke connect --config {deployed_config} --region us-west-2") == []


# ----- verify through the tunnel -----
def tunnel_kubeconfig(tmp_path: Path, fake: Any, arn: str, host: str, *, server_name: bool) -> Path:
    """What update-kubeconfig plus connect's set-cluster leave: the cluster ARN's entry on a local address."""
    from tests.fakes.tls import named_certificate

    cluster: dict[str, Any] = {
        "server": fake.url,
        "certificate-authority-data": base64.b64encode(named_certificate(host).cert_pem).decode(),
    }
    if server_name:
        cluster["tls-server-name"] = host
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": arn, "cluster": cluster}],
                "users": [{"name": arn, "user": {"token": fake.token}}],
                "contexts": [{"name": arn, "context": {"cluster": arn, "user": arn}}],
            }
        )
    )
    return path


def test_verify_reads_kubernetes_through_the_tunnel_kubeconfig(tmp_path: Path) -> None:
    """The API server's certificate names the endpoint's host; the tunnel is a local address. With connect's
    tls-server-name the certificate is checked against that name and the read succeeds; without it, the same
    server is refused (the name does not match 127.0.0.1), as kubectl would refuse it."""
    from hubspoke.cli.verify.kube import KubeUnavailable
    from hubspoke.cli.verify.kube import connect as kube_connect
    from tests.fakes.kube_api import FakeKubeApi, node

    host = "0123456789ABCDEF0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"
    arn = f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/{CLUSTER}"
    with FakeKubeApi(server_name=host, nodes=[node("n1")]) as fake:
        paths = (tunnel_kubeconfig(tmp_path, fake, arn, host, server_name=True),)
        api = kube_connect(paths, arn=arn, endpoint=f"https://{host}", name=CLUSTER, region="us-west-2")
        assert [n["metadata"]["name"] for n in api.items("/api/v1/nodes")] == ["n1"]
        paths = (tunnel_kubeconfig(tmp_path, fake, arn, host, server_name=False),)
        api = kube_connect(paths, arn=arn, endpoint=f"https://{host}", name=CLUSTER, region="us-west-2")
        with pytest.raises(KubeUnavailable, match="cannot reach"):
            api.items("/api/v1/nodes")


def access_host_row(world: DeployedWorld, config: Path, region: str = "us-west-2") -> CheckResult:
    """The access host's row of `hubspoke verify --region REGION`, its compute area alone (only_areas)."""
    with only_areas(COMPUTE):
        results = run_verify(
            world.config, world.clients, config_path=str(config), only={region}, kubeconfig=()
        )
    [row] = [r for r in results if r.region == region and r.check == "access host"]
    return row


def test_verify_passes_a_running_access_host_whose_agent_is_online(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    instance, _ = host_of(deployed, "us-west-2")
    row = access_host_row(deployed, deployed_config)
    assert row.status == "pass" and instance in row.detail


def test_verify_fails_a_host_whose_agent_never_registered(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    """SSM DescribeInstanceInformation lists only instances whose agent reached Systems Manager: none, no tunnel."""
    instance, _ = host_of(deployed, "us-west-2")
    del deployed.clients.agents["us-west-2"][instance]
    row = access_host_row(deployed, deployed_config)
    assert row.status == "fail" and "has not registered with Systems Manager" in row.detail
    assert "NAT" in row.fix


def test_verify_fails_a_stopped_host_with_the_start_command(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    instance, _ = host_of(deployed, "us-west-2")
    deployed.clients("ec2", "us-west-2").stop_instances(InstanceIds=[instance])
    row = access_host_row(deployed, deployed_config)
    assert row.status == "fail" and row.detail == f"{instance} is stopped"
    assert row.fix == f"`aws ec2 start-instances --instance-ids {instance} --region us-west-2`"
    assert problems_of(row.fix.strip("`")) == []


def test_verify_fails_a_terminated_host_with_the_gone_runbook(
    deployed: DeployedWorld, deployed_config: Path
) -> None:
    instance, _ = host_of(deployed, "us-west-2")
    deployed.clients("ec2", "us-west-2").terminate_instances(InstanceIds=[instance])
    row = access_host_row(deployed, deployed_config)
    assert row.status == "fail" and row.detail == f"{instance} is terminated"
    assert "detect-stack-drift" in row.fix
