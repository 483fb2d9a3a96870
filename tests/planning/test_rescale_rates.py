"""Target-rate propagation (placement.costmodel.rates) and the rescale space (placement.costmodel.rescaled): the
numbers of small hand-computed jobs, Flink's parallelism rules, and the placement problem at a chosen parallelism."""

from __future__ import annotations

import pytest
from planning_factories import inventory, profile, vertex
from rescale_factories import _revalidate

from placement.costmodel.rates import parse_target_rates, propagate, source_targets
from placement.costmodel.rescaled import build_space, flink_default_max_parallelism
from placement.errors import BadInput


def chain(src_p: int = 2, filter_p: int = 1, busy: float = 400.0):
    """Source (2 × 1000 records/s of 200 B) -REBALANCE-> Filter (keeps 10 %, busy ms/s) -HASH-> Sink."""
    return profile(
        [
            vertex("Source: S", src_p, rin=0, rout=2000 / src_p, busy=10, bpr=200),
            vertex("Filter", filter_p, rin=2000 / filter_p, rout=200 / filter_p, busy=busy, bpr=100),
            vertex("Sink: K", 1, rin=200, rout=0, busy=5, bpr=0),
        ],
        [("Source: S", "Filter", "REBALANCE"), ("Filter", "Sink: K", "HASH")],
    )


def test_rate_scale_multiplies_every_rate_and_keeps_selectivity():
    prof = chain()
    rates = propagate(prof, source_targets(prof, rate_scale=2.0))
    f = rates["filter"]
    assert f.factor == 2.0
    assert (f.records_in_per_s, f.records_out_per_s) == (4000.0, 400.0)
    assert (f.partitioned_in, f.broadcast_in) == (4000.0, 0.0)
    # busy 400 ms/s for 2000 records/s on a server core: 2e-4 core-seconds a record, λ = 5000 records/s
    assert f.cores_per_record == pytest.approx(2e-4) and f.true_rate == pytest.approx(5000)
    assert f.instance_cores(3) == pytest.approx(4000 / 3 * 2e-4)
    # on an rpi4b (speed 0.3) at ρ = 0.8 an instance may use 0.24 server cores: 0.8/p ≤ 0.24 → p ≥ 4
    assert f.min_parallelism(0.24, 128) == 4 and f.min_parallelism(0.8, 128) == 1
    assert f.min_parallelism(0.24, 3) is None  # not within the bound
    assert rates["sink-k"].records_in_per_s == 400.0


def test_target_rate_of_one_source_scales_its_share_of_a_join():
    prof = profile(
        [
            vertex("Source: A", 1, rin=0, rout=1000, busy=5, bpr=100),
            vertex("Source: B", 1, rin=0, rout=3000, busy=5, bpr=100),
            vertex("Join", 2, rin=2000, rout=200, busy=100, bpr=50, stateful=True),
            vertex("Sink: K", 1, rin=400, rout=0),
        ],
        [("Source: A", "Join", "HASH"), ("Source: B", "Join", "HASH"), ("Join", "Sink: K", "REBALANCE")],
    )
    targets = source_targets(prof, target_rates={"Source: A": 3000})
    assert targets == {"source-a": 3000.0, "source-b": 3000.0}  # B keeps its measured rate (rate scale 1)
    rates = propagate(prof, targets)
    # Join receives 1000 of A (×3) and 3000 of B (×1): factor (3·1000 + 3000) / 4000 = 1.5
    assert rates["join"].factor == pytest.approx(1.5)
    assert rates["join"].records_in_per_s == pytest.approx(6000)
    assert rates["sink-k"].records_in_per_s == pytest.approx(600)


def test_broadcast_input_reaches_every_instance_in_full():
    prof = profile(
        [
            vertex("Source: Rules", 1, rin=0, rout=10, busy=1, bpr=50),
            vertex("Source: Events", 1, rin=0, rout=1000, busy=5, bpr=100),
            vertex("Apply", 2, rin=510, rout=100, busy=100, bpr=50),
            vertex("Sink: K", 1, rin=200, rout=0),
        ],
        [
            ("Source: Rules", "Apply", "BROADCAST"),
            ("Source: Events", "Apply", "REBALANCE"),
            ("Apply", "Sink: K", "HASH"),
        ],
    )
    apply = propagate(prof, source_targets(prof, rate_scale=1.0))["apply"]
    # measured: each of 2 instances got 500 events and all 10 rules; at p instances: 1000/p + 10
    assert apply.partitioned_in == pytest.approx(1000) and apply.broadcast_in == pytest.approx(10)
    assert apply.instance_in(4) == pytest.approx(260)


