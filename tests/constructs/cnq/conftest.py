"""A CNQ provisioning world: moto for Secrets Manager, EC2 and CloudFormation, contract fakes of two clusters.

The events carry the StackId of a moto stack, as CloudFormation's requests do; its status starts at
CREATE_IN_PROGRESS (the handlers act only while CloudFormation still waits for a Create or Update).

`drive` plays the CDK Provider framework's part: on_event once, then is_complete with the event merged
with on_event's answer until it says IsComplete (aws-cdk-lib custom_resources, "Asynchronous Providers").
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import boto3
import pytest
from moto import mock_aws
from moto.cloudformation.models import cloudformation_backends
from moto.core import DEFAULT_ACCOUNT_ID

from hubspoke.config import HubSpokeConfig
from hubspoke.constructs.cnq.provisioning import QUERY_INTERVAL
from hubspoke.constructs.cnq.runtime import provisioner, session
from hubspoke.constructs.cnq.runtime.provisioner import is_complete, on_event
from hubspoke.names import CNQ_CLUSTER_TAG
from tests.conftest import QUMULO_CORE, minimal
from tests.fakes.ec2_addresses import draw_unused_addresses
from tests.fakes.moto_state import MotoState
from tests.fakes.qumulo import FakeQumulo

CONFIG = HubSpokeConfig.model_validate(minimal())
SPOKE = CONFIG.spokes[0]
HUB_FLOATING = ("10.10.64.11", "10.10.64.12", "10.10.64.13", "10.10.64.14")
SPOKE_FLOATING = ("10.20.64.11", "10.20.64.12", "10.20.64.13", "10.20.64.14")
HUB_PASSWORD = "Hub-Passw0rd!x"
SPOKE_PASSWORD = "Spoke-Passw0rd!y"
VERSION = QUMULO_CORE["version"]
MUTATING = ("POST", "PUT", "PATCH", "DELETE")
IMAGE, INSTANCE_TYPE = "ami-12c6146b", "i4i.8xlarge"  # an image moto serves; Qumulo's preferred family
# qumulo-api's dataclasses-json schemas use marshmallow 3 idioms that marshmallow deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
# Under mutmut (tools/mutation.py) the runtime folder is mutmut's copy, whose functions call mutmut's trampoline:
# a bundle of it cannot import where only the asset is (Lambda's sandbox, an isolated interpreter), and mutmut
# counts only in-process calls, so a test that runs the bundle elsewhere could never kill a mutant anyway.
RUNTIME_IS_MUTMUTS = any("mutmut" in f.read_text() for f in (Path(provisioner.__file__).parent).glob("*.py"))
UNDER_MUTMUT = pytest.mark.skipif(
    RUNTIME_IS_MUTMUTS, reason="the bundle would hold mutmut's trampolined runtime, which imports mutmut"
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under mutmut only: the tests that build no CloudFormation world (the SDK and the fake alone, well under a
    second each) first. mutmut stops at a mutant's first failing test (pytest -x), and the suite's own order puts
    the largest files first (tests/conftest.py), where a mutant that makes every login wait out its deadline costs
    a minute or two per test before a unit test would have caught it at once."""
    if RUNTIME_IS_MUTMUTS:
        items.sort(key=lambda item: bool({"world", "formed"} & set(getattr(item, "fixturenames", ()))))


