"""Config rules on Cloud Native Qumulo: node counts and families Qumulo supports, a pinned image and release, node
volumes it can lay out, egress to Qumulo, a portal within one account, checkpoints outside the portal."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hubspoke.config.cnq_volumes import QUMULO_EC2_MAP
from hubspoke.config.raw import Problem, default, enabled, regions, section
from hubspoke.config.schema import StorageConfig, effective_account, qumulo_bucket_rule

# Qumulo's supported EC2 families for Cloud Native Qumulo on AWS (Qumulo docs, 2026-11).
CNQ_INSTANCE_FAMILIES = ("i7i", "i4i", "i7ien", "m6idn", "m6i", "m7i", "i3en", "i7ie")
DATASET_PATH = default(StorageConfig, "dataset_path")
CHECKPOINT_PATH = default(StorageConfig, "checkpoint_path")
# The nodes install Qumulo Core with host-managed networking (QUMULO_NETWORK_MANAGED_BY_HOST=true,
# runtime/network.py), the mode Qumulo's current AWS Terraform defaults to (Qumulo/qumulo-terraform-aws
# @ 8a6e4d57, variables.tf networking_mode default "host_managed"), whose README states "Qumulo Core >=
# 7.9.2.1 is required for this Terraform". Older releases are refused rather than installed in a mode
# their deployments predate. (The former floor, 7.8.4 for the prewarm Job's fetch-data API, has no source
# we could find: ASSUMED, and below this floor either way.)
QUMULO_CORE_MIN_VERSION = (7, 9, 2, 1)


def _version(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, str) or not all(p.isdigit() for p in value.split(".")):
        return None
    return tuple(int(p) for p in value.split("."))


def _storageregions(raw: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    for path, region in regions(raw):
        storage = section(region, "storage")
        if enabled(storage):
            yield path, region, storage


def cnq_node_count(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in regions(raw):
        count = section(region, "storage").get("node_count")
        if isinstance(count, int) and not isinstance(count, bool) and not (count == 1 or 3 <= count <= 24):
            yield Problem(
                f"{path}.storage.node_count",
                f"{count} nodes: Cloud Native Qumulo runs 1 node or 3 to 24; use 1 or a number from 3 to 24",
            )


def cnq_instance_family(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in regions(raw):
        itype = section(region, "storage").get("instance_type")
        if isinstance(itype, str) and itype.split(".")[0] not in CNQ_INSTANCE_FAMILIES:
            yield Problem(
                f"{path}.storage.instance_type",
                f"{itype} is outside Qumulo's supported families ({', '.join(CNQ_INSTANCE_FAMILIES)}); "
                "it may work (the reference hub ran r5.8xlarge) but Qumulo does not support it",
                severity="warning",
            )


def portal_stays_in_one_account(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """A spoke's portal Lambda reads the hub's admin secret, which is not shared with other accounts (yet)."""
    default = raw.get("account")
    hub_account = effective_account(section(raw, "hub").get("account"), default)
    for path, region in regions(raw):
        account = effective_account(region.get("account"), default)
        if path != "hub" and account != hub_account and enabled(section(region, "storage")):
            yield Problem(
                f"{path}.storage",
                f"a CNQ spoke in account {account} cannot reach the hub's admin secret in account {hub_account} "
                "(cross-account portals are not supported yet): put this spoke in the hub's account, or set "
                "storage.enabled: false and compute.enabled: false to peer the network only",
            )


def checkpoints_outside_dataset(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Checkpoints under the dataset path would land in the portal: read-only, or written across Regions."""
    for path, region in regions(raw):
        storage = section(region, "storage")
        dataset = storage.get("dataset_path", DATASET_PATH)
        checkpoints = storage.get("checkpoint_path", CHECKPOINT_PATH)
        if not (isinstance(dataset, str) and isinstance(checkpoints, str)):
            continue
        d, c = dataset.rstrip("/") + "/", checkpoints.rstrip("/") + "/"
        if c.startswith(d) or d.startswith(c):
            yield Problem(
                f"{path}.storage.checkpoint_path",
                f"'{checkpoints}' overlaps dataset_path '{dataset}'; checkpoints there would go through the "
                f"portal (read-only, or written across Regions): use a path outside it, e.g. {CHECKPOINT_PATH}",
            )


