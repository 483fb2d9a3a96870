"""Job priorities and per-job budgets when several jobs are planned together (issue 24, item 1): a job's share of an
uplink is a row of the joint model, a priority puts that job's WAN (then latency) first in the lexicographic order,
and a minimum rate scale holds a job up while ``--max-rate`` scales the fleet. The enumerator of
:mod:`multi_job_factories` checks budgets and ranks by priority class itself; it shares nothing with the model."""

from __future__ import annotations

import pytest
import yaml
from multi_job_factories import (
    better,
    contest_instance,
    joint_brute_force,
    priority_order,
    problems,
    random_instance,
    random_policies,
    ranked_key,
    streaming_job,
    within_budgets,
)
from planning_factories import inventory
from test_multi_job_plan import reducing_job

from placement.costmodel import build_problem, evaluate
from placement.costmodel.jobs import combine, job_policies
from placement.costmodel.model import JobPolicy, PlanOptions
from placement.errors import BadInput
from placement.inventory import Inventory, load_inventory
from placement.solver import SolverOptions, solve
from placement.solver.capacity import binding_constraints, max_scale
from placement.solver.methods import solve_with

CHUNKS = 6
PER_CHUNK = 30  # 180 instances


def same(a, b) -> bool:
    return not better(a, b) and not better(b, a)


def ranked_figures(jp, named, assignment, classes) -> tuple[float, ...]:
    """The model's plan in the enumerator's terms: each job's part evaluated alone, keyed as :func:`ranked_key`."""
    parts = jp.split(assignment)
    return ranked_key(named, [(None, evaluate(pr, parts[name])) for name, pr in named], classes)


def check(seed: int, contest: bool = False) -> dict:
    """The model against the enumerator on instance ``seed`` with random policies: the issue's random instances, or
    (``contest``) jobs competing for the Pis' cores (:func:`contest_instance`), where the policies change plans."""
    if contest:
        inv, profiles, policies = contest_instance(seed)
        named = problems(inv, profiles)
    else:
        inv, profiles = random_instance(seed)
        named = problems(inv, profiles)
        policies = random_policies(seed, [n for n, _ in named], ["rpi1", "rpi2"])
    classes = priority_order([n for n, _ in named], policies)
    best, _, _ = joint_brute_force(named, policies)
    jp = combine(named, policies)
    result = solve(jp.problem)
    if best is None:
        assert result.status == "infeasible", f"seed {seed}: brute force finds no plan, the model {result.status}"
        assert result.shortages, seed
        return {
            "status": "infeasible",
            "budget_named": any(s.kind == "budget" for s in result.shortages),
            "free_fits": joint_brute_force(named)[0] is not None,
        }
    assert result.status == "optimal", f"seed {seed}: {result.status} {result.reason}"
    assert result.cost.feasible, f"seed {seed}: {result.cost.violations}"
    got = ranked_figures(jp, named, result.assignment, classes)
    assert same(got, best), f"seed {seed}: model {got} ≠ brute force {best} (classes {classes})"
    # the policies changed the plan: the unpoliced optimum breaks a budget or ranks below the model's plan
    _, free_plan, _ = joint_brute_force(named)
    free = [(None, evaluate(pr, free_plan[name])) for name, pr in named]
    changed = not within_budgets(named, free, policies) or better(best, ranked_key(named, free, classes))
    return {"status": "optimal", "ranked": len(classes) > 1, "changed": changed}


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_budgets_and_priorities_agree_with_brute_force(chunk):
    outcomes = [check(seed) for seed in range(5000 + chunk * PER_CHUNK, 5000 + (chunk + 1) * PER_CHUNK)]
    assert any(o["status"] == "optimal" for o in outcomes)


