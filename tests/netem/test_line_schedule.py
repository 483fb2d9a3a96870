"""The delay line's pure part: when each packet leaves and which are lost, on a given clock and a seeded RNG."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from placement.netem.delayline import HeldPackets
from placement.netem.line_schedule import LineFigures, LineSchedule
from support.fake_clock import FakeClock
from support.fake_packets import FakePacket


def _binomial_band(n: int, p: float, sigmas: float = 5.0) -> tuple[float, float]:
    """Where the count of ``n`` Bernoulli(p) trials lies but for a chance of about 6e-7 (5 sigma, normal bound)."""
    sd = math.sqrt(n * p * (1 - p))
    return n * p - sigmas * sd, n * p + sigmas * sd


def test_without_jitter_every_packet_is_held_exactly_the_delay() -> None:
    schedule = LineSchedule(LineFigures(delay_ms=35), random.Random(1))
    assert [schedule.admit(t) for t in (0.0, 0.001, 0.5)] == [pytest.approx(0.035), pytest.approx(0.036), 0.535]


def test_jitter_holds_within_delay_plus_minus_jitter_around_the_delay() -> None:
    schedule = LineSchedule(LineFigures(delay_ms=35, jitter_ms=10), random.Random(2))
    arrivals = [i * 0.1 for i in range(20_000)]  # 100 ms apart: jitter cannot reorder them
    holds = [schedule.admit(t) - t for t in arrivals]  # type: ignore[operator]
    assert min(holds) >= 0.025 - 1e-12 and max(holds) <= 0.045 + 1e-12
    # uniform on ±10 ms: mean 35 ms, sd 10/sqrt(3) ms; the mean of 20 000 within 5 standard errors
    assert sum(holds) / len(holds) == pytest.approx(0.035, abs=5 * 0.010 / math.sqrt(3) / math.sqrt(len(holds)))
    assert max(holds) - min(holds) > 0.019  # the whole band is used


def test_jitter_never_reorders_a_later_packet_waits_for_the_one_ahead() -> None:
    schedule = LineSchedule(LineFigures(delay_ms=35, jitter_ms=10), random.Random(3))
    arrivals = [i * 0.0005 for i in range(5_000)]  # 0.5 ms apart, far closer than the ±10 ms jitter
    leaves = [schedule.admit(t) for t in arrivals]
    assert all(a is not None and b is not None and a <= b for a, b in itertools.pairwise(leaves))
    assert all(left is not None and left - t >= 0.025 - 1e-12 for t, left in zip(arrivals, leaves))


@pytest.mark.parametrize("loss_pct", [0.1, 1.0, 5.0])
def test_the_long_run_loss_is_the_set_share(loss_pct: float) -> None:
    n = 400_000
    schedule = LineSchedule(LineFigures(loss_pct=loss_pct), random.Random(4))
    lost = sum(schedule.admit(i * 1e-4) is None for i in range(n))
    low, high = _binomial_band(n, loss_pct / 100)
    assert low <= lost <= high


def test_correlated_loss_keeps_the_share_and_comes_in_bursts() -> None:
    n, p, rho = 400_000, 0.01, 0.25
    schedule = LineSchedule(LineFigures(loss_pct=100 * p, correlation_pct=100 * rho), random.Random(5))
    fates = [schedule.admit(i * 1e-4) is None for i in range(n)]
    # the chain's long-run share is p: a Markov chain's count varies more than a binomial one, by (1 + rho)/(1 - rho)
    sd = math.sqrt(n * p * (1 - p) * (1 + rho) / (1 - rho))
    assert abs(sum(fates) - n * p) <= 5 * sd
    after_loss = [b for a, b in itertools.pairwise(fates) if a]
    # P(lost | the one before lost) = p + rho (1 - p) = 0.2575, against p = 0.01 without correlation
    share = sum(after_loss) / len(after_loss)
    assert share == pytest.approx(p + rho * (1 - p), abs=5 * math.sqrt(0.2575 * 0.7425 / len(after_loss)))


def test_one_seed_one_process() -> None:
    figures = LineFigures(delay_ms=100, jitter_ms=25, loss_pct=1, correlation_pct=25)
    first, second = (LineSchedule(figures, random.Random(7)) for _ in range(2))
    assert [first.admit(i * 0.01) for i in range(1000)] == [second.admit(i * 0.01) for i in range(1000)]
    other = LineSchedule(figures, random.Random(8))
    assert [first.admit(1000 + i * 0.01) for i in range(1000)] != [other.admit(1000 + i * 0.01) for i in range(1000)]


@pytest.mark.parametrize(
    "figures", [dict(delay_ms=-1), dict(jitter_ms=math.nan), dict(loss_pct=101), dict(correlation_pct=-0.1)]
)
def test_impossible_figures_are_refused(figures: dict) -> None:
    with pytest.raises(ValueError):
        LineFigures(**figures)


def test_held_packets_leave_in_order_when_due_and_lost_ones_are_dropped_at_once() -> None:
    clock, verdicts = FakeClock(), list[tuple[int, str]]()
    line = HeldPackets(LineSchedule(LineFigures(delay_ms=50, loss_pct=50), random.Random(8)), now=clock.monotonic)
    for n in range(10):
        line.take(FakePacket(n, verdicts))
        clock.advance(0.001)
    dropped = [n for n, v in verdicts if v == "drop"]
    assert 0 < len(dropped) < 10 and line.lost == len(dropped)
    assert line.seconds_to_next() == pytest.approx(0.050 - 0.010 + (min(set(range(10)) - set(dropped))) * 0.001)
    clock.advance(0.030)
    line.release_due()
    assert [v for _, v in verdicts].count("accept") == 0  # 40 ms after the first: none due yet
    clock.advance(0.0125)  # 52.5 ms after the first: those that arrived in its first 2.5 ms
    line.release_due()
    assert [n for n, v in verdicts if v == "accept"] == [n for n in range(3) if n not in dropped]
    clock.advance(0.010)
    line.release_due()
    accepted = [n for n, v in verdicts if v == "accept"]
    assert accepted == sorted(set(range(10)) - set(dropped)) and line.passed == len(accepted)
    assert line.seconds_to_next() is None


def test_stopping_lets_every_held_packet_go() -> None:
    clock, verdicts = FakeClock(), list[tuple[int, str]]()
    line = HeldPackets(LineSchedule(LineFigures(delay_ms=600)), now=clock.monotonic)
    for n in range(3):
        line.take(FakePacket(n, verdicts))
    line.release_all()
    assert verdicts == [(0, "accept"), (1, "accept"), (2, "accept")]
