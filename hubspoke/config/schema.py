"""The shape of config/<env>.yaml: every key, its type, its default and what it does.

Each field's `description` is its entry in docs/configuration.md, which `make docs` generates from this module
(hubspoke/config/reference.py); `# comments` beside a field say why, with their sources, for maintainers.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, model_validator
from pydantic.json_schema import JsonDict

from hubspoke.config import aws_models
from hubspoke.dataset_manifest import SEGMENT_PATTERN
from hubspoke.eks_addons import (
    DEFAULT_KUBERNETES_VERSION,
    HYPERPOD_KUBERNETES_VERSIONS,
    KUBECTL_LAYER_VERSION,
    KUBECTL_SKEW,
)
from hubspoke.regions import REGIONS, partition_regions

# AWS allows VPC CIDR blocks from /16 to /28; our subnet layout needs /20 or larger (see layout.py).
VPC_MAX_PREFIX = 16
VPC_MIN_PREFIX = 20
SECONDARY_MIN_PREFIX = 28
# A Region without az_ids gets private subnets in this many of its AZs (the first of regions.py's list).
DEFAULT_AZ_COUNT = 2


def _network(value: str) -> ipaddress.IPv4Network:
    try:
        net = ipaddress.ip_network(value, strict=False)
    except ValueError:
        raise ValueError(f"'{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16") from None
    if not isinstance(net, ipaddress.IPv4Network) or "/" not in value:
        raise ValueError(f"'{value}' is not an IPv4 CIDR; write it like 10.20.0.0/16")
    if str(net) != value:
        raise ValueError(f"'{value}' has host bits set; did you mean {net}?")
    return net


def _cidr(value: str) -> str:
    _network(value)
    return value


def _vpc_cidr(value: str) -> str:
    net = _network(value)
    if net.prefixlen < VPC_MAX_PREFIX:
        raise ValueError(
            f"/{net.prefixlen} is larger than AWS allows for a VPC; use a prefix from /16 to /20"
        )
    if net.prefixlen > VPC_MIN_PREFIX:
        raise ValueError(
            f"/{net.prefixlen} is too small for the subnet layout (a quarter for the accelerator subnet, "
            f"a sixteenth per private subnet, a sixty-fourth per public subnet); the minimum is "
            f"/{VPC_MIN_PREFIX}: use /16 to /{VPC_MIN_PREFIX}, e.g. {net.supernet(new_prefix=16)}"
        )
    return value


def _secondary_cidr(value: str) -> str:
    net = _network(value)
    if not VPC_MAX_PREFIX <= net.prefixlen <= SECONDARY_MIN_PREFIX:
        raise ValueError(f"/{net.prefixlen} is outside what AWS allows for a VPC CIDR block (/16 to /28)")
    return value


def _not_the_world(value: str) -> str:
    if value.endswith("/0"):
        raise ValueError(
            f"{value} opens this endpoint to the whole internet; list your admin network's CIDR instead"
        )
    return value


def _region(value: str) -> str:
    known = partition_regions() | set(REGIONS)
    if value not in known:
        import difflib

        close = difflib.get_close_matches(value, sorted(known), n=1)
        hint = f"did you mean {close[0]}?" if close else "use a commercial Region code such as us-west-2"
        raise ValueError(f"unknown Region code '{value}'; {hint}")
    return value


def _once_each(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError(f"list each check once: {value}")
    return value


def _hyperpod_type(value: str) -> str:
    return aws_models.check(value, "sagemaker", "ClusterInstanceType", "a SageMaker HyperPod instance type")


def _ec2_type(value: str) -> str:
    return aws_models.check(value, "ec2", "InstanceType", "an EC2 instance type")


Cidr = Annotated[str, AfterValidator(_cidr)]
VpcCidr = Annotated[str, AfterValidator(_vpc_cidr)]
SecondaryCidr = Annotated[str, AfterValidator(_secondary_cidr)]
RegionCode = Annotated[str, AfterValidator(_region)]
AccountId = Annotated[str, Field(pattern=r"^\d{12}$")]
AzId = Annotated[str, Field(pattern=r"^[a-z]+\d-az\d+$")]
Quantity = Annotated[str, Field(pattern=r"^[1-9]\d*(Gi|Ti)$")]


def _not_latest(value: str) -> str:
    # `latest` is the tag every untagged push moves: two pods of one job could pull different images.
    if value.endswith(":latest"):
        raise ValueError(
            "`:latest` names whatever was pushed last; use the digest `hubspoke image build` printed "
            "(repository@sha256:...) or another immutable tag"
        )
    return value


# registry/repository:tag or @sha256:digest, as docker push printed it; never `:latest`.
ImageRef = Annotated[
    str,
    Field(pattern=r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$"),
    AfterValidator(_not_latest),
]


class Refusals(ValueError):
    """What a section's validator refuses, each "key: message" (the loader adds the key to the section's path)."""

    def __init__(self, problems: list[str]):
        self.problems = [(key, message) for key, _, message in (p.partition(": ") for p in problems)]
        super().__init__("; ".join(problems))


def refuse(problems: list[str]) -> None:
    """Raise every problem a section's validator found at once; nothing when there are none."""
    if problems:
        raise Refusals(problems)


def effective_account(region_account: Any, environment_account: Any) -> Any:
    """A Region's account: its own when set, else the environment's."""
    return region_account or environment_account


def shown_as(text: str) -> JsonDict:
    """A default the reference states in words: computed from other keys, or no literal value (`json_schema_extra`)."""
    return {"default_text": text}