class Context:
    """The slice of the Lambda context the handlers read."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def get_remaining_time_in_millis(self) -> int:
        return int(self.seconds * 1000)


# The handlers keep 20 s for the framework to report: 60 s of Lambda time is a 40 s budget per call, and
# TIGHT's 21.5 s a budget of 1.5 s: past the SDK's shortest request timeout (1 s, whole seconds:
# session.Deadline.request_timeout) with room for a login and a call on a loaded machine, and short, as tests of
# a deadline wait all of it out.
ROOMY = Context(60)
TIGHT = Context(21.5)


class VirtualClock:
    """The handlers' clock (the `time` of runtime.session and runtime.provisioner, once installed): the real
    one plus the time their own sleeps and the provider framework's waits between polls would have taken, so a
    test of a deadline or a patience does not wait it out. Sockets keep real time: a test of a request timeout
    needs the real clock."""

    def __init__(self) -> None:
        self.skipped = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.skipped

    def time(self) -> float:
        return time.time() + self.skipped

    def sleep(self, seconds: float) -> None:
        self.skipped += max(0.0, seconds)
        time.sleep(0)  # let the fakes' server threads run, as a real wait would

    def install(self, monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
        monkeypatch.setattr(session, "time", self)
        monkeypatch.setattr(provisioner, "time", self)
        return self


@pytest.fixture(params=["virtual", pytest.param("real", marks=pytest.mark.thorough)])
def clock(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, world: World
) -> VirtualClock | None:
    """The handlers' clock for a test that waits out a deadline or a patience: virtual in the fast tier, and
    the real one in the thorough tier's twin (None: drive polls with no wait between polls, as before).

    On the virtual clock the handlers' retries inside a poll (session.wait_until) are VIRTUAL_RETRY_SECONDS apart
    instead of `world`'s 0.02 s: an address that refuses is tried a few times within a deadline, not ~75 times.
    The virtual time a poll takes is the same either way (the last wait ends at the deadline)."""
    if request.param != "virtual":
        return None
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", str(VIRTUAL_RETRY_SECONDS))
    return VirtualClock().install(monkeypatch)


# The handlers' retry interval on the virtual clock (HUBSPOKE_POLL_SECONDS, session.poll_seconds): a tenth of
# production's 5 s, still several retries within TIGHT's 1.5-s budget.
VIRTUAL_RETRY_SECONDS = 0.5


def drive(
    event: dict[str, Any], *, polls: int = 60, context: Context = ROOMY, clock: VirtualClock | None = None
) -> dict[str, Any]:
    """on_event, then is_complete until complete; the merged answers, as CloudFormation would see them.

    At least `polls` polls and at least SETTLE_SECONDS of the handlers' time: some steps wait out a time (the
    portal delete's DeletePatienceSeconds), which a fast machine would not reach in a fixed number of instant
    polls. With a virtual clock the framework's wait between polls (the Provider's queryInterval,
    hubspoke/constructs/cnq/provisioning.py QUERY_INTERVAL; aws-cdk-lib custom_resources, "Asynchronous
    Providers") passes on it; on the real one the polls follow each other at once.
    """
    now = clock.monotonic if clock else time.monotonic
    started = on_event(event, context)
    merged = {**event, **started}
    settled = now() + SETTLE_SECONDS
    for poll in itertools.count(1):
        answer = is_complete(merged, context)
        if answer["IsComplete"]:
            return {**started, **answer}
        if clock:
            clock.sleep(QUERY_INTERVAL.to_seconds())
        if poll >= polls:
            if now() >= settled:
                raise AssertionError(f"not complete after {poll} polls and {SETTLE_SECONDS} s")
            time.sleep(0.01)
    raise AssertionError("unreachable")


def deploy(world: World, cluster_event: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """A Storage stack's deploy as far as the cluster goes: Custom::CnqCluster, then, as the stack's last
    resource, Custom::CnqPersistentStorage (hubspoke/stacks/storage.py); the cluster's answer."""
    result = drive(cluster_event, **kwargs)
    drive(world.storage_event(cluster_event), **kwargs)
    return result


# Longer than the waits the test events set by default (DeletePatienceSeconds 0.5 in portal_event); a test that
# sets a longer one expects to finish before it.
SETTLE_SECONDS = 2.0


def polls_until_complete(event: dict[str, Any], *, limit: int = 60) -> int:
    merged = {**event, **on_event(event, ROOMY)}
    for poll in range(1, limit + 1):
        if is_complete(merged, ROOMY)["IsComplete"]:
            return poll
    raise AssertionError(f"not complete after {limit} polls")


