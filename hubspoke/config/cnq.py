"""The `storage` section: a Region's Cloud Native Qumulo cluster, its Qumulo Core release and node volumes, and the
spoke's `portal`."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from hubspoke.config.fields import Cidr, Model, _ec2_type, _not_the_world, refuse, shown_as

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
