"""A deployed environment in moto for `hubspoke teardown`: its stacks from small templates, and what they leave.

Names and tags are written as docs/runbooks/teardown.md and docs/cli.md give them to an operator (stack
`hubspoke-<environment>-<kind>-<region>`, tags `hubspoke:environment`, `hubspoke:region`, `hubspoke:stack`, node
volumes tagged `hubspoke:cnq-cluster` with the cluster's name), not built from hubspoke's constants (issue 45).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

from hubspoke.cli.checks import Clients

ENV = "dev"
HUB, SPOKE = "us-east-2", "us-west-2"
# minimal()'s stacks (tests/conftest.py) as (kind, the Region its name carries), in the order `hubspoke plan`
# deploys them. The spoke's Link stack is named for the spoke and lives in the hub Region (docs/design.md §3).
DEPLOY_ORDER = [
    ("network", HUB),
    ("network", SPOKE),
    ("link", SPOKE),
    ("storage", HUB),
    ("storage", SPOKE),
    ("compute", HUB),
    ("compute", SPOKE),
    ("ops", SPOKE),
    ("dashboard", HUB),
]


def lives_in(kind: str, region: str) -> str:
    """The Region a stack is deployed to."""
    return HUB if kind == "link" else region


# The CNQ cluster names of the two Regions, as the runbook shows them (e.g. `dev-usw2`).
CLUSTERS = {HUB: "dev-use2", SPOKE: "dev-usw2"}


def service_log_groups(region: str) -> list[str]:
    """The untagged log groups EKS, HyperPod and Container Insights make for dev's cluster in `region`."""
    return [
        f"/aws/eks/hubspoke-{ENV}-{region}/cluster",
        f"/aws/sagemaker/Clusters/hubspoke-{ENV}-{region}/0a1b2c3d4e5f",
        f"/aws/containerinsights/hubspoke-{ENV}-{region}/application",
    ]


def stack_name(kind: str, region: str) -> str:
    return f"hubspoke-{ENV}-{kind}-{region}"


def tags(kind: str, region: str) -> list[dict[str, str]]:
    return [
        {"Key": "hubspoke:environment", "Value": ENV},
        {"Key": "hubspoke:region", "Value": region},
        {"Key": "hubspoke:stack", "Value": kind},
    ]


def _template(kind: str, region: str) -> dict[str, Any]:
    """A stack with one resource CloudFormation deletes with it and, for storage, one it retains."""
    resources: dict[str, Any] = {
        # Deleted with the stack (no DeletionPolicy: Delete, CloudFormation's default for it).
        "FunctionLogs": {
            "Type": "AWS::Logs::LogGroup",
            "Properties": {"LogGroupName": f"/test/{kind}-{region}/function", "Tags": tags(kind, region)},
        },
    }
    if kind == "storage":
        resources["AccessLogs"] = {
            "Type": "AWS::S3::Bucket",
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {"BucketName": f"cnq-access-logs-{region}", "Tags": tags(kind, region)},
        }
    return {"Resources": resources}


@dataclass
class Refusals:
    """Vendor refusals a test switches on, answered by botocore hooks before the call reaches moto."""

    # Stack names whose DeleteStack CloudFormation refuses, as it does with termination protection on.
    protected: set[str] = field(default_factory=set)
    # Bucket names S3 refuses to delete (AccessDenied, 403: S3 API reference, DeleteBucket).
    denied_buckets: set[str] = field(default_factory=set)
    # Stack names whose delete CloudFormation starts and then fails: DeleteStack succeeds, the stack stays, and
    # DescribeStacks reports DELETE_FAILED (a StackStatus of the botocore cloudformation model; the
    # StackDeleteComplete waiter fails on it).
    failing: set[str] = field(default_factory=set)
    hooked: set[int] = field(default_factory=set)

    def wrap(self, clients: Clients) -> Clients:
        def make(service: str, region: str) -> Any:
            client = clients(service, region)
            if id(client) not in self.hooked:
                self.hooked.add(id(client))
                client.meta.events.register("before-call", self._answer)
                client.meta.events.register("after-call.cloudformation.DescribeStacks", self._failed)
            return client

        return make

    def _answer(
        self, model: Any, params: dict[str, Any], **_: Any
    ) -> tuple[AWSResponse, dict[str, Any]] | None:
        # before-call sees the serialized request: a JSON or query body, or the REST path.
        body = params.get("body") or b""
        text = body.decode() if isinstance(body, bytes) else json.dumps(body)
        if model.name == "DeleteStack" and any(name in text for name in self.protected):
            # CloudFormation User Guide, "Protect a CloudFormation stack from being deleted": with termination
            # protection on, DeleteStack fails and the stack, status included, stays as it was.
            error = {
                "Code": "ValidationError",
                "Message": f"Stack [{text}] cannot be deleted while TerminationProtection is enabled",
            }
            return AWSResponse("https://stub", 400, {}, None), {
                "Error": error,
                "ResponseMetadata": {"HTTPStatusCode": 400},
            }
        if model.name == "DeleteStack" and any(name in text for name in self.failing):
            return AWSResponse("https://stub", 200, {}, None), {"ResponseMetadata": {"HTTPStatusCode": 200}}
        if model.name == "DeleteBucket" and any(
            params.get("auth_path") == f"/{b}/" for b in self.denied_buckets
        ):
            error = {"Code": "AccessDenied", "Message": "Access Denied"}
            return AWSResponse("https://stub", 403, {}, None), {
                "Error": error,
                "ResponseMetadata": {"HTTPStatusCode": 403},
            }
        return None

    def _failed(self, parsed: dict[str, Any], **_: Any) -> None:
        for stack in parsed.get("Stacks", []):
            if stack.get("StackName") in self.failing:
                stack["StackStatus"] = "DELETE_FAILED"
                stack["StackStatusReason"] = "The following resource(s) failed to delete: [Cluster]. "