class Model(BaseModel):
    """Base for every config section: unknown keys are errors, values are immutable, types are not coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --- CNQ install (issue 13): which Qumulo Core the nodes install, from where, on which pinned image ---
# Qumulo's CNQ-on-AWS guide stages `qumulo-core.deb` under `<bucket>/<prefix>/qumulo-core-install/<version>/`
# (Qumulo/docs, _includes/content-reuse/cnq-guide-aws/deployment-agnostic-cluster-persistent-storage.md).
QUMULO_CORE_INSTALL_FOLDER = "qumulo-core-install"
QUMULO_CORE_PACKAGE = "qumulo-core.deb"
# Staged beside the package by the same guide step; the nodes do not read it (docs/runbooks/qumulo-core.md).
QUMULO_HOST_CONFIGURATION = "host_configuration.tar.gz"


def _install_uri(value: str) -> str:
    match = re.fullmatch(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/((?:[^/\s]+/)*)", value)
    if match is None or ".." in match.group(1):
        raise ValueError(
            f"'{value}' is not an S3 folder URI; write it like s3://my-bucket/my-prefix/"
            f"{QUMULO_CORE_INSTALL_FOLDER}/ (lowercase bucket name, ending with '/')"
        )
    if not match.group(2).endswith(f"{QUMULO_CORE_INSTALL_FOLDER}/"):
        raise ValueError(
            f"'{value}' does not end with '{QUMULO_CORE_INSTALL_FOLDER}/'; Qumulo's layout is "
            f"s3://<bucket>/<prefix>/{QUMULO_CORE_INSTALL_FOLDER}/<version>/{QUMULO_CORE_PACKAGE}: "
            f"give the URI of the {QUMULO_CORE_INSTALL_FOLDER}/ folder"
        )
    return value


# The nodes install Qumulo Core with host-managed networking (runtime/network.py), the mode of Qumulo's AWS
# Terraform (qumulo-terraform-aws @ 8a6e4d57, networking_mode "host_managed"), whose README requires 7.9.2.1.
QUMULO_CORE_MIN_VERSION = (7, 9, 2, 1)


def _core_release(value: str) -> str:
    if tuple(int(p) for p in value.split(".")) < QUMULO_CORE_MIN_VERSION:
        minimum = ".".join(map(str, QUMULO_CORE_MIN_VERSION))
        raise ValueError(
            f"{value} is older than {minimum}, the first release Qumulo's AWS deployment supports with the "
            f"host-managed networking hubspoke installs: stage {minimum} or newer (docs/runbooks/qumulo-core.md)"
        )
    return value


class QumuloCoreConfig(Model):
    """The Qumulo Core release every node of the Region installs, staged in S3 the way Qumulo's guide says."""

    # A release as Nexus names it and as GET /v1/version reports it ("Qumulo Core 7.10.2.1").
    version: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+(\.\d+)?$"), AfterValidator(_core_release)] = Field(
        description="the Qumulo Core release every node installs; 7.9.2.1 or newer, the same in every Region"
    )
    # The package is <install_uri><version>/qumulo-core.deb.
    install_uri: Annotated[str, AfterValidator(_install_uri)] = Field(
        description="the `qumulo-core-install/` folder in S3 where that release is staged "
        "([runbooks/qumulo-core.md](runbooks/qumulo-core.md))"
    )

    @property
    def bucket(self) -> str:
        return self.install_uri.removeprefix("s3://").split("/", 1)[0]

    @property
    def package_key(self) -> str:
        prefix = self.install_uri.removeprefix("s3://").split("/", 1)[1]
        return f"{prefix}{self.version}/{QUMULO_CORE_PACKAGE}"

    @property
    def package_uri(self) -> str:
        return f"s3://{self.bucket}/{self.package_key}"

    @property
    def host_configuration_key(self) -> str:
        return f"{self.package_key.rsplit('/', 1)[0]}/{QUMULO_HOST_CONFIGURATION}"


class VolumeSetConfig(Model):
    """`count` identical EBS volumes on every CNQ node, besides its boot volume."""

    count: Annotated[int, Field(ge=0, le=96)] = Field(description="volumes per node, 0 to 96")
    size_gib: Annotated[int, Field(ge=1, le=16384)] = Field(
        description="size of each volume in GiB, 1 to 16,384"
    )
    # Qumulo's AWS deployments offer gp2, gp3 or io2 for the cache and gp2 or gp3 for DKV (aws-terraform-cnq 6.3,
    # q_write_cache_type, q_boot_dkv_type).
    type: Literal["gp3", "gp2", "io2"] = Field(
        default="gp3", description="EBS volume type: `gp3`, `gp2` or `io2`"
    )
    # EBS: gp3 takes 3000 to 16000 IOPS and 125 to 1000 MiB/s; io2 needs its IOPS; gp2 takes neither
    # (the same ranges in Qumulo's q_write_cache_iops and q_write_cache_tput).
    iops: Annotated[int, Field(ge=100, le=256000)] | None = Field(
        default=None,
        description="provisioned IOPS: 3,000 to 16,000 on `gp3`, required on `io2`, refused on `gp2`",
        json_schema_extra=shown_as("EBS's default"),
    )
    throughput_mibps: Annotated[int, Field(ge=125, le=1000)] | None = Field(
        default=None,
        description="throughput in MiB/s, 125 to 1,000, on `gp3` only",
        json_schema_extra=shown_as("EBS's default"),
    )

    @model_validator(mode="after")
    def _performance_fits_type(self) -> VolumeSetConfig:
        if self.type == "gp2" and (self.iops is not None or self.throughput_mibps is not None):
            raise ValueError("gp2 takes neither iops nor throughput_mibps: remove them or use gp3")
        if self.type == "io2" and (self.iops is None or self.throughput_mibps is not None):
            raise ValueError("io2 needs iops and takes no throughput_mibps")
        if self.type == "gp3" and self.iops is not None and not 3000 <= self.iops <= 16000:
            raise ValueError(f"gp3 takes 3000 to 16000 iops, not {self.iops}")
        return self


