"""``placement plan --max-rate`` (placement/solver/capacity.py): the highest uniform scale of the source rates, by the
direct MILP and by bisection with the exact ILP as oracle, both held to brute force over the scale."""

from __future__ import annotations

import json

import pytest
from brute import brute_force
from hard_jobs import instance as hard_instance
from planning_factories import cli_run, inventory, profile, vertex

from placement.costmodel import build_problem, evaluate
from placement.costmodel.model import PlanOptions
from placement.solver import SolverOptions
from placement.solver.capacity import (
    binding_constraints,
    max_scale,
    max_scale_bisection,
)

TOL = 1e-4


def toy():
    """rpi1 (1 core, 5 Mbit/s) and rpi2 (20 Mbit/s), a keyed window on the server."""
    inv = inventory(
        [{"name": "rpi1", "cores": 1, "bandwidth": "5mbit"}, {"name": "rpi2", "bandwidth": "20mbit"}],
        pins={"sources": {"Source: S": ["rpi1", "rpi2"]}},
    )
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=1000, busy=50, bpr=200),
            vertex("P", 2, rout=500, busy=120, bpr=100),
            vertex("W", 2, rin=500, rout=50, busy=200, bpr=40, stateful=True),
            vertex("Sink: T", rout=0, busy=10),
        ],
        [("Source: S", "P", "FORWARD"), ("P", "W", "HASH"), ("W", "Sink: T", "REBALANCE")],
    )
    return inv, prof


def builder(inv, prof):
    return lambda scale: build_problem(inv, prof, PlanOptions(rate_scale=scale))


def brute_max_scale(build, lo: float, hi: float) -> float:
    """Bisection over the scale with brute force (no ILP) as the oracle, from a bracket lo fits / hi does not."""

    def fits(s: float) -> bool:
        return brute_force(build(s))[0] is not None

    assert fits(lo) and not fits(hi)
    while hi - lo > TOL * lo / 4:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


SMALL = [
    toy(),
    hard_instance(8, 4, 1, servers=2, motifs=("lane",)),
    hard_instance(6, 4, 2, servers=2, motifs=("join",)),
    hard_instance(10, 4, 3, servers=2, motifs=("union",)),
]


@pytest.mark.parametrize("case", range(len(SMALL)))
def test_direct_and_bisection_agree_with_brute_force_over_the_scale(case):
    build = builder(*SMALL[case])
    direct, bisection = max_scale(build), max_scale_bisection(build)
    assert direct.status == bisection.status == "bounded"
    assert direct.scale <= direct.upper <= direct.scale * (1 + TOL) * (1 + 1e-8)
    truth = brute_max_scale(build, direct.scale * (1 - 4 * TOL), direct.upper)
    assert truth == pytest.approx(direct.scale, rel=2 * TOL)
    assert truth == pytest.approx(bisection.scale, rel=2 * TOL)
    below = build(direct.scale)
    if direct.assignment is not None:  # the direct method's own plan fits at the scale it reports
        assert evaluate(below, direct.assignment).feasible


def test_the_toy_is_solved_by_the_direct_model_in_a_few_solves():
    build = builder(*toy())
    direct, bisection = max_scale(build), max_scale_bisection(build)
    assert direct.method == "direct" and direct.oracle_calls < bisection.oracle_calls
    assert direct.scale == pytest.approx(2.8125, rel=1e-6)  # rpi1's 5 Mbit/s: 0.9·5 / (1000·200·8/1e6) = 2.8125


def test_binding_constraint_is_what_is_short_just_above():
    build = builder(*toy())
    c = max_scale(build)
    short = binding_constraints(build, c.scale, SolverOptions())
    assert short[0].kind == "link" and short[0].resource == "rpi1→server"
    assert short[0].needed > short[0].usable


def test_feasibility_is_monotone_in_the_scale():
    build = builder(*SMALL[1])
    c = max_scale_bisection(build)
    for f in (0.1, 0.5, 0.9, 0.999):
        assert brute_force(build(c.scale * f))[0] is not None
    for f in (1.01, 1.5, 3.0):
        assert brute_force(build(c.upper * f))[0] is None


def test_unbounded_and_nothing_fits():
    inv = inventory([{"name": "rpi1"}], pins={"sources": {"Source: S": "rpi1"}})
    idle = profile(
        [vertex("Source: S", rin=0, rout=100, busy=0, bpr=0), vertex("Sink: T", busy=0, rout=0)],
        [("Source: S", "Sink: T", "FORWARD")],
    )
    assert max_scale(builder(inv, idle)).status == "unbounded"  # no rate-dependent figure: nothing binds
    tiny = inventory([{"name": "rpi1", "memory": "64MiB"}], pins={"sources": {"Source: S": "rpi1"}})
    assert max_scale(builder(tiny, idle)).status == "infeasible"  # memory does not scale: nothing fits at any rate


