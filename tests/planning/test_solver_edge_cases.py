"""Edges of the solver an outside check found: empty objective stages on CBC, operator pins on unborn sources,
shortfalls smaller than the printed precision."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from planning_factories import inventory, problem, profile, vertex

from placement.costmodel import evaluate
from placement.solver import SolverOptions, solve
from placement.solver.result import Shortage
from support.cli import run_main

REPO = Path(__file__).resolve().parents[2]


# An unpinned source runs on the server, so nothing can reach rpi1: the WAN and latency stages have no terms.
NOTHING_REACHES_THE_EDGE = ([vertex("Source: S"), vertex("Map")], [("Source: S", "Map", "FORWARD")])
# Born on rpi1 behind a 0 ms link: WAN and server CPU have terms, the latency stage has none.
ZERO_DELAY = (
    [vertex("Source: S"), vertex("Map", rout=10), vertex("Sink: T", rout=0)],
    [("Source: S", "Map", "FORWARD"), ("Map", "Sink: T", "FORWARD")],
)


@pytest.mark.parametrize(
    "case,pins,empty",
    [
        (NOTHING_REACHES_THE_EDGE, None, ["wan", "latency"]),
        (ZERO_DELAY, {"sources": {"Source: S": "rpi1"}}, ["latency"]),
    ],
    ids=["nothing-reaches-the-edge", "zero-delay"],
)
@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_stages_whose_objective_has_no_terms_are_solved(case, pins, empty, solver):
    pr = problem(inventory([{"name": "rpi1", "delay": "0ms"}], pins=pins), profile(*case))
    result = solve(pr, SolverOptions(solver=solver))
    assert result.status == "optimal" and result.notes == ()
    assert result.solver == solver and [st.name for st in result.stages] == ["wan", "server_cpu", "latency"]
    stages = {st.name: st.info for st in result.stages}
    for name in empty:
        assert stages[name].status == "optimal" and stages[name].objective == 0.0
    # the plan is the best one: the same as HiGHS's, checked by the independent evaluator
    reference = solve(pr, SolverOptions(solver="highs"))
    assert result.cost.wan_mbit == pytest.approx(reference.cost.wan_mbit)
    assert result.cost.server_cores == pytest.approx(reference.cost.server_cores)
    assert evaluate(pr, result.assignment).feasible


def test_cli_plans_with_cbc_when_no_subtask_can_reach_an_edge_host(tmp_path, capsys):
    inv = yaml.safe_load((REPO / "inventory" / "edge-lab.yaml").read_text())
    inv["pins"] = {}  # every source born at the server side: the WAN stage has no terms
    path = tmp_path / "no-pins.yaml"
    path.write_text(yaml.safe_dump(inv))
    code, out, err = run_main(
        [
            "plan",
            "--inventory",
            path,
            "--profile",
            REPO / "examples/profiles/iot-sensors.json",
            "--out",
            tmp_path / "plan",
            "--solver",
            "cbc",
        ],
        capsys,
    )
    assert code == 0, err
    assert "optimal (cbc" in out and "found no solution" not in out
    assert (tmp_path / "plan" / "plan.json").is_file()


def test_tiny_cpu_shortfall_is_printed_with_the_digits_that_show_it():
    # server: 1 core at the 80 % target = 0.8 usable; the job needs 0.803
    job = profile(
        [vertex("Source: S", busy=401.5), vertex("Sink: T", rout=0, busy=401.5)], [("Source: S", "Sink: T", "FORWARD")]
    )
    pr = problem(inventory([], server={"cores": 1}), job)
    result = solve(pr)
    assert result.status == "infeasible"
    assert [(s.kind, s.resource) for s in result.shortages] == [("cpu", "server")]
    assert result.shortages[0].needed == pytest.approx(0.803)
    assert result.reason == "host server needs 0.803 cores, has 1 (0.800 usable)"


@pytest.mark.parametrize(
    "shortage,message",
    [
        (Shortage("cpu", "rpi1", 0.8034, 0.8, 1), "host rpi1 needs 0.803 cores, has 1 (0.800 usable)"),
        (Shortage("cpu", "rpi1", 3.5, 3.2, 4), "host rpi1 needs 3.50 cores, has 4 (3.20 usable)"),
        (
            Shortage("link", "rpi1→server", 45.02, 45.0, 50),
            "link rpi1→server needs 45.02 Mbit/s, has 50 (45.00 usable)",
        ),
        (
            Shortage("link", "rpi1→server", 0.4504, 0.45, 0.5),
            "link rpi1→server needs 0.4504 Mbit/s, has 0.5 (0.4500 usable)",
        ),
        (Shortage("memory", "rpi1", 3276.9, 3276.8, 4096), "host rpi1 needs 3276.9 MiB, has 4096 (3276.8 usable)"),
    ],
)
def test_shortfall_messages_never_print_needed_equal_to_usable(shortage, message):
    assert shortage.message == message
