"""Cost-model details: the busy-time rule, traffic shares, units, plan.json round trip, the redeploy script."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from planning_factories import inventory, profile, vertex

from placement.costmodel import build_problem, evaluate
from placement.costmodel.demand import MIN_CORES, floor_cores, server_cores
from placement.costmodel.rates import propagate
from placement.costmodel.traffic import output_mbit, share
from placement.inventory import load_inventory
from placement.profile.format import JobProfile, ShipStrategy, SubtaskProfile, VertexProfile
from placement.solver import solve
from placement.units import format_rate, format_time, parse_percent, parse_rate_mbit, parse_size_mib, parse_time_ms
from placement.writers.planjson import SourceRef, build_plan_document, load_plan, render_plan_json
from placement.writers.redeploy import render_redeploy, run_body

REPO = Path(__file__).resolve().parents[2]


def _vertex(busy: list[float | None], rin: list[float], speed: float = 1.0) -> VertexProfile:
    return VertexProfile(
        id="v",
        name="V",
        parallelism=len(busy),
        subtasks=[
            SubtaskProfile(index=i, records_in_per_s=r, records_out_per_s=r, busy_ms_per_s=b, host_speed=speed)
            for i, (b, r) in enumerate(zip(busy, rin))
        ],
    )


def test_cpu_demand_is_busy_share_scaled_by_measurement_speed():
    v = _vertex([250.0], [1000.0], speed=0.5)
    d = server_cores(v, v.subtasks[0])
    assert d.server_cores == pytest.approx(0.125) and not d.estimated  # 25 % of a half-speed core
    assert server_cores(v, v.subtasks[0], rate_scale=2).server_cores == pytest.approx(0.25)


def test_nan_busy_borrows_per_record_cost_from_siblings():
    v = _vertex([200.0, float("nan")], [1000.0, 500.0])
    assert v.subtasks[1].busy_ms_per_s is None  # NaN is read as unknown
    d = server_cores(v, v.subtasks[1])
    assert d.server_cores == pytest.approx(0.1) and d.estimated  # 0.2 core-s per 1000 records -> 500 records


def test_nan_busy_without_siblings_and_zero_busy_get_the_floor():
    alone = _vertex([None], [1000.0])
    assert server_cores(alone, alone.subtasks[0]).server_cores == MIN_CORES
    idle = _vertex([0.0], [1000.0])
    d = server_cores(idle, idle.subtasks[0])
    assert d.server_cores == MIN_CORES and d.estimated  # busy 0 with records flowing: never "infinite capacity"
    quiet = _vertex([0.0], [0.0])
    assert not server_cores(quiet, quiet.subtasks[0]).estimated


def test_a_calibration_scales_the_floored_figure_it_was_measured_against():
    """The profile's factor is what a vertex used over the floored charge (placement.profile.tm_cpu), so the floor
    is calibrated too: a light operator measured at a fifth of it costs a fifth of it, in every busy-time case and in
    --rescale's per-instance line; one measured above its busy time costs that much more of a busy reading."""
    light = _vertex([1.0, None, 0.0], [50.0, 50.0, 50.0]).model_copy(update={"cpu_calibration": 0.2})
    assert [server_cores(light, s).server_cores for s in light.subtasks] == pytest.approx([0.2 * MIN_CORES] * 3)
    assert floor_cores(light) == pytest.approx(0.2 * MIN_CORES)
    busy = _vertex([100.0], [1000.0]).model_copy(update={"cpu_calibration": 1.5})
    assert server_cores(busy, busy.subtasks[0], rate_scale=2).server_cores == pytest.approx(0.3)
    one = JobProfile.model_validate({"job": {"name": "light", "origin": "synthetic"}, "vertices": [light.model_dump()]})
    line = propagate(one, {"v": 150.0})["v"]
    assert line.instance_cores(3) == pytest.approx(0.2 * MIN_CORES)  # never the uncalibrated floor


def test_traffic_shares_by_ship_strategy():
    assert [share(ShipStrategy.FORWARD, 1, j, 3, 3) for j in range(3)] == [0, 1, 0]
    assert [share(ShipStrategy.HASH, 0, j, 4, 4) for j in range(4)] == [0.25] * 4
    assert [share(ShipStrategy.HASH, 0, j, 4, 4, (0.7, 0.1, 0.1, 0.1)) for j in range(4)] == [0.7, 0.1, 0.1, 0.1]
    assert [share(ShipStrategy.BROADCAST, 0, j, 3, 3) for j in range(3)] == [1, 1, 1]
    assert [share(ShipStrategy.GLOBAL, 2, j, 3, 3) for j in range(3)] == [1, 0, 0]
    # RESCALE is pointwise: 2 -> 4 feeds {0, 1} and {2, 3}; 4 -> 2 pairs {0, 1} -> 0 and {2, 3} -> 1
    assert [share(ShipStrategy.RESCALE, 1, j, 2, 4) for j in range(4)] == [0, 0, 0.5, 0.5]
    assert [share(ShipStrategy.RESCALE, 3, j, 4, 2) for j in range(2)] == [0, 1]
    assert output_mbit(1000, 125) == pytest.approx(1.0)
    assert ShipStrategy.parse("HASH[key]") is ShipStrategy.HASH