def test_cli_max_rate(tmp_path, capsys):
    args = [
        "plan",
        "--inventory",
        "inventory/edge-lab.yaml",
        "--profile",
        "examples/profiles/branching-join.json",
        "--out",
        tmp_path,
        "--max-rate",
    ]
    code, out, err = cli_run(args, capsys)
    assert code == 0, err
    # Parse Meters' one thread on rpi2 (0.7333 of a core at 1×, FORWARD from its source) binds at 0.8/0.7333 = 1.0909×
    assert "max rate: 1.0909×" in out
    assert (
        "the first to run out: Parse Meters (1/1) cannot keep up on rpi2: one thread would need 0.801 of a core, "
        "0.800 usable"
    ) in out
    code, out, err = cli_run([*args, "--json"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    rate = summary["max_rate"]
    assert rate["status"] == "bounded" and rate["scale"] < rate["upper"] <= rate["scale"] * 1.001
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["rate_scale"] == pytest.approx(rate["scale"])
    first = rate["binding"][0]
    assert (first["kind"], first["resource"], first["subtask"]) == ("thread", "rpi2", "Parse Meters (1/1)")
    assert rate["scale"] == pytest.approx(0.8 / 0.7333, rel=2e-4)


@pytest.mark.parametrize("extra,option", [(["--rate-scale", "2"], "--max-rate"), (["--rescale"], "--max-rate")])
def test_cli_max_rate_bad_combinations_are_one_line(tmp_path, capsys, extra, option):
    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            "inventory/edge-lab.yaml",
            "--profile",
            "examples/profiles/branching-join.json",
            "--out",
            tmp_path,
            "--max-rate",
            *extra,
        ],
        capsys,
    )
    assert code == 2 and option in err and err.strip().count("\n") == 0 and "Traceback" not in err + out


def test_an_answer_far_beyond_the_profiled_rates_bound_by_cpu_carries_a_caution_and_a_near_one_or_a_links_not():
    from placement.planning.capacity import max_rate_of

    def answer(busy: float, bandwidth: str):
        inv = inventory([{"name": "rpi1", "cores": 1, "bandwidth": bandwidth}], pins={"sources": {"Source: S": "rpi1"}})
        prof = profile(
            [vertex("Source: S", rin=0, rout=100, busy=busy, bpr=100), vertex("Sink: T", rout=0, busy=1)],
            [("Source: S", "Sink: T", "FORWARD")],
        )
        return max_rate_of(builder(inv, prof), options=SolverOptions(), method="exact")

    far = answer(busy=5, bandwidth="1gbit")  # the source's thread on its Pi binds, many times the profiled rate
    assert far.capacity.binding[0].kind in ("cpu", "thread") and far.capacity.scale > 1.5
    assert far.caution is not None and "likely low" in far.caution and far.json()["caution"] == far.caution
    assert f"caution: {far.caution}" in far.line
    near = answer(busy=170, bandwidth="1gbit")  # the same, within 1.5× of the profile
    assert near.capacity.binding[0].kind in ("cpu", "thread") and near.capacity.scale <= 1.5
    assert near.caution is None and "caution" not in near.line
    link = answer(busy=5, bandwidth="1mbit")  # bytes scale with records: far from the profile, no caution
    assert link.capacity.binding[0].kind == "link" and link.capacity.scale > 1.5, link.capacity
    assert link.caution is None
    from placement.planning.capacity import extrapolation_caution

    assert "likely high" in extrapolation_caution(0.2, "thread")  # far below: CPU per record rises as the rate falls
    assert extrapolation_caution(0.7, "cpu") is None and extrapolation_caution(0.2, "memory") is None
    # CPU measured on a line from 0.5x to 2x the profiled rates: 3x is within 1.5x of what was seen, 3.1x is not
    assert extrapolation_caution(3.0, "cpu", (0.5, 2.0)) is None
    assert "0.5-2× the profiled rates" in extrapolation_caution(3.1, "cpu", (0.5, 2.0))
    assert extrapolation_caution(0.34, "cpu", (0.5, 2.0)) is None
    assert "likely high" in extrapolation_caution(0.33, "cpu", (0.5, 2.0))
