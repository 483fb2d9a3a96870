"""The cost model: what a subtask needs from a host and what an assignment costs.

Notation: a *subtask* ``s = (v, i)`` is subtask ``i`` of job vertex ``v``; ``x[s] = h`` assigns it to host ``h``.
Every figure comes from the profile (:mod:`placement.profile.format`) and the inventory (:mod:`placement.inventory`).

**CPU** (:mod:`.demand`). ``busy(s)`` ms/s was measured on a host of speed ``σ_m`` (server core = 1). The subtask then
needs ``c(s) = busy(s)/1000 · σ_m`` server-cores, and ``c(s, h) = c(s) / σ_h`` cores of host ``h``. This is the same
figure as "input rate / true processing rate": true rate = ``in/(busy/1000)``, so ``in / true rate = busy/1000``.
Busy time 0 (Flink's idle reading at low load) and NaN/missing busy time are handled by an explicit rule — see
:func:`.demand.server_cores`; a subtask never costs less than :data:`.demand.MIN_CORES` times its vertex's
calibration (the CPU its threads were measured to use, :func:`.demand.floor_cores`).

**Memory**: ``m(s) = memory_per_subtask + state_bytes(v)/parallelism(v)`` (MiB).

**Traffic** (:mod:`.traffic`). Along a job edge ``e = U → V`` upstream subtask ``u_i`` puts ``o(u_i, e)`` Mbit/s
(one copy of each record) — the edge's own figures in the profile (:mod:`placement.profile.edge_flows` resolves them
from Flink's metrics), or for a profile without them ``records_out · bytes_per_record_out``. The pair ``u_i → v_j``
carries ``f(i, j) = o(u_i, e)·share(i, j)`` plus Flink's network framing (a 47-byte header per flushed buffer,
charged when the profile records the job's buffer timeout). ``share`` follows Flink's wiring: FORWARD ``[i = j]``;
RESCALE pointwise (``u_i`` feeds a contiguous block of downstream subtasks, evenly); HASH the measured share of
``v_j`` (key skew; ``1/n_V`` when not measured); REBALANCE ``1/n_V``; BROADCAST ``1`` (a copy to each); GLOBAL
``[j = 0]``.

**Checkpoints** (:func:`.demand.checkpoint_mbit`). A subtask on an edge host uploads each checkpoint over its uplink:
``k(s) = checkpointed_bytes(v)/n_v · 8 / interval`` Mbit/s.

**WAN** (:mod:`.evaluate`). Each edge host ``e`` has one uplink. Its traffic is
``W(e) = Σ_{U→V} Σ_{i,j} f(i, j)·[x[u_i] = e]·[x[v_j] ≠ e] + Σ_s k(s)·[x[s] = e]`` Mbit/s. Traffic between servers
is free. Flink's own RPC (heartbeats, metric dumps, checkpoint acknowledgements: ~20 kbit/s per TaskManager) and
TCP/IP headers are not modelled; keep them in the WAN headroom.

**Latency term**: the mean, over all source→sink paths of the job graph, of the WAN delay on the path, where an edge
``U → V`` adds the delay of the worst uplink any of its pairs crosses. Path weights are computed without enumerating
paths: edge ``U → V`` lies on ``P_in(U)·P_out(V)`` of the ``P`` paths. Because plans never send data down to an edge
host, a path crosses the WAN at most once, where its data is born.
"""

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.model import (
    Assignment,
    Channel,
    HostSpec,
    PlacementProblem,
    PlanOptions,
    Subtask,
    build_problem,
)

__all__ = [
    "Assignment",
    "Channel",
    "HostSpec",
    "PlacementProblem",
    "PlanCost",
    "PlanOptions",
    "Subtask",
    "build_problem",
    "evaluate",
]
