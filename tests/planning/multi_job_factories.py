"""Small random multi-job instances and an enumerator of their joint optimum that shares nothing with the joint model.

The enumerator lists each job's assignments alone (every host for every subtask, kept when
:func:`placement.costmodel.evaluate` of that job's own problem accepts it), then every combination of one assignment per
job, and adds the jobs' loads up on the shared hosts and links itself: uplink Mbit/s, cores, memory, and task slots —
each job's slots as planning it alone counts them, summed, since jobs never share a slot. Nothing of
:mod:`placement.costmodel.jobs` (the namespacing, the per-job slot rows) is used to judge a combination.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

from planning_factories import inventory, vertex

from placement.costmodel import PlacementProblem, build_problem, evaluate
from placement.costmodel.jobs import combine, vertex_keys
from placement.profile.format import JobProfile

EPS = 1e-6
STRATEGIES = ("FORWARD", "REBALANCE", "RESCALE", "HASH", "BROADCAST", "GLOBAL")


def job_profile(name: str, vertices: list[dict], edges: list[tuple[str, str, str]]) -> JobProfile:
    ids = {v["name"]: v["id"] for v in vertices}
    return JobProfile.model_validate({
        "job": {"name": name, "origin": "synthetic"}, "vertices": vertices,
        "edges": [{"source": ids[a], "target": ids[b], "ship_strategy": s} for a, b, s in edges],
    })


def random_job(rng: random.Random, tag: str, edge_names: list[str]) -> tuple[JobProfile, dict]:
    """Source (born on the Pis) → A [→ B] → Sink, random ship strategies (FORWARD only where the parallelism allows),
    records that shrink or grow, sometimes a stateful operator; and this job's pins (a birth, maybe a pin or a forbid).
    Vertex names carry ``tag`` so that one inventory's pins tell the jobs apart."""
    p_src = rng.choice((1, 2))
    middle = rng.choice((1, 2))
    names = [f"Source: S{tag}"] + [f"{c}{tag}" for c in "AB"[:middle]] + [f"Sink: T{tag}"]
    par = [p_src] + [rng.choice((1, 2)) for _ in range(middle)] + [1]
    while sum(par) > 5:  # keep the enumeration small
        par[rng.randrange(1, len(par))] = 1
    vertices = [vertex(names[0], par[0], rin=0, rout=1000, busy=rng.uniform(20, 80), bpr=rng.choice((150, 300, 500)))]
    for k in range(1, len(names)):
        last = k == len(names) - 1
        vertices.append(vertex(names[k], par[k], rout=0 if last else 1000, busy=rng.uniform(20, 200) if not last else 10,
                               bpr=rng.choice((20, 60, 150, 400)), stateful=not last and rng.random() < 0.2))
    edges = []
    for k in range(len(names) - 1):
        choices = [s for s in STRATEGIES if s != "FORWARD" or par[k] == par[k + 1]]
        edges.append((names[k], names[k + 1], rng.choice(choices)))
    pins: dict = {"sources": {names[0]: [rng.choice(edge_names) for _ in range(p_src)] if p_src > 1
                              else rng.choice(edge_names)}}
    roll = rng.random()
    if roll < 0.15:
        pins["operators"] = {names[1]: [rng.choice(edge_names), "server"]}
    elif roll < 0.3:
        pins["forbid"] = {names[1]: [rng.choice(edge_names)]}
    return job_profile(f"job{tag}", vertices, edges), pins


def random_instance(seed: int, servers: int = 1):
    """(inventory, [profiles]): 2–3 jobs on one server and two Pis whose uplinks, CPU and slots are tight enough that
    the jobs compete for them. ``servers=2``: two jobs, and two identical servers of few slots, which the exact model
    pools and packs (jobs never share a slot there either)."""
    rng = random.Random(seed)
    edge_names = ["rpi1", "rpi2"]
    jobs = [random_job(rng, str(k), edge_names) for k in range(rng.choice((2, 2, 3)) if servers == 1 else 2)]
    pins: dict = {"sources": {}, "operators": {}, "forbid": {}}
    for _, p in jobs:
        for section, entries in p.items():
            pins[section].update(entries)
    edges = [{"name": n, "cores": rng.choice((1, 2)), "task_slots": rng.choice((2, 3, 4)),
              "bandwidth": f"{rng.choice((4, 6, 10, 16))}mbit", "delay": f"{rng.choice((10, 40))}ms"}
             for n in edge_names]
    if servers == 1:
        server = {"cores": rng.choice((1, 2, 8)), "task_slots": rng.choice((3, 4, 8))}
    else:
        server = {"cores": rng.choice((1, 2)), "task_slots": rng.choice((1, 2))}
    inv = inventory(edges, server=server, pins=pins)
    if servers > 1:  # identical copies of the server
        doc = inv.model_dump(mode="json", by_alias=True)
        first = doc["hosts"][0]
        doc["hosts"][1:1] = [{**first, "name": f"server{k + 2}", "address": f"10.0.0.{k + 2}"} for k in range(servers - 1)]
        inv = type(inv).model_validate(doc)
    return inv, [prof for prof, _ in jobs]


def problems(inv, profiles) -> list[tuple[str, PlacementProblem]]:
    others = vertex_keys(profiles)
    return [(p.job.name, build_problem(inv, p, other_jobs=other)) for p, other in zip(profiles, others)]


def alone(pr: PlacementProblem) -> list[tuple[dict, object]]:
    """Every assignment of one job that the evaluator accepts on its own, with its cost."""
    keys = [s.key for s in pr.subtasks]
    choices = [[h.name for h in pr.hosts if pr.allows(s, h.name)] for s in pr.subtasks]
    out = []
    for combo in itertools.product(*choices):
        a = dict(zip(keys, combo))
        cost = evaluate(pr, a)
        if cost.feasible:
            out.append((a, cost))
    return out


def joint_brute_force(named: list[tuple[str, PlacementProblem]]):
    """(best (wan, server cores, latency), its per-job assignments, number of joint-feasible combinations)."""
    first = named[0][1]
    per_job = [alone(pr) for _, pr in named]
    best, best_plan, feasible = None, None, 0
    for combo in itertools.product(*per_job):
        link, cores, memory, slots = defaultdict(float), defaultdict(float), defaultdict(float), defaultdict(int)
        for _, cost in combo:
            for load in cost.links:
                link[load.host] += load.mbit
            for h in cost.hosts:
                cores[h.host] += h.cores_used
                memory[h.host] += h.memory_mib_used
                slots[h.host] += h.slots_used
        if any(link[h.name] > first.usable_mbit(h) + EPS for h in first.edges):
            continue
        if any(cores[h.name] > first.usable_cores(h) + EPS or memory[h.name] > first.usable_memory(h) + EPS
               or slots[h.name] > h.slots for h in first.hosts):
            continue
        feasible += 1
        key = tuple(sum(getattr(cost, f) for _, cost in combo) for f in ("wan_mbit", "server_cores", "latency_ms"))
        if best is None or better(key, best):
            best, best_plan = key, {name: a for (name, _), (a, _) in zip(named, combo)}
    return best, best_plan, feasible


def better(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Lexicographically smaller, figures within 1e-6 counted equal."""
    for x, y in zip(a, b):
        if x < y - 1e-6:
            return True
        if x > y + 1e-6:
            return False
    return False


def joint(inv, profiles):
    return combine(problems(inv, profiles))
