"""A fake AWS for preflight tests: moto in-process or a moto server on 127.0.0.1, seeded the same way.

moto 5.2.5 lacks three things preflight reads: its Service Quotas backend serves only ServiceCode=vpc (no
SageMaker quotas, no ListServiceQuotas), EKS has no DescribeClusterVersions, and SSM has none of AWS's
public Canonical parameters (and, like AWS, refuses to create a parameter under /aws/). `Unsupported`
answers exactly those operations on the clients it hands out, with a botocore before-call hook (the
mechanism botocore's Stubber uses, limited to the named operations); every other call goes to moto.
Images with a chosen ID, owner and date are put into moto's EC2 backend directly (moto's RegisterImage
picks its own ID and date); the in-process mock and the server share that backend.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from moto import mock_aws
from moto.server import ThreadedMotoServer

from hubspoke.cli.preflight import Clients, session_clients
from hubspoke.cli.preflight_checks import BOOTSTRAP_PARAMETER
from hubspoke.cli.preflight_cnq import CANONICAL_OWNER, UBUNTU_PARAMETER
from hubspoke.config import load
from hubspoke.topology import ENVIRONMENT_TAG, REGION_TAG
from tests.conftest import ROOT

P5 = "ml.p5.48xlarge"


def sagemaker_quota(instance_type: str, value: float, code: str = "L-TESTP5") -> dict[str, Any]:
    return {
        "ServiceCode": "sagemaker",
        "QuotaCode": code,
        "QuotaName": f"{instance_type} for cluster usage",
        "Value": value,
    }


def eks_version(version: str, status: str = "STANDARD_SUPPORT") -> dict[str, Any]:
    return {"clusterVersion": version, "clusterType": "eks", "versionStatus": status}


def dev_images() -> dict[str, str]:
    config = load(ROOT / "config" / "dev.yaml").config
    return {r.region: r.storage.ami_id for r in config.regions() if r.storage.ami_id}


@dataclass
class Hooked:
    """Wraps a client factory: one client per service and Region, each given `hook` once when it is made."""

    base: Clients
    _made: dict[tuple[str, str], Any] = field(default_factory=dict)

    def __call__(self, service: str, region: str) -> Any:
        if (service, region) not in self._made:
            self._made[service, region] = client = self.base(service, region)
            self.hook(client, service, region)
        return self._made[service, region]

    def hook(self, client: Any, service: str, region: str) -> None:
        """Register before-call answers for what moto cannot do (nothing by default)."""


@dataclass
class Unsupported(Hooked):
    """Answers what moto cannot for preflight, passes the rest through."""

    applied_quotas: list[dict[str, Any]] = field(default_factory=lambda: [sagemaker_quota(P5, 2)])
    default_quotas: list[dict[str, Any]] = field(default_factory=list)
    eks_versions: list[dict[str, Any]] = field(
        default_factory=lambda: [
            eks_version("1.33"),
            eks_version("1.32"),
            eks_version("1.29", "EXTENDED_SUPPORT"),
        ]
    )

    # Region -> the image ID Canonical's public "current Ubuntu 24.04" parameter names there; by default
    # the images config/dev.yaml pins.
    ubuntu_images: dict[str, str] = field(default_factory=lambda: dev_images())

    def hook(self, client: Any, service: str, region: str) -> None:
        if service == "eks":
            eks_versions = self.eks_versions

            def versions(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
                if model.name != "DescribeClusterVersions":
                    return None
                return AWSResponse("https://stub", 200, {}, None), {"clusterVersions": eks_versions}

            client.meta.events.register("before-call.eks.DescribeClusterVersions", versions)
        if service == "service-quotas":
            canned = {
                "ListServiceQuotas": self.applied_quotas,
                "ListAWSDefaultServiceQuotas": self.default_quotas,
            }

            def answer(model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
                if model.name not in canned:
                    return None
                return AWSResponse("https://stub", 200, {}, None), {"Quotas": canned[model.name]}

            client.meta.events.register("before-call.service-quotas.*", answer)
        if service == "ssm":
            current = self.ubuntu_images.get(region)

            def ubuntu(model: Any, params: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
                body = params.get("body") or b"{}"  # the serialized request (SSM speaks JSON)
                name = json.loads(body.decode() if isinstance(body, bytes) else body).get("Name")
                if model.name != "GetParameter" or name != UBUNTU_PARAMETER:
                    return None
                if current is None:
                    error = {"Error": {"Code": "ParameterNotFound", "Message": "not published here"}}
                    return AWSResponse("https://stub", 400, {}, None), error
                return AWSResponse("https://stub", 200, {}, None), {
                    "Parameter": {"Name": UBUNTU_PARAMETER, "Type": "String", "Value": current, "Version": 1}
                }

            client.meta.events.register("before-call.ssm.GetParameter", ubuntu)


@dataclass
class World:
    """Seeds the fake account through the same client factory the code under test uses."""

    clients: Clients

    def bootstrap(self, region: str, version: str = "33") -> None:
        self.clients("ssm", region).put_parameter(Name=BOOTSTRAP_PARAMETER, Value=version, Type="String")

    def vpc(self, region: str, cidr: str, *, own_env: str | None = None, name: str | None = None) -> str:
        ec2 = self.clients("ec2", region)
        tags = [{"Key": "Name", "Value": name}] if name else []
        if own_env:
            tags += [{"Key": ENVIRONMENT_TAG, "Value": own_env}, {"Key": REGION_TAG, "Value": region}]
        spec = [{"ResourceType": "vpc", "Tags": tags}] if tags else []
        return str(ec2.create_vpc(CidrBlock=cidr, TagSpecifications=spec)["Vpc"]["VpcId"])

    def peer(self, region: str, requester: str, accepter: str, peer_region: str | None = None) -> str:
        ec2 = self.clients("ec2", region)
        args: dict[str, Any] = {"VpcId": requester, "PeerVpcId": accepter}
        if peer_region:
            args["PeerRegion"] = peer_region
        pcx = ec2.create_vpc_peering_connection(**args)["VpcPeeringConnection"]["VpcPeeringConnectionId"]
        self.clients("ec2", peer_region or region).accept_vpc_peering_connection(VpcPeeringConnectionId=pcx)
        return str(pcx)

    def image(self, region: str, ami_id: str, *, owner: str = CANONICAL_OWNER, age_days: int = 10) -> None:
        """An image with this ID, owner and age in `region` (moto's backend, shared with the server)."""
        from moto.ec2.models import ec2_backends
        from moto.ec2.models.amis import Ami

        backend = ec2_backends["123456789012"][region]
        created = datetime.now(UTC) - timedelta(days=age_days)
        backend.amis[ami_id] = Ami(backend, ami_id, name=f"ubuntu/images/{ami_id}", owner_id=owner,
                                   architecture="x86_64", creation_date=created, region_name=region)  # fmt: skip

    def stage(self, uri: str, region: str, **put: str) -> None:
        """Put a (tiny) qumulo-core.deb where `uri` says, in a bucket of `region`, and the host configuration
        file beside it, as Qumulo's guide stages both; `put` adds PutObject arguments to the package."""
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        s3 = self.clients("s3", region)
        if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
        s3.put_object(Bucket=bucket, Key=key, Body=b"!<arch>\n", **put)  # type: ignore[arg-type]
        folder = key.rsplit("/", 1)[0]
        s3.put_object(Bucket=bucket, Key=f"{folder}/host_configuration.tar.gz", Body=b"\x1f\x8b")

    def deployed_dev(self) -> None:
        """dev.yaml's environment as a healthy account would hold it after a first deploy."""
        config = load(ROOT / "config" / "dev.yaml").config
        for pinned in config.regions():
            assert pinned.storage.ami_id is not None and pinned.storage.qumulo_core is not None
            self.image(pinned.region, pinned.storage.ami_id)
            self.stage(pinned.storage.qumulo_core.package_uri, pinned.region)
        for region in ("us-east-2", "us-west-2"):
            self.bootstrap(region)
        hub = self.vpc("us-east-2", "10.10.0.0/16", own_env="dev")
        spoke = self.vpc("us-west-2", "10.20.0.0/16", own_env="dev")
        self.peer("us-west-2", spoke, hub, peer_region="us-east-2")


FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/hubspoke-test-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/hubspoke-test-credentials",
}


def isolate_from_real_aws(monkeypatch: pytest.MonkeyPatch, *, credentials: bool = True) -> None:
    """No profile, no instance metadata, no real endpoint: only what the test sets."""
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_ENDPOINT_URL",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    if not credentials:
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")


@pytest.fixture(params=["in-process", "server"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """moto behind boto3 either in-process (mock_aws) or as a server reached through AWS_ENDPOINT_URL."""
    isolate_from_real_aws(monkeypatch)
    if request.param == "in-process":
        with mock_aws():
            yield "in-process"
        return
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    try:
        yield endpoint
    finally:
        # Server and in-process moto share backends in this process: leave nothing for the next test.
        urllib.request.urlopen(
            urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=10
        )
        server.stop()


@pytest.fixture
def world(backend: str) -> World:
    return World(session_clients())
