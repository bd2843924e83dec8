"""A fake AWS for preflight tests: moto in-process or a moto server on 127.0.0.1, seeded the same way.

moto 5.2.5 lacks some of what preflight calls: its Service Quotas backend serves only ServiceCode=vpc defaults
(no SageMaker quotas, no ListServiceQuotas, no applied values, no GetAWSDefaultServiceQuota), EKS has no
DescribeClusterVersions, Lambda no GetAccountSettings, and SSM has none of AWS's public Canonical parameters
(and, like AWS, refuses to create a parameter under /aws/). `Unsupported` answers exactly those operations on the
clients it hands out, with botocore hooks (the events botocore's Stubber uses): `before-parameter-build` sees the
caller's parameters and the hook answers what the service would refuse with its error (a ServiceCode it holds no
quotas for, an unknown NextToken) and fails the test on what the model forbids (MaxResults over 100), `before-call`
answers in the shape of the botocore service model, a page at a time, so the caller must paginate. Every other call goes
to moto. Images with a chosen ID, owner and date are put into moto's EC2 backend directly (moto's RegisterImage
picks its own ID and date); the in-process mock and the server share that backend.
"""

from __future__ import annotations

import base64
import os
import stat
import urllib.request
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from botocore.awsrequest import AWSResponse
from moto import mock_aws
from moto.server import ThreadedMotoServer
from moto.servicequotas.resources.default_quotas.vpc import VPC_DEFAULT_QUOTAS

from hubspoke.cli.preflight import Clients, run_preflight, session_clients
from hubspoke.cli.preflight.checks import CheckResult
from hubspoke.config import load
from hubspoke.topology import ENVIRONMENT_TAG, REGION_TAG
from tests.conftest import ROOT, minimal, write_config
from tests.fakes.aws_endpoint import stop_moto_server

# The world answers to the names AWS and Canonical publish, written here (not imported from production) so a typo
# in production fails a test. AWS CDK v2 Developer Guide, "cdk bootstrap" (--qualifier defaults to hnb659fds) and
# the CDK CLI's own error "SSM parameter /cdk-bootstrap/hnb659fds/version not found. Has the environment been
# bootstrapped?": the bootstrap stack writes its version to /cdk-bootstrap/<qualifier>/version.
BOOTSTRAP_PARAMETER = "/cdk-bootstrap/hnb659fds/version"
# Ubuntu, "Finding Ubuntu images with the AWS SSM Parameter Store" (discourse.ubuntu.com/t/15507): the path is
# /aws/service/canonical/ubuntu/PRODUCT/RELEASE/stable/current/ARCH/VIRT_TYPE/VOL_TYPE/ami-id.
UBUNTU_PARAMETER = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
# Ubuntu on AWS docs, "Find Ubuntu images on AWS": Canonical publishes its official AMIs from account 099720109477.
CANONICAL_OWNER = "099720109477"

P5 = "ml.p5.48xlarge"
# Quota names as the SageMaker Developer Guide ("Prerequisites for using SageMaker HyperPod") lists them,
# written out here rather than built the way the code under test builds them.
P5_QUOTA = "ml.p5.48xlarge for cluster usage"
PER_CLUSTER = "Maximum number instances allowed per SageMaker HyperPod cluster"
TOTAL = "Total number of instances allowed across SageMaker HyperPod clusters"
# SageMaker Developer Guide, "Prerequisites for using SageMaker HyperPod", quotas table, row 2.
EBS_PER_INSTANCE = "Maximum size of EBS volume in GB for a SageMaker HyperPod cluster instance"
# Small pages, so a caller that does not follow NextToken misses quotas. The service may return fewer items
# than MaxResults "even when there are more results available" (botocore service-quotas 2019-06-24 model,
# ListServiceQuotasRequest.MaxResults), so 2 per page is within what it documents.
PAGE = 2
# botocore service-quotas 2019-06-24 model: MaxResults is an integer of min 1, max 100; NextToken a string of at
# most 2048 characters matching ^[a-zA-Z0-9/+]*={0,2}$. botocore checks only the minimum before sending
# (botocore/validate.py, range_check), so the maximum is the service's to refuse.
MAX_RESULTS = 100