# Qumulo's DKV volumes (aws-terraform-cnq 6.3, modules/qcluster: dkvSlots 4 x dkvSize 4 GiB, 3000 IOPS, 125 MB/s).
QUMULO_DKV = VolumeSetConfig(count=4, size_gib=4, iops=3000, throughput_mibps=125)
NO_VOLUMES = VolumeSetConfig(count=0, size_gib=1)


class CacheVolumesConfig(Model):
    """The EBS volumes of every CNQ node besides its boot volume: write cache, DKV and (without instance
    store) read cache, as Qumulo's AWS deployments attach them (hubspoke/config/cnq_volumes.py)."""

    write_cache: VolumeSetConfig = Field(description="the write-cache volumes; keys below")
    dkv: VolumeSetConfig = Field(
        default=QUMULO_DKV, description="Qumulo's DKV volumes; same keys as `write_cache`"
    )
    read_cache: VolumeSetConfig = Field(
        default=NO_VOLUMES,
        description="read-cache volumes, for types without instance store; same keys as `write_cache`",
        json_schema_extra=shown_as("none (`count: 0`)"),
    )


# Qumulo's GCP bucket rule (inferred for AWS, see bucket_count): the soft capacity limit / 500 TB, at least 16.
BUCKET_TB = 500
MIN_BUCKETS = 16
DEFAULT_FLOATING_IPS_PER_NODE = 3
MAX_FLOATING_IPS = 100