def test_where_jobs_compete_for_a_pi_policies_change_plans_and_agree_with_brute_force():
    """Jobs competing for the Pis' cores: a priority or a budget changes which job reduces on a Pi — and the model
    still finds the enumerator's optimum, or nothing where the enumerator finds nothing."""
    outcomes = [check(seed, contest=True) for seed in range(300)]
    solved = [o for o in outcomes if o["status"] == "optimal"]
    assert sum(o["changed"] for o in solved) >= 15, sum(o["changed"] for o in solved)
    assert sum(o["ranked"] and o["changed"] for o in solved) >= 10
    assert sum(o["status"] == "infeasible" and o["free_fits"] and o["budget_named"] for o in outcomes) >= 3


def test_random_policies_cover_ranks_and_budget_shortfalls():
    """Random policies rank jobs often, and where only the budgets make an instance infeasible the elastic re-solve
    names a budget (the jobs' least WAN is already their plan, so a tighter share has nothing left to give)."""
    outcomes = [check(seed) for seed in range(5000, 5000 + CHUNKS * PER_CHUNK)]
    ranked = sum(1 for o in outcomes if o["status"] == "optimal" and o["ranked"])
    budget_only = [o for o in outcomes if o["status"] == "infeasible" and o["free_fits"]]
    assert ranked >= 30, ranked
    assert len(budget_only) >= 10 and sum(o["budget_named"] for o in budget_only) >= 5, budget_only


# ---- the contested Pi: one core (one reducer), a 40 Mbit/s uplink (36 usable) ----------------------------------------


def contested_40():
    """Job A sends 10 Mbit/s raw, job B 30; both raw (40) overflow the uplink, so one reduces on the Pi (1 Mbit/s out),
    and the Pi's one core holds one reducer. Unranked, B reduces: 10 + 1 = 11 beats 1 + 30."""
    inv = inventory(
        [{"name": "rpi1", "cores": 1, "task_slots": 4, "bandwidth": "40mbit"}],
        pins={"sources": {"Source: A": "rpi1", "Source: B": "rpi1"}},
    )
    return inv, [reducing_job("A", 10), reducing_job("B", 30)]


def wan_of(jp, result) -> dict[str, float]:
    parts = jp.split(result.assignment)
    return {job.name: evaluate(job.problem, parts[job.name]).wan_mbit for job in jp.jobs}


def test_unranked_the_optimum_favours_job_b():
    inv, profiles = contested_40()
    jp = combine(problems(inv, profiles))
    result = solve(jp.problem)
    assert [st.name for st in result.stages] == ["wan", "server_cpu", "latency"]  # today's stages exactly
    assert wan_of(jp, result) == pytest.approx({"job-A": 10, "job-B": 1}, rel=1e-3)


def test_priority_gives_the_pi_and_the_uplink_to_job_a():
    inv, profiles = contested_40()
    jp = combine(problems(inv, profiles), {"job-A": JobPolicy(priority=1)})  # B unset: priority 0
    result = solve(jp.problem)
    assert result.status == "optimal"
    assert [st.name for st in result.stages] == ["wan[p1]", "wan[p0]", "server_cpu", "latency[p1]", "latency[p0]"]
    wan = wan_of(jp, result)
    assert wan == pytest.approx({"job-A": 1, "job-B": 30}, rel=1e-3)  # A's WAN first: the fleet's total grows to 31
    assert jp.split(result.assignment)["job-A"][("reduce-a", 0)] == "rpi1"
    # the same rank for both is no rank: today's plan
    same_rank = solve(
        combine(problems(inv, profiles), {"job-A": JobPolicy(priority=1), "job-B": JobPolicy(priority=1)}).problem
    )
    assert [st.name for st in same_rank.stages] == ["wan", "server_cpu", "latency"]
    assert same_rank.cost.wan_mbit == pytest.approx(11, rel=1e-3)


