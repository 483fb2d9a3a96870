"""A vanilla-placed job's lane copies (one vertex per lane under the same name, apply's vanilla mapping) profile as the
job's own vertices: the same profile as the same job deployed in one piece, with the lanes' subtasks in lane order."""

from __future__ import annotations

from profile_support import INVENTORY
from test_rules import agg_row, frame

from placement.collect.layout import EdgeInfo, RunManifest, RunVertex, SubtaskLocation
from placement.inventory import load_inventory
from placement.profile.lanes import fold_lane_copies
from placement.profile.rules import Options, assemble, current_assignment


def lanes_manifest() -> RunManifest:
    """Source → Parse FORWARD in two lanes (listed out of lane order: Flink lists vertices topologically, not by
    lane), both lanes HASH into one Window of parallelism 2; lane 1 runs on rpi1, lane 0's Parse on the server."""
    v = [
        RunVertex(id="s0", name="Source: S", parallelism=1, state_bytes=10.0),
        RunVertex(id="s1", name="Source: S", parallelism=1, state_bytes=20.0),
        RunVertex(id="p1", name="Parse", parallelism=1),
        RunVertex(id="p0", name="Parse", parallelism=1),
        RunVertex(id="win", name="Window", parallelism=2, state_bytes=5.0),
    ]
    e = [
        EdgeInfo(source="s0", target="p0", ship_strategy="FORWARD"),
        EdgeInfo(source="s1", target="p1", ship_strategy="FORWARD"),
        EdgeInfo(source="p1", target="win", ship_strategy="HASH"),
        EdgeInfo(source="p0", target="win", ship_strategy="HASH"),
    ]
    tm = {"s0": "rpi1", "s1": "rpi1", "p0": "server", "p1": "rpi1"}
    loc = [SubtaskLocation(vertex_id=k, subtask=0, taskmanager_id=h, host=h) for k, h in tm.items()]
    loc += [SubtaskLocation(vertex_id="win", subtask=i, taskmanager_id="server", host="server") for i in (0, 1)]
    return RunManifest(
        job_id="j1", job_name="job", run_id="r1", started_ms=0, interval_s=1.0, vertices=v, edges=e, locations=loc
    )


def lanes_aggregates():
    return frame(
        agg_row("s0", 0, rin=0, rout=100),
        agg_row("s1", 0, rin=0, rout=300),
        agg_row("p0", 0, rin=100, rout=100),
        agg_row("p1", 0, rin=300, rout=300),
        agg_row("win", 0, rin=250, rout=10),
        agg_row("win", 1, rin=150, rout=10),
    )


def test_copies_fold_into_one_vertex_each_their_subtasks_in_lane_order():
    (run,), agg, copies = fold_lane_copies([lanes_manifest()], lanes_aggregates())
    assert [(v.id, v.name, v.parallelism, v.state_bytes) for v in run.vertices] == [
        ("s0", "Source: S", 2, 30.0),
        ("p0", "Parse", 2, None),
        ("win", "Window", 2, 5.0),
    ]
    assert [(e.source, e.target, e.ship_strategy) for e in run.edges] == [
        ("s0", "p0", "FORWARD"),
        ("p0", "win", "HASH"),
    ]
    # lane 0 is s0 → p0 (p0 is listed after p1, but its FORWARD feeder is lane 0's source)
    assert copies == {"s0": ("s0", 0), "s1": ("s0", 1), "p0": ("p0", 0), "p1": ("p0", 1), "win": ("win", 0)}
    assert sorted((loc.vertex_id, loc.subtask, loc.host) for loc in run.locations) == [
        ("p0", 0, "server"),
        ("p0", 1, "rpi1"),
        ("s0", 0, "rpi1"),
        ("s0", 1, "rpi1"),
        ("win", 0, "server"),
        ("win", 1, "server"),
    ]
    rates = {(r["vertex_id"], r["subtask"]): r["records_out_per_s_mean"] for r in agg.to_dict("records")}
    assert rates == {("s0", 0): 100, ("s0", 1): 300, ("p0", 0): 100, ("p0", 1): 300, ("win", 0): 10, ("win", 1): 10}


def test_the_folded_profile_is_the_one_piece_jobs_profile():
    (run,), agg, _ = fold_lane_copies([lanes_manifest()], lanes_aggregates())
    folded = assemble([run], agg, Options())
    whole = lanes_manifest().model_copy(
        update={"vertices": run.vertices, "edges": run.edges, "locations": run.locations}
    )
    one_piece = assemble(
        [whole],
        frame(
            agg_row("s0", 0, rin=0, rout=100),
            agg_row("s0", 1, rin=0, rout=300),
            agg_row("p0", 0, rin=100, rout=100),
            agg_row("p0", 1, rin=300, rout=300),
            agg_row("win", 0, rin=250, rout=10),
            agg_row("win", 1, rin=150, rout=10),
        ),
        Options(),
    )
    assert folded.dump() == one_piece.dump()
    assert [s.records_out_per_s for s in folded.vertex("p0").subtasks] == [100, 300]


def test_where_the_subtasks_run_is_read_with_the_copies_folded_as_the_profile_folds_them():
    inv = load_inventory(INVENTORY)
    edge = next(h.name for h in inv.hosts if h.role == "edge")
    server = next(h.name for h in inv.hosts if h.role == "server")
    run = lanes_manifest()
    moved = [
        loc.model_copy(update={"taskmanager_id": edge if loc.host == "rpi1" else server, "host": None})
        for loc in run.locations
    ]
    run = run.model_copy(update={"locations": moved})
    placed = current_assignment(run, inv)
    assert placed == {
        ("s0", 0): edge,
        ("s0", 1): edge,
        ("p0", 0): server,
        ("p0", 1): edge,
        ("win", 0): server,
        ("win", 1): server,
    }


def test_a_job_without_copies_is_left_as_it_is():
    run = lanes_manifest()
    single = run.model_copy(
        update={"vertices": [RunVertex(id="s0", name="Source: S", parallelism=1)], "edges": [], "locations": []}
    )
    agg = frame(agg_row("s0", 0, rin=0, rout=100))
    runs, out, copies = fold_lane_copies([single], agg)
    assert runs == [single] and out is agg and copies == {}
