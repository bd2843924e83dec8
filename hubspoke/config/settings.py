"""The environment-wide sections: `dataset` (the version jobs pin), `ops` (who is told of alarms) and `access`
(who administers the clusters)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from hubspoke.config.fields import Model, refuse, shown_as
from hubspoke.dataset_manifest import SEGMENT_PATTERN

# What the reference job reads (docs/design.md §1: 4096-token windows, 115-116 samples/s on a warm spoke): each
# sample is seq_len + 1 tokens of 2 bytes (workload/shards.py, TokenShards.__getitem__), 8,194 bytes, so
# 115 samples/s read about 0.94 MB/s, 283 MB per 5-minute period.
REFERENCE_READ_BYTES_PER_SECOND = (4096 + 1) * 2 * 115


DatasetSegment = Annotated[str, Field(pattern=SEGMENT_PATTERN)]


# S3 bucket names (Amazon S3 User Guide, "General purpose bucket naming rules": 3 to 63 characters, lowercase
# letters, digits, dots and hyphens, beginning and ending with a letter or digit).
def _bucket_name(value: str) -> str:
    if value.startswith("s3://"):
        bucket = value.removeprefix("s3://").split("/", 1)[0]
        raise ValueError(f"'{value}' is an S3 URI; list the bucket's name only: {bucket}")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", value):
        raise ValueError(
            f"'{value}' is not an S3 bucket name: 3 to 63 lowercase letters, digits, dots, hyphens"
        )
    return value


BucketName = Annotated[str, AfterValidator(_bucket_name)]
# A KMS key ARN (AWS KMS Developer Guide, "Key identifiers (KeyId)": arn:<partition>:kms:<region>:<account>:
# key/<key id>, a multi-Region key's id starting mrk-); an alias ARN is refused: an IAM grant names keys.
KmsKeyArn = Annotated[
    str,
    Field(
        pattern=r"^arn:aws(-cn|-us-gov)?:kms:[a-z0-9-]+:[0-9]{12}:key/([0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$"
    ),
]
# The reference run, LLaMA 3 on tokenized C4, reads token IDs of Meta's Llama 3 tokenizer: 128,256 of them
# (vocab_size in Meta's Llama 3 params.json; meta-llama/llama3@0053e6b llama/tokenizer.py adds 256 reserved
# special tokens after the 128K BPE ranks, Meta's "Introducing Meta Llama 3": "a tokenizer with a vocabulary
# of 128K tokens"). IDs above 65,535 need 4-byte tokens (workload/shards.py).
REFERENCE_VOCAB_SIZE = 128256
REFERENCE_TOKEN_BYTES: Literal[2, 4] = 4


class DatasetConfig(Model):
    """The dataset version training jobs pin, the token format they expect of it, and the buckets loads read."""

    # Sealed by its MANIFEST.json (docs/datasets.md). No default on purpose: a run pins a version.
    name: DatasetSegment | None = Field(
        default=None,
        description="the dataset jobs read: `<dataset_path>/<name>/<version>` on the hub "
        "([datasets.md](datasets.md)); letters, digits, `.`, `_`, `-`, at most 63",
        json_schema_extra=shown_as("none; required to render a training job"),
    )
    version: DatasetSegment | None = Field(
        default=None,
        description="the sealed version jobs read, with `name`: letters, digits, `.`, `_`, `-`, at most 63; "
        "`render job --dataset-version` overrides it for one job",
        json_schema_extra=shown_as("none; required to render a training job"),
    )
    token_bytes: Literal[2, 4] = Field(
        default=REFERENCE_TOKEN_BYTES,
        description="token width the job expects (2 or 4); `train.py` refuses a version whose manifest says "
        "otherwise. 4: LLaMA 3's token IDs exceed 65,535",
    )
    vocab_size: Annotated[int, Field(ge=1)] = Field(
        default=REFERENCE_VOCAB_SIZE,
        description="vocabulary the job's model is built for (LLaMA 3's tokenizer); `train.py` refuses a version "
        "whose manifest says otherwise",
    )
    # The hub's Shift user may read these and nothing else.
    source_buckets: list[BucketName] = Field(
        default=[],
        description="the S3 buckets `dataset load` may copy from with Qumulo Shift-From "
        "([datasets.md](datasets.md#loading-a-version-from-s3)); a source in any other bucket is refused",
    )
    source_kms_key_arns: list[KmsKeyArn] = Field(
        default=[],
        description="the KMS key ARNs (`arn:<partition>:kms:<region>:<account>:key/<id>`) of source buckets "
        'encrypted with SSE-KMS: the Shift user may `kms:Decrypt` with exactly these (S3 User Guide, "Using '
        'server-side encryption with AWS KMS keys"); empty means SSE-S3 or unencrypted buckets only. **ASSUMED**: '
        "Shift-From reads SSE-KMS objects given the grant (Qumulo's guide does not mention bucket encryption). "
        "Needs `source_buckets`",
    )

    @model_validator(mode="after")
    def _consistent(self) -> DatasetConfig:
        problems = []
        limit = 2 ** (8 * self.token_bytes)
        if self.vocab_size > limit:
            problems.append(
                f"vocab_size: {self.vocab_size} does not fit {self.token_bytes}-byte tokens (at most {limit}); set token_bytes: 4"
            )
        if len(set(self.source_buckets)) != len(self.source_buckets):
            problems.append("source_buckets: names a bucket twice; list each once")
        if self.source_kms_key_arns and not self.source_buckets:
            problems.append(
                "source_kms_key_arns: without source_buckets grants nothing a load uses; list the buckets too"
            )
        if self.version is not None and self.name is None:
            problems.append(
                f"name: missing: version {self.version} is a version of no dataset; add dataset.name, the folder under dataset_path that holds it (docs/datasets.md)"
            )
        refuse(problems)
        return self


def _email(value: str) -> str:
    if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value):
        raise ValueError(f"'{value}' is not an e-mail address; write it like you@example.com")
    return value


class OpsConfig(Model):
    """Who is told when the hub goes away, and the floors the alarms hold."""

    # config/ops_rules.py refuses alarms that reach nobody unless alarms_notify_nobody says so in the file.
    alarm_emails: list[Annotated[str, AfterValidator(_email)]] = Field(
        default=[],
        description="addresses told of every alarm (each confirms SNS's subscription email); validation refuses "
        "alarms that reach nobody",
    )
    # arn:PARTITION:sns:REGION:ACCOUNT:NAME (SNS Developer Guide, "Amazon SNS resource ARNs"); a topic receives the
    # alarms of its own Region only, and its owner's topic policy must let CloudWatch publish (docs/operations.md).
    alarm_topic_arns: list[
        Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$")]
    ] = Field(
        default=[],
        description="existing SNS topics (on-call, chat) told of the alarms of their own Region; one per Region "
        "with alarms when no address is given; a topic in another account needs a topic policy on its owner's "
        'side ([operations.md](operations.md), "Who is told")',
    )
    # The explicit opt-out: the alarms exist (dashboard, alarm history) but notify nobody.
    alarms_notify_nobody: bool = Field(
        default=False,
        description="`true` accepts, in writing, alarms that notify nobody (config/dev.yaml ships with it: replace "
        "it with an address or topic)",
    )
    # A choice, not a source: a job below this fraction of its own best 5-minute samples/s (8 of 10 minutes)
    # is starving. The reference run varied by under 2 % once warm (115-117 samples/s).
    throughput_floor_fraction: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.8,
        description="training throughput alarm: samples/s below this fraction of the run's own best 5 minutes",
    )
    gpu_utilization_floor_percent: Annotated[int, Field(ge=1, le=100)] = Field(
        default=80, description="GPU utilization alarm floor while a job runs (a secondary signal)"
    )
    cache_hit_ratio_floor: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.9, description="cache hit-ratio floor; it pages only while the throughput alarm is in ALARM"
    )
    # NFS reads (decimal GB per 5-minute period) below which a spoke's hit ratio is not computed: the portal's
    # background traffic divided by a trickle of reads is meaningless. The default is a tenth of what the
    # reference job reads per period (0.028 GB): a job slowed tenfold by misses still has a ratio, which the
    # paging alarm needs (it pages on a low ratio while the job is slow). It assumes that background stays
    # well under (1 - floor) x this per period, which no Qumulo source states (docs/operations.md, "Derived
    # cache hit ratio"); a low ratio alone notifies nobody.
    cache_hit_ratio_min_read_gb: Annotated[float, Field(gt=0)] = Field(
        default=round(REFERENCE_READ_BYTES_PER_SECOND * 300 / 10 / 1e9, 3),
        description="NFS reads per 5 minutes (GB) below which no hit ratio is computed: a tenth of what the "
        "reference job reads (about 94 kB/s)",
    )
    # So a busy account cannot throttle the canary. Off by default: Lambda keeps at least 100 executions
    # unreserved (Lambda Developer Guide, "Configuring reserved concurrency"), so an account with a low
    # concurrency limit (new accounts often have 10) refuses any reservation and the Ops stack rolls back.
    reserve_canary_concurrency: bool = Field(
        default=False,
        description="reserve one concurrent execution for each canary; Lambda keeps 100 unreserved, so accounts "
        "with a low limit (new ones often have 10) refuse it: preflight checks the account",
    )


# --- Cluster access (issue 23): who administers the private EKS clusters and how they reach the endpoint ---
# An EKS access entry names one IAM principal: a role (its ARN may include a path) or a user; STS session ARNs
# cannot be used (EKS User Guide, "Create access entries"; EKS API reference, CreateAccessEntry.principalArn).
_PRINCIPAL_ARN = re.compile(
    r"arn:aws(?:-[a-z]+)*:iam::\d{12}:(?:role|user)/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,128}"
)
_SESSION_ARN = re.compile(r"arn:(aws(?:-[a-z]+)*):sts::(\d{12}):assumed-role/([\w+=,.@-]+)/.*")


def _principal_arn(value: str) -> str:
    if _PRINCIPAL_ARN.fullmatch(value):
        return value
    session = _SESSION_ARN.fullmatch(value)
    if session:
        partition, account, role = session.groups()
        raise ValueError(
            f"'{value}' is an STS session, which EKS access entries refuse: give the role's ARN, "
            f"arn:{partition}:iam::{account}:role/<path/>{role} (`aws iam get-role --role-name {role} "
            "--query Role.Arn` prints it with its path)"
        )
    raise ValueError(
        f"'{value}' is not an IAM role or user ARN; write it like arn:aws:iam::123456789012:role/ClusterAdmins "
        "(a role may have a path: arn:aws:iam::123456789012:role/teams/ml/ClusterAdmins)"
    )


PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]
# The CDK bootstrap's CloudFormation execution role (cdk-<qualifier>-cfn-exec-role-<account>-<region>, CDK
# bootstrap template) creates the clusters, and EKS gives the creator its own access entry
# (CreateCluster accessConfig.bootstrapClusterCreatorAdminPermissions, true unless set: EKS API reference); a
# second entry for the same principal is refused ("Create access entries"), which would roll the stack back.
_CDK_EXEC_ROLE = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:role/cdk-[a-z0-9]+-cfn-exec-role-\d{12}-[a-z0-9-]+")
# The access host's instance type and the CPU architecture of the Amazon Linux 2023 image it runs: the smallest
# burstable types of the Graviton and x86 families (EC2 User Guide, "Burstable performance instances").
ACCESS_HOST_ARCHITECTURES: dict[str, Literal["arm64", "x86_64"]] = {
    "t4g.nano": "arm64",
    "t4g.micro": "arm64",
    "t3.nano": "x86_64",
    "t3.micro": "x86_64",
    # For accounts that enforce Control Tower's CT.EC2.PR.19 (instance types encrypting traffic in transit).
    "c7g.medium": "arm64",
}


class AccessConfig(Model):
    """Who administers every compute cluster of the environment, and the access host they reach its endpoint by."""

    administrators: list[PrincipalArn] = Field(
        default=[],
        description="IAM role (preferred) or user ARNs given an EKS access entry with `AmazonEKSClusterAdminPolicy` "
        "on every compute cluster; a role ARN may carry a path; STS session ARNs are refused with the role ARN to "
        "write",
    )
    # For Session Manager port forwarding. On by default with administrators: they need it to reach a private
    # endpoint.
    access_host: bool | None = Field(
        default=None,
        description="an SSM-managed host per compute Region (private subnet, no inbound rule) that kubectl is "
        "tunnelled through (`hubspoke connect --config <config-file> --region <region>` prints the steps) to the "
        "private EKS endpoint",
        json_schema_extra=shown_as("on when administrators are listed"),
    )
    access_host_instance_type: Literal["t4g.nano", "t4g.micro", "t3.nano", "t3.micro", "c7g.medium"] = Field(
        default="t4g.nano",
        description="`t4g.nano`, `t4g.micro`, `t3.nano`, `t3.micro`, or `c7g.medium` for accounts enforcing "
        "Control Tower CT.EC2.PR.19",
    )

    @model_validator(mode="after")
    def _administrators_unique(self) -> AccessConfig:
        twice = sorted({a for a in self.administrators if self.administrators.count(a) > 1})
        if twice:
            # EKS: "An IAM principal can't be included in more than one access entry" (Create access entries).
            raise ValueError(f"administrators lists {', '.join(twice)} more than once: keep one of each")
        creators = [a for a in self.administrators if _CDK_EXEC_ROLE.fullmatch(a)]
        if creators:
            raise ValueError(
                f"administrators lists {', '.join(creators)}, the CDK deployment role that creates the clusters: "
                "EKS already gives the cluster creator an access entry and refuses a second one; remove it and "
                "list the roles people use"
            )
        return self

    @property
    def host_enabled(self) -> bool:
        return bool(self.administrators) if self.access_host is None else self.access_host
