"""``FakePacket``: what the delay line's holding logic needs of a queued packet (a verdict), recorded, for the decision
tests of :class:`placement.netem.delayline.HeldPackets` beside the real line of tests/netem/test_delayline_real.py."""

from __future__ import annotations


class FakePacket:
    def __init__(self, number: int, verdicts: list[tuple[int, str]]):
        self.number = number
        self.verdicts = verdicts  # shared by a test's packets: the order verdicts were given in

    def accept(self) -> None:
        self.verdicts.append((self.number, "accept"))

    def drop(self) -> None:
        self.verdicts.append((self.number, "drop"))
