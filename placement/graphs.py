"""A job graph's shape with the standard library only (:mod:`graphlib`): topological order, sources and sinks,
reachability and source→sink paths.

Every ``placement plan`` needs these and nothing more of a graph library; importing networkx for them cost a plan
more start-up time than its solve. networkx stays where a real graph algorithm is needed (the rescale planner's
connected components), imported inside the function that uses it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator
from graphlib import TopologicalSorter
from typing import Generic, TypeVar

Node = TypeVar("Node", bound=Hashable)


class DiGraph(Generic[Node]):
    """Nodes in the order given, edges deduplicated (as a networkx ``DiGraph`` keeps them), both directions indexed."""

    def __init__(self, nodes: Iterable[Node], edges: Iterable[tuple[Node, Node]]) -> None:
        self.successors: dict[Node, dict[Node, None]] = {n: {} for n in nodes}
        self.predecessors: dict[Node, dict[Node, None]] = {n: {} for n in self.successors}
        for up, down in edges:
            self.successors.setdefault(up, {})[down] = None
            self.successors.setdefault(down, {})
            self.predecessors.setdefault(down, {})[up] = None
            self.predecessors.setdefault(up, {})

    @property
    def nodes(self) -> list[Node]:
        return list(self.successors)

    @property
    def edges(self) -> list[tuple[Node, Node]]:
        return [(up, down) for up, downs in self.successors.items() for down in downs]

    def in_degree(self, node: Node) -> int:
        return len(self.predecessors[node])

    def out_degree(self, node: Node) -> int:
        return len(self.successors[node])

    def topological_order(self, key: Callable[[Node], int]) -> list[Node]:
        """Every node after its predecessors; of the nodes ready at once, the smallest ``key`` first (so the order
        is deterministic, as networkx's ``lexicographical_topological_sort``). Raises ``graphlib.CycleError``."""
        sorter = TopologicalSorter({n: tuple(ups) for n, ups in self.predecessors.items()})
        sorter.prepare()
        ready = [(key(n), n) for n in sorter.get_ready()]
        heapq.heapify(ready)
        order = []
        while ready:
            _, node = heapq.heappop(ready)
            order.append(node)
            sorter.done(node)
            for n in sorter.get_ready():
                heapq.heappush(ready, (key(n), n))
        return order

    def descendants(self, node: Node) -> set[Node]:
        """The nodes reachable from ``node``, never itself (as networkx's ``descendants``, also on a cycle)."""
        seen: set[Node] = set()
        todo = list(self.successors[node])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.successors[n])
        seen.discard(node)
        return seen

    def simple_paths(self, source: Node, target: Node) -> Iterator[list[Node]]:
        """Every path from ``source`` to ``target`` that visits no node twice; ``[source]`` when they are one node
        (as networkx's ``all_simple_paths``). Depth first, without recursion: a fleet's graph can be deep."""
        if source == target:
            yield [source]
            return
        path, on_path = [source], {source}
        branches = [iter(self.successors[source])]
        while branches:
            for nxt in branches[-1]:  # resumed where the deeper branch left it
                if nxt == target:
                    yield [*path, nxt]
                elif nxt not in on_path:
                    path.append(nxt)
                    on_path.add(nxt)
                    branches.append(iter(self.successors[nxt]))
                    break
            else:  # this node's successors all tried: back up
                branches.pop()
                on_path.discard(path.pop())
