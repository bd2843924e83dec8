"""Every name hubspoke gives a resource in AWS, made in this one module. No CDK: the CLI and the docs use it too.

What will this resource be called in the console? The answer is here. Names derive from the environment
(`config.environment`), the Region and the stack id (`hubspoke.topology.stack_id`); changing any function here
renames a deployed resource, which CloudFormation replaces (or refuses, for names other stacks read), so the
snapshots change and the change is reviewed as a migration. Names that need a deploy-time value (the HyperPod
lifecycle bucket carries part of its stack's ID) are built beside their construct from a prefix made here.
"""

from __future__ import annotations

from hubspoke.config.schema import HubSpokeConfig, RegionConfig

# The training job writes this name into every metric record, and the image holds hubspoke/training_metrics.py
# alone (workload/Dockerfile: no pydantic there), so the name is made there and listed here.
from hubspoke.training_metrics import log_group_name as training_log_group

__all__ = [
    "alarm_name",
    "application_log_group",
    "cnq_cluster_name",
    "cnq_parameter_prefix",
    "dashboard_name",
    "eks_cluster_name",
    "environment_prefix",
    "hyperpod_cluster_name",
    "link_reader_role_name",
    "peer_mtu_parameter_path",
    "peer_role_name",
    "stack_name",
    "training_image_repository",
    "training_log_group",
]

# Qumulo cluster names: 2 to 15 characters, letters, digits and inner dashes (cnq_cluster_name).
_REGION_WORDS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c", "northeast": "ne",
                 "southeast": "se", "northwest": "nw", "southwest": "sw"}  # fmt: skip


# Tag keys on the CNQ nodes' instances. Every node carries CNQ_CLUSTER_TAG with its cluster's name; the
# provisioner's EC2 permissions are scoped to it. The provisioner writes CNQ_CREATE_SENT_TAG on the first node
# when the cluster-create call was sent (runtime/cluster.py), and CNQ_CLAMP_SENT_TAG with the CloudFormation
# RequestId whose capacity clamp it sent (runtime/capacity.py): it may set only these two, on the stack's nodes.
CNQ_CLUSTER_TAG = "hubspoke:cnq-cluster"
CNQ_CREATE_SENT_TAG = "hubspoke:cnq-create-sent"
CNQ_CLAMP_SENT_TAG = "hubspoke:cnq-clamp-sent"


def environment_prefix(environment: str) -> str:
    """`hubspoke-<environment>`: the Stage id, and the prefix of every stack and named resource it deploys."""
    return f"hubspoke-{environment}"


def stack_name(environment: str, stack_id: str) -> str:
    """A stack's CloudFormation name: `hubspoke-<environment>-<kind>-<region>`."""
    return f"{environment_prefix(environment)}-{stack_id}"


def dashboard_name(environment: str) -> str:
    """The environment's CloudWatch dashboard (in the hub Region): `hubspoke-<environment>`."""
    return environment_prefix(environment)


def alarm_name(stack_name: str, key: str) -> str:
    """A CloudWatch alarm's name: its stack's name and its key, so two environments never collide."""
    return f"{stack_name}-{key}"


def eks_cluster_name(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The EKS cluster's name, which is also the value of Container Insights' `ClusterName` dimension."""
    return f"{environment_prefix(config.environment)}-{region.region}"


def hyperpod_cluster_name(config: HubSpokeConfig, region: RegionConfig) -> str:
    """The SageMaker HyperPod cluster's name (its node logs go to /aws/sagemaker/Clusters/<name>/<id>)."""
    return eks_cluster_name(config, region)


def training_image_repository(config: HubSpokeConfig) -> str:
    """The local image name `hubspoke image build` tags its build with; each Region's ECR repository has a name
    CloudFormation generated (the compute stack's TrainingImageRepositoryUri output)."""
    return f"{environment_prefix(config.environment)}-training"


def application_log_group(config: HubSpokeConfig, region: RegionConfig) -> str:
    """Container stdout and stderr as the CloudWatch observability add-on's Fluent Bit ships them."""
    return f"/aws/containerinsights/{eks_cluster_name(config, region)}/application"


def cnq_cluster_name(environment: str, region: str) -> str:
    """A Qumulo cluster name (2 to 15 characters, letters, digits and inner dashes): dev-use2, prod-apse1."""
    parts = region.split("-")
    short = parts[0] + "".join(_REGION_WORDS.get(p, p[:1]) for p in parts[1:-1]) + parts[-1]
    return f"{environment[: 14 - len(short)].rstrip('-')}-{short}"


def cnq_parameter_prefix(environment: str, cluster: str) -> str:
    """Where a CNQ cluster's SSM parameters (the staged package) and install log group live."""
    return f"/hubspoke/{environment}/cnq/{cluster}"


def peer_mtu_parameter_path(environment: str) -> str:
    """SSM path under which each spoke's Link stack publishes its CIDRs and MTU for the hub's hosts."""
    return f"/hubspoke/{environment}/peer-mtu/"


def peer_role_name(environment: str, spoke: str) -> str:
    """Role in the hub account that the spoke account assumes to accept the peering and read hub outputs."""
    return f"{environment_prefix(environment)}-peer-{spoke}"


def link_reader_role_name(environment: str, spoke: str) -> str:
    """Role in the spoke account that the hub account assumes to read the spoke's peering ID."""
    return f"{environment_prefix(environment)}-link-reader-{spoke}"
