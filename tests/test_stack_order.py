"""The deploy order `cdk deploy` follows, read from the synthesized cloud assembly, is docs/design.md §3's, in every
topology shape: hub Network -> [PeerAccess] -> spoke Network (peering) -> hub-side Link -> Storage (hub, then
spokes) -> Compute -> Ops -> the dashboard; and every stack that reads another's output deploys after it
(Fn::GetStackOutput is resolved when the reader is created or updated: CloudFormation Template Reference).

The expected edges are written from the design, not from hubspoke.topology's plan: a plan that drops a
dependency, or a stage that stops passing it to CDK, fails here.
"""

from __future__ import annotations

from hubspoke.topology import plan_stacks
from tests.conftest import Shape, get_stack_outputs, synth_dependencies, synth_regions, upstream


def test_stacks_deploy_in_the_designed_order(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    after = upstream(synth_dependencies(config))
    assert set(after) == set(templates)
    hub = config.hub.region
    expected: dict[str, set[str]] = {f"network-{hub}": set()}
    if config.hub.storage.enabled:
        expected[f"storage-{hub}"] = {f"network-{hub}"}
    for spoke in config.spokes:
        r = spoke.region
        expected[f"network-{r}"] = {f"network-{hub}"}
        expected[f"link-{r}"] = {f"network-{hub}", f"network-{r}"}
        if spoke.storage.enabled:  # the portal reaches the hub over the peering, through both sides' routes
            expected[f"storage-{r}"] = {f"network-{r}", f"link-{r}", f"storage-{hub}"}
            expected[f"ops-{r}"] = {f"storage-{r}", f"storage-{hub}"}
    for region in config.regions():
        if region.compute.enabled:  # the volumes mount the Region's own CNQ
            expected[f"compute-{region.region}"] = {f"network-{region.region}", f"storage-{region.region}"}
    expected[f"dashboard-{hub}"] = {s for s in templates if s.startswith(("ops-", "compute-"))}
    for sid, needed in expected.items():
        assert sid in after, f"{shape.name}: no stack {sid}"
        assert needed <= after[sid], f"{sid} may deploy before {sorted(needed - after[sid])}"
    assert after[f"network-{hub}"] == set(), "the hub network is first"


def test_hub_stacks_never_wait_for_a_spoke(shape: Shape) -> None:
    """Adding a spoke adds stacks and changes none (docs/design.md §3): only the per-spoke stacks of the hub Region
    (PeerAccess, Link) and the environment-wide dashboard may follow a spoke's stacks."""
    config, templates = shape.config, shape.templates
    after = upstream(synth_dependencies(config))
    meta = {sid: t["Metadata"]["hubspoke"] for sid, t in templates.items()}
    for sid, m in meta.items():
        if m["region"] == config.hub.region and "spoke" not in m and m["kind"] != "dashboard":
            assert not [
                d for d in after[sid] if meta[d]["region"] != config.hub.region or "spoke" in meta[d]
            ], sid


def test_every_reader_deploys_after_the_stack_it_reads(shape: Shape) -> None:
    config, templates = shape.config, shape.templates
    after = upstream(synth_dependencies(config))
    by_name = {p.name: p.id for p in plan_stacks(config)}
    reads = 0
    for sid, template in templates.items():
        for ref in get_stack_outputs(template):
            reads += 1
            assert by_name[ref["StackName"]] in after[sid], f"{sid} reads {ref} but may deploy before it"
    assert reads > 0


def test_every_stack_deploys_to_the_region_the_design_places_it_in(shape: Shape) -> None:
    """docs/design.md §3: the hub Region holds its Network, Storage, Compute, the dashboard and, for each spoke,
    the hub-side stacks that serve it (its Link; its PeerAccess role when the accounts differ), whose ids name
    the spoke; every other stack deploys to the Region its id names. Read from the cloud assembly's stack
    environments, the Region `cdk deploy` sends each template to."""
    config = shape.config
    hub = config.hub.region
    regions = synth_regions(config)
    assert set(regions) == set(shape.templates)
    for sid, region in regions.items():
        kind, named = (
            sid.split("-", 1)
            if not sid.startswith("peer-access-")
            else ("peer-access", sid.removeprefix("peer-access-"))
        )
        assert region == (hub if kind in ("link", "peer-access", "dashboard") else named), sid
    assert set(regions.values()) == {r.region for r in config.regions()}