def mutations(fake: FakeQumulo) -> list[tuple[str, str]]:
    return [(m, p) for m, p in fake.calls if m in MUTATING and not p.startswith("/v1/session/login")]


@dataclass
class World:
    """Secrets in moto, EC2 instances standing in for the nodes, and helpers to build events."""

    arns: dict[str, str]
    stack_id: str
    # The instances `instances` made, by cluster name, in order.
    nodes: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def stack_status(self, status: str) -> None:
        """Move the stack to `status`, as CloudFormation would (moto has no in-progress states of its own)."""
        cloudformation_backends[DEFAULT_ACCOUNT_ID][CONFIG.hub.region].stacks[self.stack_id].status = status

    def instances(
        self, count: int, cluster: str, image: str = IMAGE, itype: str = INSTANCE_TYPE
    ) -> list[str]:
        ec2 = boto3.client("ec2")
        tags = [{"ResourceType": "instance", "Tags": [{"Key": CNQ_CLUSTER_TAG, "Value": cluster}]}]
        made = ec2.run_instances(ImageId=image, MinCount=count, MaxCount=count, InstanceType=itype,
                                 TagSpecifications=tags)  # fmt: skip
        ids = [i["InstanceId"] for i in made["Instances"]]
        self.nodes.setdefault(cluster, []).extend(ids)
        return ids

    def protected(self, instance_id: str) -> bool:
        answer = boto3.client("ec2").describe_instance_attribute(
            InstanceId=instance_id, Attribute="disableApiTermination"
        )
        return bool(answer["DisableApiTermination"]["Value"])

    def cluster_event(self, fake: FakeQumulo, side: str, instance_ids: list[str], *, request: str = "Create",
                      floating: tuple[str, ...] = (), exports: tuple[str, ...] = (), buckets: int = 4,
                      capacity_tb: int = 100, version: str = VERSION, **overrides: Any) -> dict[str, Any]:  # fmt: skip
        props = {
            "ClusterName": f"dev-{fake.name}",
            "NodeIps": fake.node_ips[: len(instance_ids)],
            "NodeInstanceIds": list(instance_ids),
            "FloatingIps": list(floating),
            "FloatingNetmask": "10.10.0.0/18" if side == "hub" else "10.20.0.0/18",
            "ObjectStorageUris": [
                f"https://{fake.name}-b{i}.s3.us-east-2.amazonaws.com/" for i in range(1, buckets + 1)
            ],
            "UsableCapacityBytes": str(capacity_tb * 10**12),
            "QumuloCoreVersion": version,
            "AdminSecretArn": self.arns[side],
            "ExportPaths": list(exports),
            "ClientCidrs": [CONFIG.hub.cidr if side == "hub" else SPOKE.cidr],
            "RestPort": str(fake.port),
            "WaitSeconds": "3000",
            **overrides,
        }
        return {"RequestType": request, "ResourceType": "Custom::CnqCluster", "LogicalResourceId": "Cluster",
                "PhysicalResourceId": f"cnq-cluster-dev-{fake.name}", "ResourceProperties": props,
                "StackId": self.stack_id, "StartedAt": str(time.time())}  # fmt: skip

    def storage_event(self, cluster_event: dict[str, Any]) -> dict[str, Any]:
        """The Custom::CnqPersistentStorage request of the same deploy (hubspoke/stacks/storage.py: the buckets
        and the capacity limit, from the cluster's properties), its OldResourceProperties included."""
        keys = ("ClusterName", "NodeIps", "NodeInstanceIds", "ObjectStorageUris", "UsableCapacityBytes",
                "AdminSecretArn", "QumuloCoreVersion", "RestPort", "WaitSeconds")  # fmt: skip
        event = {**cluster_event, "ResourceType": "Custom::CnqPersistentStorage",
                 "LogicalResourceId": "PersistentStorage", "PhysicalResourceId": "cnq-storage-dev"}  # fmt: skip
        for field in ("ResourceProperties", "OldResourceProperties"):
            if field in cluster_event:
                event[field] = {k: v for k, v in cluster_event[field].items() if k in keys}
        return event

    def portal_event(self, hub: FakeQumulo, spoke: FakeQumulo, request: str = "Create",
                     **overrides: str) -> dict[str, Any]:  # fmt: skip
        props = {
            "SpokeRestAddresses": spoke.node_ips, "SpokeSecretArn": self.arns["spoke"],
            "SpokePortalHosts": list(SPOKE_FLOATING), "HubRestAddresses": hub.node_ips,
            "HubSecretArn": self.arns["hub"], "HubPortalHosts": list(HUB_FLOATING),
            "HubRoot": CONFIG.hub.storage.dataset_path, "SpokeRoot": SPOKE.storage.dataset_path,
            "Mode": SPOKE.portal.mode, "EvictionFreeThreshold": str(SPOKE.portal.eviction_free_threshold),
            "ClientCidrs": [SPOKE.cidr], "HubRestPort": str(hub.port), "SpokeRestPort": str(spoke.port),
            "DeletePatienceSeconds": "0.5", "WaitSeconds": "3000", **overrides,
        }  # fmt: skip
        return {"RequestType": request, "ResourceType": "Custom::CnqPortal", "LogicalResourceId": "Portal",
                "PhysicalResourceId": "cnq-portal-Portal", "ResourceProperties": props,
                "OldResourceProperties": dict(props), "StackId": self.stack_id}  # fmt: skip


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    monkeypatch.setenv("HUBSPOKE_POLL_SECONDS", "0.02")
    monkeypatch.setenv("AWS_DEFAULT_REGION", CONFIG.hub.region)
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    draw_unused_addresses(monkeypatch)
    with mock_aws():
        yield _fresh_world()


