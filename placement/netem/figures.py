"""The one check of a link's delay, jitter and loss figures, for every form that carries them (tc shapes, the
user-space delay line's schedules)."""

from __future__ import annotations

import math


def check_link_figures(delay_ms: float, jitter_ms: float, loss_pct: float, correlation_pct: float) -> None:
    """ValueError naming the first figure out of range: times non-negative, percentages in [0, 100]."""
    for name, value in (("delay_ms", delay_ms), ("jitter_ms", jitter_ms)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    for name, value in (("loss_pct", loss_pct), ("correlation_pct", correlation_pct)):
        if not (math.isfinite(value) and 0 <= value <= 100):
            raise ValueError(f"{name} must lie in [0, 100], got {value!r}")
