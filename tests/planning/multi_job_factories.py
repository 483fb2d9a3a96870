"""Small random multi-job instances and an enumerator of their joint optimum that shares nothing with the joint model.

The enumerator lists each job's assignments alone (every host for every subtask, kept when
:func:`placement.costmodel.evaluate` of that job's own problem accepts it), then every combination of one assignment per
job, and adds the jobs' loads up on the shared hosts and links itself: uplink Mbit/s, cores, memory, and task slots —
each job's slots as planning it alone counts them, summed, since jobs never share a slot. Nothing of
:mod:`placement.costmodel.jobs` (the namespacing, the per-job slot rows) is used to judge a combination.

With job priorities and budgets (:func:`random_policies`) the enumerator drops the combinations where a job's own
Mbit/s on an uplink (its plan alone, evaluated alone) is over its share of bandwidth × headroom, and ranks the rest by
the WAN of each priority class, highest first, then server CPU, then each class's latency — written out here again
from the issue's words, not from the model's stage list.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

from planning_factories import inventory, vertex

from placement.costmodel import PlacementProblem, build_problem, evaluate
from placement.costmodel.jobs import combine, fleet_vertex_keys
from placement.costmodel.model import JobPolicy
from placement.profile.format import JobProfile

EPS = 1e-6
STRATEGIES = ("FORWARD", "REBALANCE", "RESCALE", "HASH", "BROADCAST", "GLOBAL")


def job_profile(name: str, vertices: list[dict], edges: list[tuple[str, str, str]]) -> JobProfile:
    ids = {v["name"]: v["id"] for v in vertices}
    return JobProfile.model_validate(
        {
            "job": {"name": name, "origin": "synthetic"},
            "vertices": vertices,
            "edges": [{"source": ids[a], "target": ids[b], "ship_strategy": s} for a, b, s in edges],
        }
    )


def streaming_job(tag: str, mbit: float):
    """Source (born on rpi1) → Sink: all of it crosses the uplink, ``mbit`` at the profiled rate."""
    return job_profile(
        f"job-{tag}",
        [
            vertex(f"Source: {tag}", rin=0, rout=1000, busy=5, bpr=mbit * 125),
            vertex(f"Sink: {tag}", rin=1000, rout=0, busy=5),
        ],
        [(f"Source: {tag}", f"Sink: {tag}", "FORWARD")],
    )


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
        vertices.append(
            vertex(
                names[k],
                par[k],
                rout=0 if last else 1000,
                busy=rng.uniform(20, 200) if not last else 10,
                bpr=rng.choice((20, 60, 150, 400)),
                stateful=not last and rng.random() < 0.2,
            )
        )
    edges = []
    for k in range(len(names) - 1):
        choices = [s for s in STRATEGIES if s != "FORWARD" or par[k] == par[k + 1]]
        edges.append((names[k], names[k + 1], rng.choice(choices)))
    pins: dict = {
        "sources": {names[0]: [rng.choice(edge_names) for _ in range(p_src)] if p_src > 1 else rng.choice(edge_names)}
    }
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
    edges = [
        {
            "name": n,
            "cores": rng.choice((1, 2)),
            "task_slots": rng.choice((2, 3, 4)),
            "bandwidth": f"{rng.choice((4, 6, 10, 16))}mbit",
            "delay": f"{rng.choice((10, 40))}ms",
        }
        for n in edge_names
    ]
    if servers == 1:
        server = {"cores": rng.choice((1, 2, 8)), "task_slots": rng.choice((3, 4, 8))}
    else:
        server = {"cores": rng.choice((1, 2)), "task_slots": rng.choice((1, 2))}
    inv = inventory(edges, server=server, pins=pins)
    if servers > 1:  # identical copies of the server
        doc = inv.model_dump(mode="json", by_alias=True)
        first = doc["hosts"][0]
        doc["hosts"][1:1] = [
            {**first, "name": f"server{k + 2}", "address": f"10.0.0.{k + 2}"} for k in range(servers - 1)
        ]
        inv = type(inv).model_validate(doc)
    return inv, [prof for prof, _ in jobs]


def problems(inv, profiles) -> list[tuple[str, PlacementProblem]]:
    others = fleet_vertex_keys(profiles)
    return [(p.job.name, build_problem(inv, p, other_jobs=others)) for p in profiles]


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


def random_policies(seed: int, names: list[str], edge_names: list[str]) -> dict[str, JobPolicy]:
    """Per job, maybe a priority (0–2; a third of the instances none at all) and maybe a share of one uplink or of
    every uplink, tight enough to bind now and then."""
    rng = random.Random(seed * 7919 + 1)
    ranked = rng.random() < 0.67
    out = {}
    for name in names:
        priority = rng.choice((None, 0, 1, 2)) if ranked else None
        shares: dict[str, float] = {}
        roll = rng.random()
        if roll < 0.35:
            shares = {rng.choice(edge_names): rng.choice((0.1, 0.25, 0.5))}
        elif roll < 0.5:
            share = rng.choice((0.15, 0.3, 0.6))
            shares = {h: share for h in edge_names}
        if priority is not None or shares:
            out[name] = JobPolicy(priority=priority, uplink_shares=shares)
    return out


def contest_instance(seed: int):
    """(inventory, [profiles], policies by job name): 2–3 jobs whose reducers compete for two Pis' few cores — each
    job's raw stream (5–30 Mbit/s) shrinks tenfold where its reducer runs on the Pi its source is born on, and the
    uplinks cannot carry every raw stream — so which job gets a Pi's core is the plan's choice, and a priority or a
    budget changes it. Random priorities (0–2 or none) and shares of one uplink (0.1–0.6)."""
    rng = random.Random(seed)
    edge_names = ["rpi1", "rpi2"]
    profiles, births, raw_on = [], {}, {n: 0.0 for n in edge_names}
    for k in range(rng.choice((2, 3))):
        tag, raw = str(k), rng.choice((5, 10, 20, 30))
        births[f"Source: S{tag}"] = born = "rpi1" if rng.random() < 0.75 else "rpi2"
        raw_on[born] += raw
        profiles.append(
            job_profile(
                f"job{tag}",
                [
                    vertex(f"Source: S{tag}", rin=0, rout=1000, busy=10, bpr=raw * 125),
                    vertex(f"R{tag}", rin=1000, rout=100, busy=rng.choice((150, 200, 230)), bpr=1250),
                    vertex(f"Sink: T{tag}", rin=100, rout=0, busy=5),
                ],
                [(f"Source: S{tag}", f"R{tag}", "FORWARD"), (f"R{tag}", f"Sink: T{tag}", "FORWARD")],
            )
        )
    # each uplink carries somewhat less than every raw stream born behind it (or a little more)
    edges = [
        {
            "name": n,
            "cores": 1,
            "task_slots": 4,
            "delay": f"{rng.choice((10, 40))}ms",
            "bandwidth": f"{round(raw_on[n] * rng.choice((0.6, 0.8, 1.2))) + 3}mbit",
        }
        for n in edge_names
    ]
    inv = inventory(edges, pins={"sources": births})
    policies = {}
    for p in profiles:
        priority = rng.choice((None, 0, 1, 2))
        shares = {rng.choice(edge_names): rng.choice((0.1, 0.3, 0.6))} if rng.random() < 0.4 else {}
        if priority is not None or shares:
            policies[p.job.name] = JobPolicy(priority=priority, uplink_shares=shares)
    return inv, profiles, policies


def priority_order(names: list[str], policies: dict[str, JobPolicy]) -> list[set[str]]:
    """The jobs in classes by priority, highest first; one class when no job has a priority or all share one
    (unset counts as 0)."""
    ranks = {n: (policies[n].priority if n in policies and policies[n].priority is not None else 0) for n in names}
    if not any(n in policies and policies[n].priority is not None for n in names) or len(set(ranks.values())) == 1:
        return [set(names)]
    return [{n for n in names if ranks[n] == r} for r in sorted(set(ranks.values()), reverse=True)]


def within_budgets(named, combo, policies: dict[str, JobPolicy]) -> bool:
    """Every job's own traffic on each uplink it has a share of at most share × bandwidth × headroom."""
    first = named[0][1]
    for (name, _), (_, cost) in zip(named, combo):
        policy = policies.get(name)
        for host, share in policy.uplink_shares.items() if policy else ():
            h = first.host_by_name[host]
            mine = next(load.mbit for load in cost.links if load.host == host)
            if mine > share * h.uplink_mbit * first.policy.wan_headroom + EPS:
                return False
    return True


