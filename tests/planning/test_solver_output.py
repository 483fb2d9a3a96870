"""The solver is silent unless asked and its certificates do not depend on a release's defaults.

HiGHS 1.16 printed its banner on stdout from the ``Highs`` constructor (so ``plan --json`` was not JSON), and, given a
start solution, returned the start's columns beside the optimum's value — a stage that trusted the solver's own
objective certified a plan 7× worse than the optimum. These run the real CLI in a child process (the banner is
written by native code to fd 1: an in-process runner capturing ``sys.stdout`` does not see it) and the real solvers.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pulp
import pytest
import yaml
from rescale_factories import overprovisioned_space

from placement.solver import backends
from placement.solver.rescale import solve_rescale
from placement.solver.result import SolverOptions

REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "inventory" / "edge-lab.yaml"
IOT = REPO / "examples" / "profiles" / "iot-sensors.json"
PLACEMENT = Path(sys.executable).parent / "placement"


def placement(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(PLACEMENT), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_plan_json_is_json_alone_and_stderr_is_empty(tmp_path, solver):
    done = placement(
        "plan",
        "--inventory",
        INVENTORY,
        "--profile",
        IOT,
        "--out",
        tmp_path / "plan",
        "--json",
        "--solver",
        solver,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    summary = json.loads(done.stdout)  # the whole of stdout: no banner before it, nothing after it
    assert summary["results"][0]["status"] == "optimal"


def test_an_infeasible_plan_json_is_json_too(tmp_path):
    inv = yaml.safe_load(INVENTORY.read_text())
    for link in inv["links"]:
        link["bandwidth"] = "1mbit"
    tight = tmp_path / "tight.yaml"
    tight.write_text(yaml.safe_dump(inv))
    done = placement("plan", "--inventory", tight, "--profile", IOT, "--out", tmp_path / "plan", "--json", cwd=tmp_path)
    assert done.returncode == 3
    assert json.loads(done.stdout)["results"][0]["status"] == "infeasible"


def test_verbose_shows_the_solver_log_on_stderr_and_keeps_stdout_json(tmp_path):
    done = placement(
        "plan",
        "--inventory",
        INVENTORY,
        "--profile",
        IOT,
        "--out",
        tmp_path / "plan",
        "--json",
        "--verbose",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"][0]["status"] == "optimal"
    assert "HiGHS" in done.stderr and "Solving report" in done.stderr  # the log of every stage


def test_native_writes_to_fd1_go_nowhere_or_to_stderr_while_a_solver_runs(capfd):
    with backends.native_output():
        os.write(1, b"from native code\n")
        subprocess.run(["echo", "from a child"], check=True)  # CBC runs as a child process
    with backends.native_output(verbose=True):
        os.write(1, b"asked for\n")
    print("the command's own output")
    out, err = capfd.readouterr()
    assert out == "the command's own output\n"
    assert err == "asked for\n"


def test_a_warm_started_stage_returns_the_optimum_not_its_start():
    """The instance HiGHS 1.16 got wrong: the server-CPU stage starts from the WAN stage's plan (0.14 server cores)
    and must end at the optimum (0.02), with the plan's columns, not only the reported value, at 0.02."""
    space = overprovisioned_space(random.Random(2))
    result = solve_rescale(space)
    stages = {stage.name: stage.info for stage in result.plan.stages}
    assert stages["server_cpu"].status == "optimal"
    assert stages["server_cpu"].objective == pytest.approx(0.02, abs=1e-9)
    assert result.plan.cost.server_cores == pytest.approx(0.02, abs=1e-9)
    cold = solve_rescale(space, SolverOptions(solver="cbc"))
    assert cold.plan.cost.server_cores == pytest.approx(result.plan.cost.server_cores, abs=1e-9)


def _knapsack() -> tuple[pulp.LpProblem, list[pulp.LpVariable]]:
    lp = pulp.LpProblem("k", pulp.LpMinimize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(6)]
    lp += pulp.lpSum((i + 1) * v for i, v in enumerate(x))
    lp += pulp.lpSum(x) >= 3
    return lp, x


def test_a_start_solution_that_is_not_optimal_is_improved_on_every_solver():
    for solver in ("highs", "cbc"):
        lp, x = _knapsack()
        for v in x:
            v.varValue = 1.0  # a feasible but poor start: objective 21
        info = backends.run(lp, solver, warm_start=True, gap=1e-4)
        assert info.status == "optimal" and info.objective == pytest.approx(6.0)
        assert sum((i + 1) * v.varValue for i, v in enumerate(x)) == pytest.approx(6.0)  # the columns, not a claim


def test_certify_judges_the_returned_solution_against_the_bound():
    assert backends.certify(0.02, 0.02, 1e-4)
    assert not backends.certify(0.14, 0.02, 1e-4)  # what HiGHS 1.16 called optimal
    assert backends.certify(1000.05, 1000.0, 1e-4)  # within the relative gap
    assert backends.certify(1e-7, 0.0, 1e-4)  # within the absolute gap
    assert not backends.certify(None, 0.0, 1e-4)


def test_the_carried_optimum_admits_the_incumbent_and_its_rounding_and_nothing_much_worse():
    lp, x = _knapsack()
    expr = lp.objective
    for v, value in zip(x, [1 - 4e-7, 1.0, 1.0, 0.0, 0.0, 3e-7]):
        v.varValue = value
    raw = backends._objective_value(lp)
    rounded = backends.rounded_value(expr)
    keep = backends.carried_optimum(raw, rounded, relative=1e-6)
    assert rounded == pytest.approx(6.0) and raw < keep and rounded < keep
    assert keep - max(raw, rounded) == pytest.approx(1e-6 * raw + backends.TOLERANCES.feasibility, rel=1e-6)


def test_fake_highs_crash_falls_back_to_cbc_and_says_so_once(monkeypatch, capsys):
    """A fake: a HiGHS crash cannot be caused on purpose with a well-formed model."""

    def crash(*args, **kwargs):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(backends, "_run_highs", crash)
    monkeypatch.setattr(backends, "_FALLBACK_SAID", set())
    for _ in range(2):
        lp, _x = _knapsack()
        info = backends.run(lp, "highs")
        assert info.solver == "cbc" and info.status == "optimal"
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "note: HiGHS failed (RuntimeError: simulated crash); solving with CBC instead\n"
