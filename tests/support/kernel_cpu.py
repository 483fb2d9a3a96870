"""Each process's CPU seconds as the kernel counts them, read in the background while a test runs: the reference a
rate measured by the code under test is held to, over the same seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from placement.lab.measure import cpu_seconds


class KernelCpu:
    """Each process's CPU seconds from /proc (utime + stime), read every 0.1 s with the wall clock: the kernel's figure
    for any window of the readings, so a rate is compared with the kernel's over the same seconds (a busy machine
    changes what a JVM gets from one second to the next: over other seconds it is another rate)."""

    def __init__(self, pids: dict[str, int]):
        self.pids = pids
        self.readings: list[tuple[float, dict[int, float]]] = []

    def read(self) -> None:
        self.readings.append((time.time(), cpu_seconds(list(self.pids.values()))))

    def cores(self, name: str, since_s: float, until_s: float) -> float:
        """``name``'s cores between two wall-clock instants (within the readings' span), interpolated between the
        readings around them."""
        ts = np.array([t for t, _ in self.readings])
        cpu = np.array([by_pid[self.pids[name]] for _, by_pid in self.readings])
        since_s, until_s = max(since_s, ts[0]), min(until_s, ts[-1])
        assert since_s < until_s, f"no readings between {since_s:.3f} and {until_s:.3f}"
        return float(np.interp(until_s, ts, cpu) - np.interp(since_s, ts, cpu)) / (until_s - since_s)


@contextmanager
def kernel_cpu(pids: dict[str, int], every_s: float = 0.1) -> Iterator[KernelCpu]:
    kernel = KernelCpu(pids)
    stop = threading.Event()

    def keep_reading() -> None:
        while not stop.wait(every_s):
            kernel.read()

    kernel.read()
    reader = threading.Thread(target=keep_reading, daemon=True)
    reader.start()
    try:
        yield kernel
    finally:
        stop.set()
        reader.join()
        kernel.read()
