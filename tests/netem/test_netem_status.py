"""Reading tc's output back (pure). The samples are verbatim output of iproute2 6.1 on this machine's kernel, except
the netem leaf: a stand-in written by hand, whose JSON layout follows iproute2's q_netem.c (delay/jitter in seconds,
percentages as fractions), because this kernel cannot create a netem qdisc. The test that reads it says so in its
name (``..._stand_in``); test_netem_shaping.py reads a real netem leaf back on kernels that have sch_netem."""

from __future__ import annotations

import pytest

from placement.netem.status import TcOutputError, parse_classes, parse_filters, parse_root, parse_status

QDISCS = (
    '[{"kind":"htb","handle":"ede:","root":true,"refcnt":3,"options":{"r2q":10,"default":"0",'
    '"direct_packets_stat":3,"direct_qlen":1000},"bytes":296,"packets":4,"drops":0,"overlimits":0,'
    '"requeues":0,"backlog":0,"qlen":0}]\n'
)
CLASSES = (
    "class htb ede:11 root prio 0 rate 5Mbit ceil 5Mbit burst 6250b cburst 6250b \n"
    " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\n"
    " lended: 0 borrowed: 0 giants: 0\n tokens: 156250 ctokens: 156250\n\n"
    "class htb ede:10 root leaf 10: prio 0 rate 20Mbit ceil 20Mbit burst 25000b cburst 25000b \n"
    " Sent 10227100 bytes 6770 pkt (dropped 2, overlimits 353 requeues 0) \n backlog 0b 0p requeues 0\n"
    " lended: 1 borrowed: 0 giants: 0\n tokens: 155787 ctokens: 155787\n\n"
)
FILTERS = (
    '[{"protocol":"ip","pref":1,"kind":"u32","chain":0},{"protocol":"ip","pref":1,"kind":"u32","chain":0,'
    '"options":{"fh":"800:","ht_divisor":1}},{"protocol":"ip","pref":1,"kind":"u32","chain":0,"options":'
    '{"fh":"800::800","order":2048,"key_ht":"800","bkt":"0","flowid":"ede:10","not_in_hw":true,"match":'
    '{"value":"ac90902","mask":"ffffffff","offmask":"","off":16}}},{"protocol":"ip","pref":1,"kind":"u32",'
    '"chain":0,"options":{"fh":"800::801","order":2049,"key_ht":"800","bkt":"0","flowid":"ede:11",'
    '"not_in_hw":true,"match":{"value":"ac94d00","mask":"ffffff00","offmask":"","off":16}}}]\n'
)
NETEM_LEAF_STAND_IN = (
    '{"kind":"netem","handle":"10:","parent":"ede:10","options":{"limit":1000,"delay":{"delay":0.05,'
    '"jitter":0.01,"correlation":0.25},"loss-random":{"loss":0.01,"correlation":0.25},"ecn":false,"gap":0},'
    '"bytes":10227100,"packets":6770,"drops":5,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}'
)


def test_default_and_foreign_roots() -> None:
    noqueue = parse_root('[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]')
    assert noqueue is not None and noqueue.is_default and not noqueue.is_ours
    tbf = parse_root('[{"kind":"tbf","handle":"8:","root":true,"refcnt":3,"options":{"rate":1250000}}]')
    assert tbf is not None and not tbf.is_default and not tbf.is_ours
    ours = parse_root(QDISCS)
    assert ours is not None and ours.is_ours
    assert parse_root("") is None  # a dry run answers queries with nothing


def test_classes_from_text_output() -> None:
    classes = parse_classes(CLASSES)
    assert classes["ede:10"] == {
        "rate": 20.0,
        "ceil": 20.0,
        "bytes": 10227100,
        "packets": 6770,
        "drops": 2,
        "overlimits": 353,
    }
    assert classes["ede:11"]["rate"] == 5.0 and classes["ede:11"]["bytes"] == 0


def test_filters_give_each_class_its_destination() -> None:
    assert parse_filters(FILTERS) == {"ede:10": "10.201.9.2", "ede:11": "10.201.77.0/24"}


def test_status_joins_classes_filters_and_netem_leaves_stand_in() -> None:
    qdiscs = QDISCS.strip()[:-1] + "," + NETEM_LEAF_STAND_IN + "]"
    status = parse_status("eth0", qdiscs, CLASSES, FILTERS)
    assert status.installed and status.unshaped_packets == 3
    by_id = {c.classid: c for c in status.classes}
    c10 = by_id["ede:10"]
    assert (c10.dest, c10.rate_mbit, c10.bytes, c10.drops, c10.leaf_drops, c10.overlimits) == (
        "10.201.9.2",
        20.0,
        10227100,
        2,
        5,
        353,
    )
    assert c10.leaf == "netem"
    assert c10.delay_ms == pytest.approx(50) and c10.jitter_ms == pytest.approx(10) and c10.loss_pct == pytest.approx(1)
    c11 = by_id["ede:11"]
    assert (c11.dest, c11.leaf, c11.delay_ms) == ("10.201.77.0/24", None, None)


def test_not_installed_and_garbage() -> None:
    status = parse_status("eth0", '[{"kind":"pfifo_fast","handle":"0:","root":true}]', "", "")
    assert not status.installed and status.classes == []
    with pytest.raises(TcOutputError, match="not JSON"):
        parse_status("eth0", "Cannot find device", "", "")
