"""The fleet decomposition (placement/solver/fleet/) against the exact model on mid-size instances, its bound,
its forms (columns, compact), infeasibility, and ``placement plan --method``."""

from __future__ import annotations

import json

import pytest
from hard_jobs import instance as hard_instance
from planning_factories import cli_run, inventory, profile, vertex
from random_jobs import instance as random_instance

from placement.costmodel import build_problem
from placement.costmodel.model import PlanOptions
from placement.errors import BadInput
from placement.solver import SolverOptions, solve
from placement.solver.fleet import plans as pi_columns
from placement.solver.fleet import solve_decomposed
from placement.solver.methods import AUTO_SUBTASKS, choose_method, solve_with

REL = 1e-6


def same_optimum(a, b) -> bool:
    """Equal WAN and server CPU (within the lexicographic tolerance) and latency."""

    def close(x: float, y: float) -> bool:
        return abs(x - y) <= REL * max(1.0, abs(x)) + 1e-6

    return close(a.wan_mbit, b.wan_mbit) and close(a.server_cores, b.server_cores) and close(a.latency_ms, b.latency_ms)


@pytest.mark.parametrize(
    "family,subtasks,hosts,seed",
    [
        ("hard", 300, 30, 1),
        ("hard", 600, 60, 2),
        ("hard", 1000, 100, 3),
        ("random", 500, 50, 1),
        ("random", 1000, 100, 2),
    ],
)
def test_decomposition_finds_the_exact_optimum_on_mid_size_instances(family, subtasks, hosts, seed):
    gen = hard_instance if family == "hard" else random_instance
    pr = build_problem(*gen(subtasks, hosts, seed))
    exact, decomposed = solve(pr), solve_decomposed(pr)
    assert exact.status == decomposed.status == "optimal"
    assert decomposed.cost.feasible  # the independent evaluator's verdict on the packed plan
    assert same_optimum(exact.cost, decomposed.cost)
    wan = decomposed.stages[0].info
    assert wan.bound <= exact.cost.wan_mbit + 1e-6  # a valid lower bound: never above the true optimum
    assert any("decomposed" in n for n in decomposed.notes)


def test_the_gap_is_measured_against_a_bound_that_holds():
    """On a fleet of 2 000 subtasks with a 1 % gap allowed: every stage's bound is at most the objective, and the WAN
    bound at most the exact model's optimum."""
    pr = build_problem(*hard_instance(2000, 204, 4, servers=4))
    decomposed = solve_decomposed(pr, SolverOptions(gap=0.01))
    exact = solve(pr)
    for stage in decomposed.stages:
        assert stage.info.bound is not None and stage.info.bound <= stage.info.objective + 1e-6
        assert stage.info.gap <= 0.01
    assert decomposed.stages[0].info.bound <= exact.cost.wan_mbit + 1e-6
    assert decomposed.cost.wan_mbit <= exact.cost.wan_mbit * 1.01 + 1e-6


def test_compact_form_is_the_same_optimum(monkeypatch):
    """A Pi with more plans than the column form enumerates is planned by the compact form: same optimum."""
    pr = build_problem(*hard_instance(400, 40, 5))
    columns = solve_decomposed(pr)
    monkeypatch.setattr(pi_columns, "MAX_PLANS", 1)  # every Pi has at least two plans: the column form gives up
    pi_columns._IDEALS.clear()
    compact = solve_decomposed(pr)
    assert any("compact form" in n for n in compact.notes) and any("column form" in n for n in columns.notes)
    assert compact.status == columns.status == "optimal"
    assert same_optimum(compact.cost, columns.cost)


def test_infeasible_fleet_names_the_short_link():
    inv = inventory(
        [{"name": "rpi1", "bandwidth": "1mbit"}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi2"]}}
    )
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=5000, busy=50, bpr=400),
            vertex("W", 1, rin=10000, rout=10, busy=100, stateful=True),
        ],
        [("Source: S", "W", "HASH")],
    )
    pr = build_problem(inv, prof)
    exact, decomposed = solve(pr), solve_decomposed(pr)
    assert exact.status == decomposed.status == "infeasible"
    assert decomposed.shortages[0].kind == "link" and decomposed.shortages[0].resource == "rpi1→server"
    assert decomposed.shortages[0].needed == pytest.approx(exact.shortages[0].needed, rel=1e-6)
    assert decomposed.causes  # the operator kept off the Pi is named, as by the exact model


def test_method_choice():
    small = build_problem(*hard_instance(200, 20, 1))
    assert choose_method(small, "auto", SolverOptions()) == "exact"
    assert choose_method(small, "decompose", SolverOptions()) == "decompose"
    inv, prof = hard_instance(AUTO_SUBTASKS + 500, 600, 1)
    big = build_problem(inv, prof)
    assert choose_method(big, "auto", SolverOptions()) == "decompose"
    assert choose_method(big, "auto", SolverOptions(solver="cbc")) == "exact"
    vanilla = build_problem(inv, prof, PlanOptions(placement_mode="vanilla"))
    assert choose_method(vanilla, "auto", SolverOptions()) == "exact"
    with pytest.raises(BadInput, match="--method"):
        choose_method(vanilla, "decompose", SolverOptions())
    result = solve_with(big, SolverOptions(gap=0.01))
    assert result.cost.feasible and any("decomposed" in n for n in result.notes)


def test_cli_method_decompose(tmp_path, capsys):
    args = [
        "plan",
        "--inventory",
        "inventory/edge-lab.yaml",
        "--profile",
        "examples/profiles/branching-join.json",
        "--json",
    ]
    code_e, out_e, _ = cli_run([*args, "--out", tmp_path / "e", "--method", "exact"], capsys)
    code_d, out_d, err = cli_run([*args, "--out", tmp_path / "d", "--method", "decompose"], capsys)
    assert code_e == code_d == 0, err
    e, d = json.loads(out_e)["results"][0], json.loads(out_d)["results"][0]
    assert d["wan_mbit"] == pytest.approx(e["wan_mbit"]) and d["server_cores"] == pytest.approx(e["server_cores"])
    plan = json.loads((tmp_path / "d" / "plan.json").read_text())
    assert any("decomposed" in w for w in plan["warnings"])


def test_cli_method_decompose_refuses_vanilla_in_one_line(tmp_path, capsys):
    # iot-sensors: the inventory's own job (another job's profile adds a warning line before the error)
    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            "inventory/edge-lab.yaml",
            "--profile",
            "examples/profiles/iot-sensors.json",
            "--out",
            tmp_path,
            "--method",
            "decompose",
            "--mode",
            "vanilla",
        ],
        capsys,
    )
    assert code == 2 and err.strip().count("\n") == 0 and "--method" in err and "Traceback" not in err + out
