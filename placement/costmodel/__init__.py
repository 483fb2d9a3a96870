"""The cost model: what a subtask needs from a host and what an assignment costs.

Notation: a *subtask* ``s = (v, i)`` is subtask ``i`` of job vertex ``v``; ``x[s] = h`` assigns it to host ``h``.
Every figure comes from the profile (:mod:`placement.profile.format`) and the inventory (:mod:`placement.inventory`).

**CPU** (:mod:`.demand`). ``busy(s)`` ms/s was measured on a host of speed ``σ_m`` (server core = 1). The subtask then
needs ``c(s) = busy(s)/1000 · σ_m`` server-cores, and ``c(s, h) = c(s) / σ_h`` cores of host ``h``. This is the same
figure as "input rate / true processing rate": true rate = ``in/(busy/1000)``, so ``in / true rate = busy/1000``.
Busy time 0 (Flink's idle reading at low load) and NaN/missing busy time are handled by an explicit rule — see
:func:`.demand.server_cores`; a subtask never costs less than :data:`.demand.MIN_CORES`.

**Memory**: ``m(s) = memory_per_subtask + state_bytes(v)/parallelism(v)`` (MiB).

**Traffic** (:mod:`.traffic`). Subtask ``u_i`` emits ``o(u_i) = records_out · bytes_per_record_out · 8 / 10⁶`` Mbit/s.
Along a job edge ``U → V`` with ``n_V`` downstream subtasks, the share of ``o(u_i)`` that goes to ``v_j`` is
FORWARD ``[i = j]``; HASH, REBALANCE, RESCALE ``1/n_V``; BROADCAST ``1`` (a copy to each); GLOBAL ``[j = 0]``.

**WAN** (:mod:`.evaluate`). Each edge host ``e`` has one uplink. Its traffic is
``W(e) = Σ_{U→V} Σ_{i,j} o(u_i)·share(i,j)·[x[u_i] = e]·[x[v_j] ≠ e]`` Mbit/s. Traffic between servers is free.

**Latency term**: the mean, over all source→sink paths of the job graph, of the WAN delay on the path, where an edge
``U → V`` adds the delay of the worst uplink any of its pairs crosses. Path weights are computed without enumerating
paths: edge ``U → V`` lies on ``P_in(U)·P_out(V)`` of the ``P`` paths. Because plans never send data down to an edge host,
a path crosses the WAN at most once, where its data is born.
"""

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.model import Assignment, Channel, HostSpec, PlacementProblem, PlanOptions, Subtask, build_problem

__all__ = [
    "Assignment", "Channel", "HostSpec", "PlacementProblem", "PlanCost", "PlanOptions", "Subtask", "build_problem", "evaluate",
]
