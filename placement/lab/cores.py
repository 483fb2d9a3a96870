"""Per-thread CPU caps: a lab edge host as a box of many slow cores.

The lab caps an edge TaskManager as a whole (its cgroup's ``cpu.cfs_quota_us``): one thread may use all of that
quota, so on the lab "one instance of an operator cannot keep up on this host, two can" never happens — while on a
real many-core slow box (and in the planner's model, ``speed`` per core) it does. :func:`cap_task_threads` gives each
task thread of a TaskManager (Flink runs every subtask in a thread named after its task, ``<task> (i/n)#attempt``) a
cgroup of its own under the TaskManager's, with the quota of one core of ``speed`` server cores. cgroup v1 nests: the
TaskManager's quota still caps them all together, and cgroup v1 places threads, not only processes, by id.

A redeploy starts new task threads: the caps are applied again after every deployment (:func:`cap_task_threads`
drops the cgroups of threads that have ended). ``lab down`` removes these cgroups with the lab's own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path

from placement.lab.topology import CFS_PERIOD_US, MIN_QUOTA_US, CpuLimit

THREAD_CGROUP_PREFIX = "thread-"
COMM_LEN = 15  # the kernel keeps the first 15 bytes of a thread's name


def is_task_thread(comm: str, task_names: Iterable[str]) -> bool:
    """Whether a thread named ``comm`` (truncated to 15 bytes) runs a subtask of one of ``task_names``."""
    return any(
        comm.startswith(f"{name} (") or (len(comm) == COMM_LEN and f"{name} (".startswith(comm)) for name in task_names
    )


def task_threads(pid: int, task_names: Iterable[str]) -> list[int]:
    """Thread ids of process ``pid`` that run subtasks of ``task_names``."""
    names = list(task_names)
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        with contextlib.suppress(OSError):
            if is_task_thread(task.joinpath("comm").read_text().rstrip("\n")[:COMM_LEN], names):
                out.append(int(task.name))
    return out


def java_pids(cgroup: Path) -> list[int]:
    """The JVMs in ``cgroup`` (the TaskManager; its launcher ``exec``s into java)."""
    pids = []
    for pid in (int(p) for p in (cgroup / "cgroup.procs").read_text().split()):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                pids.append(pid)
    return pids


def create_cgroup(limit: CpuLimit) -> None:
    """Make ``limit.cgroup`` (if need be) with its CFS period and quota."""
    limit.cgroup.mkdir(exist_ok=True)
    (limit.cgroup / "cpu.cfs_period_us").write_text(str(limit.period_us))
    (limit.cgroup / "cpu.cfs_quota_us").write_text(str(limit.quota_us))


def drop_ended(cgroup: Path) -> None:
    """Remove the per-thread cgroups whose thread has ended."""
    for child in cgroup.glob(f"{THREAD_CGROUP_PREFIX}*"):
        with contextlib.suppress(OSError):
            if not (child / "tasks").read_text().split():
                child.rmdir()


def cap_task_threads(
    cgroup: Path,
    task_names: Iterable[str],
    core_speed: float,
    period_us: int = CFS_PERIOD_US,
    pids: Iterable[int] | None = None,
) -> list[int]:
    """Give every task thread of the TaskManager in ``cgroup`` (its JVMs, or ``pids``) a quota of ``core_speed``
    cores of this machine; returns the thread ids capped."""
    quota = round(period_us * core_speed)
    if quota < MIN_QUOTA_US:
        raise ValueError(
            f"a core of {core_speed:g} is under the kernel's minimum quota ({MIN_QUOTA_US} us per {period_us} us)"
        )
    drop_ended(cgroup)
    capped = []
    names = list(task_names)
    for pid in java_pids(cgroup) if pids is None else pids:
        for tid in task_threads(pid, names):
            child = cgroup / f"{THREAD_CGROUP_PREFIX}{tid}"
            create_cgroup(CpuLimit(child, period_us, quota))
            (child / "tasks").write_text(str(tid))
            capped.append(tid)
    return capped
