"""The ILP's variables: ``x[s, h] ∈ {0, 1}`` — subtask ``s`` runs on host ``h`` — for ``h`` in ``s``'s domain only."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property

import pulp

from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.solver import families
from placement.solver.domains import Domain


@dataclass
class IlpModel:
    problem: PlacementProblem
    domain: Domain
    lp: pulp.LpProblem
    x: dict[tuple[SubtaskKey, str], pulp.LpVariable]
    elastic: bool = False  # capacity rows get a slack variable (infeasibility diagnosis)
    slack: dict[tuple[str, ...], pulp.LpVariable] = field(default_factory=dict)
    slack_scale: dict[tuple[str, ...], float] = field(default_factory=dict)  # the capacity each slack is relative to
    # built once per model and asked again: delay and crossing variables, queue waits, latency expressions (0.0: none)
    aux: dict[tuple[object, ...], pulp.LpVariable | pulp.LpAffineExpression | float] = field(default_factory=dict)

    def var(self, key: SubtaskKey, host: str) -> pulp.LpVariable | None:
        return self.x.get((key, host))

    def on_host(self, host: str) -> list[tuple[Subtask, pulp.LpVariable]]:
        """(subtask, variable) pairs that may run on ``host``."""
        return self._index[0].get(host, [])

    def placed(self, vertex_id: str, host: str) -> list[tuple[int, pulp.LpVariable]]:
        """(subtask index, variable) of the subtasks of ``vertex_id`` that may run on ``host``, by index."""
        return self._index[1].get((vertex_id, host), [])

    @cached_property
    def _index(
        self,
    ) -> tuple[
        dict[str, list[tuple[Subtask, pulp.LpVariable]]], dict[tuple[str, str], list[tuple[int, pulp.LpVariable]]]
    ]:
        """The variables by host and by (vertex, host), built once: the row families ask per host, and scanning every
        subtask for each of 200 hosts was most of the model's build time."""
        by_host: dict[str, list[tuple[Subtask, pulp.LpVariable]]] = defaultdict(list)
        by_vertex: dict[tuple[str, str], list[tuple[int, pulp.LpVariable]]] = defaultdict(list)
        for s in self.problem.subtasks:
            for h in self.domain[s.key]:
                var = self.x.get((s.key, h))
                if var is not None:
                    by_host[h].append((s, var))
                    by_vertex[(s.vertex_id, h)].append((s.index, var))
        return by_host, by_vertex

    @cached_property
    def sink(self) -> families.PulpSink:
        """Where :mod:`placement.solver.families` puts this model's rows."""
        return families.PulpSink(self.lp, self.add_slack, self.elastic, eps=0.0)

    def add_slack(self, name: tuple[str, ...], capacity: float) -> pulp.LpAffineExpression | float:
        """A non-negative slack for a capacity row when elastic, else 0."""
        if not self.elastic:
            return 0.0
        var = self.lp.add_variable("slack_" + "_".join(name).replace(" ", "_"), lowBound=0)
        self.slack[name] = var
        self.slack_scale[name] = max(capacity, 1e-9)
        return var


def new_model(problem: PlacementProblem, domain: Domain, *, elastic: bool = False) -> IlpModel:
    lp = pulp.LpProblem("placement", pulp.LpMinimize)
    x = {}
    for n, s in enumerate(problem.subtasks):
        for h in domain[s.key]:
            x[(s.key, h)] = lp.add_variable(f"x_{n}_{h}", lowBound=0, upBound=1, cat=pulp.LpBinary)
    return IlpModel(problem=problem, domain=domain, lp=lp, x=x, elastic=elastic)
