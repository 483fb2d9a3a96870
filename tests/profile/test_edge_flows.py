"""Bytes and records per job edge, from Flink's per-subtask figures (placement/profile/edge_flows.py).

The figures in these tests are the ones Flink 2.3 reported for the lab's shapes job (ShapesJob) on a real cluster,
rounded: a fan-out (Parse Clicks: numBytesOut 41.6 kB/s = both consumers' numBytesIn), a broadcast to 2 (Parse Rules:
numBytesOut 16.4 kB/s, each receiver 8.2 kB/s), a side output (Split Orders: 359 records/s out = 300 main + 59 side,
6.7 kB/s + 27 kB/s).
"""

from __future__ import annotations

import pytest

from placement.profile.edge_flows import (
    Edge,
    SubtaskIO,
    attribute,
    pointwise_receivers,
    pointwise_senders,
)
from placement.profile.format import ShipStrategy

F, H, RB, RS, B = (
    ShipStrategy.FORWARD,
    ShipStrategy.HASH,
    ShipStrategy.REBALANCE,
    ShipStrategy.RESCALE,
    ShipStrategy.BROADCAST,
)


def io(**kw: float) -> SubtaskIO:
    return SubtaskIO(**kw)


def run(parallelism, vertex_io, edges):
    return attribute(parallelism, vertex_io, [Edge(*e) for e in edges])


def test_fan_out_each_consumer_gets_its_own_bytes_not_the_producers_sum():
    figs = run(
        {"p": 1, "archive": 1, "counts": 2},
        {
            "p": [io(records_out=400, bytes_out=41_600)],
            "archive": [io(records_in=400, bytes_in=20_800)],
            "counts": [io(records_in=300, bytes_in=15_600), io(records_in=100, bytes_in=5_200)],
        },
        [("p", "archive", F), ("p", "counts", H)],
    )
    assert [f.basis for f in figs] == ["consumer", "consumer"]
    assert figs[0].bytes_per_s == (20_800,) and figs[0].records_per_s == (400,)
    assert figs[1].bytes_per_s == (20_800,) and figs[1].records_per_s == (400,)
    assert figs[1].receiver_shares == pytest.approx((0.75, 0.25))  # measured key skew, not 1/2 each
    assert figs[0].receiver_shares is None  # only HASH edges have shares


def test_broadcast_is_one_copy_per_receiver_of_a_record_counted_once():
    figs = run(
        {"p": 1, "apply": 2},
        {
            "p": [io(records_out=200, bytes_out=16_400)],
            "apply": [io(records_in=200, bytes_in=8_200), io(records_in=200, bytes_in=8_200)],
        },
        [("p", "apply", B)],
    )
    assert figs[0].basis == "producer"
    assert figs[0].bytes_per_s == (8_200,) and figs[0].records_per_s == (200,)  # per copy: 41 B a record


def test_side_output_sizes_come_from_the_consumers():
    figs = run(
        {"split": 1, "summaries": 1, "large": 1},
        {
            "split": [io(records_in=300, records_out=359, bytes_out=33_700)],
            "summaries": [io(records_in=300, bytes_in=6_700)],
            "large": [io(records_in=59, bytes_in=27_000)],
        },
        [("split", "summaries", F), ("split", "large", F)],
    )
    assert [f.records_per_s for f in figs] == [(300,), (59,)]
    assert [f.bytes_per_s for f in figs] == [(6_700,), (27_000,)]


def test_fan_out_into_a_consumer_with_other_inputs_gets_what_is_left():
    # p feeds j1 and j2; j1 also reads q. j2 tells its edge apart, q's single output is known, p->j1 is the rest
    figs = run(
        {"p": 2, "q": 1, "j1": 1, "j2": 1},
        {
            "p": [io(records_out=100, bytes_out=2_000), io(records_out=50, bytes_out=1_000)],
            "q": [io(records_out=10, bytes_out=5_000)],
            "j1": [io(records_in=160, bytes_in=6_500)],
            "j2": [io(records_in=150, bytes_in=1_500)],
        },
        [("p", "j1", RB), ("p", "j2", RB), ("q", "j1", RB)],
    )
    by = {(e[0], e[1]): f for e, f in zip([("p", "j1"), ("p", "j2"), ("q", "j1")], figs, strict=True)}
    assert by[("q", "j1")].basis == "producer" and by[("q", "j1")].bytes_per_s == (5_000,)
    # j2 has one input: the consumer rule; then p->j1 is what is left of p's numBytesOut
    assert by[("p", "j2")].basis == "consumer" and by[("p", "j2")].bytes_per_s == pytest.approx((1_000, 500))
    assert by[("p", "j1")].basis == "remainder" and by[("p", "j1")].bytes_per_s == pytest.approx((1_000, 500))
    assert by[("p", "j1")].records_per_s == (100, 50)  # a fan-out: the same records again