def qumulo_bucket_rule(soft_capacity_limit_tb: int) -> int:
    """max(16, ceil(TB / 500)): the buckets Qumulo's persistent-storage module creates for a limit."""
    return max(MIN_BUCKETS, -(-soft_capacity_limit_tb // BUCKET_TB))


def _cnq_node_count(count: int) -> int:
    if not (count == 1 or 3 <= count <= 24):
        raise ValueError(
            f"{count} nodes: Cloud Native Qumulo runs 1 node or 3 to 24; use 1 or a number from 3 to 24"
        )
    return count


class StorageConfig(Model):
    """The Region's Cloud Native Qumulo cluster (hub or spoke)."""

    enabled: bool = Field(default=True, description="deploy a Cloud Native Qumulo cluster in this Region")
    # The reference hub ran 4 nodes.
    node_count: Annotated[int, AfterValidator(_cnq_node_count)] = Field(
        default=4, description="1, or 3 to 24 (Qumulo's limits)"
    )
    # i4i is in Qumulo's supported families and matches the reference hub's r5.8xlarge in vCPU and memory.
    instance_type: Annotated[str, AfterValidator(_ec2_type)] = Field(
        default="i4i.8xlarge",
        description="the EC2 instance type of every node; outside Qumulo's supported families only a warning; "
        "`*.xlarge` sizes warn too (Qumulo supports them for development)",
    )
    # Required with storage (storage_rules.py): a deploy-time lookup would re-resolve on every update and replace every
    # node at once.
    ami_id: Annotated[str, Field(pattern=r"^ami-[0-9a-f]{8,17}$")] | None = Field(
        default=None,
        description="a stock Ubuntu 24.04 LTS image pinned for the Region; `hubspoke ami --region <region>` prints "
        "the current one, `hubspoke preflight --config <config-file>` warns when it grows old (never resolved at "
        "deploy time: a new image would replace every node)",
        json_schema_extra=shown_as("required with storage"),
    )
    # Required with storage (storage_rules.py): there is no default release or staging bucket.
    qumulo_core: QumuloCoreConfig | None = Field(
        default=None,
        description="the Qumulo Core release the nodes install, staged in S3 the way Qumulo's guide says; keys below",
        json_schema_extra=shown_as("required with storage"),
    )
    # How long the stack waits for boot, install and first quorum. Qumulo's own provider waits 30 minutes
    # (qumulo-terraform-aws, provider_timeout_minutes); CloudFormation gives a custom resource at most
    # 60 (ServiceTimeout 1..3600 s) and the provider needs a few to report. ASSUMED margin, hence a setting.
    formation_timeout_minutes: Annotated[int, Field(ge=30, le=55)] = Field(
        default=50,
        description="how long a deploy waits for boot, install and first quorum (30 to 55: CloudFormation gives "
        "a custom resource at most 60)",
    )
    # Qumulo's range: 50 to 50,000 TB (Qumulo/qumulo-terraform-aws @ 8a6e4d57, variables.tf soft_capacity_limit_tb
    # "Soft capacity limit in TB (50 to 50000)"; Qumulo/qumulo-terraform-gcp @ a30b449c, persistent-storage
    # variables.tf soft_capacity_limit validation). Raising it later adds buckets first (bucket_count below).
    soft_capacity_limit_tb: Annotated[int, Field(ge=50, le=50_000)] = Field(
        default=100,
        description="the cluster's soft capacity limit, 50 to 50,000 (Qumulo's range); only ever raised",
    )
    # Qumulo's object-backed product types for AWS clusters (qumulo-api 7.10.2.1, qumulo/commands/cluster.py,
    # --product-type help; qumulo/rest/cluster.py ObjectBackedProductType); fixed at formation ("immutable
    # after creation", qumulo-terraform-aws @ 8a6e4d57, variables.tf cluster_product_type), so the provisioner
    # refuses a change.
    product_type: Literal[
        "ACTIVE_WITH_STANDARD_STORAGE",
        "ACTIVE_WITH_INTELLIGENT_STORAGE",
        "ARCHIVE_WITH_IA_STORAGE",
        "ARCHIVE_WITH_GIR_STORAGE",
    ] = Field(
        default="ACTIVE_WITH_STANDARD_STORAGE",
        description="Qumulo's product type for an AWS cluster (`ACTIVE_WITH_STANDARD_STORAGE`, "
        "`ACTIVE_WITH_INTELLIGENT_STORAGE`, `ARCHIVE_WITH_IA_STORAGE`, `ARCHIVE_WITH_GIR_STORAGE`); fixed when the "
        "cluster forms, a change is refused",
    )
    dataset_path: Annotated[str, Field(pattern=r"^/[^\s]*$")] = Field(
        default="/dataset", description="the dataset directory (on a spoke: where the portal maps the hub's)"
    )
    # Outside dataset_path (storage_rules.py) so it is never part of the portal and FSDP checkpoint bursts never cross
    # the peering.
    checkpoint_path: Annotated[str, Field(pattern=r"^/[^\s]*$")] = Field(
        default="/checkpoints", description="Region-local checkpoint export, outside the portal"
    )
    # The REST API listens on 8000.
    admin_cidr: Annotated[Cidr, AfterValidator(_not_the_world)] | None = Field(
        default=None, description="SSH and REST from outside the VPC only from here"
    )
    # The cluster's floating IPs, a total Qumulo moves between nodes; clients, the portal and the REST address
    # use them. Qumulo's AWS range is "0, or between 3 and 100" (qumulo-terraform-aws @ 8a6e4d57, variables.tf
    # floating_ip_count); hubspoke needs at least one per node (its main.tf raises a count below node_count
    # to node_count) and never 0 (the portal and REST address are floating IPs). They are spread over the
    # nodes' interfaces as evenly as possible. Default: 3 per node, a choice (Qumulo's own default is 3 in total).
    floating_ip_count: Annotated[int, Field(ge=3, le=100)] | None = Field(
        default=None,
        description="the cluster's floating IPs in total, for NFS clients, the portal and the REST address: at "
        "least one per node, at most 100 (Qumulo's limit), spread evenly over the nodes",
        json_schema_extra=shown_as(f"{DEFAULT_FLOATING_IPS_PER_NODE} per node"),
    )
    # S3 buckets the persistent storage is spread over. Default: Qumulo's rule, max(16, ceil(TB / 500))
    # (qumulo-terraform-gcp @ a30b449c, persistent-storage/module/main.tf:47-49, number_buckets_calc and
    # _min), which grows with soft_capacity_limit_tb. That rule is stored only for GCP; that Qumulo's AWS
    # persistent storage uses it too is inferred (ASSUMED), hence bucket_count. Qumulo allows another count only in a development environment
    # (bucket_count_override "Requires dev_environment=true"): validation warns below the rule. Buckets are
    # only ever added (runtime/capacity.py).
    bucket_count: Annotated[int, Field(ge=1, le=100)] | None = Field(
        default=None,
        description="S3 buckets the persistent storage is spread over (Qumulo's rule); fewer only warns (Qumulo's "
        "development override); only ever raised ([runbooks/qumulo-core.md](runbooks/qumulo-core.md))",
        json_schema_extra=shown_as(f"max({MIN_BUCKETS}, ceil(soft_capacity_limit_tb / {BUCKET_TB}))"),
    )
    # The nodes' first-boot script. "current" keeps the floating IPs out of the OS's network config
    # (node/network.sh) and sets the read-cache override on layouts with EBS read cache. "legacy" renders,
    # byte for byte, the script of releases before it, for a cluster whose nodes were launched with that one:
    # a new script is new user data, which the node-shape guard refuses on running nodes (CloudFormation
    # would stop them all at once). Such a cluster fixes its running nodes in place, one at a time
    # (docs/runbooks/qumulo-core.md, "Floating IPs and cloud-init").
    first_boot: Literal["current", "legacy"] = Field(
        default="current",
        description="the nodes' first-boot script: `current` keeps the floating IPs out of the OS's network "
        "config; `legacy` renders the script of earlier releases for a cluster whose nodes were launched with it "
        '([runbooks/qumulo-core.md](runbooks/qumulo-core.md), "Floating IPs and cloud-init")',
    )
    # How many network hops an IMDSv2 token travels from the nodes. Issue 22's review of Qumulo's earlier
    # CNQ-on-AWS launch settings reports 3 (that source is not stored here: ASSUMED, hence a setting);
    # Qumulo Core runs in a container (systemd-container) and moves floating IPs through the EC2 API, which a
    # limit of 1 could cut off if the container is a hop away. A change applies without interruption
    # (CloudFormation, AWS::EC2::Instance MetadataOptions HttpPutResponseHopLimit: "No interruption").
    imds_hop_limit: Annotated[int, Field(ge=1, le=64)] = Field(
        default=3,
        description="IMDSv2 token hop limit on the nodes (1 to 64); 3 as reported of Qumulo's earlier CNQ-on-AWS "
        "launch settings (ASSUMED, not in a stored source): Qumulo Core runs in a container and moves floating "
        "IPs through the EC2 API. Changing it does not interrupt the nodes",
    )
    # The most soft capacity (TB) one node of instance_type supports. Qumulo's GCP module refuses a limit
    # above it times the nodes ("The number of and type of instances chosen will not support the
    # soft_capacity_limit requested", qumulo-terraform-gcp @ a30b449c, qcluster main.tf
    # check_capacity_constraint, gce_map nodeCap); Qumulo's AWS figures are in its closed provider, not in a
    # stored source, so none is assumed: state the figure Qumulo gives for the type and validation checks it.
    capacity_per_node_tb: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="the most soft capacity one node of `instance_type` supports, as Qumulo gives it for the type; "
        "when stated, validation refuses a `soft_capacity_limit_tb` above it times `node_count` (as Qumulo's GCP "
        "module checks its per-type figure). No AWS figure is assumed",
    )
    # Default: Qumulo's own layout for instance_type (hubspoke.config.cnq_volumes); required for a type
    # Qumulo publishes none for (storage_rules.py).
    cache_volumes: CacheVolumesConfig | None = Field(
        default=None,
        description="the EBS volumes of every node besides its 256 GiB boot volume; required for a type Qumulo's "
        'AWS layout does not list ([runbooks/qumulo-core.md](runbooks/qumulo-core.md), "Node volumes"); keys below',
        json_schema_extra=shown_as("Qumulo's layout for `instance_type`"),
    )

    @model_validator(mode="after")
    def _paths_apart(self) -> StorageConfig:
        problems = []
        d, c = self.dataset_path.rstrip("/") + "/", self.checkpoint_path.rstrip("/") + "/"
        if c.startswith(d) or d.startswith(c):
            problems.append(
                f"checkpoint_path: '{self.checkpoint_path}' overlaps dataset_path '{self.dataset_path}'; "
                "checkpoints there would go through the portal (read-only, or written across Regions): use a path "
                "outside it, e.g. /checkpoints"
            )
        refuse(problems)
        return self

    @property
    def buckets(self) -> int:
        """The persistent-storage buckets: bucket_count, else Qumulo's rule for the soft capacity limit."""
        return (
            self.bucket_count
            if self.bucket_count is not None
            else qumulo_bucket_rule(self.soft_capacity_limit_tb)
        )

    @property
    def floating_ips(self) -> int:
        """The cluster's floating IPs in total: floating_ip_count, else 3 per node (capped at Qumulo's 100)."""
        if self.floating_ip_count is not None:
            return self.floating_ip_count
        return min(DEFAULT_FLOATING_IPS_PER_NODE * self.node_count, MAX_FLOATING_IPS)

    def floating_ips_on_node(self, index: int) -> int:
        """How many of the floating IPs node `index` (0-based) carries: an even spread, the first nodes one more."""
        share, extra = divmod(self.floating_ips, self.node_count)
        return share + (1 if index < extra else 0)


class PortalConfig(Model):
    """How a spoke's Cloud Data Fabric portal caches the hub."""

    mode: Literal["read_only", "read_write"] = Field(
        default="read_only", description="`read_only` or `read_write`"
    )
    eviction_free_threshold: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.1, description="fraction of spoke capacity kept free by evicting cached data"
    )


