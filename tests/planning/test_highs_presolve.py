"""The HiGHS release the project accepts solves the model that broke HiGHS <= 1.9's presolve.

``data/rescale-subtasks-stage.mps`` is the last lexicographic stage ("subtasks") of ``plan --rescale`` on the
edge-filter instance (tests/planning/test_rescale_cli.py), written as the planner hands it to the solver (the earlier
stages' keep rows included). Its optimum is 4 (Filter at parallelism 3): CBC and HiGHS 1.10-1.16 find it. HiGHS 1.7.2
to 1.9.0 presolve this model to "infeasible" (from a cold start) and, warm-started from the previous stage as the
planner does, certified 5 (Filter at 4) as optimal — depending on the row order, i.e. on Python's string hashing: the
vanilla-mode test's "intermittent" other parallelism with highspy 1.7.2 (2 of 6 processes). This test fails on those
releases and is why ``pyproject.toml`` keeps highspy >= 1.16 (the oldest the whole suite has run green with).
"""

from __future__ import annotations

from pathlib import Path

import pulp

from placement.solver import backends

MODEL = Path(__file__).parent / "data" / "rescale-subtasks-stage.mps"


def test_the_subtasks_stage_that_broke_old_presolves_is_solved_to_its_optimum():
    _, lp = pulp.LpProblem.fromMPS(str(MODEL))
    info = backends.run(lp, "highs")
    assert (info.status, info.objective) == ("optimal", 4.0)
    assert info.bound is not None and abs(info.bound - 4.0) <= 1e-6


def test_cbc_agrees_on_that_optimum():
    _, lp = pulp.LpProblem.fromMPS(str(MODEL))
    info = backends.run(lp, "cbc")
    assert (info.status, info.objective) == ("optimal", 4.0)
