"""What-if inventory edits (placement/inventory/whatif.py): ``--add-host`` and ``--link`` on ``placement plan``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from planning_factories import cli_run, inventory

from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.inventory.whatif import (
    AddHosts,
    LinkEdit,
    apply_whatif,
    parse_add_host,
    parse_link,
)

ARGS = ["plan", "--inventory", "inventory/edge-lab.yaml", "--profile", "examples/profiles/iot-sensors.json"]


def test_parse():
    assert parse_add_host("rpi4b=3") == AddHosts("rpi4b", 3)
    assert parse_link("rpi1:10mbit") == LinkEdit("rpi1", 10.0)
    assert parse_link("rpi1:512kbit:20ms") == LinkEdit("rpi1", 0.512, 20.0)
    for bad in ("rpi4b", "rpi4b=0", "=3", "rpi4b=x", "rpi 4b=1"):
        with pytest.raises(BadInput, match="--add-host"):
            parse_add_host(bad)
    for bad in ("rpi1", "rpi1:", ":10mbit", "rpi1:fast", "rpi1:0mbit", "rpi1:10mbit:soon", "a:b:c:d"):
        with pytest.raises(BadInput, match="--link"):
            parse_link(bad)


def test_added_pis_copy_the_template_and_take_over_its_births():
    inv = inventory(
        [{"name": "rpi1", "bandwidth": "20mbit", "delay": "30ms"}, {"name": "rpi2"}],
        pins={
            "sources": {"Source: S": ["rpi1", "rpi2", "rpi1", "rpi1"]},
            "operators": {"P": ["rpi1"]},
            "forbid": {"Q": "rpi1"},
        },
    )
    edited, notes = apply_whatif(inv, [AddHosts("rpi1", 2)], sources={"Source: S": 4})
    names = [h.name for h in edited.hosts]
    assert names[-2:] == ["rpi1-add1", "rpi1-add2"]
    added = edited.host("rpi1-add1")
    assert added.role == "edge" and added.model == "rpi4b" and added.cores == 4
    link = edited.uplink("rpi1-add1")
    assert (link.to, link.bandwidth, link.delay) == ("server", 20.0, 30.0)
    # rpi1's three born subtasks dealt over rpi1 and its two copies; rpi2's stays
    assert edited.pins.sources["Source: S"] == ["rpi1", "rpi2", "rpi1-add1", "rpi1-add2"]
    assert edited.pins.operators["P"] == ["rpi1", "rpi1-add1", "rpi1-add2"]
    assert set(edited.pins.forbid["Q"]) == {"rpi1", "rpi1-add1", "rpi1-add2"}
    assert inv.pins.sources["Source: S"] == ["rpi1", "rpi2", "rpi1", "rpi1"]  # the loaded inventory is untouched
    assert notes and "rpi1-add1" in notes[0]


def test_a_model_name_picks_the_busiest_pi_of_that_model_and_an_idle_copy_is_said():
    inv = load_inventory("inventory/edge-lab.yaml")
    edited, notes = apply_whatif(inv, [AddHosts("rpi5", 1)], sources={"Source: Cameras": 1})
    added = edited.host(edited.hosts[-1].name)
    assert added.model == "rpi5" and added.speed == 0.5  # the model's figures, not the template's
    assert added.name == "rpi1-add1"  # rpi1: the edge host with the most births of this job (Cameras)
    assert any("takes over no data" in n for n in notes)  # Cameras has one subtask: it stays on rpi1


def test_link_edit_and_server_copy():
    inv = load_inventory("inventory/edge-lab.yaml")
    edited, notes = apply_whatif(inv, [AddHosts("server", 1)], [LinkEdit("rpi3", 5.0, 80.0)])
    assert edited.host("server-add1").role == "server" and edited.host("server-add1").cores == 8
    assert (edited.uplink("rpi3").bandwidth, edited.uplink("rpi3").delay) == (5.0, 80.0)
    assert any("rpi3→server at 5 Mbit/s (was 50 Mbit/s)" in n for n in notes)
    with pytest.raises(BadInput, match="--link: 'server' is not an edge host"):
        apply_whatif(inv, links=[LinkEdit("server", 5.0)])
    with pytest.raises(BadInput, match="--add-host: 'nope' is neither a host"):
        apply_whatif(inv, [AddHosts("nope", 1)])


def test_cli_what_if_changes_the_plan_not_the_file(tmp_path, capsys):
    file_before = Path("inventory/edge-lab.yaml").read_text()
    code, out, err = cli_run([*ARGS, "--out", tmp_path, "--json", "--link", "rpi1:4mbit"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["inventory"].endswith("(what-if)") and "rpi1→server at 4 Mbit/s" in summary["what_if"][0]
    assert summary["results"][0]["links"]["rpi1→server"] <= 4 * 0.9 + 1e-6
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["inventory"]["digest"] != load_inventory("inventory/edge-lab.yaml").digest()  # apply refuses it
    assert any("what-if" in w for w in plan["warnings"])
    assert Path("inventory/edge-lab.yaml").read_text() == file_before


def test_cli_what_better_uplinks_and_a_server_buy(tmp_path, capsys):
    """iot-sensors on the edge lab: Parse's one thread on rpi3 runs out first at 1.088× (it cannot leave the Pi: all of
    its input would cross the 50 Mbit/s uplink). Faster uplinks let Parse move to the server, until the sources' own
    threads, born on the Pis, run out at 1.905×; a second server on top buys nothing — a thread is not helped by more
    hosts."""

    def max_rate(*extra):
        code, out, err = cli_run([*ARGS, "--out", tmp_path, "--max-rate", "--json", *extra], capsys)
        assert code == 0, err
        return json.loads(out)["max_rate"]

    links = ["--link", "rpi1:500mbit", "--link", "rpi2:500mbit", "--link", "rpi3:500mbit"]
    base, uplinks, server = max_rate(), max_rate(*links), max_rate(*links, "--add-host", "server=1")
    assert base["binding"][0]["resource"] == "rpi3" and base["binding"][0]["kind"] == "thread"
    assert base["scale"] == pytest.approx(1.0884, abs=2e-4)
    assert uplinks["binding"][0]["kind"] == "thread" and uplinks["scale"] == pytest.approx(1.9048, abs=2e-4)
    assert server["scale"] == pytest.approx(uplinks["scale"], rel=1e-3)


@pytest.mark.parametrize(
    "option,value",
    [
        ("--add-host", "rpi4b"),
        ("--add-host", "nope=2"),
        ("--link", "rpi1"),
        ("--link", "rpi9:10mbit"),
        ("--link", "rpi1:-5mbit"),
    ],
)
def test_cli_bad_what_if_is_one_line_naming_the_option(tmp_path, capsys, option, value):
    code, out, err = cli_run([*ARGS, "--out", tmp_path, option, value], capsys)
    assert code == 2, out + err
    assert err.startswith(f"error: {option}:") and err.strip().count("\n") == 0 and "Traceback" not in err
    assert not (tmp_path / "plan.json").exists()
