"""Rules that span fields (overlaps, duplicates, Region facts); each adds its findings to one list.

Rules read the raw YAML mapping, not the parsed model, so they still run when an unrelated field is
wrong: the user sees every problem in one run. A value the schema rejects is skipped here.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from hubspoke.config.cnq_volumes import QUMULO_EC2_MAP
from hubspoke.config.schema import ComputeConfig, QuotasConfig, StorageConfig, effective_account
from hubspoke.flow_logs import MAX_FILTERS_PER_LOG_GROUP, filter_count
from hubspoke.ports import FROM_HUB, FROM_SPOKE
from hubspoke.regions import HYPERPOD_REGIONS, REGIONS

# Qumulo's supported EC2 families for Cloud Native Qumulo on AWS (Qumulo docs, 2026-11).
CNQ_INSTANCE_FAMILIES = ("i7i", "i4i", "i7ien", "m6idn", "m6i", "m7i", "i3en", "i7ie")
# VPC quotas: active peering connections per VPC, default and hard maximum.
PEERINGS_DEFAULT_QUOTA = 50
PEERINGS_MAX_QUOTA = 125


@dataclass(frozen=True)
class Problem:
    """One finding about a config file: where it is, what is wrong, and how to fix it."""

    field: str
    message: str
    severity: str = "error"


Rule = Callable[[Mapping[str, Any]], Iterator[Problem]]


def _regions(raw: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    hub = raw.get("hub")
    if isinstance(hub, Mapping):
        yield "hub", hub
    spokes = raw.get("spokes")
    if isinstance(spokes, list):
        for i, spoke in enumerate(spokes):
            if isinstance(spoke, Mapping):
                yield f"spokes[{i}]", spoke


def _net(value: Any) -> ipaddress.IPv4Network | None:
    if not isinstance(value, str) or "/" not in value:
        return None
    try:
        net = ipaddress.ip_network(value)
    except ValueError:
        return None
    return net if isinstance(net, ipaddress.IPv4Network) else None


def _section(region: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = region.get(name)
    return value if isinstance(value, Mapping) else {}


def _default(model: type[ComputeConfig | StorageConfig | QuotasConfig], field: str) -> Any:
    """The schema's default for `field`: rules read raw YAML, where an omitted key means that default."""
    return model.model_fields[field].default


def _enabled(section: Mapping[str, Any]) -> bool:
    # Storage and compute share the default (on); a test keeps the two in step.
    return section.get("enabled", _default(StorageConfig, "enabled")) is not False


SERVICE_CIDR = _default(ComputeConfig, "service_cidr")
DATASET_PATH = _default(StorageConfig, "dataset_path")
CHECKPOINT_PATH = _default(StorageConfig, "checkpoint_path")
# Amazon VPC "Inbound or outbound rules per security group" (L-0EA8095F), the AWS default (schema.QuotasConfig).
SECURITY_GROUP_RULES_QUOTA_CODE = "L-0EA8095F"
DEFAULT_SECURITY_GROUP_RULES = _default(QuotasConfig, "security_group_rules")
MAX_SECURITY_GROUP_RULES = next(
    m.le for m in QuotasConfig.model_fields["security_group_rules"].metadata if hasattr(m, "le")
)


