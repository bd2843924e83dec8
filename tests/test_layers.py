"""The import contract in pyproject.toml ([tool.importlinter], run by `make lint`) covers every module it must."""

import tomllib
from pathlib import Path

import grimp

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _contract(name_start: str) -> dict[str, object]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"].startswith(name_start)]
    return contract


def test_lambda_runtimes_are_forbidden_every_module_outside_them() -> None:
    """A module added anywhere in the package must be out of the runtimes' reach, or a Lambda could import it
    and fail at its first cold start (the asset bundles the runtime package alone). The forbidden contract
    lists modules by name, so this fails the day a new one is not listed."""
    forbidden = set(_contract("Lambda runtimes import only")["forbidden_modules"])  # type: ignore[arg-type]
    graph = grimp.build_graph("hubspoke", cache_dir=None)

    def covered(module: str) -> bool:
        parts = module.split(".")
        return any(".".join(parts[:n]) in forbidden for n in range(1, len(parts) + 1))

    # Package containers are only docstrings; importing a runtime loads them anyway.
    containers = {
        "hubspoke",
        "hubspoke.constructs",
        *(m.rsplit(".", 1)[0] for m in graph.modules if m.endswith(".runtime")),
    }
    # The fact modules the canary's asset carries beside its runtime (bundled_code's facts): reachable by design.
    from hubspoke.constructs.canary.infrastructure import RUNTIME_FACTS

    shipped = {f"hubspoke.{name}" for name in RUNTIME_FACTS}
    outside = {m for m in graph.modules if ".runtime" not in m} - containers - shipped
    assert sorted(m for m in outside if not covered(m)) == []


def test_every_top_level_module_sits_in_a_layer() -> None:
    """A new top-level module outside the layers contract would be unchecked."""
    layers = _contract("Deployment layers")["layers"]
    named = {name.strip() for layer in layers for name in layer.replace(":", "|").split("|")}  # type: ignore[union-attr]
    top = {m for m in grimp.build_graph("hubspoke", cache_dir=None).modules if m.count(".") == 1}
    assert sorted(top - named) == []
