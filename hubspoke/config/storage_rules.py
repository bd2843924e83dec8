"""Config rules on Cloud Native Qumulo: node counts and families Qumulo supports, a pinned image and release, node
volumes it can lay out, egress to Qumulo, a portal within one account, checkpoints outside the portal."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.cnq_volumes import QUMULO_EC2_MAP
from hubspoke.config.schema import StorageConfig, qumulo_bucket_rule
from hubspoke.config.sections import ConfigView, Problem, RegionView

# Qumulo's supported EC2 families for Cloud Native Qumulo on AWS (Qumulo docs, 2026-11).
CNQ_INSTANCE_FAMILIES = ("i7i", "i4i", "i7ien", "m6idn", "m6i", "m7i", "i3en", "i7ie")
# The nodes install Qumulo Core with host-managed networking (QUMULO_NETWORK_MANAGED_BY_HOST=true,
# runtime/network.py), the mode Qumulo's current AWS Terraform defaults to (Qumulo/qumulo-terraform-aws
# @ 8a6e4d57, variables.tf networking_mode default "host_managed"), whose README states "Qumulo Core >=
# 7.9.2.1 is required for this Terraform". Older releases are refused rather than installed in a mode
# their deployments predate. (The former floor, 7.8.4 for the prewarm Job's fetch-data API, has no source
# we could find: ASSUMED, and below this floor either way.)
QUMULO_CORE_MIN_VERSION = (7, 9, 2, 1)


def _version(value: str) -> tuple[int, ...]:
    # The schema's pattern: numbers separated by dots.
    return tuple(int(p) for p in value.split("."))


def _storage_regions(config: ConfigView) -> Iterator[tuple[RegionView, StorageConfig]]:
    """Each Region whose storage section the schema accepted and enables, with that section."""
    for region in config.regions():
        if (storage := region.storage_on) is not None:
            yield region, storage


def cnq_node_count(config: ConfigView) -> Iterator[Problem]:
    for region in config.regions():
        if region.storage is None:
            continue
        count = region.storage.node_count
        if not (count == 1 or 3 <= count <= 24):
            yield Problem(
                f"{region.path}.storage.node_count",
                f"{count} nodes: Cloud Native Qumulo runs 1 node or 3 to 24; use 1 or a number from 3 to 24",
            )


def cnq_instance_family(config: ConfigView) -> Iterator[Problem]:
    for region in config.regions():
        if region.storage is None:
            continue
        itype = region.storage.instance_type
        if itype.split(".")[0] not in CNQ_INSTANCE_FAMILIES:
            yield Problem(
                f"{region.path}.storage.instance_type",
                f"{itype} is outside Qumulo's supported families ({', '.join(CNQ_INSTANCE_FAMILIES)}); "
                "it may work (the reference hub ran r5.8xlarge) but Qumulo does not support it",
                severity="warning",
            )


def portal_stays_in_one_account(config: ConfigView) -> Iterator[Problem]:
    """A spoke's portal Lambda reads the hub's admin secret, which is not shared with other accounts (yet)."""
    hub_account = config.account_of(config.hub) if config.hub is not None else config.account
    for spoke in config.spokes:
        account = config.account_of(spoke)
        if account is None or hub_account is None:
            continue  # an account the schema refused: it says so
        if account != hub_account and spoke.storage_on is not None:
            yield Problem(
                f"{spoke.path}.storage",
                f"a CNQ spoke in account {account} cannot reach the hub's admin secret in account {hub_account} "
                "(cross-account portals are not supported yet): put this spoke in the hub's account, or set "
                "storage.enabled: false and compute.enabled: false to peer the network only",
            )


def checkpoints_outside_dataset(config: ConfigView) -> Iterator[Problem]:
    """Checkpoints under the dataset path would land in the portal: read-only, or written across Regions."""
    for region in config.regions():
        if region.storage is None:
            continue
        dataset, checkpoints = region.storage.dataset_path, region.storage.checkpoint_path
        d, c = dataset.rstrip("/") + "/", checkpoints.rstrip("/") + "/"
        if c.startswith(d) or d.startswith(c):
            yield Problem(
                f"{region.path}.storage.checkpoint_path",
                f"'{checkpoints}' overlaps dataset_path '{dataset}'; checkpoints there would go through the "
                "portal (read-only, or written across Regions): use a path outside it, e.g. "
                f"{StorageConfig().checkpoint_path}",
            )


def storage_is_pinned(config: ConfigView) -> Iterator[Problem]:
    """CNQ nodes boot a pinned image and install a named release: neither may be left to deploy time."""
    for region, storage in _storage_regions(config):
        path, code = region.path, region.region or "this Region"
        if storage.ami_id is None:
            yield Problem(
                f"{path}.storage.ami_id",
                f"required with storage: pin a stock Ubuntu 24.04 LTS image for {code}; "
                f"`hubspoke ami --region {code}` prints the current one as the line to paste (ami_id: ami-...)",
            )
        if storage.qumulo_core is None:
            yield Problem(
                f"{path}.storage.qumulo_core",
                "required with storage: the Qumulo Core release the nodes install and where it is staged, "
                "e.g. {version: 7.10.2.1, install_uri: s3://my-bucket/my-prefix/qumulo-core-install/} "
                "(docs/runbooks/qumulo-core.md)",
            )


def ami_pinned_in_one_region(config: ConfigView) -> Iterator[Problem]:
    """An AMI ID names an image in one Region: the same ID pinned for two Regions is a paste error.

    EC2 User Guide, "Copy an AMI": an AMI is a regional resource, and a copy in another Region gets a new, unique
    AMI ID. So no image can carry one ID in two Regions, and the second Region's pin cannot be found there.
    """
    seen: dict[str, tuple[str, str]] = {}
    for region, storage in _storage_regions(config):
        path, ami, code = region.path, storage.ami_id, region.region or "this Region"
        if ami is None:
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


def qumulo_core_supported(config: ConfigView) -> Iterator[Problem]:
    """Releases older than 7.9.2.1 predate Qumulo's host-managed AWS deployments; a portal needs the same
    release on both sides."""
    minimum = ".".join(map(str, QUMULO_CORE_MIN_VERSION))
    first: tuple[str, str] | None = None
    for region, storage in _storage_regions(config):
        if storage.qumulo_core is None:
            continue
        version = storage.qumulo_core.version
        parsed = _version(version)
        field = f"{region.path}.storage.qumulo_core.version"
        if parsed < QUMULO_CORE_MIN_VERSION:
            yield Problem(
                field,
                f"{version} is older than {minimum}, the first release Qumulo's AWS deployment supports "
                f"with the host-managed networking hubspoke installs: stage {minimum} or newer "
                "(docs/runbooks/qumulo-core.md)",
            )
        if first is None:
            first = (field, version)
        elif first[1] != version:
            yield Problem(
                field,
                f"{version} differs from {first[0]} ({first[1]}); a spoke portal is inaccessible when the "
                "two clusters run different Qumulo Core versions: use one release everywhere",
            )


def node_volumes_known(config: ConfigView) -> Iterator[Problem]:
    """Without Qumulo's layout for the instance type, the node volumes must be spelled out (cnq_volumes.py)."""
    for region, storage in _storage_regions(config):
        itype = storage.instance_type
        if itype not in QUMULO_EC2_MAP and storage.cache_volumes is None:
            yield Problem(
                f"{region.path}.storage.cache_volumes",
                f"required for {itype}: Qumulo's AWS layout (write cache, DKV and read cache EBS volumes per "
                "node) covers other types only; set write_cache {count, size_gib, type, iops, throughput_mibps} "
                "(docs/runbooks/qumulo-core.md, 'Node volumes') or pick a type Qumulo lists",
            )


