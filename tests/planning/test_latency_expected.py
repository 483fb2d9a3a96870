"""The expected path latency beside the bound (:mod:`placement.costmodel.latency`): the queue as the M/G/1 mean of the
link's own message mix. Hand-computed on one link, equal to the bound where every message is a full buffer, never
above it (every assignment of the random instances of test_latency_bound), and carried by plan.json."""

from __future__ import annotations

import json
import random

import pytest
from planning_factories import cli_run, inventory, vertex
from test_latency_bound import IOT, SEEDS, enumerate_plans, instance

from placement.costmodel import build_problem, evaluate
from placement.costmodel import latency as lat
from placement.profile.format import JobProfile

B, H = 32768, 47  # Flink's network buffer and the header of a network message


def one_link_profile(source: dict, sink: dict, edge: dict, job: dict | None = None) -> JobProfile:
    return JobProfile.model_validate(
        {
            "job": {"name": "tiny", "origin": "synthetic", **(job or {})},
            "vertices": [source, sink],
            "edges": [{"source": source["id"], "target": sink["id"], **edge}],
        }
    )


def on_one_link(bandwidth: str, prof: JobProfile, burst: str | None = None):
    """The source on rpi1 (its uplink ``bandwidth``, 20 ms, ``burst``), the sink's subtasks on the server: (problem,
    cost)."""
    inv = inventory(
        [{"name": "rpi1", "bandwidth": bandwidth, "delay": "20ms", "burst": burst}],
        pins={"sources": {"Source: S": "rpi1"}},
    )
    pr = build_problem(inv, prof)
    assignment = {s.key: "rpi1" if s.is_source else "server" for s in pr.subtasks}
    return pr, evaluate(pr, assignment)


# ---- the queue of a message mix --------------------------------------------------------------------------------------


def test_mg1_wait_is_pollaczek_khinchine_and_at_most_the_full_buffer_wait():
    # two streams, 0.3 at 10 ms and 0.1 at 2 ms, and 0.1 more of full 50 ms buffers: Σρ_k·S_k / (2(1 − ρ))
    assert lat.mg1_wait_ms(0.5, 50.0, [(0.3, 10.0), (0.1, 2.0)]) == pytest.approx((3 + 0.2 + 5) / 1.0, abs=1e-12)
    # streams adding up to more than the link's load are scaled to it: the mix shapes the load, not its size
    assert lat.mg1_wait_ms(0.4, 50.0, [(0.4, 10.0), (0.4, 30.0)]) == pytest.approx(0.5 * (4 + 12) / 1.2, abs=1e-12)
    assert lat.mg1_wait_ms(0.0, 50.0, [(0.2, 10.0)]) == 0.0 and lat.mg1_wait_ms(1.0, 50.0, []) == float("inf")
    rng = random.Random(7)
    for _ in range(2000):
        rho, full = rng.uniform(0, lat.MAX_UTILISATION), rng.uniform(0.1, 200)
        mix = [(rng.uniform(0, 0.5), rng.uniform(0, full)) for _ in range(rng.randrange(5))]
        w = lat.mg1_wait_ms(rho, full, mix)
        assert 0 <= w <= lat.md1_wait_ms(rho, full) * (1 + 1e-12) <= lat.queue_ms(rho, full) * (1 + 1e-12) + 1e-12
        assert lat.mg1_wait_ms(rho, full, [(r, full) for r, _ in mix]) == pytest.approx(lat.md1_wait_ms(rho, full))


def test_a_channel_sends_a_message_per_timeout_or_per_full_buffer():
    slow = one_link_profile(
        vertex("Source: S", rin=0, rout=100, bpr=100), vertex("Sink: T", rout=0), {"ship_strategy": "FORWARD"}
    )
    fast = one_link_profile(
        vertex("Source: S", rin=0, rout=10_000, bpr=100), vertex("Sink: T", rout=0), {"ship_strategy": "FORWARD"}
    )
    (ch,) = on_one_link("2mbit", slow)[0].channels
    assert lat.channel_messages(ch, 0, 0) == pytest.approx((10.0, 1000 + H))  # 10 kB/s: 1 kB every 100 ms
    (ch,) = on_one_link("2mbit", fast)[0].channels
    assert lat.channel_messages(ch, 0, 0) == pytest.approx((1e6 / B, B + H))  # 1 MB/s fills a buffer every 33 ms