def ranked_key(named, combo, classes: list[set[str]]) -> tuple[float, ...]:
    """(WAN of each class, highest first; server cores of all; latency of each class)."""
    costs = {name: cost for (name, _), (_, cost) in zip(named, combo)}
    wan = [sum(costs[n].wan_mbit for n in c) for c in classes]
    latency = [sum(costs[n].latency_ms for n in c) for c in classes]
    return (*wan, sum(c.server_cores for c in costs.values()), *latency)


def joint_brute_force(named: list[tuple[str, PlacementProblem]], policies: dict[str, JobPolicy] | None = None):
    """(best (wan, server cores, latency) — per priority class with ``policies`` (:func:`ranked_key`) —, its per-job
    assignments, number of joint-feasible combinations)."""
    first = named[0][1]
    policies = policies or {}
    classes = priority_order([n for n, _ in named], policies)
    per_job = [alone(pr) for _, pr in named]
    best, best_plan, feasible = None, None, 0
    for combo in itertools.product(*per_job):
        if not within_budgets(named, combo, policies):
            continue
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
        if any(
            cores[h.name] > first.usable_cores(h) + EPS
            or memory[h.name] > first.usable_memory(h) + EPS
            or slots[h.name] > h.slots
            for h in first.hosts
        ):
            continue
        feasible += 1
        key = ranked_key(named, combo, classes)
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
