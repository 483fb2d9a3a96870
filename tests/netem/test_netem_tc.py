"""The pure tc command builder: exact commands, sizes derived from the rate, and refusal of impossible shapes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placement.netem import tc
from placement.netem.tc import Shape
from placement.units import parse_rate_mbit, parse_time_ms


def test_course_link_exact_commands() -> None:
    cmds = tc.apply_commands("eth0", [Shape("192.168.1.180", 50, delay_ms=50)])
    assert cmds == [
        ["tc", "qdisc", "add", "dev", "eth0", "root", "handle", "ede:", "htb", "default", "0"],
        [
            "tc",
            "class",
            "add",
            "dev",
            "eth0",
            "parent",
            "ede:",
            "classid",
            "ede:10",
            "htb",
            "rate",
            "50mbit",
            "ceil",
            "50mbit",
            "burst",
            "62500",
            "cburst",
            "62500",
            "quantum",
            "1514",
        ],
        [
            "tc",
            "filter",
            "add",
            "dev",
            "eth0",
            "parent",
            "ede:",
            "protocol",
            "ip",
            "prio",
            "1",
            "u32",
            "match",
            "ip",
            "dst",
            "192.168.1.180/32",
            "flowid",
            "ede:10",
        ],
        [
            "tc",
            "qdisc",
            "add",
            "dev",
            "eth0",
            "parent",
            "ede:10",
            "handle",
            "10:",
            "netem",
            "limit",
            "1000",
            "delay",
            "50ms",
        ],
    ]


def test_jitter_loss_and_correlation_go_into_the_netem_leaf() -> None:
    shape = Shape("10.0.0.1", 2, delay_ms=100, jitter_ms=25, loss_pct=1, correlation_pct=25)
    assert tc.leaf_command("wlan0", shape, 0) == [
        "tc",
        "qdisc",
        "add",
        "dev",
        "wlan0",
        "parent",
        "ede:10",
        "handle",
        "10:",
        "netem",
        "limit",
        "1000",
        "delay",
        "100ms",
        "25ms",
        "25%",
        "loss",
        "1%",
        "25%",
    ]


def test_sub_millisecond_and_sub_megabit_spellings() -> None:
    shape = Shape("10.0.0.1", 0.5, delay_ms=0.25, loss_pct=0.1)
    cmds = tc.apply_commands("eth0", [shape])
    assert cmds[1][cmds[1].index("rate") + 1] == "500kbit"
    assert cmds[-1][-4:] == ["delay", "250us", "loss", "0.1%"]


def test_rate_only_shapes_and_without_netem_have_no_leaf() -> None:
    shapes = [Shape("10.0.0.1", 5), Shape("10.0.0.2", 10, delay_ms=20)]
    with_netem = tc.apply_commands("eth0", shapes)
    assert [c for c in with_netem if tc.is_netem_command(c)] == [tc.leaf_command("eth0", shapes[1], 1)]
    without = tc.apply_commands("eth0", shapes, with_netem=False)
    assert not any(tc.is_netem_command(c) for c in without)
    assert len(without) == 1 + 2 * 2  # root + (class, filter) per destination


def test_one_class_and_filter_per_destination_in_order() -> None:
    shapes = [Shape(f"10.201.0.{i}", 10 + i) for i in range(1, 4)]
    cmds = tc.apply_commands("veth0", shapes)
    classes = [c[c.index("classid") + 1] for c in cmds if c[1] == "class"]
    flows = [c[c.index("flowid") + 1] for c in cmds if c[1] == "filter"]
    dests = [c[c.index("dst") + 1] for c in cmds if c[1] == "filter"]
    assert classes == flows == ["ede:10", "ede:11", "ede:12"]
    assert dests == ["10.201.0.1/32", "10.201.0.2/32", "10.201.0.3/32"]


def test_ipv6_and_network_destinations() -> None:
    cmds = tc.apply_commands("eth0", [Shape("fd00::1", 10), Shape("10.1.0.0/16", 10)])
    v6, v4 = [c for c in cmds if c[1] == "filter"]
    assert v6[v6.index("protocol") + 1 : v6.index("u32")] == ["ipv6", "prio", "2"]
    assert v6[v6.index("match") : v6.index("flowid")] == ["match", "ip6", "dst", "fd00::1/128"]
    assert v4[v4.index("match") : v4.index("flowid")] == ["match", "ip", "dst", "10.1.0.0/16"]


@pytest.mark.parametrize(
    ("rate", "burst"), [(50, 62500), (20, 25000), (5, 6250), (1, 3200), (0.1, 3200), (1000, 1250000)]
)
def test_burst_is_ten_milliseconds_of_traffic_but_at_least_two_frames(rate: float, burst: int) -> None:
    assert tc.burst_bytes(rate) == burst


def test_netem_queue_holds_what_a_long_delay_keeps_in_flight() -> None:
    assert tc.netem_limit(Shape("10.0.0.1", 50, delay_ms=50)) == 1000  # 208 packets in flight: the default suffices
    # 50 Mbit/s for 310 ms is 1292 full frames; twice that so the delay line never drops
    assert tc.netem_limit(Shape("10.0.0.1", 50, delay_ms=300, jitter_ms=10)) == 2584


def test_clear_removes_only_our_root() -> None:
    assert tc.clear_commands("eth0") == [["tc", "qdisc", "del", "dev", "eth0", "root", "handle", "ede:"]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dest": "server.example"}, "does not appear to be an IPv4 or IPv6"),
        ({"rate_mbit": 0}, "rate must be positive"),
        ({"delay_ms": -5}, "delay_ms must be a non-negative"),
        ({"jitter_ms": float("nan")}, "jitter_ms"),
        ({"loss_pct": 101}, "loss_pct must lie in"),
    ],
)
def test_impossible_shapes_are_refused(kwargs: dict, message: str) -> None:
    args = {"dest": "10.0.0.1", "rate_mbit": 10.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        Shape(**args)


def test_duplicate_destinations_and_empty_lists_are_refused() -> None:
    with pytest.raises(ValueError, match="same destination"):
        tc.apply_commands("eth0", [Shape("10.0.0.1", 5), Shape("10.0.0.1/32", 6)])
    with pytest.raises(ValueError, match="no shapes"):
        tc.apply_commands("eth0", [])


shapes_strategy = st.lists(
    st.builds(
        Shape,
        dest=st.integers(1, 2**24 - 1).map(lambda n: f"10.{n >> 16}.{(n >> 8) & 255}.{n & 255}"),
        rate_mbit=st.integers(1, 10_000_000).map(lambda k: k / 1000),  # whole kbit/s, as tc spells them
        delay_ms=st.integers(0, 2_000_000).map(lambda us: us / 1000),
        jitter_ms=st.integers(0, 100_000).map(lambda us: us / 1000),
        loss_pct=st.sampled_from([0, 0.1, 1, 5, 100]),
    ),
    min_size=1,
    max_size=12,
    unique_by=lambda s: s.dest,
)


@given(shapes_strategy)
def test_every_shape_gets_its_class_filter_and_figures_back(shapes: list[Shape]) -> None:
    cmds = tc.apply_commands("eth0", shapes)
    classes = {c[c.index("classid") + 1]: c for c in cmds if c[1] == "class"}
    filters = {c[c.index("flowid") + 1]: c for c in cmds if c[1] == "filter"}
    leaves = {c[c.index("parent") + 1]: c for c in cmds if tc.is_netem_command(c)}
    assert len(classes) == len(filters) == len(shapes)
    for i, shape in enumerate(shapes):
        cid = tc.class_id(i)
        cls = classes[cid]
        assert parse_rate_mbit(cls[cls.index("rate") + 1]) == pytest.approx(shape.rate_mbit, abs=1e-9)
        assert cls[cls.index("ceil") + 1] == cls[cls.index("rate") + 1]
        assert filters[cid][filters[cid].index("dst") + 1] == f"{shape.dest}/32"
        assert (cid in leaves) == shape.needs_netem
        if shape.delay_ms or shape.jitter_ms:
            leaf = leaves[cid]
            assert parse_time_ms(leaf[leaf.index("delay") + 1]) == pytest.approx(shape.delay_ms, abs=1e-9)