def test_when_no_consumer_can_tell_the_edges_apart_every_edge_carries_the_same_records():
    figs = run(
        {"p": 1, "q": 1, "j1": 1, "j2": 1},
        {
            "p": [io(records_out=100, bytes_out=3_000)],
            "q": [io(records_out=10)],  # q's bytes unknown
            "j1": [io(records_in=110, bytes_in=2_000)],
            "j2": [io(records_in=110, bytes_in=2_000)],
        },
        [("p", "j1", H), ("p", "j2", B), ("q", "j1", RB), ("q", "j2", RB)],
    )
    # both consumers read q too, and q's bytes are unknown: p's 3,000 B/s split evenly over its two edges
    assert figs[0].basis == figs[1].basis == "fan-out rule"
    assert figs[0].bytes_per_s == figs[1].bytes_per_s == (1_500,) and figs[0].records_per_s == (100,)
    assert figs[2] is None and figs[3] is None  # q reported no bytes: nothing to attribute


def test_rescale_credits_each_upstream_subtask_with_its_own_receivers():
    # 2 -> 4 pointwise: u0 feeds v0, v1; u1 feeds v2, v3. The consumer side is exact per sender.
    figs = run(
        {"u": 2, "v": 4},
        {
            "u": [io(records_out=300, bytes_out=9_000), io(records_out=100, bytes_out=3_000)],
            "v": [
                io(records_in=150, bytes_in=4_500),
                io(records_in=150, bytes_in=4_500),
                io(records_in=50, bytes_in=1_500),
                io(records_in=50, bytes_in=1_500),
            ],
        },
        [("u", "v", RS)],
    )
    assert figs[0].basis == "producer" and figs[0].bytes_per_s == (9_000, 3_000)
    # consumer side only (the producer also feeds another vertex): the same figures from the receivers
    figs = run(
        {"u": 2, "v": 4, "w": 1},
        {
            "u": [io(records_out=300, bytes_out=18_000), io(records_out=100, bytes_out=6_000)],
            "v": [
                io(records_in=150, bytes_in=4_500),
                io(records_in=150, bytes_in=4_500),
                io(records_in=50, bytes_in=1_500),
                io(records_in=50, bytes_in=1_500),
            ],
            "w": [io(records_in=400, bytes_in=12_000)],
        },
        [("u", "v", RS), ("u", "w", RB)],
    )
    assert figs[0].basis == "consumer" and figs[0].bytes_per_s == (9_000, 3_000) and figs[0].records_per_s == (300, 100)


def test_pointwise_wiring_is_flinks_for_every_pair_of_parallelisms():
    def flink(n_up: int, n_down: int) -> set[tuple[int, int]]:  # VertexInputInfoComputationUtils, as loops
        pairs = set()
        if n_up >= n_down:
            for j in range(n_down):
                pairs |= {(i, j) for i in range(j * n_up // n_down, (j + 1) * n_up // n_down)}
        else:
            for i in range(n_up):
                pairs |= {(i, j) for j in range((i * n_down + n_up - 1) // n_up, ((i + 1) * n_down + n_up - 1) // n_up)}
        return pairs

    for n_up in range(1, 13):
        for n_down in range(1, 13):
            ours = {(i, j) for i in range(n_up) for j in pointwise_receivers(i, n_up, n_down)}
            back = {(i, j) for j in range(n_down) for i in pointwise_senders(j, n_up, n_down)}
            assert ours == back == flink(n_up, n_down), (n_up, n_down)
    assert list(pointwise_receivers(1, 2, 4)) == [2, 3] and list(pointwise_senders(1, 4, 2)) == [2, 3]


def test_missing_readings_count_as_zero_and_an_unreported_vertex_as_unknown():
    figs = run({"p": 2, "c": 1}, {"p": [io(records_out=10, bytes_out=1_000), io()], "c": [io()]}, [("p", "c", RB)])
    assert figs[0].bytes_per_s == (1_000, 0.0)  # one subtask without a reading: it sent nothing we can see
