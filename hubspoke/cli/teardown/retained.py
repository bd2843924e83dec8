"""What an environment leaves behind in a Region once its stacks are gone, found by its tags, and what stays.

Every resource a template retains carries the stack tags `hubspoke:environment`, `hubspoke:region` and
`hubspoke:stack` (stage.py tags every stack; CDK writes them into each resource's Tags), and the CNQ nodes'
volumes, which no stack owns (DeleteOnTermination false), carry `hubspoke:cnq-cluster` with the cluster's name
(docs/runbooks/teardown.md lists each). The dataset (the hub's CNQ buckets and volumes) and the exported models
stay unless asked for, and so does every key that encrypts something that stays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from botocore.exceptions import ClientError

from hubspoke.cli.checks import Clients, error_code
from hubspoke.cli.checks import pages as _pages
from hubspoke.config import HubSpokeConfig
from hubspoke.names import cnq_cluster_name, eks_cluster_name, hyperpod_cluster_name
from hubspoke.topology import ENVIRONMENT_TAG, STACK_TAG

# The tag the CNQ launch template puts on each node volume (hubspoke/constructs/cnq: TagSpecifications).
CNQ_CLUSTER_TAG = "hubspoke:cnq-cluster"
# SageMaker API reference, ClusterLifeCycleConfig.SourceS3Uri: the lifecycle bucket's name starts with this.
LIFECYCLE_PREFIX = "sagemaker-"

Kind = Literal["volume", "bucket", "repository", "secret", "log group", "key"]
# Deletion order within a Region: volumes first (nothing can use them, they cost most), keys last (a key deleted
# while anything it encrypted remains makes that unreadable).
ORDER: tuple[Kind, ...] = ("volume", "bucket", "repository", "secret", "log group", "key")

DATASET = "dataset"
MODELS = "models"


@dataclass(frozen=True)
class Retained:
    """One resource the environment leaves behind in a Region, and why it stays, if it does."""

    region: str
    kind: Kind
    id: str
    holds: str
    # Why it is not deleted (None: deleted after the typed confirmation).
    kept: str | None = None
    # Data class it belongs to: DATASET or MODELS (kept unless their flag asks), or None.
    data: str | None = None
    # The live stack that still owns it (retained when that stack is deleted), if any.
    owner: str | None = None
    key: str | None = None  # the KMS key it is encrypted with, if known
    stack: str | None = None  # its hubspoke:stack tag (the kind of stack that made it), if it has one


@dataclass(frozen=True)
class Choices:
    """What the user asked to delete besides what nothing needs."""

    dataset: bool = False
    models: bool = False


def _tags(items: list[dict[str, Any]] | None, key: str = "Key", value: str = "Value") -> dict[str, str]:
    return {str(t[key]): str(t[value]) for t in items or []}


def _key_id(reference: str | None) -> str | None:
    """A key ID from a key ARN or ID (arn:aws:kms:<region>:<account>:key/<id>)."""
    if not reference:
        return None
    return reference.split(":key/", 1)[1] if ":key/" in reference else reference


def _buckets(s3: Any, region: str, env: str) -> list[tuple[str, dict[str, str], str | None]]:
    """(name, tags, KMS key) of every bucket in `region` tagged with the environment.

    ListBuckets filtered by BucketRegion (S3 API reference, ListBuckets) and paginated; GetBucketTagging answers
    NoSuchTagSet for a bucket without tags; GetBucketEncryption names the default KMS key (KMSMasterKeyID).
    """
    found = []
    for bucket in _pages(s3, "list_buckets", "Buckets", BucketRegion=region):
        name = str(bucket["Name"])
        try:
            tags = _tags(s3.get_bucket_tagging(Bucket=name)["TagSet"])
        except ClientError as exc:
            if error_code(exc) in ("NoSuchTagSet", "NoSuchBucket"):
                continue
            raise
        if tags.get(ENVIRONMENT_TAG) != env:
            continue
        key = None
        try:
            rules = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
            key = next(
                (
                    str(r["ApplyServerSideEncryptionByDefault"].get("KMSMasterKeyID"))
                    for r in rules
                    if r.get("ApplyServerSideEncryptionByDefault", {}).get("KMSMasterKeyID")
                ),
                None,
            )
        except ClientError as exc:
            if error_code(exc) != "ServerSideEncryptionConfigurationNotFoundError":
                raise
        found.append((name, tags, key))
    return found


def _bucket(
    config: HubSpokeConfig, region: str, name: str, tags: dict[str, str], key: str | None, choices: Choices
) -> Retained:
    """What a bucket holds, from the stack that made it (its hubspoke:stack tag) and, in Compute, its name."""
    stack = tags.get(STACK_TAG, "")
    hub = region == config.hub.region
    key_id = _key_id(key)
    if stack == "storage" and hub:
        kept = None if choices.dataset else "the dataset: --delete-dataset deletes it"
        return Retained(
            region,
            "bucket",
            name,
            "the hub's CNQ storage: the dataset",
            kept,
            DATASET,
            key=key_id,
            stack=stack,
        )
    if stack == "storage":
        return Retained(
            region,
            "bucket",
            name,
            "a spoke's CNQ storage: its cache and its checkpoints (no flag keeps them: export models first)",
            key=key_id,
            stack=stack,
        )
    if stack == "compute" and name.startswith(
        f"{LIFECYCLE_PREFIX}{hyperpod_cluster_name(config, config.region_config(region))}-"
    ):
        return Retained(
            region,
            "bucket",
            name,
            "HyperPod lifecycle scripts (synth regenerates them)",
            key=key_id,
            stack=stack,
        )
    if stack == "compute":
        kept = None if choices.models else "exported models: --delete-models deletes it"
        return Retained(
            region,
            "bucket",
            name,
            "the model export bucket or its access logs",
            kept,
            MODELS,
            key=key_id,
            stack=stack,
        )
    return Retained(
        region,
        "bucket",
        name,
        f"a bucket of the {stack or 'untagged'} stack",
        "not one hubspoke retains: delete it by hand if nothing needs it",
        key=key_id,
        stack=stack,
    )


def _volumes(ec2: Any, config: HubSpokeConfig, region: str, choices: Choices) -> list[Retained]:
    """The CNQ node volumes of this Region's cluster (DescribeVolumes filtered by tag, paginated)."""
    cluster = cnq_cluster_name(config.environment, region)
    hub = region == config.hub.region
    found = []
    filters = [{"Name": f"tag:{CNQ_CLUSTER_TAG}", "Values": [cluster]}]
    for v in _pages(ec2, "describe_volumes", "Volumes", Filters=filters):
        kept = None
        if v.get("State") != "available":
            kept = f"{v.get('State')}: attached to a node (its Storage stack still stands)"
        elif hub and not choices.dataset:
            kept = "the dataset: --delete-dataset deletes it"
        holds = f"CNQ node volume of {cluster}" + (": the dataset" if hub else ": its cache and checkpoints")
        found.append(
            Retained(
                region,
                "volume",
                str(v["VolumeId"]),
                holds,
                kept,
                DATASET if hub else None,
                key=_key_id(v.get("KmsKeyId")),
            )
        )
    return found


