"""Per-edge figures from a whole metric history, by both profile engines: a synthetic job with a fan-out, a
broadcast, a side output, a pointwise RESCALE, skewed keys and a two-input join (support.synthetic.SHAPES_JOB),
whose true per-edge figures are known (edge_truth). Both engines feed the same rules (placement/profile/rules.py,
edge_flows.py); the Spark one is checked against the pandas one figure by figure."""

from __future__ import annotations

import pytest

from placement.profile.format import JobProfile
from placement.profile.pipeline import build_profile
from support.synthetic import SHAPES_JOB, HistoryShape, edge_truth, write_history

TOLERANCE = 0.02


@pytest.fixture(scope="module")
def shapes_history(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    write_history(SHAPES_JOB, HistoryShape(duration_s=300, restarts=1, backpressure_episodes=1, seed=5), root)
    return root


def edges_by_name(profile: JobProfile) -> dict[tuple[str, str], object]:
    name = {v.id: v.name for v in profile.vertices}
    return {(name[e.source], name[e.target]): e for e in profile.edges}


def assert_edges_recover_truth(profile: JobProfile) -> None:
    """Rates vary with the generator's load wave and spikes, so each edge is checked by its ratios: bytes per record,
    the share of each upstream subtask's records it carries, and the receivers' shares."""
    edges = edges_by_name(profile)
    vertex = {v.name: v for v in profile.vertices}
    for t in edge_truth(SHAPES_JOB):
        e = edges[(t["source"], t["target"])]
        up = vertex[t["source"]]
        want_size = sum(t["bytes_per_s"]) / sum(t["records_per_s"])
        assert sum(e.bytes_per_s) / sum(e.records_per_s) == pytest.approx(want_size, rel=TOLERANCE), (
            e.source,
            e.target,
        )
        for i, s in enumerate(up.subtasks):
            want = t["records_per_s"][i] / SHAPES_JOB_RECORDS_OUT[t["source"]][i]
            assert e.records_per_s[i] / s.records_out_per_s == pytest.approx(want, rel=TOLERANCE), (t, i)
        if t["receiver_shares"] is None:
            assert e.receiver_shares is None
        elif t["target"] != "Join":  # one input: its receivers' shares are this edge's
            assert e.receiver_shares == pytest.approx(t["receiver_shares"], abs=TOLERANCE)


def _records_out() -> dict[str, list[float]]:
    from support.synthetic import _nominal

    nom = _nominal(SHAPES_JOB)
    out, start = {}, 0
    for v in SHAPES_JOB.vertices:
        out[v.name] = [float(x) for x in nom.records_out[start : start + v.parallelism]]
        start += v.parallelism
    return out


SHAPES_JOB_RECORDS_OUT = _records_out()


def test_pandas_engine_recovers_every_edge(shapes_history):
    prof = build_profile(shapes_history, engine="pandas")
    assert_edges_recover_truth(prof)
    edges = edges_by_name(prof)
    basis = {k: e.basis for k, e in edges.items()}
    assert basis[("Parse Clicks", "Sink: Archive")] == basis[("Parse Clicks", "Click Counts")] == "consumer"  # fan-out
    assert basis[("Split Orders", "Sink: Large Orders")] == "consumer"  # a side output: its own size
    assert basis[("Parse Rules", "Apply Rules")] == basis[("Normalize", "Join")] == "producer"
    # the join's two HASH inputs: their receivers' shares over both inputs together (0.5/0.5 and 0.7/0.3 mixed)
    join = edges[("Normalize", "Join")].receiver_shares
    assert join == edges[("Click Counts", "Join")].receiver_shares and 0.5 < join[0] < 0.7
    # the vertex's record size is the size on its edges, not numBytesOut / numRecordsOut (2x for the fan-out)
    assert {v.name: v for v in prof.vertices}["Parse Clicks"].bytes_per_record_out == pytest.approx(50, rel=TOLERANCE)
    assert {v.name: v for v in prof.vertices}["Parse Clicks"].stats["bytes_out_per_s"] / {
        v.name: v for v in prof.vertices
    }["Parse Clicks"].stats["records_out_per_s"] == pytest.approx(100, rel=TOLERANCE)
    # checkpointing: the interval and what each checkpoint writes reach the profile
    assert prof.job.checkpoint_interval_ms == 10_000 and prof.job.buffer_timeout_ms == 100
    assert {v.name: v for v in prof.vertices}["Click Counts"].checkpointed_bytes == 4e6


@pytest.mark.spark
def test_spark_engine_gives_the_same_edges(shapes_history, spark):
    prof = build_profile(shapes_history, spark=spark)
    assert_edges_recover_truth(prof)
    pandas_edges = edges_by_name(build_profile(shapes_history, engine="pandas"))
    for key, e in edges_by_name(prof).items():
        other = pandas_edges[key]
        assert e.basis == other.basis
        assert e.bytes_per_s == pytest.approx(other.bytes_per_s, rel=1e-9)
        assert e.records_per_s == pytest.approx(other.records_per_s, rel=1e-9)
        assert (e.receiver_shares is None) == (other.receiver_shares is None)