def storage_needs_egress(config: ConfigView) -> Iterator[Problem]:
    """CNQ nodes must reach api.missionq.qumulo.com and api.nexus.qumulo.com to deploy and form quorum."""
    for region, _ in _storage_regions(config):
        if region.nat == "none":
            yield Problem(
                f"{region.path}.nat",
                "none leaves the CNQ nodes without the outbound access Qumulo requires for deployment and "
                "quorum (api.missionq.qumulo.com, api.nexus.qumulo.com): set nat: single (or per_az), or "
                "storage.enabled: false for this Region",
            )


def spoke_storage_needs_hub_storage(config: ConfigView) -> Iterator[Problem]:
    """A spoke's CNQ caches the hub's through a portal (docs/design.md §1): without a hub cluster it has nothing to
    cache, and synth would have no hub Storage stack to read the portal's addresses from."""
    hub = config.hub
    if hub is None or hub.storage is None or hub.storage.enabled:
        return
    for spoke in config.spokes:
        if spoke.storage_on is not None:
            yield Problem(
                f"{spoke.path}.storage",
                "a CNQ spoke caches the hub's CNQ through a portal, but hub.storage.enabled is false: enable "
                "storage in the hub, or set storage.enabled: false and compute.enabled: false here to peer "
                "the network only",
            )