def test_evaluate_counts_only_traffic_leaving_an_edge_host():
    vs = [
        vertex("Source: S", 2, rin=0, rout=1000, busy=10, bpr=125),
        vertex("A", 2, rout=1000, busy=10, bpr=125),
        vertex("Sink: T", rout=0, busy=1),
    ]
    pr = build_problem(
        inventory([{"name": "rpi1"}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi2"]}}),
        profile(vs, [("Source: S", "A", "REBALANCE"), ("A", "Sink: T", "REBALANCE")]),
    )
    all_server = {s.key: s.birth or "server" for s in pr.subtasks}
    cost = evaluate(pr, all_server)
    assert cost.link("rpi1").mbit == pytest.approx(1.0) and cost.link("rpi2").mbit == pytest.approx(1.0)
    # half of rpi1's REBALANCE output goes to A(1) on rpi1 itself, but A(1) then receives from rpi2: a violation
    mixed = {**all_server, ("a", 0): "rpi1"}
    cost = evaluate(pr, mixed)
    assert cost.link("rpi1").mbit == pytest.approx(0.5 + 1.0)  # half of S(1) leaves; all of A(1)'s output leaves
    assert any("data flows down into edge host rpi1" in v for v in cost.violations)


@pytest.mark.parametrize(
    "text,mbit", [("50mbit", 50), ("512kbit", 0.512), ("1gbit", 1000), ("2Mbit/s", 2), (12, 12), ("1mbps", 8)]
)
def test_rates(text, mbit):
    assert parse_rate_mbit(text) == pytest.approx(mbit)


def test_other_units():
    assert parse_time_ms("1s") == 1000 and parse_time_ms("250us") == 0.25 and parse_time_ms(5) == 5
    assert parse_size_mib("4GiB") == 4096 and parse_size_mib("512MiB") == 512
    assert parse_percent("0.5%") == 0.5
    assert format_rate(50.0) == "50mbit" and format_rate(0.5) == "500kbit" and format_time(0.25) == "250us"
    for bad in ("fast", "-1mbit", "nan", True):
        with pytest.raises(ValueError):
            parse_rate_mbit(bad)
    assert not math.isnan(parse_time_ms("0ms"))


def _plan(mode: str):
    inv = load_inventory(REPO / "inventory/edge-lab.yaml")
    from placement.profile.format import load_profile

    prof = load_profile(REPO / "examples/profiles/iot-sensors.json")
    pr = build_problem(inv, prof)
    result = solve(pr)
    doc = build_plan_document(
        pr,
        result,
        job="iot-sensors",
        placement_mode=mode,
        inventory=SourceRef(path="inv.yaml", digest=inv.digest()),
        profile=SourceRef(path="p.json", digest=prof.digest()),
    )
    return inv, doc


def test_plan_json_round_trip_and_mapping(tmp_path):
    inv, doc = _plan("custom")
    (tmp_path / "plan.json").write_text(render_plan_json(doc))
    back = load_plan(tmp_path)
    assert back == doc
    assert back.mapping()["Parse"] == ["rpi1", "rpi2", "rpi3"] and back.mapping()["Window Aggregate"] == ["server"] * 2
    assert back.inventory.digest == inv.digest()


def test_redeploy_script_custom_and_vanilla():
    inv, doc = _plan("custom")
    script = render_redeploy(doc, inv)
    assert "scp -P 22 -o StrictHostKeyChecking=yes" in script and "flink@192.168.1.180" in script
    # the job's own file in the scheduler extension's dir, the previous one kept
    assert (
        "/opt/flink/placement/scheduler/iot-sensors.schedulercfg.prev" in script
        and '"$REST/jobs/$JOB_ID/stop"' in script
    )
    assert json.loads(json.dumps(run_body(doc, inv)))["entryClass"] == "placement.lab.IotSensorJob"
    inv, doc = _plan("vanilla")
    body = run_body(doc, inv)
    i = body["programArgsList"].index("--placement")
    assert json.loads(body["programArgsList"][i + 1])["Enrich"] == ["rpi1", "rpi2", "rpi3"]
    assert "scp" not in render_redeploy(doc, inv)


def test_flink_durations_as_flink_reads_its_configuration():
    from placement.units import flink_duration_ms

    assert flink_duration_ms("2000") == 2000.0  # a bare number is milliseconds
    assert flink_duration_ms("10 s") == 10_000.0 and flink_duration_ms("1min") == 60_000.0
    assert flink_duration_ms("-1") == -1.0 and flink_duration_ms(" 100 ms ") == 100.0
    assert flink_duration_ms("10 parsecs") is None and flink_duration_ms("") is None and flink_duration_ms(None) is None