# ---- on a plan -------------------------------------------------------------------------------------------------------


def test_two_channels_of_known_sizes_on_one_link_match_the_hand_computed_mg1_wait():
    """Source S (1000 records/s of 100 B, on rpi1; its 25 kB of state checkpointed every second) → HASH 90 / 10 % →
    Sink T (2 subtasks on the server) over a 2 Mbit/s uplink with 20 ms delay."""
    source = {**vertex("Source: S", rin=0, rout=1000, bpr=100), "state_bytes": 25_000}
    prof = one_link_profile(
        source,
        vertex("Sink: T", 2, rin=500, rout=0),
        {"ship_strategy": "HASH", "receiver_shares": [0.9, 0.1]},
        job={"buffer_timeout_ms": 100, "checkpoint_interval_ms": 1000},
    )
    pr, cost = on_one_link("2mbit", prof)
    # the link: 0.8 Mbit/s of records, their framing (per channel min(records, flushes) + bytes / B messages of 47 B)
    # and 0.2 Mbit/s of checkpoints
    framing = ((10 + 90_000 / B) + (10 + 10_000 / B)) * H * 8 / 1e6
    assert cost.link("rpi1").mbit == pytest.approx(0.8 + framing + 0.2, abs=1e-12)
    rho = (0.8 + framing + 0.2) / 2
    # the channels: 10 messages/s each (a flush per 100 ms), of 9000 + 47 and 1000 + 47 bytes — both flushed by S's
    # one output flusher, so the path's messages wait for neither (a flusher's stream is periodic: its message is sent
    # long before its next one); what they wait for is the rest of the load, as full buffers: the checkpoints and the
    # framing beyond the messages' headers
    s0, s1, s_max = ((9000 + H) * 8 / 2e6 * 1e3, (1000 + H) * 8 / 2e6 * 1e3, (B + H) * 8 / 2e6 * 1e3)
    rho0, rho1 = 10 * s0 / 1e3, 10 * s1 / 1e3
    wait = (rho - rho0 - rho1) * s_max / (2 * (1 - rho))
    (path,) = cost.paths
    assert path.expected_queue_ms == pytest.approx(wait, abs=1e-9)
    # the flush wait: the 100 ms tick or the buffer's fill (90 and 10 kB/s fill 32 KiB in 364 and 3277 ms), whichever
    # comes first — τ/2 - τ²/(6·fill) per channel, weighted by its bytes
    flush = 0.9 * (50 - 100**2 / (6 * B / 90)) + 0.1 * (50 - 100**2 / (6 * B / 10))
    assert path.flush_ms == pytest.approx(flush) and 45 < flush < 50
    assert path.transmit_ms == pytest.approx(s0, abs=1e-12)  # its biggest
    assert path.expected_ms == pytest.approx(flush + 20 + s0 + wait, abs=1e-9)
    # the bound charges full buffers for all of it: the chord over ρ·S_max / (2(1 − ρ)), 5 x the mean here
    assert path.queue_ms == pytest.approx(lat.queue_ms(rho, s_max), abs=1e-9)
    assert path.latency_ms == pytest.approx(flush + 20 + s0 + path.queue_ms, abs=1e-9)
    assert (round(wait, 2), round(path.queue_ms, 2)) == (13.32, 67.05)


@pytest.mark.parametrize(("burst", "sent_at_once"), [("3200", 3200), ("4KiB", 4096), ("16KiB", 9000 + H)])
def test_a_shapers_burst_leaves_at_once_in_the_expected_send_not_in_the_bound(burst, sent_at_once):
    """The case above behind an htb link whose bucket holds ``burst`` (the lab's 2 Mbit/s: 3200 B, refilled in 13 ms
    of the 100 ms between the flusher's messages): the expected figure sends the 9047 B message's first ``burst`` bytes
    at once and the rest at the rate — nothing left to send when the burst is larger than the message — while the
    bound still sends every byte at the rate (another stream may have emptied the bucket)."""
    source = {**vertex("Source: S", rin=0, rout=1000, bpr=100), "state_bytes": 25_000}
    prof = one_link_profile(
        source,
        vertex("Sink: T", 2, rin=500, rout=0),
        {"ship_strategy": "HASH", "receiver_shares": [0.9, 0.1]},
        job={"buffer_timeout_ms": 100, "checkpoint_interval_ms": 1000},
    )
    (plain,), (shaped,) = on_one_link("2mbit", prof)[1].paths, on_one_link("2mbit", prof, burst)[1].paths
    s0 = (9000 + H) * 8 / 2e6 * 1e3
    assert shaped.latency_ms == pytest.approx(plain.latency_ms, abs=1e-12)  # the bound: unchanged
    assert shaped.transmit_ms == pytest.approx(s0, abs=1e-12)
    assert shaped.expected_queue_ms == pytest.approx(plain.expected_queue_ms, abs=1e-12)
    assert shaped.expected_ms == pytest.approx(plain.expected_ms - sent_at_once * 8 / 2e6 * 1e3, abs=1e-9)
    assert plain.expected_ms - shaped.expected_ms <= s0 + 1e-9


