"""The cost model's per-edge terms, each pinned by an instance whose answer is known by hand (issue 12).

* per-edge bytes: a fan-out whose edges carry different bytes (a side output), charged edge by edge;
* broadcast: one copy per receiver, counted once;
* key skew: a HASH edge's measured receiver shares decide which keyed subtask the edge host takes;
* pointwise RESCALE: Flink's wiring lets each source's consumers run beside it (all-to-all would forbid it);
* checkpoint upload: a stateful subtask allowed on a Pi puts ``state / interval`` on its uplink;
* network framing: 47 bytes per flushed buffer per channel.

Each case is a *bracket* where it decides something: the operator under test sits just below or just above the
break-even point, so a term off by more than 10 % (or missing) flips the plan and fails the test. Every solved case
is also checked against the brute-force optimum over all assignments and the evaluator's price of the ILP's plan
(the ILP's WAN rows and the evaluator are independent computations of the same model).
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_factories import brute_force, close, inventory

from placement.cli import main
from placement.costmodel import PlacementProblem, build_problem, evaluate
from placement.costmodel.traffic import framing_mbit, messages_per_s
from placement.flink.facts import MESSAGE_HEADER_BYTES, SEGMENT_BYTES
from placement.profile.format import JobProfile, load_profile
from placement.solver import solve

PIN1 = {"sources": {"Source: S": "rpi1"}}
BELOW, ABOVE = 0.9, 1.1


def mbit_bytes(mbit: float) -> float:
    """Bytes/s of ``mbit`` Mbit/s."""
    return mbit * 1e6 / 8


def vertex(
    name: str, parallelism: int = 1, *, busy: float = 10, rout: float = 1000, stateful: bool = False, state: float = 0.0
) -> dict:
    return {
        "id": name.lower().replace(" ", "-").replace(":", ""),
        "name": name,
        "parallelism": parallelism,
        "stateful": stateful,
        "state_bytes": state,
        "bytes_per_record_out": 0.0,
        "subtasks": [
            {"index": i, "records_in_per_s": 1000, "records_out_per_s": rout, "busy_ms_per_s": busy}
            for i in range(parallelism)
        ],
    }


def edge(
    source: str,
    target: str,
    strategy: str,
    mbit_each: float | list[float],
    n_up: int = 1,
    *,
    records: float = 1000,
    shares: list[float] | None = None,
) -> dict:
    """An edge on which every upstream subtask puts ``mbit_each`` Mbit/s (one copy) in ``records`` records/s."""
    each = mbit_each if isinstance(mbit_each, list) else [mbit_each] * n_up
    return {
        "source": source,
        "target": target,
        "ship_strategy": strategy,
        "records_per_s": [records] * len(each),
        "bytes_per_s": [mbit_bytes(m) for m in each],
        "receiver_shares": shares,
        "basis": "producer",
    }


def profile(vertices: list[dict], edges: list[dict], **job: object) -> JobProfile:
    ids = {v["name"]: v["id"] for v in vertices}
    return JobProfile.model_validate(
        {
            "job": {"name": "edges", "origin": "synthetic", **job},
            "vertices": vertices,
            "edges": [{**e, "source": ids[e["source"]], "target": ids[e["target"]]} for e in edges],
        }
    )


def hosts(result, pr: PlacementProblem, name: str) -> list[str]:
    return [result.assignment[s.key] for s in pr.subtasks if s.vertex_name == name]


def solve_checked(pr: PlacementProblem):
    result = solve(pr)
    assert result.status == "optimal" and result.cost.feasible, (result.status, result.reason)
    best, _ = brute_force(pr)
    assert close(result.cost.wan_mbit, best.wan_mbit), (result.cost.wan_mbit, best.wan_mbit)
    assert close(result.cost.server_cores, best.server_cores) and close(result.cost.latency_ms, best.latency_ms)
    wan = next(st_.info.objective for st_ in result.stages if st_.name == "wan")
    assert wan == pytest.approx(evaluate(pr, result.assignment).wan_mbit, rel=1e-6, abs=1e-9)
    return result


# ---- per-edge bytes: a side output -------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["split-at-the-edge", "split-on-the-server"])
def test_each_edge_is_charged_its_own_bytes(factor):
    # Split emits 0.2 Mbit/s of summaries and 0.6 Mbit/s of large orders (a side output): 0.8 in all. Its input is
    # 0.8/factor: at the edge it saves that and sends 0.8. Charging either edge the other's size, or both the total,
    # moves the break-even by far more than 10 %.
    vs = [vertex("Source: S"), vertex("Split"), vertex("Sink: A"), vertex("Sink: B")]
    es = [
        edge("Source: S", "Split", "FORWARD", 0.8 / factor),
        edge("Split", "Sink: A", "FORWARD", 0.2),
        edge("Split", "Sink: B", "FORWARD", 0.6, records=100),
    ]
    pr = build_problem(inventory(pins=PIN1), profile(vs, es))
    result = solve_checked(pr)
    if factor < 1:
        assert hosts(result, pr, "Split") == ["rpi1"] and result.cost.link("rpi1").mbit == pytest.approx(0.8)
    else:
        assert hosts(result, pr, "Split") == ["server"] and result.cost.link("rpi1").mbit == pytest.approx(0.8 / factor)
    assert [s.out_mbit for s in pr.subtasks if s.vertex_name == "Split"] == [pytest.approx(0.8)]


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["at-the-edge", "on-the-server"])
def test_broadcast_sends_one_copy_per_receiver(factor):
    # Parse sends 0.1 Mbit/s per copy to 3 receivers: 0.3 at the edge against its input of 0.3/factor.
    vs = [vertex("Source: S"), vertex("Parse"), vertex("Apply", 3, stateful=True), vertex("Sink: T")]  # Apply: server
    es = [
        edge("Source: S", "Parse", "FORWARD", 0.3 / factor),
        edge("Parse", "Apply", "BROADCAST", 0.1),
        edge("Apply", "Sink: T", "REBALANCE", 0.001, n_up=3),
    ]
    pr = build_problem(inventory(pins=PIN1), profile(vs, es))
    result = solve_checked(pr)
    want = ("rpi1", 0.3) if factor < 1 else ("server", 0.3 / factor)
    assert hosts(result, pr, "Parse") == [want[0]] and result.cost.link("rpi1").mbit == pytest.approx(want[1])


# ---- key skew ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shares,hot", [([0.9, 0.1], 0), ([0.1, 0.9], 1)])
def test_the_pi_takes_the_keyed_subtask_with_the_hot_key(shares, hot):
    # 1 Mbit/s of keyed records; the Pi has room for one of the two Count subtasks (0.3 cores, 0.2 each at speed 0.3
    # ... see cores below). Whichever subtask runs there keeps its share of the input off the link: the hot one.
    vs = [vertex("Source: S"), vertex("Count", 2, busy=60), vertex("Sink: T")]
    es = [
        edge("Source: S", "Count", "HASH", 1.0, shares=shares),
        edge("Count", "Sink: T", "REBALANCE", [0.01, 0.01], n_up=2),
    ]
    inv = inventory([{"name": "rpi1", "cores": 0.3, "task_slots": 4}], pins=PIN1)
    pr = build_problem(inv, profile(vs, es))
    result = solve_checked(pr)
    count = hosts(result, pr, "Count")
    assert count[hot] == "rpi1" and count[1 - hot] == "server"
    assert result.cost.link("rpi1").mbit == pytest.approx(0.1 + 0.01)  # the cold share crosses, plus hot's output
    # uniform keys would have priced either choice at 0.5 + 0.01
    assert evaluate(pr, {**result.assignment, ("count", hot): "server", ("count", 1 - hot): "rpi1"}).link(
        "rpi1"
    ).mbit == pytest.approx(0.9 + 0.01)


# ---- pointwise RESCALE --------------------------------------------------------------------------------------------


def test_rescale_consumers_run_beside_their_own_source_subtask():
    # Sources born on rpi1 and rpi2, RESCALE 2 -> 4: Flink wires u0 -> v0, v1 and u1 -> v2, v3, so each Pi can run
    # the two Normalize subtasks it feeds. Planned all-to-all, every Normalize subtask would receive from both Pis
    # and have to stay on the server (2 x 1 Mbit/s crossing instead of 2 x 0.1).
    vs = [vertex("Source: S", 2), vertex("Normalize", 4), vertex("Sink: T")]
    es = [
        edge("Source: S", "Normalize", "RESCALE", 1.0, n_up=2),
        edge("Normalize", "Sink: T", "REBALANCE", 0.05, n_up=4),
    ]
    inv = inventory([{"name": "rpi1"}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi2"]}})
    pr = build_problem(inv, profile(vs, es))
    result = solve_checked(pr)
    assert hosts(result, pr, "Normalize") == ["rpi1", "rpi1", "rpi2", "rpi2"]
    assert result.cost.link("rpi1").mbit == pytest.approx(0.1) and result.cost.link("rpi2").mbit == pytest.approx(0.1)
    crossed = evaluate(pr, {**result.assignment, ("normalize", 1): "rpi2"})  # v1 is fed by u0 on rpi1 only
    assert any("Normalize (2/4) receives from Source: S (1/2) on rpi1" in v for v in crossed.violations)


def test_rescale_from_more_to_fewer_subtasks_pairs_blocks():
    # 4 -> 2: u0, u1 feed v0; u2, u3 feed v1. Sources on rpi1, rpi1, rpi2, rpi2: each Pi runs the consumer of its block.
    vs = [vertex("Source: S", 4), vertex("Merge", 2), vertex("Sink: T")]
    es = [edge("Source: S", "Merge", "RESCALE", 0.5, n_up=4), edge("Merge", "Sink: T", "REBALANCE", 0.02, n_up=2)]
    inv = inventory(
        [{"name": "rpi1"}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi1", "rpi2", "rpi2"]}}
    )
    pr = build_problem(inv, profile(vs, es))
    result = solve_checked(pr)
    assert hosts(result, pr, "Merge") == ["rpi1", "rpi2"] and result.cost.wan_mbit == pytest.approx(0.04)


# ---- checkpoint upload --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["state-at-the-edge", "state-on-the-server"])
def test_a_stateful_subtask_on_a_pi_uploads_its_checkpoints(factor):
    # Agg (stateful, allowed on the Pi) saves 1.0 - 0.05 Mbit/s of traffic at the edge; its checkpoints there cost
    # state · 8 / interval = 0.95·factor Mbit/s. Below break-even it moves to the Pi and the link carries its output
    # plus the uploads; above, it stays on the server.
    upload = 0.95 * factor
    state = upload * 1e6 / 8 * 10  # bytes, checkpointed every 10 s
    vs = [vertex("Source: S"), vertex("Agg", stateful=True, state=state), vertex("Sink: T")]
    es = [edge("Source: S", "Agg", "FORWARD", 1.0), edge("Agg", "Sink: T", "FORWARD", 0.05)]
    inv = inventory([{"name": "rpi1", "allow_stateful": True, "memory": "8GiB"}], pins=PIN1)
    pr = build_problem(inv, profile(vs, es, checkpoint_interval_ms=10_000))
    assert [s.checkpoint_mbit for s in pr.subtasks if s.vertex_name == "Agg"] == [pytest.approx(upload)]
    result = solve_checked(pr)
    link = result.cost.link("rpi1")
    if factor < 1:
        assert hosts(result, pr, "Agg") == ["rpi1"] and link.mbit == pytest.approx(0.05 + upload)
        assert link.checkpoint_mbit == pytest.approx(upload) and link.data_mbit == pytest.approx(0.05)
    else:
        assert hosts(result, pr, "Agg") == ["server"] and link.mbit == pytest.approx(1.0) and link.checkpoint_mbit == 0


def test_no_checkpoint_interval_no_upload_and_incremental_checkpoints_upload_the_delta():
    v = vertex("Agg", 2, stateful=True, state=8e6)
    assert build_problem(inventory(), profile([v], [])).subtasks[0].checkpoint_mbit == 0  # checkpointing off
    pr = build_problem(inventory(), profile([{**v, "checkpointed_bytes": 1e6}], [], checkpoint_interval_ms=4000))
    assert [s.checkpoint_mbit for s in pr.subtasks] == [pytest.approx(1e6 / 2 * 8 / 4 / 1e6)] * 2  # 0.5 MB / 4 s each


# ---- network framing ---------------------------------------------------------------------------------------------


def test_each_channel_adds_a_header_per_flushed_buffer():
    # 1000 records/s of 100 B on one channel, 100 ms buffer timeout: 10 flushes plus 100 kB / 32 kB full buffers.
    messages = 10 + 100_000 / SEGMENT_BYTES
    assert messages_per_s(0.8, 100, 10.0) == pytest.approx(messages)
    assert framing_mbit(messages) == pytest.approx(messages * MESSAGE_HEADER_BYTES * 8 / 1e6)
    assert messages_per_s(0.004, 100, 10.0) == pytest.approx(5 + 500 / SEGMENT_BYTES)
    assert messages_per_s(0.0, 100, 10.0) == 0.0  # a channel without data sends nothing
    # a source that emits in bursts: the measured share of the flush cycles (costmodel.deliveries)
    assert messages_per_s(0.8, 100, 10.0, ratio=0.13) == pytest.approx(1.3 + 100_000 / SEGMENT_BYTES)
    vs = [vertex("Source: S"), vertex("A", 2), vertex("Sink: T")]
    es = [edge("Source: S", "A", "REBALANCE", 0.8), edge("A", "Sink: T", "REBALANCE", [0.0, 0.0], n_up=2)]
    framed = build_problem(inventory(pins=PIN1), profile(vs, es, buffer_timeout_ms=100))
    bare = build_problem(inventory(pins=PIN1), profile(vs, es))  # no buffer timeout in the profile: payload only
    everything_away = {s.key: s.birth or "server" for s in framed.subtasks}
    # two channels of 500 records/s (0.4 Mbit/s) each: 2 x (10 + 50 kB / 32 kB) messages of 47 B on top of 0.8
    two = 2 * (10 + 50_000 / SEGMENT_BYTES) * MESSAGE_HEADER_BYTES * 8 / 1e6
    assert evaluate(framed, everything_away).link("rpi1").mbit == pytest.approx(0.8 + two)
    assert evaluate(bare, everything_away).link("rpi1").mbit == pytest.approx(0.8)


# ---- older profiles -----------------------------------------------------------------------------------------------


def test_a_v1_profile_loads_and_keeps_its_meaning(tmp_path):
    # v1 (no per-edge figures): every record, of bytes_per_record_out bytes, on each outgoing edge
    old = tmp_path / "old.json"
    old.write_text("""{"format": "placement.profile/v1", "job": {"name": "old"},
      "vertices": [
        {"id": "s", "name": "Source: S", "parallelism": 1, "bytes_per_record_out": 100,
         "subtasks": [{"index": 0, "records_out_per_s": 1000, "busy_ms_per_s": 10}]},
        {"id": "p", "name": "P", "parallelism": 1, "bytes_per_record_out": 25,
         "subtasks": [{"index": 0, "records_in_per_s": 1000, "records_out_per_s": 1000, "busy_ms_per_s": 10}]},
        {"id": "a", "name": "Sink: A", "parallelism": 1, "subtasks": [{"index": 0, "busy_ms_per_s": 1}]},
        {"id": "b", "name": "B", "parallelism": 2, "subtasks": [{"index": 0, "busy_ms_per_s": 1},
                                                                {"index": 1, "busy_ms_per_s": 1}]}],
      "edges": [{"source": "s", "target": "p", "ship_strategy": "FORWARD"},
                {"source": "p", "target": "a", "ship_strategy": "FORWARD"},
                {"source": "p", "target": "b", "ship_strategy": "BROADCAST"}]}""")
    prof = load_profile(old)
    assert prof.format == "placement.profile/v1" and prof.edges[1].bytes_per_s is None
    pr = build_problem(inventory(pins=PIN1), prof)
    on_pi = {("s", 0): "rpi1", ("p", 0): "rpi1", ("a", 0): "server", ("b", 0): "server", ("b", 1): "server"}
    assert evaluate(pr, on_pi).link("rpi1").mbit == pytest.approx(0.2 * 3)  # 0.2 Mbit/s to A, a copy to each B


# ---- every term at once, against brute force ----------------------------------------------------------------------


@st.composite
def instances(draw):
    n_edge = draw(st.integers(1, 2))
    edges_ = [
        {
            "name": f"rpi{k + 1}",
            "cores": draw(st.sampled_from([0.3, 1, 4])),
            "task_slots": 4,
            "bandwidth": f"{draw(st.sampled_from([1, 5, 100]))}mbit",
            "allow_stateful": draw(st.booleans()),
            "memory": "8GiB",
        }
        for k in range(n_edge)
    ]
    p_src = draw(st.integers(1, 2))
    p_mid = draw(st.integers(1, 3))
    strategy = draw(
        st.sampled_from(["HASH", "REBALANCE", "RESCALE", "BROADCAST"] + (["FORWARD"] if p_src == p_mid else []))
    )
    shares = None
    if strategy == "HASH" and p_mid > 1:
        raw = [draw(st.integers(1, 9)) for _ in range(p_mid)]
        shares = [x / sum(raw) for x in raw]
    stateful = draw(st.booleans())
    vs = [
        vertex("Source: S", p_src),
        vertex(
            "M",
            p_mid,
            busy=draw(st.sampled_from([10, 200])),
            stateful=stateful,
            state=draw(st.sampled_from([0, 1e5, 2e6])) if stateful else 0.0,
        ),
        vertex("Sink: A"),
        vertex("Sink: B"),
    ]
    es = [
        edge(
            "Source: S",
            "M",
            strategy,
            [draw(st.sampled_from([0.1, 0.5, 2.0])) for _ in range(p_src)],
            records=draw(st.sampled_from([5, 1000])),
            shares=shares,
        ),
        edge("M", "Sink: A", "REBALANCE", [draw(st.sampled_from([0.05, 0.4])) for _ in range(p_mid)]),
        edge("M", "Sink: B", "GLOBAL", [draw(st.sampled_from([0.0, 0.3])) for _ in range(p_mid)], records=100),
    ]
    births = [draw(st.sampled_from([e["name"] for e in edges_])) for _ in range(p_src)]
    job = {
        "checkpoint_interval_ms": draw(st.sampled_from([None, 1000])),
        "buffer_timeout_ms": draw(st.sampled_from([None, 100, 0])),
    }
    return build_problem(inventory(edges_, pins={"sources": {"Source: S": births}}), profile(vs, es, **job))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_ilp_equals_brute_force_with_every_new_term(pr):
    best, feasible = brute_force(pr)
    result = solve(pr)
    if feasible == 0:
        assert result.status == "infeasible"
        return
    assert result.status == "optimal" and result.cost.feasible, result.reason
    assert close(result.cost.wan_mbit, best.wan_mbit), (result.cost.wan_mbit, best.wan_mbit)
    assert close(result.cost.server_cores, best.server_cores, rel=1e-4)
    wan = next(s.info.objective for s in result.stages if s.name == "wan")
    assert wan == pytest.approx(result.cost.wan_mbit, rel=1e-6, abs=1e-9)  # the ILP's WAN rows price it as evaluate


# ---- bad per-edge figures: one line naming the file and field ----------------------------------------------------


@pytest.mark.parametrize(
    "change,field,message",
    [
        (
            lambda e: e.update(records_per_s=[1.0, 2.0]),
            "edges[0].records_per_s",
            "has 2 values for 1 upstream subtasks",
        ),
        (lambda e: e.update(bytes_per_s=None), "edges[0].bytes_per_s", "come together"),
        (lambda e: e.update(bytes_per_s=[-5.0]), "edges[0].bytes_per_s", "finite and >= 0"),
        (lambda e: e.update(receiver_shares=[1.0]), "edges[0].receiver_shares", "only HASH edges"),
        (lambda e: e.update(basis="guess"), "edges[0].basis", ""),
    ],
)
def test_bad_edge_figures_are_one_line_errors(tmp_path, capsys, change, field, message):
    vs = [vertex("Source: S"), vertex("Sink: T")]
    data = profile(vs, [edge("Source: S", "Sink: T", "REBALANCE", 0.5)]).model_dump(mode="json")
    change(data["edges"][0])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(inventory(pins=PIN1).model_dump(mode="json", by_alias=True)))
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "--inventory", str(inv), "--profile", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "bad.json" in err and field in err and message in err, err
