"""When nothing fits, the shortfall table is enough to act on (issue #49): relieving every row by its "short by"
figure gives a plan — also when the one-thread rule leaves a subtask no host at all, where the plan used to name
that one thread (or, once it was relieved, nothing but a rule) instead of running the slack re-solve.

The shipped reproductions are in data/issue49/ (copied from the issue's cases); the property test draws small
random chains whose threads, Pis' CPU, slots and uplinks are tight, and holds every "no placement fits" to the
relief of its table, with the solver and with the brute force of brute.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from brute import brute_force
from planning_factories import cli_run, inventory, profile, vertex
from relief import relieve

from placement.costmodel import build_problem
from placement.costmodel.model import PlanOptions
from placement.errors import Infeasible
from placement.inventory import load_inventory
from placement.profile.format import load_profile
from placement.solver import solve
from placement.solver.domains import restricted_domain, rule_domain
from placement.solver.fleet import solve_decomposed

DATA = Path(__file__).parent / "data" / "issue49"
CASES = {  # name: (inventory, profile)
    "A": ("thread-emptied-inventory.yaml", "thread-emptied-profile.json"),
    "B": ("cpu-variant-inventory.yaml", "cpu-variant-profile.json"),
    # A with the Source's thread relieved (a lighter source) — what the plan used to list for A: still no plan
    "C": ("thread-emptied-inventory.yaml", "reachability-variant-profile.json"),
}


def case(name: str):
    inv_file, prof_file = CASES[name]
    return load_inventory(DATA / inv_file), load_profile(DATA / prof_file)


def rows(result) -> list[tuple[str, str, str]]:
    return [(s.kind, s.resource, s.detail if s.kind == "thread" else "") for s in result.shortages]


EXPECTED = {
    # the Sink pinned to rpi1 needs Map there, so Map's thread is short on rpi1 too (was: the Source's alone)
    "A": [("thread", "rpi1", "Source: A (1/1)"), ("thread", "rpi1", "Map (1/1)")],
    # rpi1's CPU after its Netty charge (0.05 needed, 0.03 usable) is short beside the Sink's thread (was: the thread)
    "B": [("thread", "server", "Sink (1/1)"), ("cpu", "rpi1", "")],
    # was: no shortage at all, the no-data-down rule as the reason
    "C": [("thread", "rpi1", "Map (1/1)")],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_shipped_cases_list_a_sufficient_set_threads_first(name):
    inv, prof = case(name)
    pr = build_problem(inv, prof)
    with pytest.raises(Infeasible):  # the thread limit empties a domain: the path this issue is about
        restricted_domain(pr)
    assert rule_domain(pr) is not None
    result = solve(pr)
    assert result.status == "infeasible"
    assert rows(result) == EXPECTED[name]
    assert brute_force(pr)[0] is None
    relieved = relieve(inv, pr, result.shortages)
    fixed = build_problem(relieved, prof)
    assert solve(fixed).status == "optimal"
    assert brute_force(fixed)[0] is not None


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_decomposition_lists_the_same_table(name):
    """--method decompose: a domain the thread limit empties is diagnosed by the exact model (it used to give the
    rule's sentence and no table at all)."""
    pr = build_problem(*case(name))
    result = solve_decomposed(pr)
    assert result.status == "infeasible" and rows(result) == EXPECTED[name]


def test_case_b_reason_and_error_line_name_both_rows(tmp_path, capsys):
    inv_file, prof_file = CASES["B"]
    code, out, err = cli_run(
        ["plan", "--inventory", DATA / inv_file, "--profile", DATA / prof_file, "--out", tmp_path / "plan"], capsys
    )
    assert code == 3
    table = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│ ")]
    assert table == ["thread of Sink (1/1) on server", "host rpi1"]
    assert err.startswith(
        "error: no placement fits: Sink (1/1) cannot keep up on server: one thread would need 0.90 "
        "of a core, 0.80 usable and 1 more shortfall (table above)"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cli_plans_the_relieved_inventory(name, tmp_path, capsys):
    """The relief as a user makes it: the table's rows (--json) written into the inventory, planned again."""
    inv_file, prof_file = CASES[name]
    code, out, err = cli_run(
        ["plan", "--inventory", DATA / inv_file, "--profile", DATA / prof_file, "--out", tmp_path / "before", "--json"],
        capsys,
    )
    assert code == 3
    listed = json.loads(out)["results"][0]["shortages"]
    inv, prof = case(name)
    pr = build_problem(inv, prof)
    result = solve(pr)
    assert [(s["kind"], s["resource"], s["message"]) for s in listed] == [
        (s.kind, s.resource, s.message) for s in result.shortages
    ]
    path = tmp_path / "relieved.yaml"
    path.write_text(
        json.dumps(relieve(inv, pr, result.shortages).model_dump(mode="json", by_alias=True, exclude_none=True))
    )
    code, out, err = cli_run(
        ["plan", "--inventory", path, "--profile", DATA / prof_file, "--out", tmp_path / "after", "--json"], capsys
    )
    assert code == 0, err
    assert json.loads(out)["results"][0]["status"] == "optimal"


# ---- random instances: every "no placement fits" is relieved by its own table ---------------------------------------


STRATEGIES = ("FORWARD", "REBALANCE", "HASH", "RESCALE", "GLOBAL")


def random_short(seed: int):
    """(inventory, profile, rate scale): Source (born on the Pis) → A [→ B] → Sink, at most 6 subtasks on a server
    and one or two slow Pis (speed 0.25–0.5) with few cores, slots and Mbit/s; threads of 0.05–0.4 server cores, so
    one may keep up nowhere it may run; sometimes the Sink or A is pinned to a Pi (an actuator there, as issue #49's
    case A), sometimes a Pi allows sinks or state, at 1–3× the profiled rates."""
    rng = random.Random(seed)
    n_pis = rng.choice((1, 2))
    pis = [f"rpi{k + 1}" for k in range(n_pis)]
    edges = [
        {
            "name": n,
            "speed": rng.choice((0.25, 0.3, 0.5)),
            "cores": rng.choice((0.5, 1, 2)),
            "task_slots": rng.choice((1, 2, 4)),
            "bandwidth": f"{rng.choice((1, 2, 5, 10))}mbit",
            "allow_sinks": rng.random() < 0.2,
            "allow_stateful": rng.random() < 0.2,
        }
        for n in pis
    ]
    server = {"cores": rng.choice((0.5, 1, 2, 4)), "speed": rng.choice((0.5, 1.0)), "task_slots": rng.choice((2, 4, 8))}
    middle = rng.choice((1, 2))
    names = ["Source: S", *"AB"[:middle], "Sink: T"]
    par = [rng.choice((1, 2))] + [rng.choice((1, 2)) for _ in range(middle)] + [1]
    while sum(par) > 6:
        par[rng.randrange(1, len(par) - 1)] = 1
    vs = [vertex(names[0], par[0], rin=0, rout=1000, busy=rng.uniform(30, 200), bpr=rng.choice((100, 250, 500)))]
    for k in range(1, len(names)):
        last = k == len(names) - 1
        vs.append(
            vertex(
                names[k],
                par[k],
                rout=0 if last else 1000,
                busy=rng.uniform(20, 250) if not last else rng.uniform(5, 150),
                bpr=rng.choice((20, 100, 400)),
                stateful=not last and rng.random() < 0.2,
            )
        )
    chain = []
    for k in range(len(names) - 1):
        choices = [s for s in STRATEGIES if s != "FORWARD" or par[k] == par[k + 1]]
        chain.append((names[k], names[k + 1], rng.choice(choices)))
    pins: dict = {"sources": {names[0]: [rng.choice(pis) for _ in range(par[0])] if par[0] > 1 else rng.choice(pis)}}
    roll = rng.random()
    if roll < 0.25:
        pins["operators"] = {"Sink: T": rng.choice(pis)}
    elif roll < 0.4:
        pins["operators"] = {"A": [rng.choice(pis), "server"]}
    elif roll < 0.5:
        pins["forbid"] = {"A": [rng.choice(pis)]}
    return inventory(edges, server=server, pins=pins), profile(vs, chain), rng.choice((1.0, 1.5, 2.0, 3.0))


N_RANDOM = 300


def test_every_infeasible_random_instance_is_relieved_by_its_table():
    stats = {"instances": 0, "infeasible": 0, "emptied": 0, "rules": 0, "relieved": 0}
    for seed in range(N_RANDOM):
        inv, prof, scale = random_short(seed)
        try:
            pr = build_problem(inv, prof, PlanOptions(rate_scale=scale))
        except Exception:
            continue
        stats["instances"] += 1
        result = solve(pr)
        best = brute_force(pr)[0]
        assert (result.status == "infeasible") == (best is None), seed
        if result.status != "infeasible":
            continue
        stats["infeasible"] += 1
        if rule_domain(pr) is None:  # the rules alone leave a subtask no host: no capacity is involved
            assert result.shortages == () and result.reason, seed
            stats["rules"] += 1
            continue
        try:
            restricted_domain(pr)
        except Infeasible:
            stats["emptied"] += 1  # the thread limit left a subtask no host (the path of the issue)
        assert result.shortages, (seed, result.reason)
        kinds = [s.kind for s in result.shortages]
        assert kinds == sorted(kinds, key=lambda k: k != "thread"), seed  # threads first
        assert len({(s.kind, s.resource, s.detail) for s in result.shortages}) == len(kinds), seed  # each once
        fixed = build_problem(relieve(inv, pr, result.shortages), prof, PlanOptions(rate_scale=scale))
        assert solve(fixed).status != "infeasible", (seed, result.reason)
        assert brute_force(fixed)[0] is not None, (seed, result.reason)
        stats["relieved"] += 1
    print(stats)
    # the family is what it says: many infeasible instances, a good share of them emptied by a thread
    assert stats["instances"] >= 280 and stats["infeasible"] >= 80 and stats["emptied"] >= 30, stats
    assert stats["relieved"] == stats["infeasible"] - stats["rules"], stats


def test_every_infeasible_multi_job_instance_is_relieved_by_its_table():
    """The joint plan of 2–3 jobs (multi_job_factories.random_instance: uplinks, CPU and slots the jobs compete for),
    held the same way, with that module's own enumerator of the joint optimum as the second judge."""
    from multi_job_factories import joint_brute_force, problems, random_instance

    from placement.costmodel.jobs import combine

    infeasible = relieved = 0
    for seed in range(300):
        inv, profiles = random_instance(seed)
        jp = combine(problems(inv, profiles))
        result = solve(jp.problem)
        if result.status != "infeasible":
            continue
        infeasible += 1
        assert result.shortages, (seed, result.reason)
        named = problems(relieve(inv, jp.problem, result.shortages), profiles)
        assert solve(combine(named).problem).status != "infeasible", (seed, result.reason)
        assert joint_brute_force(named)[0] is not None, (seed, result.reason)
        relieved += 1
    assert infeasible >= 100 and relieved == infeasible, (infeasible, relieved)  # 121 of the 300
