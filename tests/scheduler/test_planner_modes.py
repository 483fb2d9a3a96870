"""Custom mode places any subtask anywhere the rules allow; the lane limits of vanilla placement apply only in vanilla
mode (real solver, the example IoT profile: Source -> Parse -> Filter -> Enrich ==HASH==> Window Aggregate -> Sink)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import PlanOptions, build_problem, vanilla_whole_vertices
from placement.inventory import load_inventory
from placement.profile.format import load_profile

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "examples" / "profiles" / "iot-sensors.json"
PLACEMENT = str(Path(sys.executable).with_name("placement"))


def two_small_servers(tmp_path: Path) -> Path:
    """edge-lab with two servers of one slot each: the stateful Window Aggregate (parallelism 2) fits only split."""
    doc = yaml.safe_load((REPO / "inventory" / "edge-lab.yaml").read_text())
    server = next(h for h in doc["hosts"] if h["name"] == "server")
    server["task_slots"] = 1
    doc["hosts"].append({**server, "name": "server2", "address": "192.168.1.190"})
    path = tmp_path / "two-servers.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_only_the_operators_after_the_source_chain_are_whole_in_vanilla_mode() -> None:
    profile = load_profile(PROFILE)
    names = {v.id: v.name for v in profile.vertices}
    assert {names[v] for v in vanilla_whole_vertices(profile)} == {"Window Aggregate", "Sink: Readings"}
    inv = load_inventory(REPO / "inventory" / "edge-lab.yaml")
    assert build_problem(inv, profile, PlanOptions(placement_mode="custom")).whole_vertices == frozenset()
    vanilla = build_problem(inv, profile, PlanOptions(placement_mode="vanilla"))
    assert vanilla.whole_vertices == vanilla_whole_vertices(profile)
    # the same split assignment: fine in custom mode, a violation in vanilla mode
    custom = build_problem(inv, profile, PlanOptions(placement_mode="custom"))
    hosts = {
        "Source: Sensors": ["rpi1", "rpi2", "rpi3"],
        "Parse": ["rpi1", "rpi2", "rpi3"],
        "Filter": ["rpi1", "rpi2", "rpi3"],
        "Enrich": ["rpi1", "rpi2", "rpi3"],
        "Window Aggregate": ["server", "rpi1"],
        "Sink: Readings": ["server"],
    }
    assignment = {s.key: hosts[names[s.vertex_id]][s.index] for s in custom.subtasks}
    split = [v for v in evaluate(vanilla, assignment).violations if "vanilla placement cannot do" in v]
    assert split == [
        (
            "Window Aggregate is split over rpi1, server, which vanilla placement cannot do (a whole operator "
            "per host after the source chain; custom mode can)"
        )
    ]
    assert not [v for v in evaluate(custom, assignment).violations if "vanilla" in v]


def test_custom_mode_splits_an_operator_after_a_hash_edge_where_vanilla_cannot(tmp_path: Path) -> None:
    inv = two_small_servers(tmp_path)

    def plan(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                PLACEMENT,
                "plan",
                "--inventory",
                str(inv),
                "--profile",
                str(PROFILE),
                "--out",
                str(tmp_path / mode),
                "--mode",
                mode,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    custom = plan("custom")
    assert custom.returncode == 0, custom.stderr
    doc = json.loads((tmp_path / "custom" / "plan.json").read_text())
    window = sorted(a["host"] for a in doc["assignment"] if a["vertex"] == "Window Aggregate")
    assert window == ["server", "server2"]
    cfg = (tmp_path / "custom" / "schedulercfg").read_text()
    assert "Window Aggregate (1/2); 192.168.1.1" in cfg and "Window Aggregate (2/2); 192.168.1.1" in cfg

    vanilla = plan("vanilla")
    assert vanilla.returncode == 3, (vanilla.returncode, vanilla.stdout, vanilla.stderr)
    assert vanilla.stderr.startswith("error: ") and "Traceback" not in vanilla.stderr
    assert not (tmp_path / "vanilla").exists()
