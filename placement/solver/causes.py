"""Structural causes of an infeasible plan: the operators the rules keep off the edge where their input is.

The elastic re-solve (:mod:`placement.solver.elastic`) says *what* is short (a link, a host's CPU). Often the reason is
a rule, not a capacity: an operator whose input is produced on a Pi but which may not run there, so all of that input
crosses the uplink. This module names those operators, why they cannot follow their input, and what would let them:

* its subtasks read from several hosts (a union of sources born on different Pis, a keyed exchange across Pis, an
  input that is itself on the server) — an operator runs where *all* of its input is, so only a server is left;
* it is stateful or a sink and the Pi does not ``allow_stateful`` / ``allow_sinks``;
* a user pin or forbid keeps it off that Pi;
* its one thread cannot keep up on that Pi (:meth:`placement.costmodel.model.PlacementProblem.keeps_up`).

Pure: it reads the problem and the solver's domains (the hosts each subtask may take), never a solution.
"""

from __future__ import annotations

from collections import defaultdict

from placement.costmodel.model import PlacementProblem, Subtask
from placement.profile.format import ShipStrategy
from placement.solver.domains import Domain
from placement.solver.result import Shortage

MAX_CAUSES = 3  # the message stays readable; the rest are counted
POINTWISE_WHEN_EQUAL = frozenset({ShipStrategy.FORWARD, ShipStrategy.REBALANCE, ShipStrategy.RESCALE})


def structural_causes(problem: PlacementProblem, domain: Domain, shortages: tuple[Shortage, ...]) -> tuple[str, ...]:
    """One sentence per operator kept off an edge host its input comes from, for the edge hosts behind the shortfalls:
    the edge host of a short link, every edge host when a server is short."""
    hosts = _edge_hosts_behind(problem, shortages)
    blocked: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # vertex -> why -> edge hosts
    for s in problem.subtasks:
        if s.is_source:
            continue
        for h in hosts:
            if h in domain[s.key] or not _input_may_be_on(problem, domain, s, h):
                continue
            blocked[s.vertex_id][_why_not(problem, domain, s, h)].add(h)
    sentences = [
        _sentence(problem, domain, vid, why, sorted(on))
        for vid in problem.vertex_order
        if vid in blocked
        for why, on in sorted(blocked[vid].items())
    ]
    if len(sentences) > MAX_CAUSES:
        sentences = [*sentences[:MAX_CAUSES], f"{len(sentences) - MAX_CAUSES} more operators are kept off the edge"]
    return tuple(sentences)


def _edge_hosts_behind(problem: PlacementProblem, shortages: tuple[Shortage, ...]) -> list[str]:
    edges = [h.name for h in problem.edges]
    if any(
        s.kind not in ("link", "latency", "budget") and not problem.host_by_name[s.resource].is_edge for s in shortages
    ):
        return edges  # a short server: anything kept off any Pi adds to its load
    short_links = {s.resource for s in shortages if s.kind in ("link", "budget")}
    # a TaskManager pair's shortage is named "edge host→receiving host": its uplink is short too
    short_edges = {link.split("→")[0] for link in short_links}
    return [h for h in edges if h in short_edges]


def _senders(problem: PlacementProblem, s: Subtask) -> list[tuple[str, int]]:
    return [(ch.source, i) for ch in problem.inputs[s.vertex_id] for i in ch.senders(s.index)]


def _input_may_be_on(problem: PlacementProblem, domain: Domain, s: Subtask, host: str) -> bool:
    return any(host in domain[u] for u in _senders(problem, s))


def _why_not(problem: PlacementProblem, domain: Domain, s: Subtask, host: str) -> str:
    """What keeps ``s`` off ``host``: its inputs when not all of them may be there (then no setting helps), else the
    first rule, in the order a user would change them."""
    if not all(host in domain[u] for u in _senders(problem, s)):
        return "inputs"
    if not problem.keeps_up(s, problem.host_by_name[host]):
        return "thread"
    if host in s.forbidden:
        return "forbid"
    if s.pinned_to is not None and host not in s.pinned_to:
        return "pin"
    h = problem.host_by_name[host]
    if s.pinned_to is None and not problem.rules_allow_on(s, h):
        return "stateful" if s.stateful and not h.allow_stateful else "sink"
    return "inputs"