class InstanceGroupConfig(Model):
    """One HyperPod instance group."""

    name: Annotated[str, Field(pattern=r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")] = Field(
        default="accelerated-worker-group-1", description="the instance group's name in the HyperPod cluster"
    )
    # The values of ClusterInstanceType in the installed botocore's sagemaker model (aws_models.py).
    instance_type: Annotated[str, AfterValidator(_hyperpod_type)] = Field(
        default="ml.p5.48xlarge",
        description="the SageMaker HyperPod instance type of every node in the group",
    )
    count: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=2, description="nodes in the group, 1 to 1,000"
    )
    ebs_volume_gb: Annotated[int, Field(ge=1, le=16384)] = Field(
        default=500, description="the extra EBS volume of every node, in GB"
    )
    # On-start deep health checks (CreateCluster OnStartDeepHealthChecks; DeepHealthCheckType in botocore's
    # sagemaker service model also lists MultiNodeTrainingValidation, which hubspoke has no source for yet).
    # InstanceStress is the instance-level test of about 2 hours a new node runs before it is Running
    # (SageMaker developer guide, "Recommended resiliency configuration"); InstanceConnectivity is NCCL across
    # nodes, refused below 2 nodes (_connectivity_has_peers). Empty: none, nodes run at once; the
    # stack's node waiter then has no Checking waits (hubspoke/deploy_time.py node_wait_phases).
    on_start_deep_health_checks: Annotated[
        list[Literal["InstanceStress", "InstanceConnectivity"]], AfterValidator(_once_each)
    ] = Field(
        default=["InstanceStress", "InstanceConnectivity"],
        description="the deep health checks a new node runs before it is Running; `[]` for none, about 2 hours "
        "less per new node; `InstanceConnectivity` needs `count` 2 or more: [runbooks/compute.md](runbooks/compute.md)",
    )

    @model_validator(mode="after")
    def _connectivity_has_peers(self) -> InstanceGroupConfig:
        # SageMaker developer guide, "Deep health checks" (Slurm): InstanceConnectivity "requires at least 2 nodes";
        # the EKS page states no minimum: ASSUMED the same, the same NCCL test.
        if "InstanceConnectivity" in self.on_start_deep_health_checks and self.count < 2:
            raise Refusals(
                [
                    "on_start_deep_health_checks: InstanceConnectivity runs NCCL tests across a group's nodes and "
                    "requires at least 2 nodes (SageMaker developer guide, 'Deep health checks'), but this group has "
                    f"count: {self.count}: remove InstanceConnectivity from the list (keep InstanceStress, or [] for "
                    "no checks), or set count: 2 or more"
                ]
            )
        return self