def sagemaker_quota(quota_name: str, value: float, code: str = "L-TESTP5") -> dict[str, Any]:
    """A SageMaker ServiceQuota (botocore service-quotas model, ServiceQuota) named exactly `quota_name`."""
    return {"ServiceCode": "sagemaker", "QuotaCode": code, "QuotaName": quota_name, "Value": value}


def hyperpod_limits(per_cluster: float = 20, total: float = 30, ebs_gb: float = 1024) -> list[dict[str, Any]]:
    return [
        sagemaker_quota(PER_CLUSTER, per_cluster, "L-2CE978FC"),
        sagemaker_quota(TOTAL, total, "L-3308CCC7"),
        sagemaker_quota(EBS_PER_INSTANCE, ebs_gb, "L-E13DF72A"),
    ]


def eks_version(
    version: str, version_status: str | None = "STANDARD_SUPPORT", **status: str
) -> dict[str, Any]:
    """A ClusterVersionInformation (botocore eks 2017-11-01 model): `version_status` fills versionStatus (enum
    VersionStatus); `status=` fills the deprecated status field (enum ClusterVersionStatus) as given."""
    info: dict[str, Any] = {"clusterVersion": version, "clusterType": "eks", **status}
    if version_status is not None:
        info["versionStatus"] = version_status
    return info


class Refused(Exception):
    """A request the real service would refuse; raised out of the hook so the test fails loudly."""


class UnknownToken(Exception):
    """A pagination token this fake did not hand out."""


def _token(start: int) -> str:
    """An opaque token in the alphabet the service-quotas model allows for NextToken (base64)."""
    return base64.b64encode(f"offset {start}".encode()).decode()


def _paged(
    items: list[dict[str, Any]], token: str | None, key: str, token_key: str, size: int = PAGE
) -> dict[str, Any]:
    """One page of `items` after `token`; raises UnknownToken for a token this fake never issued."""
    issued = {_token(i): i for i in range(0, len(items), size)}
    if token is not None and token not in issued:
        raise UnknownToken(token)
    start = issued[token] if token is not None else 0
    page: dict[str, Any] = {key: items[start : start + size]}
    if start + size < len(items):
        page[token_key] = _token(start + size)
    return page