def _sentence(problem: PlacementProblem, domain: Domain, vid: str, why: str, on: list[str]) -> str:
    name = problem.vertex_names[vid]
    subtasks = problem.by_vertex[vid]
    where = ", ".join(on)
    if why == "forbid":
        return f"{name} is forbidden on {where} (pins.forbid), where its input is: drop the forbid to process it there"
    if why == "pin":
        pinned = ", ".join(sorted(subtasks[0].pinned_to or ()))
        return f"{name} is pinned to {pinned} (pins.operators) while its input is on {where}: add {where} to its pin"
    if why == "thread":
        return (
            f"{name} cannot keep up in one thread on {where}, where its input is: a higher parallelism (or a "
            f"source parallelism that splits the input further) spreads it over more threads"
        )
    if why in ("stateful", "sink"):
        kind, flag = ("is stateful", "allow_stateful") if why == "stateful" else ("is a sink", "allow_sinks")
        verb = "does" if len(on) == 1 else "do"
        return (
            f"{name} {kind} and {where} {verb} not allow it, so its input crosses the uplink: {flag}: true on {where}"
        )
    return _inputs_sentence(problem, domain, vid, name, len(subtasks))


def _inputs_sentence(problem: PlacementProblem, domain: Domain, vid: str, name: str, parallelism: int) -> str:
    origins = []  # "Source: A on rpi1", "Source: B on the server"
    for ch in problem.inputs[vid]:
        up = problem.vertex_names[ch.source]
        edge = sorted({h for i in range(ch.n_up) for h in domain[(ch.source, i)] if problem.host_by_name[h].is_edge})
        origins.append(f"{up} on {', '.join(edge)}" if edge else f"{up} on the server")
    inputs = problem.inputs[vid]
    fix = "reduce each input on its own host before they meet (an operator per input)"
    if any(ch.strategy in (ShipStrategy.HASH, ShipStrategy.BROADCAST) for ch in inputs):
        fix = "pre-aggregate on each host before the keyBy (its input is exchanged by key across hosts)"
    else:
        widths = {ch.n_up for ch in inputs}
        if (
            len(widths) == 1
            and (width := widths.pop()) > parallelism
            and all(ch.strategy in POINTWISE_WHEN_EQUAL for ch in inputs)
        ):
            fix = f"parallelism {width} (as its input's) makes each subtask read from one host"
    return (
        f"{name} (parallelism {parallelism}) can only run on a server: its input comes from "
        f"{'; '.join(origins)}. To run it at the edge: {fix}"
    )


def thread_causes(problem: PlacementProblem, rules: Domain, shortages: tuple[Shortage, ...]) -> tuple[Shortage, ...]:
    """The threads that cannot keep up on an edge host behind the shortfalls (as :func:`structural_causes` picks them)
    though the rules (``rules``: a domain without the thread limit) and their input would let them run there — the
    cause, put first, of a short link or server that the planners whose elastic model has no thread row name alone
    (the rescale and fleet models; the exact model's elastic re-solve stretches threads itself)."""
    hosts = problem.host_by_name
    behind = set(_edge_hosts_behind(problem, shortages))
    out = []
    for s in problem.subtasks:  # one pass over the subtasks (a fleet has 100 000 and 10 000 Pis)
        for h in rules[s.key]:
            if h not in behind or problem.keeps_up(s, hosts[h]):
                continue
            if all(h in rules[u] for u in _senders(problem, s)):
                out.append(Shortage.thread(problem, s, hosts[h]))
    return tuple(sorted(out, key=lambda s: -s.needed))  # the thread furthest from keeping up first
