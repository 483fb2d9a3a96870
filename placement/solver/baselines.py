"""The strategies the ILP is compared with.

* **all-on-server** — sources stay where their data is born, every other subtask goes to a server (the server with
  the most spare CPU first). What a Flink job does when nobody places it.
* **greedy** — the seed projects' heuristic: starting from all-on-server, offload subtasks of light stateless operators
  to the edge host their input comes from, trying operators with the highest trueOutputProcessingRate
  (records out per busy second) first, as long as the host's CPU, memory and slots allow and the subtask's one thread
  keeps up there. It does not look at the
  WAN: an operator that makes records bigger can be offloaded and make the link worse.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.solver import families
from placement.solver.result import PlanResult


def _result(strategy: str, problem: PlacementProblem, assignment: dict[SubtaskKey, str]) -> PlanResult:
    cost = evaluate(problem, assignment)
    return PlanResult(
        strategy,
        "feasible" if cost.feasible else "infeasible",
        assignment,
        cost,
        reason=None if cost.feasible else "; ".join(cost.violations),
    )


def _all_on_server(problem: PlacementProblem) -> dict[SubtaskKey, str]:
    spare = {h.name: families.cpu_room(problem, h) for h in problem.servers}
    assignment: dict[SubtaskKey, str] = {}
    for vid in problem.vertex_order:
        for s in problem.by_vertex[vid]:
            allowed = problem.allowed_hosts(s)
            servers = [h for h in spare if h in allowed]
            fast = [h for h in servers if problem.keeps_up(s, problem.host_by_name[h])]
            servers = fast or servers  # a server where its thread keeps up, when there is one
            if s.birth is not None:
                assignment[s.key] = s.birth
            elif servers:
                best = max(servers, key=lambda h: spare[h])  # max() keeps the first of equals: deterministic
                spare[best] -= families.cpu_need(s, problem.host_by_name[best])
                assignment[s.key] = best
            else:  # a user pin keeps it off every server
                assignment[s.key] = sorted(allowed)[0] if allowed else problem.servers[0].name
    return assignment


def all_on_server(problem: PlacementProblem) -> PlanResult:
    return _result("all-on-server", problem, _all_on_server(problem))


def true_output_rate(subtasks: list[Subtask]) -> float:
    """trueOutputProcessingRate of a vertex: records out per second of busy time (server cores)."""
    busy = sum(s.server_cores for s in subtasks)
    return sum(s.records_out_per_s for s in subtasks) / busy if busy > 0 else 0.0


def greedy(problem: PlacementProblem) -> PlanResult:
    assignment = _all_on_server(problem)
    used_cores: dict[str, float] = defaultdict(float)
    used_memory: dict[str, float] = defaultdict(float)
    per_vertex: dict[str, Counter[str]] = defaultdict(Counter)
    for s in problem.subtasks:
        h = problem.host_by_name[assignment[s.key]]
        used_cores[h.name] += families.cpu_need(s, h)
        used_memory[h.name] += families.memory_need(s)
        per_vertex[h.name][s.vertex_id] += 1

    def fits(s: Subtask, host: str) -> bool:
        h = problem.host_by_name[host]
        slots = problem.slots_of_counts(per_vertex[host] + Counter({s.vertex_id: 1}))
        return (
            problem.keeps_up(s, h)  # one thread: the subtask must keep up on the Pi on its own
            and used_cores[host] + families.cpu_need(s, h) <= families.cpu_room(problem, h) + 1e-9
            and used_memory[host] + families.memory_need(s) <= families.memory_room(problem, h) + 1e-9
            and slots <= h.slots
        )

    def input_host(s: Subtask) -> str | None:
        hosts = {assignment[(ch.source, i)] for ch in problem.inputs[s.vertex_id] for i in ch.senders(s.index)}
        return hosts.pop() if len(hosts) == 1 else None

    candidates = [
        vid
        for vid in problem.vertex_order
        if not any(s.is_source or s.is_sink or s.stateful for s in problem.by_vertex[vid])
    ]
    candidates.sort(key=lambda vid: -true_output_rate(problem.by_vertex[vid]))
    moved = True
    while moved:  # an offloaded operator can make its successor offloadable
        moved = False
        for vid in candidates:
            for s in problem.by_vertex[vid]:
                current, target = assignment[s.key], input_host(s)
                if target is None or target == current or not problem.host_by_name[target].is_edge:
                    continue
                if target not in problem.allowed_hosts(s) or not fits(s, target):
                    continue
                old = problem.host_by_name[current]
                used_cores[current] -= families.cpu_need(s, old)
                used_memory[current] -= families.memory_need(s)
                per_vertex[current][s.vertex_id] -= 1
                new = problem.host_by_name[target]
                used_cores[target] += families.cpu_need(s, new)
                used_memory[target] += families.memory_need(s)
                per_vertex[target][s.vertex_id] += 1
                assignment[s.key] = target
                moved = True
    return _result("greedy", problem, assignment)