def storage_is_pinned(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """CNQ nodes boot a pinned image and install a named release: neither may be left to deploy time."""
    for path, region, storage in _storageregions(raw):
        code = region.get("region", "this Region")
        if storage.get("ami_id") is None:
            yield Problem(
                f"{path}.storage.ami_id",
                f"required with storage: pin a stock Ubuntu 24.04 LTS image for {code}; "
                f"`hubspoke ami --region {code}` prints the current one as the line to paste (ami_id: ami-...)",
            )
        if storage.get("qumulo_core") is None:
            yield Problem(
                f"{path}.storage.qumulo_core",
                "required with storage: the Qumulo Core release the nodes install and where it is staged, "
                "e.g. {version: 7.10.2.1, install_uri: s3://my-bucket/my-prefix/qumulo-core-install/} "
                "(docs/runbooks/qumulo-core.md)",
            )


def ami_pinned_in_one_region(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """An AMI ID names an image in one Region: the same ID pinned for two Regions is a paste error.

    EC2 User Guide, "Copy an AMI": an AMI is a regional resource, and a copy in another Region gets a new, unique
    AMI ID. So no image can carry one ID in two Regions, and the second Region's pin cannot be found there.
    """
    seen: dict[str, tuple[str, str]] = {}
    for path, region, storage in _storageregions(raw):
        ami, code = storage.get("ami_id"), str(region.get("region", "this Region"))
        if not isinstance(ami, str):
            continue
        if ami in seen and seen[ami][1] != code:
            first_path, first_code = seen[ami]
            yield Problem(
                f"{path}.storage.ami_id",
                f"{ami} is also {first_path}.storage.ami_id ({first_code}); AMI IDs are per Region (a copy in "
                f"another Region gets a new ID), so one of them is a paste error: set the image of {code}, "
                f"`hubspoke ami --region {code}` prints it as the line to paste",
            )
        else:
            seen.setdefault(ami, (path, code))


def qumulo_core_supported(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Releases older than 7.9.2.1 predate Qumulo's host-managed AWS deployments; a portal needs the same
    release on both sides."""
    minimum = ".".join(map(str, QUMULO_CORE_MIN_VERSION))
    first: tuple[str, str] | None = None
    for path, _, storage in _storageregions(raw):
        version = section(storage, "qumulo_core").get("version")
        parsed = _version(version)
        if parsed is None:
            continue
        field = f"{path}.storage.qumulo_core.version"
        if parsed < QUMULO_CORE_MIN_VERSION:
            yield Problem(
                field,
                f"{version} is older than {minimum}, the first release Qumulo's AWS deployment supports "
                f"with the host-managed networking hubspoke installs: stage {minimum} or newer "
                "(docs/runbooks/qumulo-core.md)",
            )
        if first is None:
            first = (field, str(version))
        elif first[1] != version:
            yield Problem(
                field,
                f"{version} differs from {first[0]} ({first[1]}); a spoke portal is inaccessible when the "
                "two clusters run different Qumulo Core versions: use one release everywhere",
            )


def node_volumes_known(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Without Qumulo's layout for the instance type, the node volumes must be spelled out (cnq_volumes.py)."""
    for path, _, storage in _storageregions(raw):
        itype = storage.get("instance_type", StorageConfig.model_fields["instance_type"].default)
        if isinstance(itype, str) and itype not in QUMULO_EC2_MAP and storage.get("cache_volumes") is None:
            yield Problem(
                f"{path}.storage.cache_volumes",
                f"required for {itype}: Qumulo's AWS layout (write cache, DKV and read cache EBS volumes per "
                "node) covers other types only; set write_cache {count, size_gib, type, iops, throughput_mibps} "
                "(docs/runbooks/qumulo-core.md, 'Node volumes') or pick a type Qumulo lists",
            )


def storage_needs_egress(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """CNQ nodes must reach api.missionq.qumulo.com and api.nexus.qumulo.com to deploy and form quorum."""
    for path, region, _ in _storageregions(raw):
        if region.get("nat") == "none":
            yield Problem(
                f"{path}.nat",
                "none leaves the CNQ nodes without the outbound access Qumulo requires for deployment and "
                "quorum (api.missionq.qumulo.com, api.nexus.qumulo.com): set nat: single (or per_az), or "
                "storage.enabled: false for this Region",
            )


def spoke_storage_needs_hub_storage(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """A spoke's CNQ caches the hub's through a portal (docs/design.md §1): without a hub cluster it has nothing to
    cache, and synth would have no hub Storage stack to read the portal's addresses from."""
    if enabled(section(section(raw, "hub"), "storage")):
        return
    for path, region in regions(raw):
        if path != "hub" and enabled(section(region, "storage")):
            yield Problem(
                f"{path}.storage",
                "a CNQ spoke caches the hub's CNQ through a portal, but hub.storage.enabled is false: enable "
                "storage in the hub, or set storage.enabled: false and compute.enabled: false here to peer "
                "the network only",
            )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def floating_ips_cover_the_nodes(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """floating_ip_count is the cluster's total (Qumulo's floating_ip_count), at least one per node."""
    for path, _, storage in _storageregions(raw):
        if "floating_ips_per_node" in storage:
            yield Problem(
                f"{path}.storage.floating_ips_per_node",
                "replaced by storage.floating_ip_count, the cluster's total as Qumulo counts it (3 to 100): "
                "write floating_ip_count: <node_count x floating_ips_per_node> to keep today's addresses",
            )
        count = _int(storage.get("floating_ip_count"))
        nodes = _int(storage.get("node_count", default(StorageConfig, "node_count")))
        if count is not None and nodes is not None and count < nodes:
            yield Problem(
                f"{path}.storage.floating_ip_count",
                f"{count} floating IPs for {nodes} nodes: Qumulo gives every node at least one (its AWS "
                f"Terraform raises a smaller count to the node count): set at least {nodes}",
            )


def buckets_follow_qumulos_rule(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Fewer buckets than max(16, ceil(TB / 500)) is Qumulo's development-only override."""
    for path, _, storage in _storageregions(raw):
        count = _int(storage.get("bucket_count"))
        tb = _int(storage.get("soft_capacity_limit_tb", default(StorageConfig, "soft_capacity_limit_tb")))
        if count is None or tb is None or count >= (rule := qumulo_bucket_rule(tb)):
            continue
        yield Problem(
            f"{path}.storage.bucket_count",
            f"{count} buckets for {tb} TB: Qumulo's persistent storage uses {rule} (max(16, ceil(TB / 500))) and "
            "allows fewer only in a development environment (bucket_count_override requires "
            "dev_environment=true); keep it only for a cluster formed with it, or remove it to get "
            f"{rule} (the provisioner adds the new buckets; docs/runbooks/qumulo-core.md)",
            severity="warning",
        )


def xlarge_is_for_development(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Qumulo's Terraform allows its smallest (4 vCPU) node sizes only with dev_environment: on AWS the
    *.xlarge sizes (Qumulo/aws-terraform-cloud-q, terraform_tests.tfvars q_instance_type: "To use m5.xlarge
    set the optional variable dev_environment=true"; qumulo-terraform-gcp @ a30b449c, compute/module/main.tf
    node_instance_type: the -4 highmem sizes become -8 unless dev_environment)."""
    for path, _, storage in _storageregions(raw):
        itype = storage.get("instance_type", default(StorageConfig, "instance_type"))
        if isinstance(itype, str) and itype.endswith(".xlarge"):
            yield Problem(
                f"{path}.storage.instance_type",
                f"{itype}: Qumulo supports *.xlarge nodes for development only; use a 2xlarge or larger "
                "size of the family for anything that holds data you need",
                severity="warning",
            )


def capacity_fits_the_nodes(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """soft_capacity_limit_tb / node_count within capacity_per_node_tb, as Qumulo's GCP module checks nodeCap."""
    for path, _, storage in _storageregions(raw):
        per_node = _int(storage.get("capacity_per_node_tb"))
        tb = _int(storage.get("soft_capacity_limit_tb", default(StorageConfig, "soft_capacity_limit_tb")))
        nodes = _int(storage.get("node_count", default(StorageConfig, "node_count")))
        if per_node is None or tb is None or not nodes or tb <= per_node * nodes:
            continue
        yield Problem(
            f"{path}.storage.soft_capacity_limit_tb",
            f"{tb} TB over {nodes} nodes is {tb / nodes:g} TB per node, above capacity_per_node_tb "
            f"({per_node}): the number and type of instances will not support it (Qumulo); raise node_count "
            f"to {-(-tb // per_node)} or pick a larger instance type",
        )
