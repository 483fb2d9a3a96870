"""Small rescale instances and a brute-force optimum that knows nothing of the ILP.

The brute force enumerates every allowed parallelism of every forward group (``space.groups``: Flink's rules and the
inventory's bounds) and, at each, every assignment of every subtask to a host the placement rules allow
(``problem.allowed_hosts``: where data is born, sinks and stateful operators, pins). Each plan is judged by the
independent evaluator with the per-instance rate row on (``evaluate(...)``) and by the parallelism rules
(``space.violations``); the best is the lexicographic minimum of (WAN, server cores, latency, subtasks).

One reduction, a symmetry of the evaluator rather than of the model: the subtasks of a vertex whose figures are all
equal and whose every edge is all-to-all (HASH, REBALANCE, BROADCAST; no FORWARD, no GLOBAL into it) are
interchangeable — the evaluator sees the same loads, shares and crossings whichever of them sits where — so their hosts
are enumerated as multisets. Every other vertex's subtasks are enumerated one by one. And one pruning by the
evaluator's own first rule: a subtask is never put on a host where its thread cannot keep up (every such plan is
infeasible, so no optimum is lost).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from planning_factories import inventory, profile, vertex

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.model import PlacementProblem
from placement.costmodel.rescaled import RescaleSpace, build_space
from placement.profile.format import ShipStrategy


def key(cost: PlanCost, parallelism: dict[str, int]) -> tuple[float, float, float, int]:
    return (round(cost.wan_mbit, 6), round(cost.server_cores, 6), round(cost.latency_ms, 6), sum(parallelism.values()))


def _interchangeable(problem: PlacementProblem, vid: str) -> bool:
    edges = [c for c in problem.channels if vid in (c.source, c.target)]
    if any(c.strategy in (ShipStrategy.FORWARD, ShipStrategy.RESCALE) for c in edges):
        return False
    if any(c.strategy is ShipStrategy.GLOBAL and c.target == vid for c in edges):
        return False
    subtasks = problem.by_vertex[vid]
    figures = {
        (s.out_mbit, s.server_cores, s.memory_mib, s.records_in_per_s, s.birth, s.pinned_to, s.forbidden)
        for s in subtasks
    }
    return len(figures) == 1


def _vertex_options(problem: PlacementProblem, vid: str, prune: bool = True) -> list[tuple[str, ...]]:
    subtasks = problem.by_vertex[vid]
    # ``prune``: a subtask on a host where its one thread cannot keep up makes the plan infeasible whatever else it
    # holds (evaluate's first rule, problem.keeps_up): those hosts are left out of its options, which changes no optimum
    # and leaves a third of the plans to evaluate (measured on the random family: 7,228 of 21,596). The instances'
    # size budget counts without it (enumeration_size), so the families stay the instances they were.
    hosts = [
        sorted(h for h in problem.allowed_hosts(s) if not prune or problem.keeps_up(s, problem.host_by_name[h]))
        for s in subtasks
    ]
    if _interchangeable(problem, vid):
        return list(itertools.combinations_with_replacement(hosts[0], len(subtasks)))
    return list(itertools.product(*hosts))


def assignments(problem: PlacementProblem) -> Iterator[dict]:
    order = list(problem.vertex_order)
    options = [_vertex_options(problem, vid) for vid in order]
    for combo in itertools.product(*options):
        yield {(vid, i): h for vid, hosts in zip(order, combo) for i, h in enumerate(hosts)}


def parallelisms(space: RescaleSpace) -> Iterator[dict[str, int]]:
    """Every parallelism the rules allow: each rescalable group at each of its choices, the rest as profiled."""
    kept = {vid: p for g in space.groups if g.per_subtask for vid, p in space.parallelism_of(g).items()}
    groups = space.rescalable
    for combo in itertools.product(*(g.choices for g in groups)):
        yield {**kept, **{vid: p for g, p in zip(groups, combo) for vid in g.members}}


def enumeration_size(space: RescaleSpace) -> int:
    total = 0
    for par in parallelisms(space):
        problem = space.problem_at(par)
        total += math.prod(len(_vertex_options(problem, vid, prune=False)) for vid in problem.vertex_order)
    return total


@dataclass
class BruteForce:
    best: PlanCost | None
    parallelism: dict[str, int] | None
    feasible: int
    evaluated: int

    @property
    def key(self):
        return key(self.best, self.parallelism) if self.best else None


def brute_force(space: RescaleSpace) -> BruteForce:
    best = best_par = None
    feasible = evaluated = 0
    for par in parallelisms(space):
        assert not space.violations(par), space.violations(par)
        problem = space.problem_at(par)
        for a in assignments(problem):
            evaluated += 1
            cost = evaluate(problem, a)
            if not cost.feasible:
                continue
            feasible += 1
            if best is None or key(cost, par) < key(best, best_par):
                best, best_par = cost, par
    return BruteForce(best, best_par, feasible, evaluated)


# ---- instances ------------------------------------------------------------------------------------------------


def _pis(rng: random.Random, n: int, **fixed) -> list[dict]:
    return [
        {
            "name": f"rpi{k + 1}",
            "model": rng.choice(["rpi4b", "rpi5"]),
            "cores": rng.choice([1, 2, 4]),
            "task_slots": rng.choice([1, 2, 3, 4]),
            "bandwidth": f"{rng.choice([5, 20, 50, 100])}mbit",
            "delay": f"{rng.choice([5, 50])}ms",
            "allow_stateful": rng.random() < 0.3,
            **fixed,
        }
        for k in range(n)
    ]


def _op(rng: random.Random, name: str, p: int, rin: float, *, pi_load: float, stateful: bool = False) -> dict:
    """A vertex whose one instance at its profiled parallelism needs ``pi_load`` cores of an rpi4b (speed 0.3)."""
    busy = min(1000.0, pi_load * 0.3 * 1000)
    sel = rng.choice([0.05, 0.3, 1.0, 2.0])
    return vertex(
        name,
        p,
        rin=rin,
        rout=rin * sel,
        busy=busy,
        bpr=rng.choice([20, 100, 400]),
        stateful=stateful,
        state=rng.choice([0, 50e6]) if stateful else 0.0,
    )


def with_network_figures(prof):
    """The profile with Flink's network framing charged (``buffer_timeout_ms`` 100: a flush every 100 ms per channel,
    so the WAN depends on how many channels cross) and 5-second checkpoints of 40 MB per stateful vertex uploaded
    from edge hosts — figures whose cost depends on both ends' parallelism and on the state per instance."""
    doc = prof.model_dump(mode="json")
    doc["job"].update(buffer_timeout_ms=100, checkpoint_interval_ms=5000)
    for v in doc["vertices"]:
        if v["stateful"]:
            v["state_bytes"] = 40e6
    return type(prof).model_validate(doc)


