"""What the two forms of the fleet decomposition share: server classes, the WAN term of a subtask, the stages' costs,
and the built model the stages run on (row collection: :class:`placement.solver.highs_model.Rows`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from placement.costmodel.model import PlacementProblem, SubtaskKey
from placement.solver.highs_model import SparseMip
from placement.solver.server_pools import Pool

EPS = 1e-6


def pool_name(pool: Pool) -> str:
    """A pool's name in plans: the server itself when it is alone."""
    return pool.members[0].name if len(pool.members) == 1 else pool.name


class PoolsOf:
    """The pools (indexes) a subtask's allowed servers fall in, worked out once per tuple of servers: most subtasks
    share one (every server), and a fleet has 100 000 subtasks and hundreds of servers."""

    def __init__(self, pools: list[Pool]):
        self.of_server = {h.name: k for k, p in enumerate(pools) for h in p.members}
        self.cache: dict[int, tuple[tuple[str, ...], list[int]]] = {}

    def __call__(self, servers: tuple[str, ...]) -> list[int]:
        hit = self.cache.get(id(servers))
        if hit is None or hit[0] is not servers:
            hit = self.cache[id(servers)] = (servers, sorted({self.of_server[h] for h in servers}))
        return hit[1]


def net_mbit(problem: PlacementProblem) -> dict[SubtaskKey, float]:
    """Per subtask: what it sends over its output edges minus what it receives over its input edges plus its
    checkpoint upload — its term in its edge host's uplink ``W_h`` (:mod:`placement.solver.objectives`)."""
    net = {s.key: s.checkpoint_mbit for s in problem.subtasks}
    for ch in problem.channels:
        for i in range(ch.n_up):
            net[(ch.source, i)] += ch.sent_mbit(i)
        for j in range(ch.n_down):
            net[(ch.target, j)] -= ch.received_mbit(j)
    return net


@dataclass
class Built:
    """A model ready for the stages: its MIP, each stage's (name, costs, constant), and how to read a plan back."""

    mip: SparseMip
    costs: list[tuple[str, np.ndarray, float]]
    decode: Callable[[np.ndarray], dict[SubtaskKey, str]]  # values -> {subtask: edge host or pool name}
    form: str  # "columns" | "compact"
    detail: str = ""


def staged(
    problem: PlacementProblem, mode: str, wan: tuple[np.ndarray, float], cpu: tuple[np.ndarray, float], latc: np.ndarray
) -> list[tuple[str, np.ndarray, float]]:
    if mode == "weighted":
        w = problem.policy.weights
        return [
            (
                "weighted",
                w.wan * wan[0] + w.server_cpu * cpu[0] + w.latency * latc,
                w.wan * wan[1] + w.server_cpu * cpu[1],
            )
        ]
    return [("wan", wan[0], wan[1]), ("server_cpu", cpu[0], cpu[1]), ("latency", latc, 0.0)]