def test_the_inventorys_burst_takes_sizes():
    # (an inventory without it hashes as before: test_latency_bound's pinned digest of inventory/edge-lab.yaml)
    bare = inventory([{"name": "rpi1", "bandwidth": "2mbit"}])
    assert bare.links[0].burst is None
    assert inventory([{"name": "rpi1", "bandwidth": "2mbit", "burst": "3.2kB"}]).links[0].burst == 3200
    assert inventory([{"name": "rpi1", "bandwidth": "2mbit", "burst": 4096}]).links[0].burst == 4096
    assert inventory([{"name": "rpi1", "bandwidth": "2mbit", "burst": 0}]).digest() != bare.digest()


def test_two_flushers_on_one_link_wait_for_each_other_not_for_themselves():
    """Two source subtasks on rpi1 (each its own task, so its own output flusher), 1000 and 250 records/s of 100 B,
    FORWARD to two sink subtasks on the server, 2 Mbit/s: a message of subtask 0 waits for subtask 1's messages (M/G/1
    over them) and the other way round, never for its own; the path's slowest crossing is the one that waits longer."""
    source = vertex("Source: S", 2, rin=0, rout=1000, bpr=100)
    source["subtasks"][1]["records_out_per_s"] = 250
    sink = vertex("Sink: T", 2, rin=1000, rout=0)
    sink["subtasks"][1]["records_in_per_s"] = 250
    prof = one_link_profile(source, sink, {"ship_strategy": "FORWARD"}, job={"buffer_timeout_ms": 100})
    pr, cost = on_one_link("2mbit", prof)
    rho = cost.link("rpi1").mbit / 2
    s0, s1, s_max = ((10_000 + H) * 8 / 2e6 * 1e3, (2_500 + H) * 8 / 2e6 * 1e3, (B + H) * 8 / 2e6 * 1e3)
    rho0, rho1 = 10 * s0 / 1e3, 10 * s1 / 1e3
    rest = rho - rho0 - rho1  # framing beyond the headers, as full buffers
    wait0 = (rho1 * s1 + rest * s_max) / (2 * (1 - rho))  # subtask 0's message behind subtask 1's
    wait1 = (rho0 * s0 + rest * s_max) / (2 * (1 - rho))
    (path,) = cost.paths
    assert wait1 > wait0 + 1  # the smaller stream waits behind the larger one
    # the slowest crossing by the expected figure: subtask 0's (a larger send) or 1's (a longer wait); the flush wait
    # (100 and 25 kB/s fill 32 KiB in 328 and 1311 ms) per channel, weighted by its bytes
    flush = (100 * (50 - 100**2 / (6 * B / 100)) + 25 * (50 - 100**2 / (6 * B / 25))) / 125
    assert path.flush_ms == pytest.approx(flush)
    assert path.expected_ms == pytest.approx(flush + 20 + max(s0 + wait0, s1 + wait1), abs=1e-9)
    assert path.expected_queue_ms == pytest.approx(wait0 if s0 + wait0 >= s1 + wait1 else wait1, abs=1e-9)


