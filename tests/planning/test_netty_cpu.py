"""Issue 23: the Netty server's CPU for the stream that leaves an edge host (placement.costmodel.deliveries) — what it
charges, from what the profile measured of the flush cycles, and that every planner leaves it free. The figures follow
by hand from the measured 0.00036 server cores a delivery a second, the hosts' speed 0.3 and ρ = 0.8."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from planning_factories import cli_run, inventory, profile, vertex

from placement.costmodel import build_problem, evaluate
from placement.costmodel.deliveries import SERVER_CORES_PER_DELIVERY
from placement.costmodel.model import PlanOptions
from placement.flink.facts import MESSAGE_HEADER_BYTES, SEGMENT_BYTES
from placement.profile.format import JobProfile
from placement.solver import solve
from placement.solver.capacity import max_scale
from placement.solver.fleet import solve_decomposed

KAPPA = SERVER_CORES_PER_DELIVERY / 0.3  # rpi4b: a server core's figure over its speed
SLOW = 4 + 4 * 10 / SEGMENT_BYTES  # deliveries a second of 4 records/s of 10 bytes


def job(buffers_in: float | None = None, rate: float = 1000, timeout_ms: float | None = 100) -> JobProfile:
    """Source (born on rpi1) → Map → Sink, FORWARD then REBALANCE, 10-byte records; ``buffers_in``: what Map and
    the sink were measured to get a second (None: not measured)."""

    def measured(v: dict) -> dict:
        if buffers_in is not None:
            v["subtasks"] = [{**s, "buffers_in_per_s": buffers_in} for s in v["subtasks"]]
        return v

    doc = profile(
        [
            vertex("Source: S", rin=0, rout=rate, busy=60, bpr=10),
            measured(vertex("M", rin=rate, rout=rate, busy=60, bpr=10)),
            measured(vertex("Sink: T", rin=rate, rout=0, busy=10)),
        ],
        [("Source: S", "M", "FORWARD"), ("M", "Sink: T", "REBALANCE")],
    ).model_dump()
    doc["job"]["buffer_timeout_ms"] = timeout_ms
    return JobProfile.model_validate(doc)


def edges(**rpi1):
    return inventory(
        [
            {"name": "rpi1", "cores": 1, "bandwidth": "1000mbit", "netty_cores_per_delivery": None, **rpi1},
            {"name": "rpi2", "cores": 1, "netty_cores_per_delivery": None},
        ],
        pins={"sources": {"Source: S": "rpi1"}},
    )


def test_an_edge_host_where_a_source_is_born_pays_one_flush_cycle_a_second_of_netty():
    pr = build_problem(edges(), job())
    rpi1, rpi2, server = (pr.host_by_name[n] for n in ("rpi1", "rpi2", "server"))
    assert rpi1.netty_cores == pytest.approx(KAPPA * 10)  # 1000 records/s flush every 100 ms: 10 a second
    assert rpi2.netty_cores == 0 and server.netty_cores == 0  # nothing born on rpi2: nothing runs there; a server: none
    assert pr.usable_cores(rpi1) == pytest.approx(0.8 - KAPPA * 10)
    # a slow source flushes when it has a record: 4 a second (and a full buffer every 32 kB)
    assert build_problem(edges(), job(rate=4)).host_by_name["rpi1"].netty_cores == pytest.approx(KAPPA * SLOW)
    # the inventory's own figure, in the host's cores
    assert build_problem(edges(netty_cores_per_delivery=0.002), job()).host_by_name[
        "rpi1"
    ].netty_cores == pytest.approx(0.02)


def test_measured_buffers_correct_the_flush_cycles_of_a_bursty_source_on_the_wire_too():
    """A source that emits once a second in a burst: the consumers got 1.3 buffers a second, not the 10 the rule
    predicts — the Netty charge and the framing both follow the measurement, also at twice the rate."""
    steady, bursty = build_problem(edges(), job()), build_problem(edges(), job(buffers_in=1.3))
    segments = 1000 * 10 / SEGMENT_BYTES  # full buffers of 10 kB/s: sent whatever the flushes
    ratio = (1.3 - segments) / 10
    assert bursty.channels[0].deliveries(0, 0) == pytest.approx(10 * ratio + segments) == pytest.approx(1.3)
    assert bursty.host_by_name["rpi1"].netty_cores == pytest.approx(KAPPA * 1.3)  # what Map was measured to get
    header = MESSAGE_HEADER_BYTES * 8 / 1e6
    assert steady.channels[1].flow_mbit(0, 0) - bursty.channels[1].flow_mbit(0, 0) == pytest.approx(
        10 * (1 - ratio) * header
    )
    doubled = build_problem(edges(), job(buffers_in=1.3), PlanOptions(rate_scale=2.0))
    assert doubled.channels[0].deliveries(0, 0) == pytest.approx(10 * ratio + 2 * segments)
    # a profile without a flush interval is not charged framing, but its Netty server works at Flink's default cycle
    assert build_problem(edges(), job(timeout_ms=None)).host_by_name["rpi1"].netty_cores == pytest.approx(KAPPA * 10)


def test_plan_json_gives_the_netty_part_of_the_predicted_cpu(tmp_path, capsys):
    inv, prof = tmp_path / "inv.json", tmp_path / "prof.json"
    inv.write_text(edges().model_dump_json(by_alias=True))
    prof.write_text(job().model_dump_json())
    code, _, err = cli_run(["plan", "--inventory", inv, "--profile", prof, "--out", tmp_path / "p"], capsys)
    assert code == 0, err
    hosts = {h["host"]: h for h in json.loads((tmp_path / "p" / "plan.json").read_text())["hosts"]}
    assert hosts["rpi1"]["netty_cores"] == pytest.approx(KAPPA * 10)
    assert hosts["rpi1"]["predicted_cores"] == pytest.approx(
        hosts["rpi1"]["baseline_cores"] + hosts["rpi1"]["netty_cores"] + hosts["rpi1"]["subtask_cores"]
    )
    assert hosts["server"].get("netty_cores") is None  # none: null, as absent in older plans


def test_every_planner_leaves_the_netty_work_free():
    """Map needs 0.6 of rpi1's core beside its source's 0.2: 0.8, the whole of ρ. With the Netty server's 0.012 the
    Pi has 0.788 and Map goes to the server — in the exact model, the fleet decomposition and --max-rate alike."""
    for netty, where in ((0.0, "rpi1"), (None, "server")):
        inv = edges(netty_cores_per_delivery=netty)
        prof = profile(
            [
                vertex("Source: S", rin=0, rout=1000, busy=60, bpr=1),
                vertex("M", busy=180, bpr=1),
                vertex("Sink: T", rout=0, busy=1),
            ],
            [("Source: S", "M", "FORWARD"), ("M", "Sink: T", "REBALANCE")],
        )
        pr = build_problem(inv, prof)
        for result in (solve(pr), solve_decomposed(pr)):
            assert result.cost.feasible
            assert result.assignment[(pr.by_vertex[prof.vertices[1].id][0].key)] == where, (netty, result.strategy)
            rpi1 = result.cost.host("rpi1")
            assert rpi1.predicted_cores == pytest.approx(rpi1.cores_used + rpi1.netty_cores + rpi1.baseline_cores)
        # --max-rate: the source alone on the Pi binds at (0.8 − netty) / 0.2 (Map can go to the server)
        c = max_scale(lambda k, inv=inv, prof=prof: build_problem(inv, prof, PlanOptions(rate_scale=k)))
        charged = 0.0 if netty == 0.0 else KAPPA * 10  # a busy stream: 10 flush cycles at every scale above 1/100
        assert c.scale == pytest.approx((0.8 - charged) / 0.2, rel=1e-3)


def test_jobs_on_one_host_each_pay_their_own_flush_cycles():
    from placement.costmodel.jobs import combine

    one = build_problem(edges(), job())
    both = combine([("a", one), ("b", build_problem(edges(), job(rate=4)))]).problem
    assert both.host_by_name["rpi1"].netty_cores == pytest.approx(KAPPA * (10 + SLOW))
    assert evaluate(one, {s.key: "server" if not s.is_source else "rpi1" for s in one.subtasks}).host(
        "rpi1"
    ).netty_cores == pytest.approx(KAPPA * 10)


def test_a_rescaled_vertex_keeps_the_flush_cycles_measured_of_it_and_a_hash_pair_its_receivers_busiest():
    """--rescale rebuilds the Map→Sink channel at another parallelism: the sink's instances get the measured ratio's
    mean (per-subtask figures do not carry over); a HASH sender's busiest pair is its receiver with the most cycles."""
    from placement.costmodel.rescaled import build_space

    space = build_space(edges(), job(buffers_in=1.3))
    to_sink = next(ch for ch in space.base.channels if ch.strategy.value == "REBALANCE")
    wider = space.channel_at(to_sink, 1, 3)
    assert wider.delivery_ratio == pytest.approx((to_sink.delivery_ratio[0],) * 3)
    skewed = replace(wider, delivery_ratio=(0.1, 0.5, 0.2))
    assert skewed.busiest_deliveries(0) == pytest.approx(skewed.deliveries(0, 1))
    assert skewed.busiest_deliveries(0) == max(skewed.deliveries(0, j) for j in range(3))