def _fresh_world() -> World:
    """The admin secrets and the stack, CREATE_IN_PROGRESS: made through moto's API by the first test in a process,
    a copy of those backends (tests/fakes/moto_state.py) for every later one, as they are the same every time."""
    if _BASE:
        state, world = _BASE[0]
        state.restore()
        return copy.deepcopy(world)
    arns = {}
    for name, region, value in (
        ("hub", CONFIG.hub.region, HUB_PASSWORD),
        ("spoke", SPOKE.region, SPOKE_PASSWORD),
    ):
        client = boto3.client("secretsmanager", region_name=region)
        arns[name] = client.create_secret(Name=f"cnq-{name}", SecretString=value)["ARN"]
    world = World(arns, stack_id(CONFIG.hub.region))
    world.stack_status("CREATE_IN_PROGRESS")
    _BASE.append((MotoState.of(), copy.deepcopy(world)))
    return world


# The fresh world once per test process: (moto's state, the World).
_BASE: list[tuple[MotoState, World]] = []


def stack_id(region: str, endpoint_url: str | None = None) -> str:
    """A moto stack standing in for the Storage stack (its template is not what is under test)."""
    keys = {"aws_access_key_id": "x", "aws_secret_access_key": "x"} if endpoint_url else {}
    cfn = boto3.client("cloudformation", region_name=region, endpoint_url=endpoint_url, **keys)
    template = '{"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}'
    return str(cfn.create_stack(StackName="hubspoke-dev-storage", TemplateBody=template)["StackId"])


@pytest.fixture
def hub() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="hub", portal_hosts=HUB_FLOATING, formation_polls=6) as fake:
        yield fake


@pytest.fixture
def spoke() -> Iterator[FakeQumulo]:
    with FakeQumulo(name="spoke", portal_hosts=SPOKE_FLOATING, formation_polls=2) as fake:
        yield fake


@dataclass(frozen=True)
class _Built:
    """A world as its first test built it: moto's state, the World (secrets, stack, nodes), the fakes' clusters,
    and what the build returned."""

    moto: MotoState
    world: World
    clusters: list[dict[str, Any]]
    result: Any


