"""One way to wait for something: read until a condition holds or a timeout passes (tenacity underneath).

Every wait of the runner, the REST client and the watch is one :func:`poll`: the caller says what to read, when the
reading is good enough, how long to wait and how often to look; it gets the last reading back and whether it was good
enough, and words its own error (each wait's message stays its own). The clock is injected, so a test's fake clock
runs a two-minute wait in no time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import tenacity

from placement.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T")


def poll(
    read: Callable[[], T],
    until: Callable[[T], bool],
    *,
    timeout: float,
    every: float,
    clock: Clock = SYSTEM_CLOCK,
    give_up: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] | None = None,
) -> tuple[T, bool]:
    """``read()`` every ``every`` seconds until ``until(reading)``, ``timeout`` seconds have passed on ``clock``, or
    ``give_up()`` (asked between readings, e.g. a stop request). Always reads at least once. Returns the last reading
    and whether it met ``until``; an exception from ``read`` (or from ``sleep``, the clock's by default: a caller's
    own may raise to stop) propagates at once."""
    deadline = clock.monotonic() + timeout

    def out_of_time(_state: tenacity.RetryCallState) -> bool:
        return clock.monotonic() >= deadline or give_up()

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_result(lambda reading: not until(reading)),
        stop=out_of_time,
        wait=tenacity.wait_fixed(every),
        sleep=sleep or clock.sleep,
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
        reraise=True,
    )
    reading = retrying(read)
    return reading, until(reading)
