"""placement.graphs answers what networkx answered before it replaced networkx on the plan path: on random graphs
(DAGs, and graphs with cycles), the same position-ordered topological order, the same descendants and the same
simple paths, with networkx itself the oracle; a cycle is refused with the message that names the same vertex."""

from __future__ import annotations

import json
from graphlib import CycleError
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placement.errors import PlacementError
from placement.graphs import DiGraph
from placement.profile.format import load_profile

REPO = Path(__file__).resolve().parents[2]


@st.composite
def graphs(draw: st.DrawFn, acyclic: bool) -> tuple[list[str], list[tuple[str, str]]]:
    n = draw(st.integers(min_value=1, max_value=8))
    nodes = [f"v{i}" for i in draw(st.permutations(range(n)))]
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    picked = draw(st.lists(pairs, max_size=3 * n))
    # acyclic: edges only forward in a hidden order, which the node list (shuffled above) does not show
    edges = [(f"v{a}", f"v{b}") for a, b in picked if (a < b if acyclic else a != b)]
    return nodes, edges


def networkx_of(nodes: list[str], edges: list[tuple[str, str]]) -> nx.DiGraph[str]:
    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g


@settings(max_examples=200, deadline=None, derandomize=True)
@given(graphs(acyclic=True))
def test_a_dag_has_the_order_reach_and_paths_networkx_gives(graph):
    nodes, edges = graph
    ours, theirs = DiGraph(nodes, edges), networkx_of(nodes, edges)
    position = {v: i for i, v in enumerate(nodes)}
    assert ours.topological_order(key=position.__getitem__) == list(
        nx.lexicographical_topological_sort(theirs, key=position.__getitem__)
    )
    assert sorted(ours.edges) == sorted(theirs.edges)
    for v in nodes:
        assert (ours.in_degree(v), ours.out_degree(v)) == (theirs.in_degree(v), theirs.out_degree(v))
        assert ours.descendants(v) == nx.descendants(theirs, v)
        for t in nodes:
            assert sorted(ours.simple_paths(v, t)) == sorted(nx.all_simple_paths(theirs, v, t))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(graphs(acyclic=False))
def test_a_cycle_is_seen_where_networkx_sees_one(graph):
    nodes, edges = graph
    ours, theirs = DiGraph(nodes, edges), networkx_of(nodes, edges)
    if nx.is_directed_acyclic_graph(theirs):
        assert len(ours.topological_order(key=nodes.index)) == len(nodes)
    else:
        with pytest.raises(CycleError):
            ours.topological_order(key=nodes.index)
    for v in nodes:
        assert ours.descendants(v) == nx.descendants(theirs, v)
        for t in nodes:
            assert sorted(ours.simple_paths(v, t)) == sorted(nx.all_simple_paths(theirs, v, t))


def test_a_profile_with_a_cycle_is_refused_naming_the_vertex_networkx_found(tmp_path):
    doc = json.loads((REPO / "examples" / "profiles" / "branching-join.json").read_text())
    ids = [v["id"] for v in doc["vertices"]]
    first = doc["edges"][0]
    back = {**first, "source": first["target"], "target": first["source"]}
    for key in ("records_per_s", "bytes_per_s", "receiver_shares"):
        back.pop(key, None)
    doc["edges"].append(back)
    path = tmp_path / "cyclic.json"
    path.write_text(json.dumps(doc))
    g = networkx_of(ids, [(e["source"], e["target"]) for e in doc["edges"]])
    expected = nx.find_cycle(g)[0][0]
    with pytest.raises(PlacementError) as caught:
        load_profile(path)
    assert f"the job graph has a cycle through {expected!r}" in str(caught.value)
    assert "edges" in str(caught.value)