def _repositories(ecr: Any, region: str, env: str) -> list[Retained]:
    found = []
    for repo in _pages(ecr, "describe_repositories", "repositories"):
        tags = _tags(ecr.list_tags_for_resource(resourceArn=repo["repositoryArn"]).get("tags"))
        if tags.get(ENVIRONMENT_TAG) == env:
            found.append(
                Retained(
                    region,
                    "repository",
                    str(repo["repositoryName"]),
                    "training images",
                    stack=tags.get(STACK_TAG),
                )
            )
    return found


def _secrets(sm: Any, config: HubSpokeConfig, region: str, choices: Choices) -> list[Retained]:
    """ListSecrets filtered by tag value, paginated; the pair is checked here (the filters match key and value
    separately: Secrets Manager API reference, Filter). The hub's Qumulo passwords stay with the dataset."""
    env = config.environment
    found = []
    for secret in _pages(sm, "list_secrets", "SecretList", Filters=[{"Key": "tag-value", "Values": [env]}]):
        tags = _tags(secret.get("Tags"))
        if tags.get(ENVIRONMENT_TAG) != env:
            continue
        stack = tags.get(STACK_TAG)
        if region == config.hub.region and stack == "storage":
            kept = None if choices.dataset else "the dataset's cluster password: --delete-dataset deletes it"
            holds = "a Qumulo password of the hub's cluster (admin or login)"
            found.append(Retained(region, "secret", str(secret["ARN"]), holds, kept, DATASET, stack=stack))
        else:
            found.append(
                Retained(
                    region, "secret", str(secret["ARN"]), "a Qumulo password (admin or login)", stack=stack
                )
            )
    return found


def _log_groups(logs: Any, region: str, env: str) -> list[Retained]:
    """DescribeLogGroups, paginated; ListTagsForResource takes the group's ARN without the trailing `:*`
    (CloudWatch Logs API reference, LogGroup.logGroupArn)."""
    found = []
    for group in _pages(logs, "describe_log_groups", "logGroups"):
        arn = str(group.get("logGroupArn") or str(group["arn"]).removesuffix(":*"))
        tags = logs.list_tags_for_resource(resourceArn=arn).get("tags", {})
        if tags.get(ENVIRONMENT_TAG) == env:
            found.append(
                Retained(
                    region,
                    "log group",
                    str(group["logGroupName"]),
                    "install, wait or flow logs",
                    stack=tags.get(STACK_TAG),
                )
            )
    return found