def _within_kubectl_skew(version: str) -> str:
    # The kubectl layer that applies the manifests works within one minor of the control plane (eks_addons.py).
    if version not in KUBECTL_SKEW:
        raise ValueError(
            f"{version}: hubspoke's kubectl {KUBECTL_LAYER_VERSION} Lambda layer works with Kubernetes "
            f"{', '.join(KUBECTL_SKEW)} only (one minor either side); set one of those (a deployed cluster moves one "
            "minor per deploy: docs/runbooks/compute.md, 'Upgrading Kubernetes')"
        )
    return version


# The versions HyperPod lists, oldest first (for the reference's wording).
_HYPERPOD_VERSIONS = sorted(HYPERPOD_KUBERNETES_VERSIONS, key=lambda v: tuple(int(p) for p in v.split(".")))


class ComputeConfig(Model):
    """The Region's SageMaker HyperPod cluster on EKS and its Kubernetes storage."""

    enabled: bool = Field(
        default=True, description="deploy EKS + HyperPod here (refused where HyperPod is not offered)"
    )
    kubernetes_version: Annotated[str, Field(pattern=r"^1\.\d{2}$"), AfterValidator(_within_kubectl_skew)] = (
        Field(
            default=DEFAULT_KUBERNETES_VERSION,
            description=f'EKS version, quoted (`"{DEFAULT_KUBERNETES_VERSION}"`): one hubspoke\'s kubectl layer reaches '
            f"({', '.join(f'`{v}`' for v in KUBECTL_SKEW)}; HyperPod's own list is wider, "
            f"{_HYPERPOD_VERSIONS[0]} to {_HYPERPOD_VERSIONS[-1]}); "
            "a deployed cluster moves one minor per deploy, so an "
            "environment states its version, hub and spokes each "
            "([runbooks/compute.md](runbooks/compute.md#upgrading-kubernetes))",
        )
    )
    # Checked in network_rules.py: pods would lose the route to an overlapping VPC.
    service_cidr: Cidr = Field(
        default="172.20.0.0/16", description="Kubernetes service CIDR; must not overlap any VPC"
    )
    public_access_cidrs: list[Annotated[Cidr, AfterValidator(_not_the_world)]] = Field(
        default=[], description="EKS API endpoint is private unless CIDRs are listed"
    )
    instance_groups: Annotated[list[InstanceGroupConfig], Field(min_length=1)] = Field(
        default=[InstanceGroupConfig()],
        description="the HyperPod cluster's instance groups; keys below",
        json_schema_extra=shown_as("one group"),
    )
    training_plan_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:sagemaker:")] | None = Field(
        default=None, description="a SageMaker training plan to run the instance group on"
    )
    dataset_volume_size: Quantity = Field(
        default="50Ti", description="size of the ReadWriteMany dataset volume"
    )
    checkpoint_volume_size: Quantity = Field(
        default="2Ti", description="size of the Region-local checkpoint volume"
    )
    # Built from workload/Dockerfile. The default is the digest `hubspoke image build` recorded for this
    # Region's own ECR repository: images pulled across Regions pay transfer on every node start.
    training_image: ImageRef | None = Field(
        default=None,
        description="image of the reference training job",
        json_schema_extra=shown_as("the Region's ECR"),
    )


class QuotasConfig(Model):
    """AWS quotas of the Region's account that the topology relies on, when they were raised above the default."""

    # Amazon VPC "Inbound or outbound rules per security group" (L-0EA8095F): 60 by default, adjustable; this quota
    # times "Security groups per network interface" may not exceed 1,000 (Amazon VPC User Guide, "Amazon VPC
    # quotas", Security groups). CNQ node interfaces carry two groups (their own and the cross-Region one), so
    # at most 500. Validation counts the cross-Region rules the topology needs against it; preflight reads the
    # applied value.
    security_group_rules: Annotated[int, Field(ge=60, le=500)] = Field(
        default=60,
        description='the account\'s "Inbound or outbound rules per security group" (L-0EA8095F) in this Region, '
        "when raised: validation refuses a topology whose cross-Region rules exceed it, preflight checks the "
        "applied value (at most 500)",
    )
    # Amazon VPC "IPv4 CIDR blocks per VPC" (L-83CA0A9D): 5 by default, adjustable up to 50 (Amazon VPC User
    # Guide, "Amazon VPC quotas", VPC and subnets). The primary block counts. Validation refuses more blocks on a
    # VPC than this states.
    vpc_cidr_blocks: Annotated[int, Field(ge=5, le=50)] = Field(
        default=5,
        description='the account\'s "IPv4 CIDR blocks per VPC" (L-83CA0A9D) in this Region, when raised: '
        "validation refuses more blocks (primary and `secondary_cidrs`) on the VPC than this (at most 50)",
    )
    # Amazon VPC "Routes per route table" (L-93826ACB): 50 by default, adjustable up to 1,000 (Amazon VPC User
    # Guide, "Amazon VPC quotas", Route tables). Each private route table holds a route per peer CIDR over the
    # peering (on the hub: every spoke's blocks). Validation refuses more routes than this states.
    routes_per_route_table: Annotated[int, Field(ge=50, le=1000)] = Field(
        default=50,
        description='the account\'s "Routes per route table" (L-93826ACB; Amazon VPC User Guide, "Amazon VPC '
        'quotas": 50 by default, adjustable up to 1,000) in this Region, when raised: validation refuses private '
        "route tables needing more routes (one per peer CIDR over the peering, every spoke's blocks on the hub, "
        "plus the local, S3-endpoint and NAT routes) than this",
    )