def random_space(rng: random.Random, budget: int = 6000, network: bool = False, mode: str = "custom") -> RescaleSpace:
    """A random job and cluster, small enough to enumerate (≤ ``budget`` plans): a source born on 1–2 Pis, one or
    two operators behind any ship strategy (FORWARD, HASH, REBALANCE, BROADCAST), sometimes a second source joined in
    by HASH, a sink behind REBALANCE, HASH or GLOBAL; 1–3 Pis of random speed, cores, slots and uplinks; slot
    sharing off in a fifth of them. ``network``: with :func:`with_network_figures`; ``mode``: the placement mode
    (vanilla: an operator after the source chains runs whole on one host)."""
    while True:
        n_pis = rng.randint(1, 3)
        pis = _pis(rng, n_pis)
        server = {"cores": rng.choice([4, 8]), "task_slots": rng.choice([4, 8])}
        src_p = rng.randint(1, min(2, n_pis))
        births = {"Source: S": rng.sample([p["name"] for p in pis], src_p)}
        rate = rng.choice([1000, 5000, 10000])
        vs = [vertex("Source: S", src_p, rin=0, rout=rate, busy=rng.choice([5, 20]), bpr=rng.choice([50, 200, 400]))]
        edges = []
        prev, prev_p, flow = "Source: S", src_p, rate
        bounds = {}
        if rng.random() < 0.25:  # a second source, joined by the first operator
            side = rng.choice([500, 2000])
            vs.append(vertex("Source: T", 1, rin=0, rout=side, busy=5, bpr=100))
            births["Source: T"] = rng.choice([p["name"] for p in pis] + [None])
            if births["Source: T"] is None:
                del births["Source: T"]  # born at the server side
        for k in range(rng.randint(1, 2)):
            strategy = rng.choice(["REBALANCE", "HASH", "FORWARD", "REBALANCE", "BROADCAST"])
            p = prev_p if strategy == "FORWARD" else rng.randint(1, 3)
            rin = flow / p if strategy != "BROADCAST" else flow
            name = f"Op{k + 1}"
            vs.append(
                _op(
                    rng,
                    name,
                    p,
                    rin,
                    pi_load=rng.choice([0.3, 0.9, 1.5, 2.2]),
                    stateful=strategy == "HASH" and rng.random() < 0.5,
                )
            )
            edges.append((prev, name, strategy))
            if k == 0 and "Source: T" in {v["name"] for v in vs}:
                edges.append(("Source: T", name, "HASH"))
            bounds[name] = {"max": rng.choice([3, 4])}
            prev, prev_p, flow = name, p, sum(s["records_out_per_s"] for s in vs[-1]["subtasks"])
        sink_strategy = rng.choice(["REBALANCE", "HASH", "GLOBAL"])
        vs.append(vertex("Sink: K", 1, rin=flow, rout=0, busy=rng.choice([5, 50]), bpr=0))
        edges.append((prev, "Sink: K", sink_strategy))
        bounds["Sink: K"] = {"max": rng.choice([1, 2])}
        inv = _revalidate(
            inventory(pis, server=server, pins={"sources": births}, slot_sharing=rng.random() < 0.8), parallelism=bounds
        )
        prof = profile(vs, edges)
        space = build_space(
            inv,
            with_network_figures(prof) if network else prof,
            rate_scale=rng.choice([1.0, 1.5, 2.0]),
            placement_mode=mode,
        )
        if enumeration_size(space) <= budget:
            return space


