"""A Graphviz picture of the plan: one cluster per host, the job graph inside, WAN edges labelled in Mbit/s.

Subtasks of one vertex on one host are drawn as one node (``Parse ×3``) so large plans stay readable. Rendering
needs Graphviz's ``dot`` (Debian package ``graphviz``); :func:`render_files` reports when it is missing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import graphviz

from placement.costmodel.model import Assignment, PlacementProblem
from placement.writers.planjson import ContingencyRecord

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"]


def plan_graph(
    problem: PlacementProblem, assignment: Assignment, title: str, contingencies: Sequence[str] = ()
) -> graphviz.Digraph:
    dot = graphviz.Digraph(
        "plan",
        graph_attr={"rankdir": "LR", "label": title, "labelloc": "t", "fontname": "Helvetica", "compound": "true"},
        node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica", "fontsize": "10"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"},
    )
    color = {h.name: PALETTE[n % len(PALETTE)] for n, h in enumerate(problem.hosts)}
    groups: dict[tuple[str, str], int] = defaultdict(int)
    for s in problem.subtasks:
        groups[(s.vertex_id, assignment[s.key])] += 1
    node_id = {g: f"n{n}" for n, g in enumerate(sorted(groups, key=lambda g: (problem.vertex_order.index(g[0]), g[1])))}
    for h in problem.hosts:
        with dot.subgraph(name=f"cluster_{h.name}") as sub:
            role = f"edge, uplink {h.uplink_mbit:g} Mbit/s" if h.is_edge else "server"
            sub.attr(label=f"{h.name} ({role})", color=color[h.name], fontcolor=color[h.name], style="rounded")
            for (vid, host), count in groups.items():
                if host == h.name:
                    name = problem.vertex_names[vid]
                    label = name if count == 1 else f"{name} ×{count}"
                    sub.node(node_id[(vid, host)], label=label, fillcolor=color[h.name] + "40", color=color[h.name])
    flows: dict[tuple[tuple[str, str], tuple[str, str]], float] = defaultdict(float)
    for ch in problem.channels:
        for i, j, mbit in ch.pairs():
            flows[((ch.source, assignment[(ch.source, i)]), (ch.target, assignment[(ch.target, j)]))] += mbit
    hosts = problem.host_by_name
    link_ms = _uplink_ms(problem, assignment, flows)
    for (a, b), mbit in sorted(flows.items(), key=lambda kv: (node_id[kv[0][0]], node_id[kv[0][1]])):
        wan = a[1] != b[1] and (hosts[a[1]].is_edge or hosts[b[1]].is_edge)
        if wan:
            up = hosts[a[1]] if hosts[a[1]].is_edge else hosts[b[1]]
            label = f"{mbit:.2f} Mbit/s"
            if up.name in link_ms:  # delay + queue at that uplink (costmodel.latency)
                label += f"\n{link_ms[up.name]:.1f} ms"
            dot.edge(node_id[a], node_id[b], label=label, color="#d62728", fontcolor="#d62728", penwidth="2.2")
        else:
            dot.edge(node_id[a], node_id[b], color="#555555")
    if contingencies:  # one line per lost host: what moves where and the degraded state's WAN and CPU
        text = "\\l".join(["while an edge host or its uplink is lost:", *contingencies]) + "\\l"
        dot.node("contingencies", label=text, shape="note", style="filled", fillcolor="#f5f5f5", color="#999999")
    return dot


def contingency_lines(contingencies: Iterable[ContingencyRecord]) -> list[str]:
    """One line per plan.json contingency record, for the picture's note."""
    lines = []
    for c in contingencies:
        if c.shortfall:
            lines.append(f"{c.shortfall} (no contingency)")
            continue
        by_target: dict[str, list[str]] = defaultdict(list)
        for m in c.moves:
            by_target[m.to].append(m.label)
        moves = "; ".join(f"{', '.join(labels)} → {to}" for to, labels in by_target.items()) or "nothing moves"
        figures = (
            f" · WAN {c.objective.wan_mbit:.2f} Mbit/s, server {c.objective.server_cores:.2f} cores"
            if c.objective
            else ""
        )
        lines.append(f"{c.lost} lost ({c.status}): {moves}{figures}")
    return lines


def _uplink_ms(
    problem: PlacementProblem,
    assignment: Assignment,
    flows: Mapping[tuple[tuple[str, str], tuple[str, str]], float],
) -> dict[str, float]:
    """Each used uplink's delay + queueing under the plan, for the WAN edges' labels: the queue's upper bound
    (costmodel.latency's ``queue_ms``, the figure the ILP and ``policy.max_latency_ms`` use) — one figure per edge;
    the expected one is in plan.json and the latency table."""
    from placement.costmodel.evaluate import evaluate
    from placement.costmodel.latency import link_queue_ms

    try:
        cost = evaluate(problem, assignment)
    except (KeyError, ValueError):
        return {}
    hosts = problem.host_by_name
    return {
        link.host: link.delay_ms + link_queue_ms(hosts[link.host], link.mbit) for link in cost.links if link.mbit > 0
    }


# PNG drawn by cairo and written by gd: the same picture as dot's default png (cairo's own writer), as a palette
# image a third of the size, in two thirds of the time — the slowest of a plan's steps after the imports
PNG = ("png", "cairo", "gd")


def render_images(
    dot: graphviz.Digraph, formats: tuple[str, ...] = ("svg", "png")
) -> tuple[dict[str, bytes], str | None]:
    """The picture in each format (``dot`` source always); a warning instead of images when Graphviz is missing.

    One ``dot`` per format, all at once: each is a process of its own, so on two cores they overlap instead of adding
    up on a plan's wall time."""
    from concurrent.futures import ThreadPoolExecutor

    images = {"dot": dot.source.encode()}
    try:
        with ThreadPoolExecutor(max_workers=max(len(formats), 1)) as pool:
            piped = [pool.submit(_pipe, dot, fmt) for fmt in formats]
            for fmt, image in zip(formats, piped):  # in the formats' order: the first format's error, as before
                images[fmt] = image.result()
    except graphviz.ExecutableNotFound:
        return images, "Graphviz 'dot' is not installed (apt-get install graphviz): wrote plan.dot only"
    return images, None


def _pipe(dot: graphviz.Digraph, fmt: str) -> bytes:
    """``fmt`` as dot draws it; png through gd's writer, or cairo's where a Graphviz has no gd plugin."""
    image: bytes
    if fmt != PNG[0]:
        image = dot.pipe(format=fmt)
        return image
    try:
        image = dot.pipe(format=PNG[0], renderer=PNG[1], formatter=PNG[2], quiet=True)
    except graphviz.CalledProcessError:
        image = dot.pipe(format=fmt)
    return image