def vpc_cidrs_do_not_overlap(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Peered VPCs must not overlap (VPC peering guide); we check every pair, peered or not."""
    seen: list[tuple[str, ipaddress.IPv4Network]] = []
    for path, region in _regions(raw):
        blocks = [(f"{path}.cidr", region.get("cidr"))]
        secondary = region.get("secondary_cidrs")
        if isinstance(secondary, list):
            blocks += [(f"{path}.secondary_cidrs[{i}]", c) for i, c in enumerate(secondary)]
        for field, value in blocks:
            net = _net(value)
            if net is None:
                continue
            for other_field, other in seen:
                if net.overlaps(other):
                    yield Problem(
                        field,
                        f"{net} overlaps {other_field} ({other}); peered VPCs need disjoint CIDRs: "
                        f"pick a block outside {other}",
                    )
            seen.append((field, net))
    for path, region in _regions(raw):
        compute = _section(region, "compute")
        service = _net(compute.get("service_cidr", SERVICE_CIDR))
        if service is None or not _enabled(compute):
            continue
        for other_field, other in seen:
            if service.overlaps(other):
                yield Problem(
                    f"{path}.compute.service_cidr",
                    f"Kubernetes service CIDR {service} overlaps {other_field} ({other}); pods could not "
                    f"reach those addresses: pick a service CIDR outside every VPC, e.g. {SERVICE_CIDR}",
                )


def one_spoke_per_region(raw: Mapping[str, Any]) -> Iterator[Problem]:
    hub_region = _section(raw, "hub").get("region")
    first: dict[str, str] = {}
    for path, region in _regions(raw):
        code = region.get("region")
        if path == "hub" or not isinstance(code, str):
            continue
        if code == hub_region:
            yield Problem(
                f"{path}.region",
                f"{code} is the hub Region; a spoke must be in another Region: remove this spoke",
            )
        elif code in first:
            yield Problem(
                f"{path}.region",
                f"{code} is already a spoke at {first[code]}; one spoke per Region: merge or remove one",
            )
        else:
            first[code] = path


def az_ids_belong_to_region(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in _regions(raw):
        facts = REGIONS.get(region.get("region", ""))
        if facts is None:
            continue
        az_ids = region.get("az_ids")
        fields = (
            [(f"{path}.az_ids[{i}]", v) for i, v in enumerate(az_ids)] if isinstance(az_ids, list) else []
        )
        fields.append((f"{path}.accelerator_az_id", region.get("accelerator_az_id")))
        for field, value in fields:
            if isinstance(value, str) and not facts.owns_az_id(value):
                yield Problem(
                    field,
                    f"AZ ID '{value}' is not in {facts.code}; its AZ IDs look like {facts.default_az_ids[0]}",
                )
        if isinstance(az_ids, list) and len(set(az_ids)) != len(az_ids):
            yield Problem(f"{path}.az_ids", "lists an AZ ID twice; list each AZ once")


def cnq_node_count(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in _regions(raw):
        count = _section(region, "storage").get("node_count")
        if isinstance(count, int) and not isinstance(count, bool) and not (count == 1 or 3 <= count <= 24):
            yield Problem(
                f"{path}.storage.node_count",
                f"{count} nodes: Cloud Native Qumulo runs 1 node or 3 to 24; use 1 or a number from 3 to 24",
            )


def cnq_instance_family(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in _regions(raw):
        itype = _section(region, "storage").get("instance_type")
        if isinstance(itype, str) and itype.split(".")[0] not in CNQ_INSTANCE_FAMILIES:
            yield Problem(
                f"{path}.storage.instance_type",
                f"{itype} is outside Qumulo's supported families ({', '.join(CNQ_INSTANCE_FAMILIES)}); "
                "it may work (the reference hub ran r5.8xlarge) but Qumulo does not support it",
                severity="warning",
            )


def compute_only_where_hyperpod_runs(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in _regions(raw):
        code = region.get("region")
        if code in REGIONS and code not in HYPERPOD_REGIONS and _enabled(_section(region, "compute")):
            yield Problem(
                f"{path}.compute",
                f"SageMaker HyperPod is not offered in {code} (hubspoke/regions.py, 2026-11-30); "
                "set compute.enabled: false for this Region or train in another one",
            )


def compute_mounts_local_storage(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """The dataset and checkpoint volumes point at the Region's own CNQ, so compute needs it there."""
    for path, region in _regions(raw):
        if _enabled(_section(region, "compute")) and not _enabled(_section(region, "storage")):
            yield Problem(
                f"{path}.compute",
                "compute mounts the dataset from this Region's own CNQ, but storage.enabled is false: "
                "enable storage here or set compute.enabled: false",
            )


def portal_stays_in_one_account(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """A spoke's portal Lambda reads the hub's admin secret, which is not shared with other accounts (yet)."""
    default = raw.get("account")
    hub_account = effective_account(_section(raw, "hub").get("account"), default)
    for path, region in _regions(raw):
        account = effective_account(region.get("account"), default)
        if path != "hub" and account != hub_account and _enabled(_section(region, "storage")):
            yield Problem(
                f"{path}.storage",
                f"a CNQ spoke in account {account} cannot reach the hub's admin secret in account {hub_account} "
                "(cross-account portals are not supported yet): put this spoke in the hub's account, or set "
                "storage.enabled: false and compute.enabled: false to peer the network only",
            )


def checkpoints_outside_dataset(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Checkpoints under the dataset path would land in the portal: read-only, or written across Regions."""
    for path, region in _regions(raw):
        storage = _section(region, "storage")
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


def public_endpoint_not_open_to_world(raw: Mapping[str, Any]) -> Iterator[Problem]:
    for path, region in _regions(raw):
        cidrs = _section(region, "compute").get("public_access_cidrs")
        for i, value in enumerate(cidrs if isinstance(cidrs, list) else []):
            net = _net(value)
            if net is not None and net.prefixlen == 0:
                yield Problem(
                    f"{path}.compute.public_access_cidrs[{i}]",
                    "opens the EKS API to the whole internet; list your admin network's CIDR instead",
                )
        admin = _net(_section(region, "storage").get("admin_cidr"))
        if admin is not None and admin.prefixlen == 0:
            yield Problem(
                f"{path}.storage.admin_cidr",
                "opens SSH and the Qumulo REST API to the whole internet; use your admin network's CIDR",
            )


def peering_quota(raw: Mapping[str, Any]) -> Iterator[Problem]:
    spokes = raw.get("spokes")
    count = len(spokes) if isinstance(spokes, list) else 0
    if count > PEERINGS_MAX_QUOTA:
        yield Problem(
            "spokes",
            f"{count} spokes need {count} peerings on the hub VPC; AWS allows at most "
            f"{PEERINGS_MAX_QUOTA}: split the environment",
        )
    elif count > PEERINGS_DEFAULT_QUOTA:
        yield Problem(
            "spokes",
            f"{count} spokes exceed the default quota of {PEERINGS_DEFAULT_QUOTA} active peerings per VPC; "
            "request an increase (Service Quotas, Amazon VPC) before deploying",
            severity="warning",
        )


# --- CNQ install rules (issue 13) -----------------------------------------------------------------------
# The prewarm Job's fetch-data API needs Qumulo Core 7.8.4 or newer (Qumulo/qfetch README).
QUMULO_CORE_MIN_VERSION = (7, 8, 4)


def _version(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, str) or not all(p.isdigit() for p in value.split(".")):
        return None
    return tuple(int(p) for p in value.split("."))


def _storage_regions(raw: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any]]]:
    for path, region in _regions(raw):
        storage = _section(region, "storage")
        if _enabled(storage):
            yield path, region, storage


def storage_is_pinned(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """CNQ nodes boot a pinned image and install a named release: neither may be left to deploy time."""
    for path, region, storage in _storage_regions(raw):
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


def qumulo_core_supported(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Releases older than 7.8.4 lack the fetch-data API; a portal needs the same release on both sides."""
    minimum = ".".join(map(str, QUMULO_CORE_MIN_VERSION))
    first: tuple[str, str] | None = None
    for path, _, storage in _storage_regions(raw):
        version = _section(storage, "qumulo_core").get("version")
        parsed = _version(version)
        if parsed is None:
            continue
        field = f"{path}.storage.qumulo_core.version"
        if parsed < QUMULO_CORE_MIN_VERSION:
            yield Problem(
                field,
                f"{version} is older than {minimum}, the first release with the fetch-data API the "
                f"prewarm Job uses: stage {minimum} or newer (docs/runbooks/qumulo-core.md)",
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
    for path, _, storage in _storage_regions(raw):
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
    for path, region, _ in _storage_regions(raw):
        if region.get("nat") == "none":
            yield Problem(
                f"{path}.nat",
                "none leaves the CNQ nodes without the outbound access Qumulo requires for deployment and "
                "quorum (api.missionq.qumulo.com, api.nexus.qumulo.com): set nat: single (or per_az), or "
                "storage.enabled: false for this Region",
            )


def _vpc_cidrs(region: Mapping[str, Any]) -> list[str]:
    secondary = region.get("secondary_cidrs")
    blocks = [region.get("cidr"), *(secondary if isinstance(secondary, list) else [])]
    return [str(net) for net in map(_net, blocks) if net is not None]


def flow_log_filters_fit(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """A spoke's traffic metrics (hubspoke/flow_logs.py) must fit the metric filters of one log group."""
    hub = raw.get("hub")
    hub_cidrs = _vpc_cidrs(hub) if isinstance(hub, Mapping) else []
    for where, region in _regions(raw):
        own = _vpc_cidrs(region)
        if where == "hub" or not own or not hub_cidrs:
            continue
        count = filter_count(own_cidrs=own, hub_cidrs=hub_cidrs)
        if count > MAX_FILTERS_PER_LOG_GROUP:
            yield Problem(
                f"{where}.secondary_cidrs",
                f"this spoke's traffic metrics need {count} metric filters on its flow-log group, more than "
                f"{MAX_FILTERS_PER_LOG_GROUP} (CloudWatch Logs allows 100 per log group): a CIDR that does not "
                "end on /8, /16 or /24 is matched block by block; use fewer secondary CIDRs here or in the hub, "
                "or octet-aligned ones (one /16 instead of several /17s)",
            )


def peer_path_rules(raw: Mapping[str, Any]) -> dict[str, int]:
    """Inbound rules each Region's cross-Region security group needs: one per peer CIDR and port (ports.py)."""
    regions = dict(_regions(raw))
    if "hub" not in regions:
        return {}
    spoke_cidrs = sum(len(_vpc_cidrs(r)) for path, r in regions.items() if path != "hub")
    counts = {path: len(_vpc_cidrs(regions["hub"])) * len(FROM_HUB) for path in regions if path != "hub"}
    if "hub" in regions:
        counts["hub"] = spoke_cidrs * len(FROM_SPOKE)
    return counts


def peer_path_rules_within_quota(raw: Mapping[str, Any]) -> Iterator[Problem]:
    """Every peer CIDR adds one rule per port to the other side's group; CloudFormation fails past the quota.

    The quota is per security group (Amazon VPC User Guide, "Amazon VPC quotas": 60 inbound rules by default,
    L-0EA8095F); a Link stack that would add the 61st rule fails at deploy time, after the spoke's network.
    """
    regions = dict(_regions(raw))
    for path, needed in peer_path_rules(raw).items():
        region = regions[path]
        code = region.get("region", path)
        quotas = _section(region, "quotas")
        quota = quotas.get("security_group_rules", DEFAULT_SECURITY_GROUP_RULES)
        if not isinstance(quota, int) or isinstance(quota, bool) or needed <= quota:
            continue
        peers = "every spoke CIDR" if path == "hub" else "every hub CIDR"
        ports = len(FROM_SPOKE) if path == "hub" else len(FROM_HUB)
        stated = "the AWS default" if "security_group_rules" not in quotas else "the quota this file states"
        if needed > MAX_SECURITY_GROUP_RULES:
            yield Problem(
                f"{path}.quotas.security_group_rules",
                f"the cross-Region security group in {code} would need {needed} inbound rules ({ports} per CIDR "
                f"for {peers}); no account can hold more than {MAX_SECURITY_GROUP_RULES} per group while CNQ "
                "nodes carry two groups (rules per group times groups per interface is capped at 1,000): "
                "split the spokes over more environments or peer fewer CIDRs",
            )
            continue
        yield Problem(
            f"{path}.quotas.security_group_rules",
            f"the cross-Region security group in {code} needs {needed} inbound rules ({ports} per CIDR for "
            f"{peers}), over {stated} of {quota} rules per security group: request 'Inbound or outbound rules "
            f"per security group' ({SECURITY_GROUP_RULES_QUOTA_CODE}) of at least {needed} in {code} "
            f"(Service Quotas, Amazon VPC), then set {path}.quotas.security_group_rules: {needed}; "
            "or peer fewer CIDRs",
        )


RULES: tuple[Rule, ...] = (
    vpc_cidrs_do_not_overlap,
    one_spoke_per_region,
    az_ids_belong_to_region,
    cnq_node_count,
    cnq_instance_family,
    compute_only_where_hyperpod_runs,
    compute_mounts_local_storage,
    portal_stays_in_one_account,
    checkpoints_outside_dataset,
    public_endpoint_not_open_to_world,
    peering_quota,
    storage_is_pinned,
    qumulo_core_supported,
    storage_needs_egress,
    node_volumes_known,
    flow_log_filters_fit,
    peer_path_rules_within_quota,
)


def check(raw: Mapping[str, Any]) -> list[Problem]:
    return [problem for rule in RULES for problem in rule(raw)]