@pytest.mark.parametrize(
    "text,message",
    [
        ("Source: S", "'Source: S' is not SOURCE=records/s"),
        ("Source: S=fast", "'fast' is not a rate in records/s"),
        ("Source: S=-5", "'-5' is not a rate in records/s"),
        ("Source: S=inf", "'inf' is not a rate in records/s"),
        ("=5", "'=5' is not SOURCE=records/s"),
        ("Source: S=5,Source: S=6", "'Source: S' is given twice"),
        (" , ", "no SOURCE=records/s given"),
    ],
)
def test_malformed_target_rates_are_bad_input(text, message):
    with pytest.raises(BadInput, match="--target-rate: " + message.replace("(", r"\(")):
        parse_target_rates(text)


def test_target_rates_parse_names_with_colons_and_spaces():
    assert parse_target_rates("Source: A=1e4, Source: B = 250") == {"Source: A": 10000.0, "Source: B": 250.0}


@pytest.mark.parametrize(
    "targets,message",
    [
        ({"Source: X": 5}, "'Source: X' names no source of job 'tiny' (sources: 'Source: S')"),
        ({"Filter": 5}, "'Filter' is not a source of job 'tiny'"),
    ],
)
def test_target_rates_must_name_sources(targets, message):
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace(")", r"\)")):
        source_targets(chain(), target_rates=targets)


def test_a_source_measured_idle_cannot_be_scaled():
    prof = profile(
        [vertex("Source: S", 1, rin=0, rout=0, busy=0, bpr=100), vertex("Sink: K", 1, rin=0, rout=0)],
        [("Source: S", "Sink: K", "REBALANCE")],
    )
    with pytest.raises(BadInput, match="produced no records in the profile"):
        source_targets(prof, target_rates={"Source: S": 100})


@pytest.mark.parametrize("p,expected", [(1, 128), (2, 128), (86, 256), (100, 256), (200, 512), (30000, 32768)])
def test_flink_default_max_parallelism(p, expected):
    assert flink_default_max_parallelism(p) == expected


# ---- the space: Flink's rules and the inventory's bounds --------------------------------------------------------


def test_forward_group_of_a_source_keeps_its_parallelism_and_the_rest_is_free():
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=500),
            vertex("Parse", 2),
            vertex("Window", 3, stateful=True),
            vertex("Sink: K", 1),
        ],
        [("Source: S", "Parse", "FORWARD"), ("Parse", "Window", "HASH"), ("Window", "Sink: K", "REBALANCE")],
    )
    space = build_space(inventory(pins={"sources": {"Source: S": "rpi1"}}), prof)
    groups = {g.members: g for g in space.groups}
    kept = groups[("source-s", "parse")]
    assert kept.per_subtask and kept.reason == "FORWARD from source 'Source: S'"
    assert groups[("window",)].choices == tuple(range(1, 129)) and not groups[("window",)].per_subtask
    assert space.violations({"source-s": 2, "parse": 2, "window": 7, "sink-k": 1}) == []
    broken = space.violations({"source-s": 2, "parse": 3, "window": 129, "sink-k": 1})
    assert broken == [
        "'Parse' keeps its parallelism 2 (FORWARD from source 'Source: S'), got 3",
        "'Window' at parallelism 129: allowed 1..128",
    ]


@pytest.mark.parametrize(
    "edges,reason",
    [
        ([("Source: S", "A", "HASH"), ("A", "B", "GLOBAL")], "GLOBAL into 'B' (all goes to subtask 0)"),
        ([("Source: S", "A", "HASH"), ("A", "B", "RESCALE")], "RESCALE into 'B' (wired by both parallelisms)"),
        (
            [("Source: S", "A", "HASH"), ("Source: S", "C", "HASH"), ("A", "B", "FORWARD"), ("C", "B", "FORWARD")],
            "'B' unions two FORWARD inputs",
        ),
    ],
)
def test_groups_that_keep_their_parallelism(edges, reason):
    names = sorted({n for e in edges for n in e[:2]})
    prof = profile(
        [vertex(n, 1 if n.startswith("Source") else 2, rin=0 if n.startswith("Source") else 1000) for n in names], edges
    )
    space = build_space(inventory(), prof)
    kept = [g for g in space.groups if g.per_subtask and g.members[0] != "source-s"]
    assert [g.reason for g in kept] == [reason]