class RegionConfig(Model):
    """One Region of the environment: its VPC and what runs in it."""

    region: RegionCode = Field(description="Region code; one spoke per Region, never the hub's")
    cidr: VpcCidr = Field(description="VPC CIDR, `/16` to `/20` (the subnet layout needs `/20`)")
    account: AccountId | None = Field(
        default=None,
        description="the Region's account; a different one makes a cross-account peering",
        json_schema_extra=shown_as("top-level `account`"),
    )
    secondary_cidrs: list[SecondaryCidr] = Field(
        default=[], description="more VPC CIDR blocks (`/16` to `/28`), routed over the peering too"
    )
    # The default comes from regions.py (resolved_az_ids).
    az_ids: Annotated[list[AzId], Field(min_length=1, max_length=4)] | None = Field(
        default=None,
        description="AZ **IDs** (e.g. `usw2-az1`) for the private subnets; fixed after the first deploy "
        "([why](runbooks/deploy-environment.md#keys-fixed-at-the-first-deploy))",
        json_schema_extra=shown_as(f"the Region's first {DEFAULT_AZ_COUNT}"),
    )
    accelerator_az_id: AzId | None = Field(
        default=None,
        description="AZ ID of the accelerator subnet: HyperPod and the local CNQ live here; fixed after the first "
        "deploy ([why](runbooks/deploy-environment.md#keys-fixed-at-the-first-deploy))",
        json_schema_extra=shown_as("first of `az_ids`"),
    )
    nat: Literal["single", "per_az", "none"] = Field(
        default="single",
        description="`single`, `per_az` or `none` (no egress to the internet; refused where storage is enabled: "
        "CNQ must reach Qumulo's endpoints)",
    )
    # CloudWatch Logs retention values of a year or more: Control Tower's CT.CLOUDWATCH.PR.2, which every synth
    # runs (cdklabs-cdk-validator-cfnguard 0.0.62, rules/control-tower/cfn-guard/cloudwatch/
    # ct-cloudwatch-pr-2.guard), refuses a log group kept for less than 365 days.
    flow_logs_retention_days: Literal[365, 731, 1827, 3653] = Field(
        default=365,
        description="VPC flow log retention: 365, 731, 1827 or 3653 days (Control Tower's CT.CLOUDWATCH.PR.2 "
        "refuses less)",
    )
    quotas: QuotasConfig = Field(
        default=QuotasConfig(),
        description="AWS quotas of the Region's account the topology relies on, when raised above the default; "
        "keys below",
    )
    storage: StorageConfig = Field(
        default=StorageConfig(),
        description="the Region's Cloud Native Qumulo cluster (hub or spoke); keys below",
    )
    compute: ComputeConfig = Field(
        default=ComputeConfig(),
        description="the Region's SageMaker HyperPod cluster on EKS and its Kubernetes storage; keys below",
    )

    _path: str = PrivateAttr(default="hub")

    @property
    def path(self) -> str:
        """`hub` or `spokes[<i>]`: the prefix of every field a rule names in this Region."""
        return self._path

    @property
    def is_hub(self) -> bool:
        return self._path == "hub"

    @property
    def storage_on(self) -> StorageConfig | None:
        return self.storage if self.storage.enabled else None

    @property
    def compute_on(self) -> ComputeConfig | None:
        return self.compute if self.compute.enabled else None

    def cidr_fields(self) -> list[tuple[str, ipaddress.IPv4Network]]:
        """The VPC blocks, primary first, with the field each sits in."""
        fields = [
            f"{self._path}.cidr",
            *(f"{self._path}.secondary_cidrs[{i}]" for i in range(len(self.secondary_cidrs))),
        ]
        return [
            (field, ipaddress.IPv4Network(block)) for field, block in zip(fields, self.all_cidrs, strict=True)
        ]

    def undeployable(self) -> list[str]:
        """What the Region's CNQ and HyperPod lack to deploy ("key: message"), which storage_rules.py reports:
        pinned images, node volumes, egress, a local CNQ. A config built in code may leave them out."""
        problems = []
        storage = self.storage
        if self.compute.enabled and not storage.enabled:
            problems.append(
                "compute: compute mounts the dataset from this Region's own CNQ, but "
                "storage.enabled is false: enable storage here or set compute.enabled: false"
            )
        if storage.enabled and self.nat == "none":
            problems.append(
                "nat: none leaves the CNQ nodes without the outbound access Qumulo requires for "
                "deployment and quorum (api.missionq.qumulo.com, api.nexus.qumulo.com): set nat: single (or "
                "per_az), or storage.enabled: false for this Region"
            )
        # HyperPod nodes reach ECR, EKS, SageMaker and CloudWatch through NAT: the VPC has an S3 gateway endpoint
        # only (SageMaker HyperPod developer guide, "Setting up SageMaker HyperPod clusters with a custom Amazon VPC").
        if self.compute.enabled and self.nat == "none":
            problems.append(
                "nat: none leaves the HyperPod nodes and the compute stack's functions without a "
                "route to ECR, EKS, SageMaker and CloudWatch (hubspoke adds no interface endpoints): set nat: single "
                "(or per_az), or compute.enabled: false for this Region"
            )
        if not storage.enabled:
            return problems
        # A deploy-time image lookup would re-resolve on every update and replace every node at once.
        if storage.ami_id is None:
            problems.append(
                f"storage.ami_id: required with storage: pin a stock Ubuntu 24.04 LTS image for {self.region}; "
                f"`hubspoke ami --region {self.region}` prints the current one as the line to paste (ami_id: ami-...)"
            )
        if storage.qumulo_core is None:
            problems.append(
                "storage.qumulo_core: required with storage: the Qumulo Core release the nodes install and "
                "where it is staged, e.g. {version: 7.10.2.1, install_uri: s3://my-bucket/my-prefix/"
                "qumulo-core-install/} (docs/runbooks/qumulo-core.md)"
            )
        from hubspoke.config.cnq_volumes import QUMULO_EC2_MAP  # built from this module's models

        if storage.instance_type not in QUMULO_EC2_MAP and storage.cache_volumes is None:
            problems.append(
                f"storage.cache_volumes: required for {storage.instance_type}: Qumulo's AWS layout (write "
                "cache, DKV and read cache EBS volumes per node) covers other types only; set write_cache {count, "
                "size_gib, type, iops, throughput_mibps} (docs/runbooks/qumulo-core.md, 'Node volumes') or pick a "
                "type Qumulo lists"
            )
        if storage.floating_ip_count is not None and storage.floating_ip_count < storage.node_count:
            problems.append(
                f"storage.floating_ip_count: {storage.floating_ip_count} floating IPs for {storage.node_count} "
                "nodes: Qumulo gives every node at least one (its AWS Terraform raises a smaller count to the node "
                f"count): set at least {storage.node_count}"
            )
        per_node, tb, nodes = storage.capacity_per_node_tb, storage.soft_capacity_limit_tb, storage.node_count
        if per_node is not None and tb > per_node * nodes:
            problems.append(
                f"storage.soft_capacity_limit_tb: {tb} TB over {nodes} nodes is {tb / nodes:g} TB per node, "
                f"above capacity_per_node_tb ({per_node}): the number and type of instances will not support it "
                f"(Qumulo); raise node_count to {-(-tb // per_node)} or pick a larger instance type"
            )
        return problems

    @property
    def resolved_az_ids(self) -> tuple[str, ...]:
        return tuple(self.az_ids) if self.az_ids else REGIONS[self.region].default_az_ids[:DEFAULT_AZ_COUNT]

    @property
    def resolved_accelerator_az_id(self) -> str:
        return self.accelerator_az_id or self.resolved_az_ids[0]

    @property
    def all_cidrs(self) -> tuple[str, ...]:
        return (self.cidr, *self.secondary_cidrs)


