"""``FakeClock``: the :class:`placement.clock.Clock` of a decision test — time passes only when the code sleeps (or the
test advances it), so a two-minute wait of the runner or a tick interval of the watch takes no real time."""

from __future__ import annotations


class FakeClock:
    def __init__(self, now: float = 1_767_225_600.0, monotonic: float = 1_000.0):
        self._now, self._monotonic = now, monotonic
        self.slept = 0.0  # every second slept, summed

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))
        self.slept += max(0.0, seconds)

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._monotonic += seconds

    def at(self, now: float) -> FakeClock:
        """Set the wall time (the monotonic one moves with it); returns the clock."""
        self.advance(now - self._now)
        return self
