"""When a delayed packet leaves and whether it is lost: the pure part of the user-space delay line.

:class:`LineSchedule` sees one packet at a time (the time it arrived) and answers with the time it leaves, or None for a
lost packet. It reads no clock and owns no socket: the delay line (:mod:`placement.netem.delayline`) passes the time
and a seeded :class:`random.Random`, so a test is exact about the whole loss and delay process.

The figures mean what netem's do where that is sound, and differ where netem's own model is known to be off:

* **delay and jitter** — each packet is held ``delay ± jitter`` (uniform, netem's distribution without a table);
  ``correlation`` carries part of the previous packet's offset into the next one, as netem's correlated generator does;
* **order** — a packet never leaves before the one ahead of it. netem keeps order too once a rate is set (its queue
  is then a FIFO), and a real WAN path rarely reorders; jitter that would reorder lengthens the later packet's hold
  instead, as it would behind a busy link;
* **loss** — a two-state chain (Gilbert): after a kept packet one is lost with ``p · (1 − ρ)``, after a lost one
  with ``p + ρ · (1 − p)``. Its long-run loss is exactly ``p`` whatever ``ρ`` (netem's correlated ``loss p ρ`` loses
  far fewer than ``p``) and ``ρ`` is the correlation of one packet's fate with the next one's: losses come in bursts.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from placement.netem.figures import check_link_figures


@dataclass(frozen=True)
class LineFigures:
    """One direction of a link: one-way delay and jitter in ms, loss and correlation in percent."""

    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    correlation_pct: float = 0.0

    def __post_init__(self) -> None:
        check_link_figures(self.delay_ms, self.jitter_ms, self.loss_pct, self.correlation_pct)

    @property
    def any(self) -> bool:
        return self.delay_ms > 0 or self.jitter_ms > 0 or self.loss_pct > 0


@dataclass
class LineSchedule:
    """The fate of each packet of one direction, in arrival order (see the module doc for the model)."""

    figures: LineFigures
    rng: random.Random = field(default_factory=random.Random)
    _last_leave: float = field(default=-math.inf, init=False)
    _last_offset_ms: float = field(default=0.0, init=False)
    _last_lost: bool = field(default=False, init=False)

    def admit(self, arrived: float) -> float | None:
        """The time (on the caller's clock, seconds) the packet that ``arrived`` leaves; None: it is lost."""
        if self._lose():
            return None
        leave = max(arrived + self._hold_ms() / 1000.0, self._last_leave)
        self._last_leave = leave
        return leave

    def _lose(self) -> bool:
        p = self.figures.loss_pct / 100.0
        if p <= 0:
            return False
        rho = self.figures.correlation_pct / 100.0
        chance = p + rho * (1 - p) if self._last_lost else p * (1 - rho)
        self._last_lost = self.rng.random() < chance
        return self._last_lost

    def _hold_ms(self) -> float:
        jitter = self.figures.jitter_ms
        if jitter <= 0:
            return self.figures.delay_ms
        rho = self.figures.correlation_pct / 100.0
        fresh = self.rng.uniform(-jitter, jitter)
        self._last_offset_ms = rho * self._last_offset_ms + (1 - rho) * fresh
        return max(0.0, self.figures.delay_ms + self._last_offset_ms)
