"""Environment-wide rules on Cloud Native Qumulo: supported families, one image per Region, one release everywhere,
a portal within one account and beside a hub cluster, Qumulo's bucket rule and production sizes."""

from __future__ import annotations

from collections.abc import Iterator

from hubspoke.config.schema import HubSpokeConfig, RegionConfig, StorageConfig, qumulo_bucket_rule
from hubspoke.config.sections import Problem

# Qumulo's supported EC2 families for Cloud Native Qumulo on AWS (Qumulo docs, 2026-11).
CNQ_INSTANCE_FAMILIES = ("i7i", "i4i", "i7ien", "m6idn", "m6i", "m7i", "i3en", "i7ie")


def _storage_regions(config: HubSpokeConfig) -> Iterator[tuple[RegionConfig, StorageConfig]]:
    """Each Region that deploys CNQ, with its storage section."""
    for region in config.regions():
        if (storage := region.storage_on) is not None:
            yield region, storage


def regions_are_deployable(config: HubSpokeConfig) -> Iterator[Problem]:
    """What each Region lacks to deploy (RegionConfig.undeployable), at its field."""
    for region in config.regions():
        for problem in region.undeployable():
            key, _, message = problem.partition(": ")
            yield Problem(f"{region.path}.{key}", message)


def cnq_instance_family(config: HubSpokeConfig) -> Iterator[Problem]:
    for region in config.regions():
        itype = region.storage.instance_type
        if itype.split(".")[0] not in CNQ_INSTANCE_FAMILIES:
            yield Problem(
                f"{region.path}.storage.instance_type",
                f"{itype} is outside Qumulo's supported families ({', '.join(CNQ_INSTANCE_FAMILIES)}); "
                "it may work (the reference hub ran r5.8xlarge) but Qumulo does not support it",
                severity="warning",
            )


def portal_stays_in_one_account(config: HubSpokeConfig) -> Iterator[Problem]:
    """A spoke's portal Lambda reads the hub's admin secret, which is not shared with other accounts (yet)."""
    hub_account = config.account_of(config.hub)
    for spoke in config.spokes:
        account = config.account_of(spoke)
        if account != hub_account and spoke.storage_on is not None:
            yield Problem(
                f"{spoke.path}.storage",
                f"a CNQ spoke in account {account} cannot reach the hub's admin secret in account {hub_account} "
                "(cross-account portals are not supported yet): put this spoke in the hub's account, or set "
                "storage.enabled: false and compute.enabled: false to peer the network only",
            )


def ami_pinned_in_one_region(config: HubSpokeConfig) -> Iterator[Problem]:
    """An AMI ID names an image in one Region: the same ID pinned for two Regions is a paste error.

    EC2 User Guide, "Copy an AMI": an AMI is a regional resource, and a copy in another Region gets a new, unique
    AMI ID. So no image can carry one ID in two Regions, and the second Region's pin cannot be found there.
    """
    seen: dict[str, tuple[str, str]] = {}
    for region, storage in _storage_regions(config):
        path, ami, code = region.path, storage.ami_id, region.region
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


def qumulo_core_is_one_release(config: HubSpokeConfig) -> Iterator[Problem]:
    """A spoke portal is inaccessible when the two clusters run different Qumulo Core versions."""
    first: tuple[str, str] | None = None
    for region, storage in _storage_regions(config):
        if storage.qumulo_core is None:
            continue
        version, field = storage.qumulo_core.version, f"{region.path}.storage.qumulo_core.version"
        if first is None:
            first = (field, version)
        elif first[1] != version:
            yield Problem(
                field,
                f"{version} differs from {first[0]} ({first[1]}); a spoke portal is inaccessible when the "
                "two clusters run different Qumulo Core versions: use one release everywhere",
            )


def spoke_storage_needs_hub_storage(config: HubSpokeConfig) -> Iterator[Problem]:
    """A spoke's CNQ caches the hub's through a portal (docs/design.md §1): without a hub cluster it has nothing to
    cache, and synth would have no hub Storage stack to read the portal's addresses from."""
    if config.hub.storage.enabled:
        return
    for spoke in config.spokes:
        if spoke.storage_on is not None:
            yield Problem(
                f"{spoke.path}.storage",
                "a CNQ spoke caches the hub's CNQ through a portal, but hub.storage.enabled is false: enable "
                "storage in the hub, or set storage.enabled: false and compute.enabled: false here to peer "
                "the network only",
            )


def buckets_follow_qumulos_rule(config: HubSpokeConfig) -> Iterator[Problem]:
    """Fewer buckets than max(16, ceil(TB / 500)) is Qumulo's development-only override."""
    for region, storage in _storage_regions(config):
        count, tb = storage.bucket_count, storage.soft_capacity_limit_tb
        if count is None or count >= (rule := qumulo_bucket_rule(tb)):
            continue
        yield Problem(
            f"{region.path}.storage.bucket_count",
            f"{count} buckets for {tb} TB: Qumulo's persistent storage uses {rule} (max(16, ceil(TB / 500))) and "
            "allows fewer only in a development environment (bucket_count_override requires "
            f"dev_environment=true); remove it to get {rule} (the provisioner adds the new buckets; "
            "docs/runbooks/qumulo-core.md)",
            severity="warning",
        )


def xlarge_is_for_development(config: HubSpokeConfig) -> Iterator[Problem]:
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
