"""Inventory + profiles -> shapes for one host (pure), and the shipped WAN profiles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from placement.errors import BadInput
from placement.inventory import Inventory, load_inventory
from placement.inventory.wan_profiles import ENV_VAR, WanProfile, list_profiles, load_profile, profiles_dir
from placement.netem.plan import shaped_hosts, shapes_for_host
from placement.netem.tc import Shape

REPO = Path(__file__).resolve().parents[2]
EDGE_LAB = REPO / "inventory" / "edge-lab.yaml"


@pytest.fixture
def inv() -> Inventory:
    return load_inventory(EDGE_LAB)


def _doc() -> dict:
    return yaml.safe_load(EDGE_LAB.read_text())


def test_edge_host_gets_its_uplink_to_the_server(inv: Inventory) -> None:
    assert shapes_for_host(inv, "rpi2") == ("eth0", [Shape("192.168.1.180", 50.0, delay_ms=50.0)])


def test_server_has_nothing_to_shape(inv: Inventory) -> None:
    assert shapes_for_host(inv, "server") == ("eth0", [])
    assert shaped_hosts(inv) == ["rpi1", "rpi2", "rpi3"]


def test_profile_overrides_every_figure_of_the_link(inv: Inventory) -> None:
    lte = load_profile("lte")
    _, shapes = shapes_for_host(inv, "rpi1", lte)
    assert shapes == [Shape("192.168.1.180", 20.0, delay_ms=35.0, jitter_ms=10.0, loss_pct=0.1, correlation_pct=25.0)]


def test_a_link_may_name_its_profile() -> None:
    doc = _doc()
    doc["links"][1]["profile"] = "3g"
    inv = Inventory.model_validate(doc)
    assert shapes_for_host(inv, "rpi2")[1] == [Shape("192.168.1.180", 2.0, 100.0, 25.0, 1.0, 25.0)]
    assert shapes_for_host(inv, "rpi1")[1][0].rate_mbit == 50.0  # other links keep their own figures
    mine = WanProfile(bandwidth="7mbit", delay="3ms")
    assert shapes_for_host(inv, "rpi2", link_profiles={"3g": mine})[1] == [Shape("192.168.1.180", 7.0, 3.0)]
    # the command-line profile wins over the link's
    assert shapes_for_host(inv, "rpi2", load_profile("constrained-5mbit"))[1] == [Shape("192.168.1.180", 5.0, 20.0)]


def test_unknown_link_profile_names_the_field() -> None:
    doc = _doc()
    doc["links"][2]["profile"] = "carrier-pigeon"
    inv = Inventory.model_validate(doc)
    with pytest.raises(BadInput, match=r"links\[2\]\.profile: unknown WAN profile 'carrier-pigeon' \(known: 3g, "):
        shapes_for_host(inv, "rpi3")


def test_unknown_host_and_missing_interface(inv: Inventory) -> None:
    with pytest.raises(BadInput, match=r"^inv.yaml: host: unknown host 'rpi9' \(hosts: server, rpi1, rpi2, rpi3\)$"):
        shapes_for_host(inv, "rpi9", source="inv.yaml")
    doc = _doc()
    del doc["hosts"][2]["interface"]
    with pytest.raises(BadInput, match=r"hosts\[2\]\.interface: host 'rpi2' has no 'interface'"):
        shapes_for_host(Inventory.model_validate(doc), "rpi2")


def test_host_names_need_a_resolver() -> None:
    doc = _doc()
    doc["hosts"][0]["address"] = "flink-server.lab"
    inv = Inventory.model_validate(doc)
    with pytest.raises(BadInput, match=r"hosts\[0\]\.address: 'flink-server.lab' is not an IP address"):
        shapes_for_host(inv, "rpi1")
    assert shapes_for_host(inv, "rpi1", resolve={"flink-server.lab": "10.9.8.7"}.__getitem__)[1][0].dest == "10.9.8.7"

    def fails(name: str) -> str:
        raise OSError("Name or service not known")

    with pytest.raises(BadInput, match=r"cannot resolve 'flink-server.lab': Name or service not known"):
        shapes_for_host(inv, "rpi1", resolve=fails)


EXPECTED_PROFILES = {  # name: (Mbit/s, delay ms, jitter ms, loss %)
    "wan-50mbit-50ms": (50, 50, 0, 0),
    "lte": (20, 35, 10, 0.1),
    "3g": (2, 100, 25, 1),
    "satellite": (10, 300, 10, 0.5),
    "constrained-5mbit": (5, 20, 0, 0),
}


def test_shipped_profiles_load_with_their_figures() -> None:
    assert set(EXPECTED_PROFILES) <= set(list_profiles())
    assert profiles_dir() == REPO / "netem"
    for name, (bw, delay, jitter, loss) in EXPECTED_PROFILES.items():
        p = load_profile(name)
        assert (p.name, p.bandwidth, p.delay, p.jitter, p.loss) == (name, bw, delay, jitter, loss)
        assert p.description


def test_profile_directory_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lab-wifi.yaml").write_text("bandwidth: 30mbit\ndelay: 2ms\n")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert list_profiles() == ["lab-wifi"]
    assert load_profile("lab-wifi").bandwidth == 30.0
    with pytest.raises(BadInput, match="unknown WAN profile 'lte' \\(known: lab-wifi\\)"):
        load_profile("lte")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bandwidth: fast\n", r"bad.yaml: bandwidth: 'fast' is not a rate like '50mbit'"),
        ("bandwidth: 5mbit\ndelay: -5ms\n", r"bad.yaml: delay: '-5ms' is not a time like '50ms'"),
        ("bandwidth: 5mbit\nloss: 150%\n", r"bad.yaml: loss: '150%' is more than 100%"),
        ("bandwidth: 5mbit\nrate: 5mbit\n", r"bad.yaml: rate: unknown field"),
        ("name: other\nbandwidth: 5mbit\n", r"bad.yaml: name: profile is named 'other' but its file says 'bad'"),
    ],
)
def test_bad_profile_files_name_file_and_field(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(BadInput, match=expected):
        load_profile("bad", tmp_path)


def test_profile_names_cannot_leave_the_directory(tmp_path: Path) -> None:
    (tmp_path / "outside.yaml").write_text("bandwidth: 1mbit\n")  # exists, but outside the profile directory
    (tmp_path / "profiles").mkdir()
    with pytest.raises(BadInput, match=r"unknown WAN profile '../outside'"):
        load_profile("../outside", tmp_path / "profiles")
