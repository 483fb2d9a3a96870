"""When nothing fits: re-solve with a slack on every capacity row and report which link or host is short, by how much.

The elastic model keeps the hard rules (one host per subtask, where data is born, what may run where, no data down to
an edge host) and lets every capacity — link bandwidth, CPU, memory, slots — stretch by a slack ``σ ≥ 0``. It
minimises ``Σ σ / capacity`` (each shortfall relative to what is there), so the report names the smallest set of
shortfalls that would make the job fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulp

from placement.costmodel.model import PlacementProblem
from placement.costmodel.running import running_note
from placement.solver import backends, constraints, families
from placement.solver.domains import Domain, rule_domain
from placement.solver.model import new_model
from placement.solver.result import Shortage, SolverOptions

if TYPE_CHECKING:  # imported where used, as the latency model is
    from placement.costmodel.latency import JobPath

EPS = 1e-6


def diagnose(problem: PlacementProblem, domain: Domain, options: SolverOptions) -> tuple[tuple[Shortage, ...], str]:
    """(shortages, one-line reason) for an infeasible problem.

    The elastic model starts from the rules' domain (``domain`` widened by the pairs the thread limit took away), so
    a thread that cannot keep up stretches like a link would: whichever is the smaller relative shortfall is named."""
    widened = _with_thread_pairs(problem, domain)
    m = new_model(problem, widened, elastic=True)
    constraints.add_all(m, without=(constraints.latency_bound,))
    shortages, reason = least_stretch(problem, m.lp, m.slack, m.slack_scale, options)
    if shortages or not problem.latency_bounds:
        return shortages, reason
    # The capacities fit: the latency bounds are what is short. Stretch them (capacities too, which stay unstretched
    # unless that is cheaper): each path over its bound is named with the least latency it can get.
    m = new_model(problem, widened, elastic=True)
    constraints.add_all(m)
    return least_stretch(problem, m.lp, m.slack, m.slack_scale, options)


def _with_thread_pairs(problem: PlacementProblem, domain: Domain) -> Domain:
    """The rules' domain when it only adds pairs to ``domain`` (the usual case: ``domain`` is restricted_domain's)."""
    rules = rule_domain(problem)
    if rules is None:
        return domain
    return {k: hosts if set(domain[k]) <= set(hosts) else domain[k] for k, hosts in rules.items()}


def least_stretch(
    problem: PlacementProblem,
    lp: pulp.LpProblem,
    slack: dict[tuple[str, ...], pulp.LpVariable],
    scale: dict[tuple[str, ...], float],
    options: SolverOptions,
    what: str = "no placement fits",
) -> tuple[tuple[Shortage, ...], str]:
    """Minimise ``Σ σ / capacity`` over an elastic model's slacks and name what is short (any elastic model: the
    placement ILP's, the rescale ILP's)."""
    if not slack:
        return (), "the placement rules contradict each other (no capacity is involved)"
    lp.setObjective(pulp.lpSum(var * (1.0 / scale[name]) for name, var in slack.items()))
    info = backends.run(
        lp,
        options.solver,
        time_limit=options.time_limit,
        gap=options.gap,
        threads=options.threads,
        verbose=options.verbose,
    )
    if info.objective is None:
        return (), f"{what}, and the elastic re-solve found no explanation ({info.status})"
    return shortages_from_slack(problem, {name: var.value() or 0.0 for name, var in slack.items()})


def shortages_from_slack(
    problem: PlacementProblem, slack: dict[tuple[str, ...], float]
) -> tuple[tuple[Shortage, ...], str]:
    """(shortages, one-line reason) from the elastic re-solve's slack values, largest relative shortfall first
    (slack names: ``("link"|"cpu"|"memory", host)``, ``("link", host, "one flow")``, ``("pair", edge host,
    receiving host)``, ``("slots", host, vertex id | "all")`` or ``("budget", edge host, job)``)."""
    hosts = problem.host_by_name
    shortages = []
    for name, over in slack.items():
        if over <= EPS:
            continue
        kind, host = name[0], name[1]
        if kind == "latency":  # ("latency", n): the n-th bounded path (objectives.bounded_paths' order)
            path = _bounded_paths(problem)[int(host)]
            flush = (
                f"{path.flush_ms:.1f} ms of it buffer-flush waits, which a shorter execution.buffer-timeout shortens"
            )
            bound = path.bound_ms
            assert bound is not None  # _bounded_paths keeps the paths with a bound
            shortages.append(Shortage("latency", path.name, bound + over, bound, bound, detail=flush))
            continue
        h = hosts[host]
        if kind == "thread":  # ("thread", host, vertex id, index): the thread of that subtask on that host
            shortages.append(Shortage.thread(problem, problem.subtask_by_key[(name[2], int(name[3]))], h))
        elif kind == "budget":  # ("budget", edge host, job): the job's share of that uplink
            budget = families.budget_room(problem, h, problem.job_policies[name[2]].uplink_shares[host])
            shortages.append(
                Shortage(
                    "budget",
                    f"{host}→{h.uplink_to}",
                    budget + over,
                    budget,
                    families.budget_room(problem, h, 1.0),
                    detail=name[2],
                )
            )
        elif kind == "pair":  # ("pair", edge host, receiving host): one TCP connection between their TaskManagers
            to = hosts[name[2]]
            usable = families.pair_room(problem, h, to)
            shortages.append(
                Shortage(
                    "link",
                    f"{host}→{to.name}",
                    usable + over,
                    usable,
                    h.uplink_mbit or 0.0,
                    detail=f" between TaskManagers {host} and {to.name}{problem.link_bound_note(h)}",
                    running=running_note(h, "mbit", " Mbit/s"),
                )
            )
        elif kind == "link":  # ("link", edge host) or, a model without pair rows, ("link", edge host, "one flow")
            one_flow = name[2:] == ("one flow",)
            usable = families.one_flow_room(problem, h) if one_flow else families.uplink_room(problem, h)
            shortages.append(
                Shortage(
                    "link",
                    f"{host}→{h.uplink_to}",
                    usable + over,
                    usable,
                    h.uplink_mbit or 0.0,
                    detail=problem.link_bound_note(h) if one_flow else problem.uplink_note(h),
                    running=running_note(h, "mbit", " Mbit/s"),
                )
            )
        elif kind == "cpu":
            usable = families.cpu_room(problem, h)
            shortages.append(
                Shortage("cpu", host, usable + over, usable, h.cores, running=running_note(h, "cores", ""))
            )
        elif kind == "memory":
            usable = families.memory_room(problem, h)
            shortages.append(
                Shortage(
                    "memory", host, usable + over, usable, h.memory_mib, running=running_note(h, "memory_mib", " MiB")
                )
            )
        else:
            group = name[2]
            detail = f" for {problem.vertex_names[group]}" if group in problem.vertex_names else ""
            capacity = h.slots + h.running_total("slots")  # the host's own; the running jobs' are taken off h.slots
            shortages.append(
                Shortage("slots", host, h.slots + over, h.slots, capacity, detail, running=running_note(h, "slots", ""))
            )
    # A thread that cannot keep up comes first: it is a cause (the subtask cannot follow its input), the rest are
    # what that cause costs elsewhere.
    shortages.sort(key=lambda s: (s.kind != "thread", -(s.needed - s.usable) / max(s.usable, EPS)))
    reason = "; ".join(s.message for s in shortages) or "no placement fits"
    return tuple(shortages), reason


def _bounded_paths(problem: PlacementProblem) -> list[JobPath]:
    from placement.costmodel.latency import source_sink_paths

    return [p for p in source_sink_paths(problem) or () if p.bound_ms is not None]