@pytest.mark.parametrize(("bandwidth", "rho"), [("16mbit", 0.5), ("18mbit", 8 / 18)])
def test_one_flusher_of_full_buffers_waits_for_nothing_the_bound_charges_m_d_1(bandwidth, rho):
    """1 MB/s fills a buffer every 33 ms, each sent in 16 ms: one stream, periodic, that never waits for its own
    previous message — the expected queue is 0 — while the bound charges the M/D/1 wait of full buffers, which its
    chords interpolate (equal at a breakpoint, ρ = 0.5, above between two, ρ = 0.44)."""
    prof = one_link_profile(
        vertex("Source: S", rin=0, rout=10_000, bpr=100),
        vertex("Sink: T", rin=10_000, rout=0),
        {"ship_strategy": "FORWARD"},
    )  # no buffer timeout in the profile: framing not charged
    _, cost = on_one_link(bandwidth, prof)
    (path,) = cost.paths
    s_max = lat.buffer_service_ms(float(bandwidth.removesuffix("mbit")))
    assert path.utilisation == pytest.approx(rho, abs=1e-12)
    assert path.expected_queue_ms == 0.0
    assert path.expected_ms == pytest.approx(path.latency_ms - path.queue_ms, abs=1e-9)
    if rho in lat.BREAKPOINTS:
        assert path.queue_ms == pytest.approx(lat.md1_wait_ms(rho, s_max), abs=1e-9)
    else:
        assert path.queue_ms > lat.md1_wait_ms(rho, s_max) + 0.1


def test_expected_is_never_above_the_bound_on_any_assignment():
    """Every assignment of test_latency_bound's random instances, every path: bound − its queue ≤ expected ≤ bound,
    and below it on some (the instances mix timeout flushes and full buffers)."""
    below = 0
    for seed in SEEDS:
        inv, prof = instance(seed)
        for _, cost, _ in enumerate_plans(build_problem(inv, prof)):
            for p in cost.paths:
                assert p.latency_ms - p.queue_ms - 1e-9 <= p.expected_ms <= p.latency_ms + 1e-9, (seed, p)
                assert 0 <= p.expected_queue_ms <= p.queue_ms + 1e-9
                below += p.expected_ms < p.latency_ms - 0.5
    assert below > 100


# ---- plan.json -------------------------------------------------------------------------------------------------------


def test_plan_json_carries_both_figures_and_older_plans_load(tmp_path, capsys):
    from placement.writers.planjson import load_plan, render_plan_json

    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            "inventory/edge-lab.yaml",
            "--profile",
            "examples/profiles/branching-join.json",
            "--out",
            tmp_path / "p",
            "--compare",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    text = (tmp_path / "p" / "plan.json").read_text()
    doc = json.loads(text)
    meters = next(p for p in doc["paths"] if p["path"].startswith("Source: Meters → Parse Meters → Filter"))
    assert meters["latency_ms"] == pytest.approx(
        meters["flush_ms"] + meters["delay_ms"] + meters["transmit_ms"] + meters["queue_ms"]
    )  # the bound, as before
    assert meters["expected_ms"] == pytest.approx(
        meters["latency_ms"] - meters["queue_ms"] + meters["expected_queue_ms"]
    )
    assert meters["expected_queue_ms"] < meters["queue_ms"]
    meters = dict(meters)
    assert render_plan_json(load_plan(tmp_path / "p")) == text  # round trip with the new fields
    for p in doc["paths"]:  # as plans made before the expected figure
        del p["expected_ms"], p["expected_queue_ms"]
    (tmp_path / "old.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    old = load_plan(tmp_path / "old.json")
    assert all(p.expected_ms is None and p.expected_queue_ms is None for p in old.paths)
    assert render_plan_json(old) == (tmp_path / "old.json").read_text()  # dumps as it did
    summary = json.loads(out)["results"]
    ilp = summary[0]
    assert ilp["worst_path_expected_ms"] <= ilp["worst_path_ms"]
    assert ilp["paths_expected"].keys() == ilp["paths"].keys()
    assert ilp["paths_expected"][meters["path"]] == pytest.approx(meters["expected_ms"])


def test_the_latency_table_shows_expected_beside_the_upper_bound(tmp_path, capsys):
    code, out, err = cli_run(
        ["plan", "--inventory", "inventory/edge-lab.yaml", "--profile", IOT, "--out", tmp_path, "--compare"], capsys
    )
    assert code == 0, err
    header = next(line for line in out.splitlines() if "expected" in line and "upper" in line and "flush" in line)
    assert header.index("expected") < header.index("upper")
    path = json.loads((tmp_path / "plan.json").read_text())["paths"][0]
    assert f"{path['expected_ms']:.1f}" == "163.0" and f"{path['latency_ms']:.1f}" == "163.2"
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│ ")}
    assert "163.0" in rows["ilp"] and "163.2" in rows["ilp"]
