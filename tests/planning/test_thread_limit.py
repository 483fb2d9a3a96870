"""One model of a subtask's CPU for every planner: a subtask is one thread, so on host ``h`` it may need at most
``ρ`` of one core, ``c(s)/σ_h ≤ ρ`` (:meth:`placement.costmodel.model.PlacementProblem.keeps_up`) — in the exact
model, ``--max-rate`` (both methods), ``--rescale``, the fleet decomposition and the greedy baseline; and when a thread
is why nothing fits, it is named first."""

from __future__ import annotations

import json
import random

import pytest
from brute import brute_force
from planning_factories import cli_run, inventory, profile, vertex

from placement.costmodel import build_problem, evaluate
from placement.costmodel.model import PlanOptions
from placement.costmodel.rescaled import build_space
from placement.inventory import load_inventory
from placement.profile.format import load_profile
from placement.solver import SolverOptions, solve
from placement.solver.baselines import greedy
from placement.solver.capacity import max_scale, max_scale_bisection
from placement.solver.domains import restricted_domain
from placement.solver.fleet import solve_decomposed
from placement.solver.homes import homes
from placement.solver.rescale import solve_rescale

IOT = ["plan", "--inventory", "inventory/edge-lab.yaml", "--profile", "examples/profiles/iot-sensors.json"]
PARSE_BOUND = 0.8 / (0.2205 / 0.3)  # Parse (3/3): 0.2205 server cores = 0.735 of a Pi core at 1×: 1.08844×
TOL = 1e-4


# ---- the shipped IoT example ----------------------------------------------------------------------------------------


def iot(scale: float):
    return build_problem(
        load_inventory("inventory/edge-lab.yaml"),
        load_profile("examples/profiles/iot-sensors.json"),
        PlanOptions(rate_scale=scale),
    )


def test_iot_max_rate_is_parse_s_thread_on_rpi3(tmp_path, capsys):
    code, out, err = cli_run([*IOT, "--out", tmp_path, "--max-rate", "--json"], capsys)
    assert code == 0, err
    rate = json.loads(out)["max_rate"]
    assert rate["scale"] <= 1.09 and rate["scale"] == pytest.approx(PARSE_BOUND, rel=2 * TOL)  # was 2.438×
    first = rate["binding"][0]
    assert (first["kind"], first["resource"], first["subtask"]) == ("thread", "rpi3", "Parse (3/3)")
    assert first["message"] == "Parse (3/3) cannot keep up on rpi3: one thread would need 0.801 of a core, 0.800 usable"
    code, out, err = cli_run([*IOT, "--out", tmp_path / "text", "--max-rate"], capsys)
    assert "beyond 1.088× the first to run out: Parse (3/3) cannot keep up on rpi3" in out


def test_iot_bisection_and_direct_agree_on_the_thread_bound():
    direct, bisection = max_scale(iot), max_scale_bisection(iot)
    assert direct.method == "direct"  # the thread rows are in the direct model: no fallback to bisection
    for c in (direct, bisection):
        assert c.scale <= PARSE_BOUND * (1 + 1e-9) and c.scale == pytest.approx(PARSE_BOUND, rel=2 * TOL)


def test_iot_at_1_2x_is_infeasible_naming_parse_s_thread(tmp_path, capsys):
    code, out, err = cli_run([*IOT, "--out", tmp_path, "--rate-scale", "1.2"], capsys)
    assert code == 3  # before: "optimal", with Parse needing 0.88 of one Pi core
    assert err.startswith(
        "error: no placement fits: Parse (3/3) cannot keep up on rpi3: one thread would need 0.88 "
        "of a core, 0.80 usable"
    )
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│ ")]
    assert rows == ["thread of Parse (3/3) on rpi3", "thread of Parse (1/3) on rpi1"]


def test_iot_rescale_at_1_1x_names_the_thread_before_the_links(tmp_path, capsys):
    code, out, err = cli_run([*IOT, "--out", tmp_path, "--rescale", "--rate-scale", "1.1"], capsys)
    assert code == 3
    assert err.startswith(
        "error: no placement fits: Parse (3/3) cannot keep up on rpi3: one thread would need 0.81 "
        "of a core, 0.80 usable"
    )  # before: "link rpi3→server needs 61.0 Mbit/s"


def test_iot_decomposition_and_greedy_keep_the_thread_limit():
    over = iot(1.2)
    result = solve_decomposed(over)
    assert result.status == "infeasible" and result.shortages[0].kind == "thread"
    assert result.shortages[0].message.startswith("Parse (3/3) cannot keep up on rpi3")
    fits = solve_decomposed(iot(1.08))
    assert fits.status == "optimal" and evaluate(iot(1.08), fits.assignment).feasible
    for scale in (1.0, 1.2, 2.0):
        pr = iot(scale)
        plan = greedy(pr).assignment
        moved = [s for s in pr.subtasks if not s.is_source and pr.host_by_name[plan[s.key]].is_edge]
        assert all(pr.keeps_up(s, pr.host_by_name[plan[s.key]]) for s in moved)
        if scale == 1.0:  # greedy moves operators to the Pis where their threads keep up: the check is not vacuous
            assert moved


