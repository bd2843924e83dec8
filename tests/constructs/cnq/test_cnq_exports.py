"""The hub's dataset exported read-only over NFS, the checkpoints read-write, converging from an earlier release.

Qumulo's host access rule has a Read-only option that gives the allowed hosts "limited access to the NFS export"
(administrator guide, "Configuring and Troubleshooting Host Access Rules for NFS Exports"); over REST it is the
restriction's `read_only` (qumulo-api 7.10.2.1, qumulo.rest.nfs NFSExportRestriction). Issue 40 item 4: a sealed
version is written only inside Qumulo (Shift-From, the REST seal), so no NFS client needs to write the dataset.
"""

from __future__ import annotations

import pytest

from tests.constructs.cnq.conftest import CONFIG, HUB_FLOATING, World, drive
from tests.fakes.qumulo import FakeQumulo

pytestmark = pytest.mark.filterwarnings("ignore::marshmallow.warnings.RemovedInMarshmallow4Warning")
DATASET, CHECKPOINTS = CONFIG.hub.storage.dataset_path, CONFIG.hub.storage.checkpoint_path


def _read_only(hub: FakeQumulo) -> dict[str, bool]:
    return {e["export_path"]: e["restrictions"][0]["read_only"] for e in hub.exports.values()}


def test_the_hub_exports_its_dataset_read_only(world: World, hub: FakeQumulo) -> None:
    instances = world.instances(4, "dev-hub")
    event = world.cluster_event(
        hub, "hub", instances, floating=HUB_FLOATING, exports=(CHECKPOINTS,), ReadOnlyExportPaths=[DATASET]
    )
    drive(event)
    assert _read_only(hub) == {DATASET: True, CHECKPOINTS: False}
    assert DATASET in hub.files, "the hub creates its dataset directory with the export"


def test_an_earlier_read_write_dataset_export_becomes_read_only(
    formed: World, hub: FakeQumulo, spoke: FakeQumulo
) -> None:
    """Every deploy is also a retry: a hub deployed by an earlier release (the dataset in ExportPaths) is updated in
    place by the next deploy (PATCH /v3/nfs/exports/{id}), with no second export of the same path. The `formed`
    hub is that earlier deploy: floating IPs, and the dataset and the checkpoints both in ExportPaths."""
    world, instances = formed, formed.nodes["dev-hub"]
    assert _read_only(hub) == {DATASET: False, CHECKPOINTS: False}
    update = world.cluster_event(
        hub,
        "hub",
        instances,
        request="Update",
        floating=HUB_FLOATING,
        exports=(CHECKPOINTS,),
        ReadOnlyExportPaths=[DATASET],
    )
    drive(update)
    assert _read_only(hub) == {DATASET: True, CHECKPOINTS: False}
    assert len(hub.exports) == 2
