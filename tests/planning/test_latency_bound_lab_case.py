"""The lab case where a latency bound changes the plan (benchmarks/latency_bound_lab.py, issue 25), offline: the
profile that benchmark recorded on the lab (the IoT job with ``--alarm-shares 0.3,0.1 --enrich-note 3293``, unpinned
at 200 readings/s per source, Flink 2.3) planned on ``inventory/lab-latency.yaml`` at the benchmark's 600/s; and the
benchmark's verdict on the figures it measures.

Enrich grows every alarm to ~3.3 KB and the server has one slot, so only one Enrich subtask runs there. Without a
bound the ILP keeps rpi1's (3x the alarms) on the server and grows rpi2's on rpi2, filling ~80 % of rpi2's 2 Mbit/s
uplink; bounded at 450 ms it grows rpi1's on rpi1 (8 Mbit/s) instead: more WAN, less queue.
"""

from __future__ import annotations

import pytest
import yaml
from latency_bound_lab import SPEC, failures, note_bytes
from planning_factories import cli_run

from placement.costmodel import build_problem
from placement.costmodel.model import PlanOptions
from placement.inventory import Inventory, load_inventory
from placement.profile.format import load_profile
from placement.solver import SolverOptions, solve

PROFILE = "tests/planning/data/iot-enrich-grows-profile.json"
INVENTORY = "inventory/lab-latency.yaml"
SCALE = 3.0  # profiled at 200/s, planned at the benchmark's 600/s


def plan(bound_ms: float | None):
    doc = load_inventory(INVENTORY).model_dump(mode="json", by_alias=True)
    doc["policy"]["max_latency_ms"] = bound_ms
    problem = build_problem(Inventory.model_validate(doc), load_profile(PROFILE), PlanOptions(rate_scale=SCALE))
    result = solve(problem, SolverOptions())
    enrich = (
        {s.index: result.assignment[s.key] for s in problem.subtasks if s.vertex_name == "Enrich"}
        if result.assignment
        else {}
    )
    links = {lk.host: lk for lk in result.cost.links} if result.cost else {}
    worst = max((p.latency_ms for p in result.cost.paths), default=None) if result.cost else None
    return result, enrich, links, worst


def test_the_wan_optimal_plan_fills_the_narrow_uplink_and_the_bound_moves_enrich_to_the_wide_one():
    free, free_enrich, free_links, free_ms = plan(None)
    assert free.status == "optimal"
    assert free_enrich == {0: "server", 1: "rpi2"}  # the larger stream's Enrich on the server's one slot
    assert 0.75 <= free_links["rpi2"].mbit / free_links["rpi2"].bandwidth_mbit <= 0.9
    assert free_ms > 450

    bounded, enrich, links, worst = plan(450)
    assert bounded.status == "optimal"
    assert enrich == {0: "rpi1", 1: "server"}
    assert worst <= 450
    assert links["rpi2"].mbit / links["rpi2"].bandwidth_mbit < 0.05  # rpi2 sends only its filtered readings
    assert links["rpi1"].mbit / links["rpi1"].bandwidth_mbit < 0.7
    # the price: more WAN in all (the lexicographic WAN stage gave way to the bound)
    assert sum(lk.mbit for lk in links.values()) > 2 * sum(lk.mbit for lk in free_links.values())


def test_a_bound_below_what_any_placement_can_do_names_the_path(tmp_path, capsys):
    result, *_ = plan(200)  # five exchanges' flush waits alone are ~230 ms
    assert result.status == "infeasible"
    doc = load_inventory(INVENTORY).model_dump(mode="json", by_alias=True)
    doc["policy"]["max_latency_ms"] = 200
    inv = tmp_path / "bounded.yaml"
    inv.write_text(yaml.safe_dump(doc))
    code, _out, err = cli_run(
        ["plan", "--inventory", inv, "--profile", PROFILE, "--rate-scale", SCALE, "--out", tmp_path / "plan"], capsys
    )
    assert code != 0
    assert "Source: Sensors → Parse → Filter → Enrich → Window Aggregate → Sink: Readings needs" in err
    assert "its bound is 200 ms" in err and len(err.strip().splitlines()) == 1


def test_the_note_fills_the_asked_share_of_the_narrow_uplink():
    # 600 readings/s x 10 % alarms = 60 enriched alarms/s on rpi2; 80 % of 2 Mbit/s = 200 kB/s -> 3333 B per alarm
    assert note_bytes(600, 2.0, 0.8) == 3333 - 40
    assert note_bytes(600, 2.0, 0.0) == 0
    assert SPEC.sources[0].vertex == "Source: Sensors"


def row(
    strategy: str,
    mapping: dict,
    upper: float,
    p99: float | None,
    *,
    status: str = "optimal",
    throughput: float = 1200.0,
    placed: bool = True,
) -> dict:
    """A benchmark row as plan_and_run makes it (one run)."""
    lat = [
        {
            "source": "Source: Sensors",
            "sink": "Sink: Readings",
            "expected_ms": upper,
            "upper_ms": upper,
            "markers_p50": None if p99 is None else p99 * 0.7,
            "markers_p99": p99,
            "event_p50": None,
            "event_p99": None,
            "runs": 1,
        }
    ]
    return {
        "strategy": strategy,
        "status": status,
        "mapping": mapping,
        "upper_ms": upper,
        "expected_ms": upper,
        "runs": [{}],
        "placed": placed,
        "throughput": throughput,
        "target": 1200.0,
        "source_bp": 0.0,
        "latency": lat,
    }


FREE = {"Enrich": ["server", "rpi2"]}
MOVED = {"Enrich": ["rpi1", "server"]}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ({"wan-optimal": row("wan-optimal", FREE, 593, 376), "bounded": row("bounded", MOVED, 290, 302)}, []),
        (
            {"wan-optimal": row("wan-optimal", FREE, 420, 376), "bounded": row("bounded", MOVED, 290, 302)},
            ["nothing for the bound to change"],
        ),
        (
            {"wan-optimal": row("wan-optimal", FREE, 593, 376), "bounded": row("bounded", FREE, 290, 302)},
            ["did not change the plan"],
        ),
        (
            {"wan-optimal": row("wan-optimal", FREE, 593, 376), "bounded": row("bounded", MOVED, 290, 460)},
            ["breaks the 450 ms bound", "not below the WAN-optimal plan's"],
        ),
        (
            {
                "wan-optimal": row("wan-optimal", FREE, 593, 376),
                "bounded": row("bounded", MOVED, 290, 302, throughput=900.0, placed=False),
            },
            ["bounded did not run as planned", "bounded does not hold the rate"],
        ),
        (
            {
                "wan-optimal": row("wan-optimal", FREE, 593, 376),
                "bounded": {"strategy": "bounded", "status": "infeasible"},
            },
            ["the bounded ILP found no plan (infeasible)"],
        ),
    ],
)
def test_the_verdict_names_what_the_lab_case_did_not_show(rows, expected):
    found = failures(rows, 450.0)
    assert len(found) == len(expected), found
    for want, got in zip(expected, found):
        assert want in got