def edge_filter_space(rng: random.Random) -> RescaleSpace:
    """The issue's case: a filter behind a REBALANCE that keeps up on its source's Pi only with several instances."""
    pis = _pis(rng, rng.randint(1, 2), model="rpi4b", cores=4, task_slots=4)
    rate = rng.choice([5000, 10000])
    vs = [
        vertex("Source: S", 1, rin=0, rout=rate, busy=5, bpr=rng.choice([200, 400])),
        _op(rng, "Filter", 1, rate, pi_load=rng.choice([1.2, 1.8, 2.6])),
        vertex("Sink: K", 1, rin=rate * 0.1, rout=0, busy=10, bpr=0),
    ]
    vs[1]["subtasks"][0]["records_out_per_s"] = rate * rng.choice([0.05, 0.2])
    edges = [("Source: S", "Filter", "REBALANCE"), ("Filter", "Sink: K", rng.choice(["REBALANCE", "HASH"]))]
    inv = inventory(pis, pins={"sources": {"Source: S": "rpi1"}})
    inv = _revalidate(inv, parallelism={"Filter": {"max": 4}, "Sink: K": {"max": 1}})
    return build_space(inv, profile(vs, edges), rate_scale=rng.choice([1.0, 1.2]))


def overprovisioned_space(rng: random.Random) -> RescaleSpace:
    """An operator profiled at 4 instances where fewer do: behind a Pi with fewer slots, or idle on the server."""
    pis = _pis(rng, 1, model="rpi4b", cores=4, task_slots=rng.choice([1, 2, 3]))
    rate = rng.choice([2000, 6000])
    vs = [
        vertex("Source: S", 1, rin=0, rout=rate, busy=5, bpr=rng.choice([200, 400])),
        _op(rng, "Filter", 4, rate / 4, pi_load=rng.choice([0.1, 0.3])),
        vertex("Sink: K", 2, rin=rate * 0.1, rout=0, busy=10, bpr=0),
    ]
    for s in vs[1]["subtasks"]:
        s["records_out_per_s"] = rate / 4 * rng.choice([0.05, 0.5])
    edges = [("Source: S", "Filter", "REBALANCE"), ("Filter", "Sink: K", "HASH")]
    inv = _revalidate(
        inventory(pis, pins={"sources": {"Source: S": "rpi1"}}),
        parallelism={"Filter": {"max": 4}, "Sink: K": {"max": 2}},
    )
    return build_space(inv, profile(vs, edges), rate_scale=1.0)


def _revalidate(inv, parallelism: dict | None = None):
    """The inventory through validation again (bounds are part of the model, not a side dictionary)."""
    doc = inv.model_dump(mode="json", by_alias=True)
    if parallelism is not None:
        doc["parallelism"] = parallelism
    return type(inv).model_validate(doc)


# ---- what an optimum did ------------------------------------------------------------------------------------------


def raised_at_edge(space: RescaleSpace, parallelism: dict[str, int], assignment: dict) -> list[str]:
    """Vertices the plan runs at more than their profiled parallelism with an instance on an edge host where, at the
    profiled parallelism, an instance could not keep up."""
    problem = space.problem_at(parallelism)
    profiled = space.problem_at(space.profiled_parallelism())
    rho = problem.policy.cpu_utilisation_target
    out = []
    for vid, p in parallelism.items():
        if p <= space.profiled(vid):
            continue
        for s in problem.by_vertex[vid]:
            host = problem.host_by_name[assignment[s.key]]
            if host.is_edge and profiled.by_vertex[vid][0].cores_on(host) > rho + 1e-9:
                out.append(problem.vertex_names[vid])
                break
    return out


def lowered(space: RescaleSpace, parallelism: dict[str, int]) -> list[str]:
    return [space.profile.vertex(vid).name for vid, p in parallelism.items() if p < space.profiled(vid)]