def test_a_budget_changes_the_plan():
    """A may take 20 % of the usable 36 Mbit/s (7.2): its raw 10 no longer fits, so A reduces on the Pi and B sends
    its raw stream — a total of 31 instead of 11, within every budget."""
    inv, profiles = contested_40()
    jp = combine(problems(inv, profiles), {"job-A": JobPolicy(uplink_shares={"rpi1": 0.2})})
    result = solve(jp.problem)
    assert result.status == "optimal"
    assert wan_of(jp, result) == pytest.approx({"job-A": 1, "job-B": 30}, rel=1e-3)
    assert result.cost.wan_mbit == pytest.approx(31, rel=1e-3)
    # the unpoliced optimum breaks the budget, and the evaluator says whose and where
    free = solve(combine(problems(inv, profiles)).problem)
    broken = evaluate(jp.problem, free.assignment)
    assert (
        [v for v in broken.violations if v.startswith("job job-A needs 10.")]
        and "link rpi1→server" in broken.violations[0]
        and "its budget there is 7.20" in broken.violations[0]
    )


def test_a_budget_that_cannot_be_met_names_the_job_and_the_link():
    """A at most 7.2 Mbit/s, B at most 18: A must reduce on the Pi, then B's raw 30 is over its 18 — or A's 10 over
    its 7.2, the smaller shortfall (2.8 of 7.2), which is what is named."""
    inv, profiles = contested_40()
    jp = combine(
        problems(inv, profiles),
        {"job-A": JobPolicy(uplink_shares={"rpi1": 0.2}), "job-B": JobPolicy(uplink_shares={"rpi1": 0.5})},
    )
    result = solve(jp.problem)
    assert result.status == "infeasible"
    top = result.shortages[0]
    assert (top.kind, top.resource, top.detail) == ("budget", "rpi1→server", "job-A")
    assert top.usable == pytest.approx(7.2) and top.needed == pytest.approx(10, rel=1e-2)
    assert top.message.startswith("job job-A's budget on link rpi1→server: it needs 10.")
    assert "its budget is 7.2 (20% of the link's 36 usable" in top.message
    assert result.reason.startswith(top.message)


def test_weighted_and_decompose_refuse_what_they_cannot_honour():
    inv, profiles = contested_40()
    ranked = combine(problems(inv, profiles), {"job-A": JobPolicy(priority=1)}).problem
    with pytest.raises(BadInput) as exc:
        solve(ranked, SolverOptions(objective="weighted"))
    assert exc.value.field == "--objective" and "job-A" in str(exc.value)
    budgeted = combine(problems(inv, profiles), {"job-B": JobPolicy(uplink_shares={"rpi1": 0.5})}).problem
    for problem in (ranked, budgeted):
        with pytest.raises(BadInput) as exc:
            solve_with(problem, method="decompose")
        assert exc.value.field == "--method" and "priorities or budgets" in str(exc.value)
        assert solve_with(problem, method="auto").strategy == "ilp"  # auto takes the exact model
    # budgets are rows: the weighted objective keeps them
    weighted = solve(budgeted, SolverOptions(objective="weighted"))
    assert weighted.status == "optimal" and weighted.cost.feasible


# ---- the inventory: where a user sets them -------------------------------------------------------------------------


def inventory_doc(jobs: list[dict]) -> dict:
    return {
        "hosts": [
            {"name": "server", "address": "10.0.0.1", "role": "server", "cores": 8, "memory": "16GiB"},
            {"name": "rpi1", "address": "10.0.1.1", "role": "edge", "model": "rpi4b"},
            {"name": "rpi2", "address": "10.0.1.2", "role": "edge", "model": "rpi4b"},
        ],
        "links": [
            {"from": "rpi1", "to": "server", "bandwidth": "40mbit"},
            {"from": "rpi2", "to": "server", "bandwidth": "40mbit"},
        ],
        "flink": {"rest_url": "http://10.0.0.1:8081"},
        "jobs": jobs,
    }


