"""The clock the runner and the watch read: wall time, monotonic time and sleeping, behind one small protocol so a
decision test runs in simulated time (a fake that advances when it sleeps) instead of waiting out real seconds."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (what records and the JobManager's timestamps are dated in)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (what timeouts and durations are measured on)."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The machine's own clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()