# ---- random instances with tight threads: every planner finds the same highest scale --------------------------------


def tight(seed: int):
    """Two Pis (rpi4b: speed 0.3), one server; Source (born on the Pis) → FORWARD → A → HASH → W (keyed, server) →
    Sink. A shrinks its records, so keeping it on its Pi saves the uplink — until its one thread (0.55–0.78 of a Pi
    core at 1×) or the link (drawn around what the plan needs) runs out. The server is slow enough (speed 0.35–0.6)
    that W's thread may bind there too."""
    rng = random.Random(seed)
    speed = rng.choice((0.35, 0.45, 0.6))
    edges = [
        {"name": f"rpi{k + 1}", "cores": rng.choice((1, 2)), "bandwidth": f"{rng.choice((2, 3, 5, 8))}mbit"}
        for k in range(2)
    ]
    inv = inventory(
        edges, server={"cores": 2, "speed": speed, "task_slots": 4}, pins={"sources": {"Source: S": ["rpi1", "rpi2"]}}
    )
    a_busy = rng.uniform(0.55, 0.78) * 0.3 * 1000
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=1000, busy=rng.uniform(20, 60), bpr=rng.choice((200, 300))),
            vertex("A", 2, rout=1000, busy=a_busy, bpr=rng.choice((20, 40))),
            vertex("W", 1, rin=2000, rout=50, busy=rng.uniform(0.2, 0.7) * speed * 1000, bpr=40, stateful=True),
            vertex("Sink: T", rout=0, busy=5),
        ],
        [("Source: S", "A", "FORWARD"), ("A", "W", "HASH"), ("W", "Sink: T", "FORWARD")],
    )
    return inv, prof


def fits_plain(inv, prof, scale: float) -> bool:
    return solve(build_problem(inv, prof, PlanOptions(rate_scale=scale))).status != "infeasible"


def fits_decomposed(inv, prof, scale: float) -> bool:
    return solve_decomposed(build_problem(inv, prof, PlanOptions(rate_scale=scale))).status != "infeasible"


def fits_rescale(inv, prof, scale: float) -> bool:
    """``--rescale`` with every parallelism fixed at the profiled one: the same placement problem."""
    doc = inv.model_dump(mode="json", by_alias=True)
    doc["parallelism"] = {v.name: {"min": v.parallelism, "max": v.parallelism} for v in prof.vertices}
    fixed = type(inv).model_validate(doc)
    return solve_rescale(build_space(fixed, prof, rate_scale=scale)).plan.status != "infeasible"


def fits_brute(inv, prof, scale: float) -> bool:
    return brute_force(build_problem(inv, prof, PlanOptions(rate_scale=scale)))[0] is not None


SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_planner_finds_the_same_highest_scale_with_tight_threads(seed):
    inv, prof = tight(seed)
    build = lambda x: build_problem(inv, prof, PlanOptions(rate_scale=x))  # noqa: E731
    direct, bisection = max_scale(build), max_scale_bisection(build)
    assert direct.status == bisection.status == "bounded"
    assert direct.scale == pytest.approx(bisection.scale, rel=2 * TOL)
    x = direct.scale
    for fits in (fits_brute, fits_plain, fits_decomposed, fits_rescale):
        assert fits(inv, prof, x * (1 - 5 * TOL)), (fits.__name__, x)
        assert not fits(inv, prof, x * (1 + 5 * TOL)), (fits.__name__, x)
    # the thread bound of each (subtask, host) pair the rules allow is a ceiling on the scale where it is the only way
    pr = build(1.0)
    bounds = {
        s.label: pr.usable_thread / s.cores_on(pr.host_by_name["server"]) for s in pr.subtasks if s.vertex_name == "W"
    }
    assert x <= min(bounds.values()) * (1 + 1e-9)  # W may run on the server only: its thread caps the scale


def test_the_random_family_binds_on_threads():
    """The family is what it says: on half of the seeds a thread is what runs out first."""
    kinds = []
    for seed in SEEDS:
        inv, prof = tight(seed)
        build = lambda x, inv=inv, prof=prof: build_problem(inv, prof, PlanOptions(rate_scale=x))  # noqa: E731
        c = max_scale(build)
        result = solve(build(c.scale * 1.001), SolverOptions())
        kinds.append(result.shortages[0].kind if result.shortages else "domain")
    assert kinds.count("thread") >= 5, kinds  # 6 of the 12 (A on its Pi, W on the server); the rest CPU or a link


@pytest.mark.parametrize("seed", SEEDS)
def test_the_fleet_s_homes_are_the_exact_domain_with_tight_threads(seed):
    """:func:`homes` (the fleet's domains, computed directly) equals :func:`restricted_domain` with the thread
    family."""
    inv, prof = tight(seed)
    for scale in (0.5, 1.0, 1.2, 1.6):
        pr = build_problem(inv, prof, PlanOptions(rate_scale=scale))
        try:
            exact = restricted_domain(pr)
        except Exception as exc:
            with pytest.raises(type(exc)) as raised:
                homes(pr)
            assert str(raised.value) == str(exc)
            continue
        assert {k: sorted(v) for k, v in homes(pr).as_domain().items()} == {k: sorted(v) for k, v in exact.items()}
