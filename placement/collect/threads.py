"""Each TaskManager JVM's CPU per thread, read from its host's ``/proc`` (issue 23): the one per-subtask CPU figure.

Busy time is the wall-clock time a subtask's thread is neither idle nor back-pressured, so it counts time that thread
waits without being idle — a rate-limited source's wake-ups, any thread waiting for a CPU on a quota-limited host —
and leaves out what other threads do for it (a source's rate-limiter thread, the output flusher). The JVM's process
CPU (``Status.JVM.CPU.Time``) is one number for all its threads. Flink exposes no per-thread CPU, but Linux does:
``/proc/<pid>/task/<tid>/stat`` holds every thread's name (``comm``, the first 15 characters of its Java name: Flink
names a task thread "<vertex name> (<i>/<n>)#<attempt>") and its CPU ticks (user + system).

The JVM is found by the TaskManager's data port (``ss -ltnp``: the process listening on it), which works where
several TaskManagers share a host or a PID namespace (the lab's edge hosts are network namespaces of one machine).
One command per host and round, over the executor ``apply`` uses (SSH with verified host keys, or locally). A host
that cannot be read is noted once and not asked again: the per-thread figures refine the profile, they are not
needed for one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from placement.errors import PlacementError
from placement.remote import Executor

# HotSpot's JIT compiler threads ("C1 CompilerThread0", "C2 CompilerThread1", ...; cut to 15 characters by Linux).
# What they use is the JVM compiling code it has just started to run: on a lab Pi 60-120 s after subtasks moved onto
# it, 20-35 % of its CPU; on a TaskManager that has run its subtasks for long, next to nothing. The cost model
# predicts that steady state, so the profile and the lab's measurement keep these threads apart.
COMPILER_THREAD_PREFIXES = ("C1 CompilerThre", "C2 CompilerThre")


def is_compiler_thread(name: str) -> bool:
    """True for a JVM JIT compiler thread's kernel name (:data:`COMPILER_THREAD_PREFIXES`)."""
    return name.startswith(COMPILER_THREAD_PREFIXES)


# "Flink Netty Server (<port>) Thread <n>": what a TaskManager spends writing its subtasks' buffers to other
# TaskManagers. The cost model charges it per host from the buffers delivered (placement.costmodel.deliveries), so a
# profile keeps these threads apart rather than sharing them out to the vertices that happened to send remotely.
NETTY_SERVER_THREAD_PREFIX = "Flink Netty Ser"


def is_netty_server_thread(name: str) -> bool:
    """True for a Flink Netty server thread's kernel name (:data:`NETTY_SERVER_THREAD_PREFIX`)."""
    return name.startswith(NETTY_SERVER_THREAD_PREFIX)


# The whole process's own stat line, recorded as a row of its own: the kernel adds the CPU of the JVM's ended threads
# to it, and a thread that starts and ends between two rounds is in no thread's delta. Such threads are real: a JVM
# that sees one CPU (a Pi's TaskManager in a cgroup) has no common ForkJoin pool and runs each async task of a job's
# code on a new thread — on the lab's capacity Pi the listed threads added up to 0.6 of the 0.97 cores the JVM used.
# No thread has id 0.
PROCESS_TID = 0
PROCESS_ROW = "(whole process)"
_PROCESS_MARK = "process "

# Prints the host's clock ticks per second, one /proc stat line per thread of the JVM listening on the port, and the
# process's own line after _PROCESS_MARK.
_SCRIPT = (
    "pid=$(ss -Hltnp 'sport = :{port}' 2>/dev/null | sed -n 's/.*pid=\\([0-9][0-9]*\\).*/\\1/p' | head -n 1); "
    "[ -n \"$pid\" ] || {{ echo 'no process of this user listens on port {port}' >&2; exit 3; }}; "
    "getconf CLK_TCK; cat /proc/$pid/task/*/stat 2>/dev/null; printf '%s' '" + _PROCESS_MARK + "'; "
    "cat /proc/$pid/stat 2>/dev/null; exit 0"
)


def thread_stats_argv(data_port: int) -> list[str]:
    """The command that prints the clock ticks per second and the stat line of every thread of the JVM listening on
    ``data_port`` (a TaskManager's data port)."""
    return ["sh", "-c", _SCRIPT.format(port=int(data_port))]


def parse_thread_stats(text: str) -> list[tuple[int, str, int]]:
    """``(tid, name, cpu_ns)`` per thread from :func:`thread_stats_argv`'s output, and ``(PROCESS_TID, PROCESS_ROW,
    cpu_ns)`` for the whole process (its ended threads included) where the listing has its line; a line that does not
    parse (a thread ending while it was read) is skipped. Raises PlacementError without the ticks line."""
    lines = text.splitlines()
    try:
        ticks = int(lines[0].strip())
    except (IndexError, ValueError):
        raise PlacementError("no clock ticks in the thread listing") from None
    out = []
    for line in lines[1:]:
        whole = line.startswith(_PROCESS_MARK)
        line = line.removeprefix(_PROCESS_MARK)
        # "tid (comm) state ...": comm may hold spaces and parentheses, so split at the first '(' and the last ')'
        head, sep, rest = line.partition(" (")
        comm, sep2, tail = rest.rpartition(") ")
        if not sep or not sep2:
            continue
        fields = tail.split()
        try:
            tid, utime, stime = int(head), int(fields[11]), int(fields[12])  # stat(5) fields 14 and 15
        except (ValueError, IndexError):
            continue
        ns = (utime + stime) * 1_000_000_000 // ticks
        out.append((PROCESS_TID, PROCESS_ROW, ns) if whole else (tid, comm, ns))
    return out


@dataclass
class ThreadSampler:
    """Samples the threads of every TaskManager it can reach: ``targets`` maps a TaskManager id to (its executor, its
    data port). ``notes`` says which could not be read and why (each once)."""

    targets: Mapping[str, tuple[Executor, int]]
    clock: Callable[[], float]
    notes: list[str] = field(default_factory=list)
    _failed: set[str] = field(default_factory=set)

    def sample(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for tm, (executor, port) in self.targets.items():
            if tm in self._failed:
                continue
            ts = int(self.clock() * 1000)
            try:
                result = executor.run(thread_stats_argv(port), check=False, mutates=False, timeout=20.0)
                if not result.ok:
                    raise PlacementError(result.message)
                threads = parse_thread_stats(result.stdout)
            except PlacementError as exc:
                self._failed.add(tm)
                self.notes.append(f"per-thread CPU of TaskManager {tm} not recorded: {exc}")
                continue
            rows.extend(
                {"ts_ms": ts, "taskmanager_id": tm, "tid": tid, "thread": name, "cpu_time_ns": ns}
                for tid, name, ns in threads
            )
        return rows