# The worlds built so far in this test process, by name (once_per_process).
_BUILT: dict[str, _Built] = {}
T = TypeVar("T")


def once_per_process(name: str, world: World, fakes: Sequence[FakeQumulo], build: Callable[[], T]) -> T:
    """What `build()` makes of `world` and `fakes` through the handlers: the first test in a process that asks for
    `name` builds it; every later one gets a copy (moto's backends and the fakes' clusters, calls seen included:
    tests/fakes/moto_state.py and FakeQumulo.snapshot), as the build is the same for every test and costs a
    formation or more. `build()`'s result is copied too.

    Under mutmut every test but the formed world's builds its own: mutmut runs for a mutant only the tests that
    reached the mutated function in its stats run, and a test that restores a copy reaches none of the code its
    build ran, so it would never be picked to kill those mutants (the formed world was shared before these copies
    were, and stays so)."""
    if RUNTIME_IS_MUTMUTS and name != "formed":
        return build()
    built = _BUILT.get(name)
    if built is None:
        result = build()
        _BUILT[name] = _Built(MotoState.of(), copy.deepcopy(world), [f.snapshot() for f in fakes],
                              copy.deepcopy(result))  # fmt: skip
        return result
    built.moto.restore()
    for fake, cluster in zip(fakes, built.clusters, strict=True):
        fake.restore(cluster, peers=tuple(fakes))
    # In place: a test or fixture that also holds `world` sees the restored secrets, stack and nodes, not the ones
    # this test's fresh world made before the restore replaced moto's backends.
    vars(world).update(copy.deepcopy(vars(built.world)))
    return copy.deepcopy(built.result)


@pytest.fixture
def formed(world: World, hub: FakeQumulo, spoke: FakeQumulo) -> World:
    """Both clusters formed by the handler itself, with their Region-local exports (once per process)."""

    def build() -> None:
        hub_exports = (CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path)
        drive(world.cluster_event(hub, "hub", world.instances(4, "dev-hub"), floating=HUB_FLOATING,
                                  exports=hub_exports))  # fmt: skip
        drive(world.cluster_event(spoke, "spoke", world.instances(4, "dev-spoke"), floating=SPOKE_FLOATING,
                                  exports=(SPOKE.storage.checkpoint_path,)))  # fmt: skip

    once_per_process("formed", world, (hub, spoke), build)
    return world


@pytest.fixture
def portal(formed: World, hub: FakeQumulo, spoke: FakeQumulo) -> dict[str, Any]:
    """The formed clusters joined by the portal `portal_event`'s defaults ask for (read-only), created by the handler:
    the create's answer as `drive` merges it (built once per process, once_per_process)."""
    return once_per_process("portal", formed, (hub, spoke), lambda: drive(formed.portal_event(hub, spoke)))


@pytest.fixture
def five_node_hub(world: World, hub: FakeQumulo) -> list[str]:
    """The hub with a fifth node booted (FakeQumulo.add_nodes) and formed from all five by the handler (`drive` of
    `cluster_event`'s defaults): its nodes' instance IDs (built once per process, once_per_process)."""
    hub.add_nodes(1)

    def build() -> list[str]:
        instances = world.instances(5, "dev-hub")
        drive(world.cluster_event(hub, "hub", instances))
        return instances

    return once_per_process("five_node_hub", world, (hub,), build)


@pytest.fixture
def lone_hub(world: World, hub: FakeQumulo) -> list[str]:
    """The hub alone, as a Storage stack's first deploy (`deploy`) of `cluster_event`'s defaults leaves it: 4 nodes,
    4 buckets, 100 TB, no floating IPs, no exports, the stack still CREATE_IN_PROGRESS. Its nodes' instance IDs;
    built once per process (once_per_process)."""

    def build() -> list[str]:
        instances = world.instances(4, "dev-hub")
        deploy(world, world.cluster_event(hub, "hub", instances))
        return instances

    return once_per_process("lone_hub", world, (hub,), build)
