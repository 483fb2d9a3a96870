"""The placement problem while one edge host, or its uplink, is lost: the same model with that host gone.

A contingency (N-1) is planned by the same solver over this problem, so it is certified the same way and every
capacity row holds in the degraded state. What changes:

* the lost host is gone: nothing may run there; a pin that named only it falls back to the rules' default;
* its sources run on a server (Flink needs every subtask running) and send nothing — unless the inventory says its
  data reaches the server another way (``data_reroutes_on_loss``), and then they are charged at their full rate there;
* what their data fed downstream shrinks by the share it had of each receiver's input (:func:`surviving_shares`), so
  the server's CPU and the surviving uplinks are charged for the data that still flows.

A partitioned uplink and a dead Pi are one state here: each edge host has one uplink, and either way its TaskManager
is lost to the JobManager, which is what the scheduler extension acts on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from placement.costmodel import demand
from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.errors import BadInput


def surviving_shares(problem: PlacementProblem, lost: str, rerouted: bool = False) -> dict[SubtaskKey, float]:
    """Each subtask's share of its input that still flows while ``lost`` is gone: 0 for a source born there (1 when
    its data is ``rerouted`` to the server), 1 for every other source, and downstream the flow-weighted share of what
    each sender still sends (a receiver that gets nothing keeps 1: nothing to lose)."""
    alive: dict[SubtaskKey, float] = {}
    for vid in problem.vertex_order:
        for s in problem.by_vertex[vid]:
            if s.is_source:
                alive[s.key] = 1.0 if rerouted or s.birth != lost else 0.0
                continue
            total = kept = 0.0
            for ch in problem.inputs[vid]:
                for i in ch.senders(s.index):
                    flow = ch.up_out_mbit[i] * ch.share(i, s.index)
                    total += flow
                    kept += flow * alive[(ch.source, i)]
            alive[s.key] = kept / total if total > 0 else 1.0
    return alive


def _degraded_subtask(s: Subtask, share: float, lost: str) -> Subtask:
    pinned = s.pinned_to - {lost} if s.pinned_to is not None else None
    # a light subtask still costs its floor: its thread runs, timers and watermarks tick with no data
    cores = max(s.server_cores * share, min(s.server_cores, demand.MIN_CORES))
    return replace(
        s,
        birth=None if s.birth == lost else s.birth,
        pinned_to=pinned or None,
        out_mbit=s.out_mbit * share,
        records_in_per_s=s.records_in_per_s * share,
        records_out_per_s=s.records_out_per_s * share,
        server_cores=cores,
    )


def degraded_problem(problem: PlacementProblem, lost: str, rerouted: bool | None = None) -> PlacementProblem:
    """``problem`` while edge host ``lost`` (or its uplink) is gone; ``rerouted``: its sources' data reaches the server
    another way (default: the host's ``data_reroutes_on_loss``)."""
    host = problem.host_by_name.get(lost)
    if host is None or not host.is_edge:
        raise BadInput(f"{lost!r} is not an edge host of the plan", field="contingency")
    rerouted = host.data_reroutes_on_loss if rerouted is None else rerouted
    alive = surviving_shares(problem, lost, rerouted)
    subtasks = tuple(_degraded_subtask(s, alive[s.key], lost) for s in problem.subtasks)
    channels = tuple(
        replace(ch, up_out_mbit=tuple(m * alive[(ch.source, i)] for i, m in enumerate(ch.up_out_mbit)))
        for ch in problem.channels
    )
    policies = {
        job: replace(p, uplink_shares={h: x for h, x in p.uplink_shares.items() if h != lost})
        for job, p in problem.job_policies.items()
    }  # a budget on the lost uplink has nothing to bound
    return replace(
        problem,
        hosts=tuple(h for h in problem.hosts if h.name != lost),
        subtasks=subtasks,
        channels=channels,
        job_policies=policies,
        warnings=(),
        input_warnings=(),
    )


def moved(main: Mapping[SubtaskKey, str], degraded: Mapping[SubtaskKey, str]) -> dict[SubtaskKey, tuple[str, str]]:
    """The subtasks the degraded placement runs elsewhere: key -> (planned host, contingency host)."""
    return {k: (main[k], h) for k, h in degraded.items() if main.get(k) != h}
