"""Ending the lab's processes with psutil: TERM, a wait, KILL what is left — one way for every stopper of the lab.

A zombie counts as ended: its parent (a lab wrapper, or init) reaps it, not us, and waiting for that would only wait
out the timeout. Our own children are reaped while we wait.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable

import psutil

from placement.polling import poll


def stop(pids: Iterable[int], *, timeout: float, kill_timeout: float = 5.0, tree: bool = False) -> list[int]:
    """TERM every process (``tree``: and every process it started), wait up to ``timeout`` for all of them to end,
    KILL the ones left and wait ``kill_timeout`` more; returns the pids still running after that."""
    processes = _processes(pids, tree)
    _send(processes, psutil.Process.terminate)
    left = _wait_ended(processes, timeout)
    _send(left, psutil.Process.kill)
    return [p.pid for p in _wait_ended(left, kill_timeout)]


def kill(pids: Iterable[int], *, timeout: float) -> list[int]:
    """KILL every process at once (a power cut: nothing is shut down); returns the pids still running after
    ``timeout``."""
    processes = _processes(pids, tree=False)
    _send(processes, psutil.Process.kill)
    return [p.pid for p in _wait_ended(processes, timeout)]


def _processes(pids: Iterable[int], tree: bool) -> list[psutil.Process]:
    """The processes of ``pids`` that exist (never this one); ``tree``: their descendants too, read before any is
    signalled (a child whose parent has ended is no longer found through it)."""
    found: dict[int, psutil.Process] = {}
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            found.setdefault(pid, process)
            for child in process.children(recursive=True) if tree else ():
                found.setdefault(child.pid, child)
    found.pop(os.getpid(), None)
    return list(found.values())


def _send(processes: Iterable[psutil.Process], signal_with: Callable[[psutil.Process], None]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):  # ended meanwhile, or not ours to signal
            signal_with(process)


def _running(processes: list[psutil.Process]) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(processes, timeout=0)  # reaps our own children that ended
    still = []
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            if process.status() != psutil.STATUS_ZOMBIE:
                still.append(process)
    return still


def _wait_ended(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    if not processes:
        return []
    left, _ = poll(lambda: _running(processes), lambda running: not running, timeout=timeout, every=0.1)
    return left