def test_inventory_bounds_and_max_parallelism_narrow_the_choices():
    prof = chain()
    prof.vertices[1].max_parallelism = 6
    inv = _revalidate(inventory(), parallelism={"Filter": {"min": 2}, "Sink: K": {"max": 3}, "Nope": {"max": 2}})
    space = build_space(inv, prof)
    choices = {g.members[0]: g.choices for g in space.rescalable}
    assert choices == {"filter": (2, 3, 4, 5, 6), "sink-k": (1, 2, 3)}
    assert space.warnings == ("1 parallelism bounds name no vertex of job 'tiny' and are ignored: parallelism.Nope",)


@pytest.mark.parametrize(
    "bounds,field,message",
    [
        ({"Source: S": {"min": 3}}, "parallelism.Source: S", "'Source: S' keeps its parallelism 2 (a source"),
        (
            {"Filter": {"min": 200}},
            "parallelism.Filter",
            "no parallelism of 'Filter' fits: 200..128 after its max parallelism 128",
        ),
    ],
)
def test_bounds_that_leave_nothing_are_bad_input(bounds, field, message):
    inv = _revalidate(inventory(), parallelism=bounds)
    with pytest.raises(BadInput) as err:
        build_space(inv, chain(), inventory_source="inv.yaml")
    assert str(err.value).startswith(f"inv.yaml: {field}: {message}")


def test_problem_at_a_chosen_parallelism_spreads_the_target_over_the_instances():
    inv = inventory(pins={"sources": {"Source: S": "rpi1"}}, policy={"memory_per_subtask": "100MiB"})
    prof = profile(
        [
            vertex("Source: S", 2, rin=0, rout=1000, busy=10, bpr=200),
            vertex("Window", 2, rin=1000, rout=10, busy=300, bpr=80, stateful=True, state=300 * 2**20),
            vertex("Sink: K", 1, rin=20, rout=0),
        ],
        [("Source: S", "Window", "HASH"), ("Window", "Sink: K", "REBALANCE")],
    )
    space = build_space(inv, prof, rate_scale=1.5)
    problem = space.problem_at({"source-s": 2, "window": 3, "sink-k": 1})
    window = problem.by_vertex["window"]
    assert [s.label for s in window] == ["Window (1/3)", "Window (2/3)", "Window (3/3)"]
    assert sum(s.records_in_per_s for s in window) == pytest.approx(3000)  # 2 × 1000 × 1.5
    assert window[0].server_cores == pytest.approx(3000 / 3 * 0.3 / 1000)  # 0.3 core-s per 1000 records
    assert window[0].memory_mib == pytest.approx(100 + 300 / 3)
    hash_in = next(ch for ch in problem.channels if ch.target == "window")
    assert (hash_in.n_up, hash_in.n_down) == (2, 3) and hash_in.receiver_shares is None
    out = next(ch for ch in problem.channels if ch.source == "window")
    assert out.up_out_mbit == pytest.approx((10 * 2 * 1.5 * 80 * 8 / 1e6 / 3,) * 3)


def test_collected_max_parallelism_reaches_the_profile(tmp_path):
    """The collector records Flink's maxParallelism per vertex in the run manifest; the profile carries it on, and a
    value below the parallelism is refused."""
    from placement.collect.layout import write_manifest
    from placement.profile.pipeline import build_profile
    from support.synthetic import SHAPES_JOB, HistoryShape, write_history

    (manifest,) = write_history(SHAPES_JOB, HistoryShape(duration_s=180, seed=3), tmp_path)
    first = manifest.vertices[0]
    vertices = [v.model_copy(update={"max_parallelism": 64}) if v.id == first.id else v for v in manifest.vertices]
    write_manifest(tmp_path, manifest.model_copy(update={"vertices": vertices}))
    prof = build_profile(tmp_path, engine="pandas")
    assert {v.id: v.max_parallelism for v in prof.vertices}[first.id] == 64
    assert all(v.max_parallelism is None for v in prof.vertices if v.id != first.id)

    doc = prof.model_dump(mode="json")
    wide = next(v for v in doc["vertices"] if v["parallelism"] >= 2)
    wide["max_parallelism"] = wide["parallelism"] - 1
    with pytest.raises(ValueError, match="above its max parallelism"):
        type(prof).model_validate(doc)