def deploy(clients: Clients) -> None:
    """minimal()'s environment after a deploy: its nine stacks, and the retained resources runbook lists."""
    for kind, region in DEPLOY_ORDER:
        clients("cloudformation", lives_in(kind, region)).create_stack(
            StackName=stack_name(kind, region), TemplateBody=json.dumps(_template(kind, region))
        )
    for region in (HUB, SPOKE):
        _leftovers(clients, region)


def _leftovers(clients: Clients, region: str) -> None:
    s3 = clients("s3", region)
    kms = clients("kms", region)
    where = {"LocationConstraint": region}
    cnq_key = kms.create_key(
        Tags=[{"TagKey": t["Key"], "TagValue": t["Value"]} for t in tags("storage", region)]
    )
    cnq_key_arn = cnq_key["KeyMetadata"]["Arn"]
    export_key = kms.create_key(
        Tags=[{"TagKey": t["Key"], "TagValue": t["Value"]} for t in tags("compute", region)]
    )
    export_key_arn = export_key["KeyMetadata"]["Arn"]
    # CNQ persistent storage: SSE-KMS under the CNQ key, objects in it.
    for n in range(2):
        name = f"cnq-storage-{n}-{region}"
        s3.create_bucket(Bucket=name, CreateBucketConfiguration=where)  # type: ignore[arg-type]
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": tags("storage", region)})
        s3.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {
                        "ApplyServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": cnq_key_arn,
                        }
                    }
                ]
            },
        )
        s3.put_object(Bucket=name, Key="data/0", Body=b"bytes")
    # Compute: the lifecycle bucket (versioned, two versions and a delete marker) and the model export bucket.
    lifecycle = f"sagemaker-hubspoke-{ENV}-{region}-0a1b2c3d"
    export = f"hubspoke-{ENV}-compute-{region}-modelexportbucket-x1y2z3"
    for name in (lifecycle, export):
        s3.create_bucket(Bucket=name, CreateBucketConfiguration=where)  # type: ignore[arg-type]
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": tags("compute", region)})
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2"):
        s3.put_object(Bucket=lifecycle, Key="lifecycle/on_create.sh", Body=body)
    s3.delete_object(Bucket=lifecycle, Key="lifecycle/on_create.sh")
    s3.put_bucket_encryption(
        Bucket=export,
        ServerSideEncryptionConfiguration={
            "Rules": [
                {
                    "ApplyServerSideEncryptionByDefault": {
                        "SSEAlgorithm": "aws:kms",
                        "KMSMasterKeyID": export_key_arn,
                    }
                }
            ]
        },
    )
    s3.put_object(Bucket=export, Key="runs/job-1/model.safetensors", Body=b"weights")
    # A bucket of another environment in the same account: never touched.
    s3.create_bucket(Bucket=f"prod-data-{region}", CreateBucketConfiguration=where)  # type: ignore[arg-type]
    s3.put_bucket_tagging(
        Bucket=f"prod-data-{region}", Tagging={"TagSet": [{"Key": "hubspoke:environment", "Value": "prod"}]}
    )
    # Node volumes, detached once their instances were terminated, encrypted with the CNQ key.
    ec2 = clients("ec2", region)
    for _ in range(3):
        ec2.create_volume(
            AvailabilityZone=f"{region}a",
            Size=16,
            VolumeType="gp3",
            Encrypted=True,
            KmsKeyId=cnq_key_arn,
            TagSpecifications=[
                {
                    "ResourceType": "volume",
                    "Tags": [{"Key": "hubspoke:cnq-cluster", "Value": CLUSTERS[region]}],
                }
            ],
        )
    # The training-image repository, with an image.
    ecr = clients("ecr", region)
    repo = ecr.create_repository(
        repositoryName=f"hubspoke-{ENV}-compute-{region}-trainingimages", tags=tags("compute", region)
    )
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 7023,
            "digest": "sha256:" + "a" * 64,
        },
        "layers": [],
    }
    ecr.put_image(
        repositoryName=repo["repository"]["repositoryName"], imageManifest=json.dumps(manifest), imageTag="v1"
    )
    # The CNQ admin secret and a retained log group.
    clients("secretsmanager", region).create_secret(
        Name=f"cnq-admin-{region}", SecretString="x", Tags=tags("storage", region)
    )
    logs = clients("logs", region)
    logs.create_log_group(
        logGroupName=f"/test/network-{region}/flow-logs",
        tags={t["Key"]: t["Value"] for t in tags("network", region)},
    )
    # Log groups the services create themselves, untagged, under the names docs/runbooks/teardown.md gives: EKS
    # control-plane logs, HyperPod's per-cluster group, Container Insights'; and another environment's.
    for name in service_log_groups(region):
        logs.create_log_group(logGroupName=name)
    logs.create_log_group(logGroupName=f"/aws/eks/hubspoke-prod-{region}/cluster")