def _error(code: str, message: str) -> dict[str, Any]:
    return {"Error": {"Code": code, "Message": message}}


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
    """Answers what moto cannot for preflight, checks how it is asked, passes the rest through."""

    applied_quotas: list[dict[str, Any]] = field(
        default_factory=lambda: [sagemaker_quota(P5_QUOTA, 2), *hyperpod_limits()]
    )
    default_quotas: list[dict[str, Any]] = field(default_factory=list)
    # Applied values of vpc quotas (moto answers only AWS defaults), by quota code.
    applied_vpc_quotas: dict[str, float] = field(default_factory=dict)
    # The ServiceCodes whose quotas this world lists; Service Quotas answers NoSuchResourceException (one of the
    # errors the service-quotas model lists for ListServiceQuotas and ListAWSDefaultServiceQuotas) for others.
    quota_services: frozenset[str] = frozenset({"sagemaker"})
    eks_versions: list[dict[str, Any]] = field(
        default_factory=lambda: [
            eks_version("1.35"),
            eks_version("1.34"),
            eks_version("1.33"),
            eks_version("1.32"),
            eks_version("1.29", "EXTENDED_SUPPORT"),
        ]
    )
    # EKS DescribeAddonVersions: add-on name -> {addonVersion: the Kubernetes versions it is compatible with}
    # (AddonVersionInfo.compatibilities[].clusterVersion, botocore eks 2017-11-01), as this world's EKS lists
    # them. moto 5.2.5 has no DescribeAddonVersions. By default the versions the EKS User Guide's add-on tables
    # gave for 1.33 (read 2026-11-30) and for 1.34 and 1.35 (kube-proxy and CoreDNS tables, read 2026-12-01), and
    # the CloudWatch build hubspoke pins. vpc-cni's build for 1.34 and 1.35 is no table's (its table stops at
    # 1.33): this world offers it, as hubspoke/eks_addons.py assumes EKS does.
    addon_versions: dict[str, dict[str, list[str]]] = field(
        default_factory=lambda: {
            "vpc-cni": {
                "v1.20.1-eksbuild.3": ["1.35", "1.34", "1.33", "1.32"],
                "v1.19.6-eksbuild.7": ["1.33", "1.32"],
            },
            "kube-proxy": {
                "v1.35.3-eksbuild.13": ["1.35"],
                "v1.34.6-eksbuild.13": ["1.34"],
                "v1.33.0-eksbuild.2": ["1.33"],
                "v1.32.6-eksbuild.2": ["1.32"],
            },
            "coredns": {
                "v1.14.3-eksbuild.3": ["1.36", "1.35"],
                "v1.13.2-eksbuild.11": ["1.34"],
                "v1.12.1-eksbuild.2": ["1.33", "1.32"],
            },
            "amazon-cloudwatch-observability": {
                "v6.4.0-eksbuild.1": ["1.33", "1.32"],
                "v6.5.0-eksbuild.1": ["1.35", "1.34", "1.33"],
            },
            # The add-ons hubspoke leaves to EKS's default: builds in EKS's `v<version>-eksbuild.<n>` form (EKS
            # User Guide, "EKS Pod Identity Agent", Update information), illustrative numbers, offered for the
            # versions HyperPod lists from 1.33 up (SageMaker developer guide, HyperPod EKS prerequisites).
            "eks-pod-identity-agent": {"v1.3.9-eksbuild.5": ["1.35", "1.34", "1.33"]},
            "cert-manager": {"v1.18.2-eksbuild.2": ["1.35", "1.34", "1.33"]},
            "amazon-sagemaker-hyperpod-training-operator": {"v1.2.0-eksbuild.1": ["1.35", "1.34", "1.33"]},
        }
    )
    # KMS ListAliases returns at most `Limit` aliases per page, 50 when the request names none, between 1 and
    # 100 when it does (botocore kms 2014-11-01, ListAliasesRequest.Limit); moto 5.2.5 answers every alias at
    # once, so this world pages moto's answer (Marker in, NextMarker and Truncated out).
    kms_alias_page: int = 50
    _listing_aliases: bool = False
    # Lambda AccountLimit: the AWS default account limit is 1,000 (Lambda quotas page). The unreserved pool before
    # the reservations of the functions this world holds, which GetAccountSettings subtracts.
    lambda_limit: dict[str, int] = field(
        default_factory=lambda: {"ConcurrentExecutions": 1000, "UnreservedConcurrentExecutions": 1000}
    )
    # HyperPod cluster name -> what DescribeCluster answers for it beyond moto's (which knows only groups with an
    # InstanceType): ClusterStatus, InstanceGroups and RestrictedInstanceGroups in the botocore sagemaker
    # 2017-07-24 shapes (DescribeClusterResponse). The cluster must also exist in moto, which lists it.
    described_clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Service Quotas operation -> the error it answers every call with (one of the errors the service-quotas
    # model lists for it), e.g. a role without servicequotas:GetAWSDefaultServiceQuota.
    quota_errors: dict[str, str] = field(default_factory=dict)
    # Regions the account has not enabled: STS there refuses every token as it refuses bad credentials, 403
    # InvalidClientTokenId "The security token included in the request is invalid." (IAM User Guide,
    # "Activating and deactivating AWS STS in an AWS Region"; the STS API reference lists the error as 403).
    not_enabled: frozenset[str] = frozenset()
    # Whether the caller holds s3:ListBucket. Without it S3 answers a HEAD of a missing object 403 Forbidden,
    # not 404 (S3 API Reference, HeadObject, Permissions); a HEAD error has no body, so botocore's code is the
    # status, "403", and its message the reason phrase, "Forbidden".
    s3_list_bucket: bool = True
    asked: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    # Region -> the image ID Canonical's public "current Ubuntu 24.04" parameter names there; by default
    # the images config/dev.yaml pins.
    ubuntu_images: dict[str, str] = field(default_factory=lambda: dev_images())

    def _answers(
        self, service: str, region: str
    ) -> dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]]:
        def quota_list(items: list[dict[str, Any]]) -> Callable[[dict[str, Any]], dict[str, Any]]:
            def answer(params: dict[str, Any]) -> dict[str, Any]:
                code = params.get("ServiceCode")
                if code not in self.quota_services:
                    return _error("NoSuchResourceException", f"The specified resource does not exist: {code}")
                size = params.get("MaxResults", MAX_RESULTS)
                if not 1 <= size <= MAX_RESULTS:
                    raise Refused(f"MaxResults {size} is outside the model's 1..{MAX_RESULTS}")
                try:
                    return _paged(items, params.get("NextToken"), "Quotas", "NextToken", min(size, PAGE))
                except UnknownToken as exc:
                    return _error("InvalidPaginationTokenException", f"Invalid NextToken {exc}")

            return answer

        def failing(operation: str, answer: Callable[[dict[str, Any]], dict[str, Any] | None]) -> Any:
            def maybe(params: dict[str, Any]) -> dict[str, Any] | None:
                if operation in self.quota_errors:
                    return _error(self.quota_errors[operation], f"{operation} refused by the test world")
                return answer(params)

            return maybe

        def vpc_quota(params: dict[str, Any]) -> dict[str, Any] | None:
            code = params.get("QuotaCode")
            if params.get("ServiceCode") != "vpc" or code not in self.applied_vpc_quotas:
                return None  # moto answers (the AWS default)
            return {
                "Quota": {"ServiceCode": "vpc", "QuotaCode": code, "Value": self.applied_vpc_quotas[code]}
            }

        def vpc_default(params: dict[str, Any]) -> dict[str, Any] | None:
            # moto 5.2.5 has no GetAWSDefaultServiceQuota; its GetServiceQuota answers from its copy of the VPC
            # quotas page's defaults, which this answers from too (NoSuchResourceException for a code not there).
            if params.get("ServiceCode") != "vpc":
                return None
            code = params.get("QuotaCode")
            found = next((q for q in VPC_DEFAULT_QUOTAS if q["QuotaCode"] == code), None)
            if found is None:
                return _error("NoSuchResourceException", f"The specified resource does not exist: {code}")
            return {"Quota": dict(found)}

        def versions(params: dict[str, Any]) -> dict[str, Any]:
            # Which versions EKS leaves out without includeAll is not documented: a caller that does not ask for
            # all of them could miss an offered version, so the fake refuses it.
            if params.get("includeAll") is not True:
                raise Refused(f"DescribeClusterVersions without includeAll=True: {params}")
            # clusterType "eks" is what an EKS cluster in the cloud is (ClusterVersionInformation.clusterType);
            # which types EKS lists without the filter is not documented, so a caller must name it.
            if params.get("clusterType") != "eks":
                raise Refused(f"DescribeClusterVersions without clusterType='eks': {params}")
            try:
                return _paged(self.eks_versions, params.get("nextToken"), "clusterVersions", "nextToken")
            except UnknownToken as exc:  # which error EKS answers is not documented: fail the test loudly
                raise Refused(f"nextToken {exc} was never issued") from None

        def addon_versions(params: dict[str, Any]) -> dict[str, Any]:
            # Both filters are optional in the model (DescribeAddonVersionsRequest); preflight always names the
            # add-on, and without kubernetesVersion EKS lists the versions for every Kubernetes version.
            name, k8s = params.get("addonName"), params.get("kubernetesVersion")
            if not name:
                raise Refused(f"DescribeAddonVersions without addonName: {params}")
            versions = [
                {
                    "addonVersion": v,
                    "compatibilities": [{"clusterVersion": c, "defaultVersion": False} for c in cs],
                }
                for v, cs in self.addon_versions.get(str(name), {}).items()
                if k8s is None or k8s in cs
            ]
            infos = [{"addonName": name, "type": "networking", "addonVersions": versions}] if versions else []
            try:
                return _paged(infos, params.get("nextToken"), "addons", "nextToken")
            except UnknownToken as exc:
                raise Refused(f"nextToken {exc} was never issued") from None

        def account_settings(params: dict[str, Any]) -> dict[str, Any]:
            if params:
                raise Refused(f"GetAccountSettings takes no parameters, got {params}")
            # Lambda API Reference, AccountLimit: UnreservedConcurrentExecutions is "The maximum number of
            # simultaneous function executions, minus the capacity that's reserved for individual functions with
            # PutFunctionConcurrency": the functions this world holds (moto) take theirs from lambda_limit's pool.
            lam = self.base("lambda", region)
            names = [f["FunctionName"] for f in lam.list_functions()["Functions"]]
            reserved = sum(
                int(lam.get_function_concurrency(FunctionName=n).get("ReservedConcurrentExecutions") or 0)
                for n in names
            )
            limit = dict(self.lambda_limit)
            limit["UnreservedConcurrentExecutions"] -= reserved
            return {"AccountLimit": limit, "AccountUsage": {"FunctionCount": len(names)}}

        def ubuntu_parameter(params: dict[str, Any]) -> dict[str, Any] | None:
            if params.get("Name") != UBUNTU_PARAMETER:
                return None  # moto answers (the CDK bootstrap parameter, for one)
            current = self.ubuntu_images.get(region)
            if current is None:
                return {"Error": {"Code": "ParameterNotFound", "Message": "not published here"}}
            return {"Parameter": {"Name": UBUNTU_PARAMETER, "Type": "String", "Value": current, "Version": 1}}

        def describe_cluster(params: dict[str, Any]) -> dict[str, Any] | None:
            asked = str(params.get("ClusterName", ""))
            for name, described in self.described_clusters.items():
                if asked == name or asked.endswith(f"/{name}"):
                    for group in described.get("InstanceGroups", []):
                        # ClusterInstanceGroupSpecification: "The InstanceType and InstanceRequirements
                        # properties are mutually exclusive"; a fake answering both would hide a caller's bug.
                        if "InstanceType" in group and "InstanceRequirements" in group:
                            raise Refused(f"group with both InstanceType and InstanceRequirements: {group}")
                    arn = f"arn:aws:sagemaker:{region}:123456789012:cluster/{name}"
                    return {"ClusterArn": arn, "ClusterName": name, "ClusterStatus": "InService", **described}
            return None  # moto answers

        def aliases(params: dict[str, Any]) -> dict[str, Any] | None:
            if self._listing_aliases:
                return None  # the call below, made to read moto's whole list
            size = params.get("Limit", self.kms_alias_page)
            if not 1 <= size <= 100:
                raise Refused(f"ListAliases Limit {size} is outside the documented 1..100")
            self._listing_aliases = True
            try:
                every = self.base("kms", region).list_aliases()["Aliases"]
            finally:
                self._listing_aliases = False
            try:
                page = _paged(
                    every, params.get("Marker"), "Aliases", "NextMarker", min(size, self.kms_alias_page)
                )
            except UnknownToken as exc:
                return _error("InvalidMarkerException", f"Invalid Marker {exc}")
            page["Truncated"] = "NextMarker" in page
            return page

        def caller_identity(params: dict[str, Any]) -> dict[str, Any] | None:
            if region not in self.not_enabled:
                return None  # moto answers
            refused = _error("InvalidClientTokenId", "The security token included in the request is invalid.")
            return {**refused, "ResponseMetadata": {"HTTPStatusCode": 403}}

        return {
            "sts": {"GetCallerIdentity": caller_identity},
            "sagemaker": {"DescribeCluster": describe_cluster},
            "service-quotas": {
                "ListServiceQuotas": quota_list(self.applied_quotas),
                "ListAWSDefaultServiceQuotas": quota_list(self.default_quotas),
                "GetServiceQuota": failing("GetServiceQuota", vpc_quota),
                "GetAWSDefaultServiceQuota": failing("GetAWSDefaultServiceQuota", vpc_default),
            },
            "eks": {"DescribeClusterVersions": versions, "DescribeAddonVersions": addon_versions},
            "lambda": {"GetAccountSettings": account_settings},
            "ssm": {"GetParameter": ubuntu_parameter},
            "kms": {"ListAliases": aliases},
        }.get(service, {})

    def hook(self, client: Any, service: str, region: str) -> None:
        if service == "s3":

            def forbid_missing(parsed: dict[str, Any], **_: Any) -> None:
                # after-call sees the parsed answer before botocore raises its error (client._make_api_call).
                if not self.s3_list_bucket and parsed.get("Error", {}).get("Code") in {"404", "NoSuchKey"}:
                    parsed["Error"] = {"Code": "403", "Message": "Forbidden"}
                    parsed.setdefault("ResponseMetadata", {})["HTTPStatusCode"] = 403

            client.meta.events.unregister("after-call.s3.HeadObject", unique_id="hubspoke-fake-list-bucket")
            client.meta.events.register(
                "after-call.s3.HeadObject", forbid_missing, unique_id="hubspoke-fake-list-bucket"
            )
        answers = self._answers(service, region)
        if not answers:
            return

        def capture(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
            if model.name in answers:
                context["hubspoke-params"] = dict(params)
                self.asked.append((model.name, dict(params)))

        def answer(
            model: Any, context: dict[str, Any], **_: Any
        ) -> tuple[AWSResponse, dict[str, Any]] | None:
            if model.name not in answers:
                return None
            body = answers[model.name](context.get("hubspoke-params", {}))
            if body is None:
                return None
            # botocore raises a ClientError from the parsed body when the status is an error.
            status = body.get("ResponseMetadata", {}).get("HTTPStatusCode", 400 if "Error" in body else 200)
            return AWSResponse("https://stub", status, {}, None), body

        # The newest fake wrapping a (cached) client answers: a test may re-wrap the same world's clients.
        for event, handler in (("before-parameter-build", capture), ("before-call", answer)):
            client.meta.events.unregister(event, unique_id=f"hubspoke-fake-{event}")
            client.meta.events.register(event, handler, unique_id=f"hubspoke-fake-{event}")


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

    def stage(self, uri: str, region: str, *, mib: int = 0, **put: str) -> None:
        """Put a qumulo-core.deb (tiny, or `mib` MiB) where `uri` says, in a bucket of `region`, and the host
        configuration file beside it, as Qumulo's guide stages both; `put` adds PutObject arguments to it."""
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        s3 = self.clients("s3", region)
        if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
        body = b"!<arch>\n".ljust(mib * 2**20, b"\0")
        s3.put_object(Bucket=bucket, Key=key, Body=body, **put)  # type: ignore[arg-type]
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
        # config/dev.yaml's access.administrators: an IAM role at the root path (IAM CreateRole, Path "/").
        self.clients("iam", "us-east-1").create_role(
            RoleName="hubspoke-dev-cluster-admins", AssumeRolePolicyDocument="{}"
        )
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
    # No kubeconfig either: preflight's namespace row reads one when a cluster exists.
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    if not credentials:
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")


# The server twin (the same world reached over HTTP, as the CLI reaches AWS) runs in the thorough tier.
@pytest.fixture(params=["in-process", pytest.param("server", marks=pytest.mark.thorough)])
def backend(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """moto behind boto3 either in-process (mock_aws) or as a server reached through AWS_ENDPOINT_URL."""
    isolate_from_real_aws(monkeypatch)
    # preflight's local-tools row runs `aws --version`: AWS CLI v2's stub, first on PATH, answers it, never the
    # host's AWS CLI (whichever this machine has; a Python v1 took 0.4 s a run, a third of the preflight tests'
    # time). A test of that row puts its own tools first (fake_path).
    stub = fake_path(tmp_path_factory.mktemp("aws-cli-v2"), "aws")
    monkeypatch.setenv("PATH", stub + os.pathsep + os.environ.get("PATH", ""))
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
        stop_moto_server(server)


@pytest.fixture
def world(backend: str) -> World:
    return World(session_clients())


def preflight_config(tmp_path: Path, **overrides: Any) -> Path:
    """The smallest valid config (tests.conftest.minimal) with `overrides`, written where preflight can load it."""
    return write_config(tmp_path, minimal(**overrides))


@contextmanager
def only_checks(checks: Collection[str] | None) -> Iterator[None]:
    """preflight's list of checks (hubspoke.cli.preflight.CHECKS) cut to those named in `checks` while the block
    runs; all of them for None. Each Region still runs its account row first, which gates the checks.

    For a test that reads the rows of one check: `--region` scopes a run to a Region, this to a check. Tests of
    the whole run (every row, the exit code, the JSON) run every check. The peering quota reads the hub VPC the
    CIDR check found (Scope.own_vpc), so it runs with that check."""
    if checks is None:
        yield
        return
    import hubspoke.cli.preflight as command

    assert "peering quota" not in checks or "cidr overlap" in checks, (
        "the peering quota needs the cidr overlap"
    )
    kept = tuple(check for check in command.CHECKS if check.name in checks)
    assert {c.name for c in kept} == set(checks), (
        f"preflight has no check {set(checks) - {c.name for c in kept}}"
    )
    with mock.patch.object(command, "CHECKS", kept):
        yield


def run_checks(
    path: Path, clients: Any, only: set[str] | None = None, checks: Collection[str] | None = None
) -> list[CheckResult]:
    """Every preflight row for the config at `path`, asked through `clients`: of every Region or those in `only`,
    of every check or (only_checks) those in `checks`."""
    with only_checks(checks):
        return run_preflight(load(path).config, clients, only=only)


def rows_of(results: list[CheckResult], check: str, region: str | None = None) -> list[CheckResult]:
    """The rows of one check, optionally of one Region."""
    return [r for r in results if r.check == check and (region is None or r.region == region)]


# `aws --version` as the AWS CLI User Guides print it: v2 ("Installing or updating to the latest version of the AWS
# CLI": aws-cli/2.x.y Python/... Linux/... exe/...) and v1 ("Installing ... the AWS CLI version 1 on Linux").
V2 = "aws-cli/2.15.30 Python/3.11.8 Linux/6.5.0 exe/x86_64.ubuntu.22 prompt/off"
V1 = "aws-cli/1.32.65 Python/3.11.6 Linux/5.10.205-195.807.amzn2.x86_64 botocore/1.18.6"
# The tools docs/getting-started.md "Before you start" names for the AWS path.
LOCAL_TOOLS = ("aws", "session-manager-plugin", "kubectl", "docker")


# The AWS CLI refuses an unknown option with return code 252 (AWS CLI User Guide, "Command line return codes":
# "Command syntax was invalid, an unknown parameter was provided, or a parameter value was incorrect").
_AWS_STUB = """#!/bin/sh
if [ "$#" -eq 1 ] && [ "$1" = "--version" ]; then echo '{says}'; exit 0; fi
echo "aws: error: the following arguments are required: command" >&2
exit 252
"""


def fake_path(tmp_path: Path, *tools: str, aws_says: str = V2) -> str:
    """A PATH of one folder holding a stub for each of `tools` (default: every local tool); `aws --version` prints
    `aws_says`, and aws refuses anything else as the AWS CLI does."""
    tools = tools or LOCAL_TOOLS
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in tools:
        stub = folder / tool
        stub.write_text(_AWS_STUB.format(says=aws_says) if tool == "aws" else "#!/bin/sh\nexit 0\n")
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    return str(folder)
