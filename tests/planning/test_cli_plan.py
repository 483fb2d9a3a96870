"""``placement plan`` and ``placement inventory validate`` end to end, and every malformed input as a one-line error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from placement.cli import main
from placement.writers.planjson import load_plan
from placement.writers.schedulercfg import parse_schedulercfg

REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "inventory" / "edge-lab.yaml"
PROFILES = sorted((REPO / "examples" / "profiles").glob("*.json"))


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_plan_writes_every_artifact_and_is_optimal(profile, tmp_path, capsys):
    code, out, err = run(["plan", "--inventory", INVENTORY, "--profile", profile, "--out", tmp_path, "--json"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["results"][0]["status"] == "optimal"
    for name in ("plan.json", "schedulercfg", "redeploy.sh", "placement.json", "plan.svg", "plan.png", "plan.dot",
                 "vanilla/server.yaml"):
        assert (tmp_path / name).stat().st_size > 0, name
    plan = load_plan(tmp_path)
    assert plan.solver.status == "optimal" and plan.solver.gap == pytest.approx(0, abs=1e-4)
    assert plan.solver.name == "highs" and [s.name for s in plan.solver.stages] == ["wan", "server_cpu", "latency"]
    # every link within its usable bandwidth; sources where their data is born
    assert all(link.mbit <= link.usable_mbit + 1e-9 for link in plan.links)
    born = yaml.safe_load(INVENTORY.read_text())["pins"]["sources"]
    for a in plan.assignment:
        if a.vertex in born:
            hosts = born[a.vertex]
            assert a.host == (hosts if isinstance(hosts, str) else hosts[a.subtask])
    # schedulercfg holds one line per subtask with the planned address, and matches the golden file
    cfg = (tmp_path / "schedulercfg").read_text()
    assert parse_schedulercfg(cfg) == {a.label: a.address for a in plan.assignment}
    golden = REPO / "schedulercfg" / "golden" / f"{profile.stem}.edge-lab.schedulercfg"
    assert cfg == golden.read_text()
    svg = (tmp_path / "plan.svg").read_text()
    assert "Mbit/s" in svg and all(h in svg for h in ("rpi1", "server"))
    assert (tmp_path / "redeploy.sh").stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(tmp_path / "redeploy.sh")]).returncode == 0
    server_tm = yaml.safe_load((tmp_path / "vanilla" / "server.yaml").read_text())
    assert server_tm["external-resources"] == "server" and server_tm["external-resource.server.amount"] == 8


def test_plan_tables_and_compare(tmp_path, capsys):
    code, out, err = run(["plan", "--inventory", INVENTORY, "--profile", REPO / "examples/profiles/iot-sensors.json",
                          "--out", tmp_path, "--compare"], capsys)
    assert code == 0, err
    assert "optimal" in out and "Strategies compared" in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│ ") and "│" in line[2:]}
    assert "infeasible" in lines["all-on-server"] and "52.80" in lines["all-on-server"]  # the course link saturates
    assert "10.37" in lines["ilp"]


def test_plan_json_compare_numbers(tmp_path, capsys):
    code, out, _ = run(["plan", "--inventory", INVENTORY, "--profile", REPO / "examples/profiles/iot-sensors.json",
                        "--out", tmp_path, "--compare", "--json"], capsys)
    results = {r["strategy"]: r for r in json.loads(out)["results"]}
    assert code == 0
    assert results["all-on-server"]["feasible"] is False
    assert results["all-on-server"]["links"]["rpi1→server"] == pytest.approx(30000 * 220 * 8 / 1e6)
    assert results["ilp"]["wan_mbit"] <= results["greedy"]["wan_mbit"] + 1e-9


def test_infeasible_plan_exits_3_and_names_the_short_link(tmp_path, capsys):
    inv = yaml.safe_load(INVENTORY.read_text())
    for link in inv["links"]:
        link["bandwidth"] = "1mbit"
    path = tmp_path / "tight.yaml"
    path.write_text(yaml.safe_dump(inv))
    code, out, err = run(["plan", "--inventory", path, "--profile", REPO / "examples/profiles/iot-sensors.json",
                          "--out", tmp_path / "plan"], capsys)
    assert code == 3
    assert err.count("\n") == 1 and err.startswith("error: no placement fits: link rpi")
    assert "needs 3.63 Mbit/s, has 1 (0.9 usable)" in err
    assert not (tmp_path / "plan").exists()  # nothing written


def test_rate_scale_and_cbc(tmp_path, capsys):
    code, out, _ = run(["plan", "--inventory", INVENTORY, "--profile", REPO / "examples/profiles/nexmark-hot-items.json",
                        "--out", tmp_path, "--solver", "cbc", "--rate-scale", "2", "--json"], capsys)
    assert code == 0
    plan = load_plan(tmp_path)
    assert plan.solver.name == "cbc" and plan.rate_scale == 2
    single = json.loads(out)["results"][0]["wan_mbit"]
    code, out, _ = run(["plan", "--inventory", INVENTORY, "--profile", REPO / "examples/profiles/nexmark-hot-items.json",
                        "--out", tmp_path / "x1", "--json"], capsys)
    assert single == pytest.approx(2 * json.loads(out)["results"][0]["wan_mbit"])


def test_inventory_validate(capsys):
    code, out, _ = run(["inventory", "validate", INVENTORY], capsys)
    assert code == 0 and "rpi4b" in out and "valid" in out
    code, out, _ = run(["inventory", "validate", INVENTORY, "--json"], capsys)
    data = json.loads(out)
    rpi1 = next(h for h in data["hosts"] if h["name"] == "rpi1")
    assert (rpi1["cores"], rpi1["memory"], rpi1["speed"], rpi1["task_slots"]) == (4, 4096, 0.3, 4)
