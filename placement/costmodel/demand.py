"""CPU and memory demand of one subtask, and a TaskManager's own CPU.

A subtask's CPU is the busy-time rule of :mod:`placement.profile.cpu_demand` (its floor, calibration and rate
scaling are documented there); this module adds what only the cost model charges: checkpoint upload, memory, and the
TaskManager baseline (:func:`baseline_cores`), which the cost model takes off the host's usable cores.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from placement.profile.cpu_demand import (
    MIN_CORES,
    CpuDemand,
    at_scale,
    calibration,
    fixed_share,
    floor_cores,
    server_cores,
)
from placement.profile.format import JobProfile, VertexProfile

# the cost model's CPU demand is the profile's busy-time rule (placement.profile.cpu_demand), named here as well
__all__ = [
    "MIB",
    "MIN_CORES",
    "CpuDemand",
    "TaskManagerBaseline",
    "at_scale",
    "baseline_cores",
    "calibration",
    "checkpoint_mbit",
    "fixed_share",
    "floor_cores",
    "memory_mib",
    "server_cores",
]

MIB = 1024 * 1024


def checkpoint_mbit(vertex: VertexProfile, interval_ms: float | None) -> float:
    """Mbit/s one subtask's checkpoints upload: ``checkpointed_bytes / parallelism · 8 / interval``.

    Checkpoint storage (a distributed file system, an object store, or the JobManager's memory) is at the server side,
    so a subtask on an edge host uploads every checkpoint over its uplink. ``checkpointed_bytes`` is what the latest
    checkpoint wrote (the delta for incremental checkpoints), else the whole state; ``interval`` is the job's time
    between checkpoints. No checkpointing (interval unknown): nothing."""
    if not interval_ms or interval_ms <= 0:
        return 0.0
    size = vertex.checkpointed_bytes if vertex.checkpointed_bytes is not None else vertex.state_bytes
    return size / vertex.parallelism * 8 / (interval_ms / 1000.0) / 1e6


def memory_mib(vertex: VertexProfile, memory_per_subtask_mib: float) -> float:
    """``memory_per_subtask + state_bytes / parallelism`` in MiB."""
    return memory_per_subtask_mib + vertex.state_bytes / vertex.parallelism / MIB


@dataclass(frozen=True)
class TaskManagerBaseline:
    """The CPU a host's TaskManager JVM spends of its own, and where that figure came from."""

    cores: float  # in cores of the host it is for
    basis: str  # "measured <TaskManager id>", "inventory", "profile median", "none"


def baseline_cores(
    host_name: str, address: str, speed: float, inventory_cores: float | None, profile: JobProfile
) -> TaskManagerBaseline:
    """CPU a host's TaskManager JVM spends of its own, in that host's cores: what the profile measured of a
    TaskManager on this host (matched by inventory host, TaskManager id or address; several: their sum), else the
    inventory's ``taskmanager_baseline_cores``, else the median baseline of the profile's idle TaskManagers (those
    that ran no subtask: measured directly), in server cores, divided by the host's speed — the prior
    :func:`placement.profile.tm_cpu.calibrate` uses too — else 0 (a profile without TaskManager CPU: today's
    busy-time-only meaning)."""
    measured = [
        t
        for t in profile.taskmanagers
        if t.baseline_cores is not None
        and (
            t.inventory_host == host_name
            or (t.inventory_host is None and host_name in (t.id, t.host))
            or (t.inventory_host is None and t.host is not None and t.host == address)
        )
    ]
    if measured:
        cores = sum(t.baseline_cores or 0.0 for t in measured)
        return TaskManagerBaseline(cores, "measured " + ", ".join(t.id for t in measured))
    if inventory_cores is not None:
        return TaskManagerBaseline(float(inventory_cores), "inventory")
    # idle ones only: a "prior" baseline is this same median again, a "floor" one a 0 that was never measured
    server = [
        t.baseline_server_cores
        for t in profile.taskmanagers
        if t.basis == "idle" and t.baseline_server_cores is not None
    ]
    if server:
        return TaskManagerBaseline(statistics.median(server) / speed, "profile median")
    return TaskManagerBaseline(0.0, "none")