def test_an_inventory_without_priorities_or_budgets_hashes_as_before():
    doc = inventory_doc([{"name": "job-B", "program_args": ["--rate", "10"]}])
    del doc["hosts"][2], doc["links"][1]
    doc["links"][0]["bandwidth"] = "40mbit"
    doc["job"] = {"name": "job-A", "jar": "/opt/a.jar"}
    # pinned: main's Inventory.digest of this document, before jobs[] had priority and budget
    assert (
        Inventory.model_validate(doc).digest()
        == "sha256:a5997f88a6e0a9df8c68e70869a6c2b147c678b2c0e653052c343a46e9d8443a"
    )
    doc["jobs"][0]["priority"] = 1
    assert (
        Inventory.model_validate(doc).digest()
        != "sha256:a5997f88a6e0a9df8c68e70869a6c2b147c678b2c0e653052c343a46e9d8443a"
    )


@pytest.mark.parametrize(
    "entry, field, words",
    [
        ({"budget": {"uplinks": {"rpi1": 1.5}}}, "jobs[0].budget.uplinks", "within 0..1, got 1.5"),
        ({"budget": {"uplinks": {"server": 0.5}}}, "jobs[0].budget.uplinks.server", "'server' is no edge host"),
        ({"budget": {"uplinks": {"rpi9": 0.5}}}, "jobs[0].budget.uplinks.rpi9", "'rpi9' is no edge host"),
        ({"budget": {"min_rate_scale": 0}}, "jobs[0].budget.min_rate_scale", "greater than 0"),
        ({"priority": "high"}, "jobs[0].priority", "integer"),
        ({"budget": {"share": 0.5}}, "jobs[0].budget.share", "unknown field"),
    ],
)
def test_bad_values_are_one_line_naming_file_and_field(tmp_path, entry, field, words):
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(inventory_doc([{"name": "job-A", **entry}])))
    with pytest.raises(BadInput) as exc:
        load_inventory(path)
    text = str(exc.value)
    assert "\n" not in text and str(path) in text and field in text and words in text, text


def test_a_star_share_covers_every_uplink_a_named_one_overrides():
    inv = Inventory.model_validate(
        inventory_doc(
            [
                {
                    "name": "job-A",
                    "priority": 2,
                    "budget": {"uplinks": {"*": 0.25, "rpi2": 0.5}, "min_rate_scale": 1.5},
                },
                {"name": "job-B"},
            ]
        )
    )
    policies = job_policies(inv, [("job-A", "job-A"), ("job-A-2", "job-A"), ("job-B", "job-B"), ("job-C", "job-C")])
    assert set(policies) == {"job-A", "job-A-2"}  # a copy takes its job's entry; unset and unlisted jobs: none
    assert policies["job-A"] == JobPolicy(priority=2, uplink_shares={"rpi1": 0.25, "rpi2": 0.5}, min_rate_scale=1.5)


def test_max_rate_honours_an_uplink_budget_in_its_direct_model():
    """Two streams of 10 Mbit/s on 18 usable, A capped at a quarter (4.5): the fleet scales to 0.45× (A's cap), not
    the link's 0.9× — found by the direct MILP itself (its budget rows), not by the bisection it falls back to when
    its answer does not check out; what binds just above is A's budget."""
    inv = inventory(
        [{"name": "rpi1", "bandwidth": "20mbit"}], pins={"sources": {"Source: A": "rpi1", "Source: B": "rpi1"}}
    )
    profiles = [streaming_job("A", 10), streaming_job("B", 10)]
    policies = {"job-A": JobPolicy(uplink_shares={"rpi1": 0.25})}

    def build(scale: float):
        return combine(
            [(p.job.name, build_problem(inv, p, PlanOptions(rate_scale=scale))) for p in profiles], policies
        ).problem

    capacity = max_scale(build)
    assert capacity.method == "direct" and not capacity.note, capacity
    assert capacity.scale == pytest.approx(0.45, rel=0.02)
    binding = binding_constraints(build, capacity.scale, SolverOptions())
    assert [(s.kind, s.detail) for s in binding] == [("budget", "job-A")]