def floating_ips_cover_the_nodes(config: ConfigView) -> Iterator[Problem]:
    """floating_ip_count is the cluster's total (Qumulo's floating_ip_count), at least one per node.

    The retired per-node key is an unknown key the schema refuses; the loader says what replaces it.
    """
    for region, storage in _storage_regions(config):
        count, nodes = storage.floating_ip_count, storage.node_count
        if count is not None and count < nodes:
            yield Problem(
                f"{region.path}.storage.floating_ip_count",
                f"{count} floating IPs for {nodes} nodes: Qumulo gives every node at least one (its AWS "
                f"Terraform raises a smaller count to the node count): set at least {nodes}",
            )


def buckets_follow_qumulos_rule(config: ConfigView) -> Iterator[Problem]:
    """Fewer buckets than max(16, ceil(TB / 500)) is Qumulo's development-only override."""
    for region, storage in _storage_regions(config):
        count, tb = storage.bucket_count, storage.soft_capacity_limit_tb
        if count is None or count >= (rule := qumulo_bucket_rule(tb)):
            continue
        yield Problem(
            f"{region.path}.storage.bucket_count",
            f"{count} buckets for {tb} TB: Qumulo's persistent storage uses {rule} (max(16, ceil(TB / 500))) and "
            "allows fewer only in a development environment (bucket_count_override requires "
            "dev_environment=true); keep it only for a cluster formed with it, or remove it to get "
            f"{rule} (the provisioner adds the new buckets; docs/runbooks/qumulo-core.md)",
            severity="warning",
        )


def xlarge_is_for_development(config: ConfigView) -> Iterator[Problem]:
    """Qumulo's Terraform allows its smallest (4 vCPU) node sizes only with dev_environment: on AWS the
    *.xlarge sizes (Qumulo/aws-terraform-cloud-q, terraform_tests.tfvars q_instance_type: "To use m5.xlarge
    set the optional variable dev_environment=true"; qumulo-terraform-gcp @ a30b449c, compute/module/main.tf
    node_instance_type: the -4 highmem sizes become -8 unless dev_environment)."""
    for region, storage in _storage_regions(config):
        itype = storage.instance_type
        if itype.endswith(".xlarge"):
            yield Problem(
                f"{region.path}.storage.instance_type",
                f"{itype}: Qumulo supports *.xlarge nodes for development only; use a 2xlarge or larger "
                "size of the family for anything that holds data you need",
                severity="warning",
            )


def capacity_fits_the_nodes(config: ConfigView) -> Iterator[Problem]:
    """soft_capacity_limit_tb / node_count within capacity_per_node_tb, as Qumulo's GCP module checks nodeCap."""
    for region, storage in _storage_regions(config):
        per_node, tb, nodes = storage.capacity_per_node_tb, storage.soft_capacity_limit_tb, storage.node_count
        if per_node is None or not nodes or tb <= per_node * nodes:
            continue
        yield Problem(
            f"{region.path}.storage.soft_capacity_limit_tb",
            f"{tb} TB over {nodes} nodes is {tb / nodes:g} TB per node, above capacity_per_node_tb "
            f"({per_node}): the number and type of instances will not support it (Qumulo); raise node_count "
            f"to {-(-tb // per_node)} or pick a larger instance type",
        )