class HubConfig(RegionConfig):
    """The hub Region: where the dataset lives."""


class SpokeConfig(RegionConfig):
    """A spoke Region: caches the hub through a portal and trains next to the cache."""

    portal: PortalConfig = Field(
        default=PortalConfig(),
        description="how the spoke's Cloud Data Fabric portal caches the hub; keys below",
    )


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


class HubSpokeConfig(Model):
    """One environment: a hub Region, its spoke Regions, and the settings they share."""

    environment: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,15}$")] = Field(
        description="short lowercase name (a letter, then at most 15 letters, digits or hyphens); stack names are "
        "`hubspoke-<environment>-<kind>-<region>`"
    )
    account: AccountId = Field(
        description="12-digit account ID, quoted; a Region may override it with its own `account`"
    )
    # Inter-Region peering carries at most 8500 bytes (EC2 User Guide, "Network MTU").
    inter_region_mtu: Annotated[int, Field(ge=1280, le=8500)] = Field(
        default=8500,
        description="MTU of every path over the peering; inter-Region peering carries at most 8500",
    )
    tags: dict[str, str] = Field(default={}, description="extra tags on every stack")
    hub: HubConfig = Field(
        description="the hub Region, where the dataset lives; its keys start with `.` below"
    )
    spokes: list[SpokeConfig] = Field(
        default=[], description="the spoke Regions, one per Region; the same keys as `hub`, and `portal`"
    )
    access: AccessConfig = Field(
        default=AccessConfig(),
        description="who administers every compute cluster, and the access host they reach its endpoint by; "
        "keys below",
    )
    dataset: DatasetConfig = Field(
        default=DatasetConfig(),
        description="the dataset version training jobs pin, the token format they expect of it, and the buckets "
        "loads read; keys below",
    )
    ops: OpsConfig = Field(
        default=OpsConfig(),
        description="who is told when the hub goes away, and the floors the alarms hold; keys below",
    )

    def model_post_init(self, context: Any, /) -> None:
        for i, spoke in enumerate(self.spokes):
            spoke._path = f"spokes[{i}]"

    def regions(self) -> Iterator[RegionConfig]:
        """The hub first, then every spoke in config order."""
        yield self.hub
        yield from self.spokes

    def account_of(self, region: RegionConfig) -> str:
        account: str = effective_account(region.account, self.account)
        return account

    def spoke(self, code: str) -> SpokeConfig:
        return next(s for s in self.spokes if s.region == code)

    def region_config(self, code: str) -> RegionConfig:
        return next(r for r in self.regions() if r.region == code)

    def peer_cidrs(self, region: RegionConfig) -> tuple[str, ...]:
        """CIDRs reachable over peering from this Region: the hub's for a spoke, every spoke's for the hub."""
        if region.region == self.hub.region:
            return tuple(c for s in self.spokes for c in s.all_cidrs)
        return self.hub.all_cidrs