def _service_log_groups(logs: Any, config: HubSpokeConfig, region: str) -> list[Retained]:
    """Log groups EKS, HyperPod and Container Insights create themselves (untagged), by their documented names.

    EKS User Guide, "Send control plane logs to CloudWatch Logs": /aws/eks/<cluster-name>/cluster; SageMaker
    developer guide, HyperPod lifecycle-script logs: /aws/sagemaker/Clusters/<cluster-name>/<cluster-id>; CloudWatch
    User Guide, Container Insights "Send logs to CloudWatch Logs": /aws/containerinsights/<cluster-name>/<type>.
    DescribeLogGroups' logGroupNamePrefix finds each (paginated).
    """
    region_config = config.region_config(region)
    if not region_config.compute.enabled:
        return []
    eks = eks_cluster_name(config, region_config)
    wanted = {
        f"/aws/eks/{eks}/cluster": "EKS control-plane logs (EKS made it)",
        f"/aws/sagemaker/Clusters/{hyperpod_cluster_name(config, region_config)}/": "HyperPod node and "
        "lifecycle-script logs (SageMaker made it)",
        f"/aws/containerinsights/{eks}/": "Container Insights logs, the training job's stdout (its agent made it)",
    }
    found = []
    for prefix, holds in wanted.items():
        for group in _pages(logs, "describe_log_groups", "logGroups", logGroupNamePrefix=prefix):
            name = str(group["logGroupName"])
            if prefix.endswith("/") or name == prefix:
                found.append(Retained(region, "log group", name, holds))
    return found


def _keys(kms: Any, region: str, env: str) -> list[Retained]:
    """Customer keys tagged with the environment (ListKeys, DescribeKey, ListResourceTags; all paginated).

    A key already PendingDeletion is shown as such: ScheduleKeyDeletion would refuse it (KMSInvalidStateException).
    """
    found = []
    for listed in _pages(kms, "list_keys", "Keys"):
        meta = kms.describe_key(KeyId=listed["KeyId"])["KeyMetadata"]
        if meta.get("KeyManager") == "AWS":
            continue
        tags = _tags(
            list(_pages(kms, "list_resource_tags", "Tags", KeyId=meta["KeyId"])), "TagKey", "TagValue"
        )
        if tags.get(ENVIRONMENT_TAG) != env:
            continue
        pending = meta.get("KeyState") == "PendingDeletion"
        found.append(
            Retained(
                region,
                "key",
                str(meta["KeyId"]),
                f"a KMS key of the {tags.get(STACK_TAG, '?')} stack",
                "deletion already scheduled" if pending else None,
                stack=tags.get(STACK_TAG),
            )
        )
    return found


def find(
    clients: Clients,
    config: HubSpokeConfig,
    region: str,
    *,
    choices: Choices,
    managed: dict[str, tuple[str, bool]],
) -> list[Retained]:
    """Everything of the environment in `region` that outlives its stacks, in deletion order.

    `managed` maps the physical IDs of resources still in a live stack to (stack, retained): a resource its
    stack deletes is left out; one its stack retains is shown with that stack as its owner.
    """
    env = config.environment
    found = [
        *_volumes(clients("ec2", region), config, region, choices),
        *(_bucket(config, region, *b, choices) for b in _buckets(clients("s3", region), region, env)),
        *_repositories(clients("ecr", region), region, env),
        *_secrets(clients("secretsmanager", region), config, region, choices),
        *_log_groups(clients("logs", region), region, env),
        *_service_log_groups(clients("logs", region), config, region),
        *_keys(clients("kms", region), region, env),
    ]
    # A key stays while anything that stays is encrypted with it.
    needed = {r.key: r for r in found if r.key and r.kept is not None}
    result = []
    seen: set[tuple[str, str]] = set()
    for r in found:
        if (r.kind, r.id) in seen:
            continue  # a tagged group under a service's name prefix: listed once
        seen.add((r.kind, r.id))
        owner = managed.get(r.id)
        if owner is not None and not owner[1]:
            continue  # its stack deletes it
        if r.kind == "key" and r.kept is None and r.id in needed:
            r = replace(r, kept=f"encrypts {needed[r.id].id}, which stays", data=needed[r.id].data)
        result.append(replace(r, owner=owner and owner[0]))
    return sorted(result, key=lambda r: ORDER.index(r.kind))
