"""Each vertex's CPU per TaskManager from the threads' CPU time (``_threads`` parts, placement.collect.threads).

Flink names a task thread "<vertex name> (<i>/<n>)#<attempt>" and Linux keeps its first 15 characters, so a thread
belongs to the vertex whose subtask's name starts the same way: exactly for short names ("Parse (1/2)#0"), by the
vertex name's first 15 characters for long ones (then the subtasks of one vertex share a name, which is fine: the
figure is per vertex). Two vertices on one TaskManager whose names agree in their first 15 characters cannot be told
apart: their threads' CPU is split between them in proportion to their busy-time charges. Every other thread (the
JVM's compiler and GC, netty, the output flusher, a source's rate limiter, Flink's RPC and metrics) is the
TaskManager's own — but the JIT compiler's threads, kept apart: they compile what the JVM has just started to
run, a cost that ends (placement.collect.threads.COMPILER_THREAD_PREFIXES), where the model predicts the steady state;
and the Netty server's, which the cost model charges per host from the buffers delivered
(placement.costmodel.deliveries): shared out to the vertices that sent remotely while profiled, it would be charged
again wherever they are placed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from placement.collect.threads import PROCESS_TID, is_compiler_thread, is_netty_server_thread

LINUX_COMM_CHARS = 15  # TASK_COMM_LEN - 1: the kernel keeps this much of a thread's name


@dataclass(frozen=True)
class ThreadCpu:
    """One TaskManager's threads over a window, in cores of CPU time (the caller converts to its host's cores)."""

    vertices: dict[str, float]  # vertex id -> its task threads' cores
    other: float  # every thread no subtask of the job names, but the JIT compiler's and the Netty server's (ended
    # threads included)
    unmatched: tuple[str, ...]  # vertices with subtasks on it whose task thread was not found
    compiler: float = 0.0  # the JIT compiler's threads (a warm-up cost: not the TaskManager's steady own)
    netty_server: float = 0.0  # the Netty server's threads (charged per host by the cost model, not shared out)

    @property
    def steady(self) -> float:
        """The process's cores without the JIT compiler's and the Netty server's: what the profile shares out between
        the subtasks and the TaskManager's baseline."""
        return sum(self.vertices.values()) + self.other


def names_of(comm: str, name: str, index: int, parallelism: int) -> bool:
    """True when the kernel's name ``comm`` is that of the task thread of subtask ``index`` of vertex ``name``."""
    full = f"{name} ({index + 1}/{parallelism})#"
    if len(full) >= LINUX_COMM_CHARS:
        return comm.rstrip() == full[:LINUX_COMM_CHARS].rstrip()
    return comm.startswith(full) and comm[len(full) :].isdigit()


def thread_cpu(
    rows: pa.Table,
    since_ms: int,
    subtasks: Mapping[str, list[tuple[str, str, int, int]]],
    charges: Mapping[str, Mapping[str, float]],
) -> dict[str, ThreadCpu]:
    """Per TaskManager, its threads' CPU after ``since_ms`` (all rows when that leaves fewer than two per thread):
    ``subtasks`` maps a TaskManager id to the job's subtasks on it as (vertex id, vertex name, index, parallelism),
    ``charges`` to each vertex's busy-time charge on it (the key for names two vertices share). A thread seen once
    (started or ended inside the window) is left out, as are TaskManagers without two readings; where the listing has
    the whole process's row (``PROCESS_TID``), what it used beyond the threads seen is the TaskManager's too
    (``other``): the CPU of threads that ended inside the window."""
    if rows.num_rows == 0:
        return {}
    cols = {
        c: rows.column(c).to_numpy(zero_copy_only=False)
        for c in ("ts_ms", "taskmanager_id", "tid", "thread", "cpu_time_ns")
    }
    out: dict[str, ThreadCpu] = {}
    for tm in np.unique(cols["taskmanager_id"]):
        mine = cols["taskmanager_id"] == tm
        ts, tid, name, ns = (cols[c][mine] for c in ("ts_ms", "tid", "thread", "cpu_time_ns"))
        late = ts >= since_ms
        if len(np.unique(ts[late])) >= 2:
            ts, tid, name, ns = ts[late], tid[late], name[late], ns[late]
        rounds = np.unique(ts)
        if len(rounds) < 2:
            continue
        wall_s = (rounds[-1] - rounds[0]) / 1000.0
        used: dict[str, float] = {}  # thread name -> cores, summed over its threads
        process: float | None = None  # the whole process's cores, where recorded
        for t in np.unique(tid):
            one = tid == t
            first, last = np.argmin(ts[one]), np.argmax(ts[one])
            if ts[one][first] == ts[one][last]:
                continue
            delta = float(ns[one][last] - ns[one][first]) / 1e9
            if delta < 0:  # a thread id reused by another thread
                continue
            if t == PROCESS_TID:
                process = delta / wall_s
                continue
            key = str(name[one][last])
            used[key] = used.get(key, 0.0) + delta / wall_s
        got = _by_vertex(used, subtasks.get(str(tm), []), charges.get(str(tm), {}))
        if process is not None:
            ended = process - sum(got.vertices.values()) - got.other - got.compiler - got.netty_server
            got = replace(got, other=got.other + max(ended, 0.0))
        out[str(tm)] = got
    return out


def _by_vertex(
    used: Mapping[str, float], subtasks: list[tuple[str, str, int, int]], charges: Mapping[str, float]
) -> ThreadCpu:
    vertices: dict[str, float] = {}
    found: set[str] = set()
    other = compiler = netty = 0.0
    for comm, cores in used.items():
        if is_compiler_thread(comm):
            compiler += cores
            continue
        if is_netty_server_thread(comm):
            netty += cores
            continue
        owners = sorted({vid for vid, vname, i, p in subtasks if names_of(comm, vname, i, p)})
        if not owners:
            other += cores
            continue
        found.update(owners)
        weights = [max(charges.get(v, 0.0), 0.0) for v in owners]
        total = sum(weights)
        for v, w in zip(owners, weights):
            vertices[v] = vertices.get(v, 0.0) + cores * (w / total if total > 0 else 1 / len(owners))
    unmatched = tuple(sorted({vid for vid, *_ in subtasks} - found))
    return ThreadCpu(vertices, other, unmatched, compiler, netty)
