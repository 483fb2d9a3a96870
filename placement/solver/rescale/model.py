"""Variables of the joint rescale-and-place ILP.

* ``y[g, p] ∈ {0, 1}`` — forward group ``g`` runs at parallelism ``p`` (a constant 1 when only one ``p`` is left).
* ``z[v, p, h] ∈ ℤ≥0`` — how many instances of rescalable vertex ``v`` run on host ``h`` when its group runs at ``p``;
  ``0 ≤ z ≤ p``, and ``z[v, p, h] = 0`` for every ``p`` but the chosen one. Instances of a rescalable vertex are
  interchangeable (each receives the same share, :mod:`placement.costmodel.rates`), so counts say all there is to say
  about an assignment — except which instances of FORWARD-connected vertices pair up, which :mod:`.realize` settles.
* ``x[s, h] ∈ {0, 1}`` — subtask ``s`` of a per-subtask vertex (one that keeps its parallelism) runs on ``h``, as in
  the plain placement ILP.

Where ``v`` has one host at ``p`` (a vertex that may only run on the server pool, the common case at scale),
``z[v, p, h] = p·y[g, p]`` is substituted rather than created: it saves a column per choice, and PuLP hands HiGHS
its columns one by one, per stage. Where it has several, the count on one server is left continuous: the equality
``Σ_h z[v, p, h] = p·y[g, p]`` makes it an integer whenever the others are.

Derived expressions: ``n[v, h] = Σ_p z[v, p, h]`` (instances on ``h``) and ``frac[v, h] = Σ_p z[v, p, h] / p``
(the share of ``v``'s instances — and input — on ``h``; for a per-subtask vertex ``Σ_i x[v_i, h] / n_v``). Both are
linear because the ``1/p`` is a coefficient, not a variable: that is what the disaggregation by ``p`` buys.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeAlias, TypeVar, cast

import pulp

from placement.costmodel.model import HostSpec, PlacementProblem, Subtask, SubtaskKey
from placement.costmodel.rescaled import Group, RescaleSpace
from placement.solver import families

Number = float | int
Term: TypeAlias = "pulp.LpVariable | Number"  # a variable, or the constant it is fixed at
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def or_zero(var: pulp.LpVariable | None) -> Term:
    """The variable, or 0 where it was never created (``var or 0`` would not do: PuLP variables are falsy)."""
    return 0 if var is None else var


@dataclass
class RescaleModel:
    space: RescaleSpace
    ref: PlacementProblem  # the problem at some parallelism: hosts, channels, per-subtask vertices' subtasks
    choices: dict[str, tuple[int, ...]]  # group id -> parallelisms left after the domain families
    domain_x: dict[SubtaskKey, list[str]]  # per-subtask vertices
    domain_z: dict[tuple[str, int], list[str]]  # (rescalable vertex, p) -> hosts
    lp: pulp.LpProblem = field(default_factory=lambda: pulp.LpProblem("rescale", pulp.LpMinimize))
    x: dict[tuple[SubtaskKey, str], pulp.LpVariable] = field(default_factory=dict)
    y: dict[tuple[str, int], pulp.LpVariable] = field(default_factory=dict)
    z: dict[tuple[str, int, str], tuple[pulp.LpVariable, int]] = field(default_factory=dict)  # (variable, multiple)
    elastic: bool = False
    slack: dict[tuple[str, ...], pulp.LpVariable] = field(default_factory=dict)
    slack_scale: dict[tuple[str, ...], float] = field(default_factory=dict)
    # built once and asked again: products, delays, crossings, the WAN and latency expressions (0 or None: there is
    # none), and under a one-word key each cache of figures the rows ask for (:meth:`cache`) — in one dict, as its
    # size names a job's own product variables (objectives.wan_mbit)
    aux: families.Memo = field(default_factory=dict)

    # ---- structure -----------------------------------------------------------------------------------------------

    @cached_property
    def rescalable(self) -> dict[str, Group]:
        """vertex id -> its group, for vertices whose parallelism is chosen."""
        return {vid: g for g in self.space.groups if not g.per_subtask for vid in g.members}

    def is_rescalable(self, vid: str) -> bool:
        return vid in self.rescalable

    def parallelisms(self, vid: str) -> tuple[int, ...]:
        """The parallelisms ``vid`` may still take (a per-subtask vertex: its own)."""
        if self.is_rescalable(vid):
            return self.choices[self.space.group_of[vid].id]
        return (self.space.profiled(vid),)

    def instance(self, vid: str, p: int) -> Subtask:
        """Figures of one instance of rescalable ``vid`` at ``p`` (cached: the rows ask many times)."""
        cache: dict[tuple[str, int], Subtask] = self.cache("instance")
        if (vid, p) not in cache:
            cache[(vid, p)] = self.space.instance(vid, p)
        return cache[(vid, p)]

    def cache(self, name: str) -> dict[K, V]:
        """The cache ``name`` in :attr:`aux` (empty the first time); what it maps is its one caller's to say."""
        return cast("dict[K, V]", self.aux.setdefault((name,), {}))  # aux holds every kind; this key, its caller's dict

    def host(self, name: str) -> HostSpec:
        return self.ref.host_by_name[name]

    def subtasks(self, vid: str) -> list[Subtask]:
        """Subtasks of a per-subtask vertex."""
        return self.ref.by_vertex[vid]

    # ---- variables -----------------------------------------------------------------------------------------------

    def y_of(self, vid: str, p: int) -> Term:
        """``y[g, p]`` of ``vid``'s group: a variable, or 1 when ``p`` is the group's only choice."""
        gid = self.space.group_of[vid].id
        return self.y.get((gid, p), 1 if self.parallelisms(vid) == (p,) else 0)

    def x_of(self, key: SubtaskKey, host: str) -> pulp.LpVariable | None:
        return self.x.get((key, host))

    def z_of(self, vid: str, p: int, host: str) -> pulp.LpVariable | pulp.LpAffineExpression | None:
        """``z[v, p, h]`` as a term of a row (None where it does not exist)."""
        pair = self.z.get((vid, p, host))
        if pair is None:
            return None
        var, multiple = pair
        return var if multiple == 1 else multiple * var

    def z_items(self) -> Iterator[tuple[tuple[str, int, str], pulp.LpVariable, int]]:
        """``((v, p, h), variable, multiple)`` for every ``z``: ``z = multiple·variable``."""
        for key, (var, multiple) in self.z.items():
            yield key, var, multiple

    def hosts_of(self, vid: str) -> set[str]:
        """Hosts where some instance of ``vid`` may run."""
        cache: dict[str, set[str]] = self.cache("hosts_of")
        if vid not in cache:
            if self.is_rescalable(vid):
                hosts = {h for p in self.parallelisms(vid) for h in self.domain_z.get((vid, p), ())}
            else:
                hosts = {h for s in self.subtasks(vid) for h in self.domain_x[s.key]}
            cache[vid] = hosts
        return cache[vid]

    # ---- derived expressions -------------------------------------------------------------------------------------

    def count(self, vid: str, host: str) -> pulp.LpAffineExpression:
        """``n[v, h]``: instances of ``vid`` on ``host``."""
        if self.is_rescalable(vid):
            return pulp.lpSum(v for p in self.parallelisms(vid) if (v := self.z_of(vid, p, host)) is not None)
        return pulp.lpSum(v for s in self.subtasks(vid) if (v := self.x_of(s.key, host)) is not None)

    def fraction(self, vid: str, host: str) -> pulp.LpAffineExpression:
        """``frac[v, h]``: the share of ``vid``'s instances on ``host`` (1 exactly when all of them are there)."""
        if self.is_rescalable(vid):
            return pulp.lpSum(
                v * (1.0 / p) for p in self.parallelisms(vid) if (v := self.z_of(vid, p, host)) is not None
            )
        subtasks = self.subtasks(vid)
        return pulp.lpSum(v * (1.0 / len(subtasks)) for s in subtasks if (v := self.x_of(s.key, host)) is not None)

    def most(self, vid: str, host: str) -> int:
        """The most instances of ``vid`` its variables allow on ``host``."""
        if self.is_rescalable(vid):
            return max((p for p in self.parallelisms(vid) if self.z_of(vid, p, host) is not None), default=0)
        return sum(1 for s in self.subtasks(vid) if self.x_of(s.key, host) is not None)

    def slot_cap(self, host: str) -> float:
        """Instances of one vertex ``host`` can hold: its slots (one per slot, also without slot sharing) — unless
        elastic, where the slot rows may stretch."""
        return float("inf") if self.elastic else self.host(host).slots

    def max_count(self, vid: str, host: str) -> int:
        """The most instances of ``vid`` that fit on ``host``: a big-M as small as it may be."""
        return int(min(self.most(vid, host), self.slot_cap(host)))

    def occupied(self, vid: str, host: str) -> pulp.LpVariable:
        """Binary ``any[v, h]``, 1 when some instance of rescalable ``vid`` runs on ``host``: ``n[v, h] ≤ N·any``."""
        key = ("any", vid, host)
        if key not in self.aux:
            var = self.lp.add_variable(f"any_{self._tag(vid)}_{host}", cat=pulp.LpBinary)
            self.lp += self.count(vid, host) <= self.max_count(vid, host) * var, f"any_{self._tag(vid)}_{host}"
            self.aux[key] = var
        return self.aux[key]

    def whole(self, vid: str, host: str) -> pulp.LpVariable | Number:
        """Binary ``all[v, h]``, at most 1 when every instance of ``vid`` runs on ``host`` (``all ≤ frac``), 0 when
        none may; for a per-subtask vertex a continuous ``b ≤ x[v_j, h]`` for every j is exact already."""
        key = ("all", vid, host)
        if key not in self.aux:
            if self.is_rescalable(vid):
                if self.max_count(vid, host) == 0:
                    self.aux[key] = 0
                else:
                    var = self.lp.add_variable(f"all_{self._tag(vid)}_{host}", cat=pulp.LpBinary)
                    self.lp += var <= self.fraction(vid, host), f"all_{self._tag(vid)}_{host}"
                    self.aux[key] = var
            else:
                xs = [self.x_of(s.key, host) for s in self.subtasks(vid)]
                if any(v is None for v in xs):
                    self.aux[key] = 0
                else:
                    var = self.lp.add_variable(f"all_{self._tag(vid)}_{host}", lowBound=0, upBound=1)
                    for j, v in enumerate(xs):
                        self.lp += var <= v, f"all_{self._tag(vid)}_{host}_{j}"
                    self.aux[key] = var
        return self.aux[key]

    def _tag(self, vid: str) -> str:
        tags: dict[str, str] = self.cache("tags")
        return tags.setdefault(vid, f"v{len(tags)}")

    @cached_property
    def sink(self) -> families.PulpSink:
        """Where :mod:`placement.solver.families` puts this model's rows."""
        return families.PulpSink(self.lp, self.add_slack, self.elastic, eps=1e-9)

    def add_slack(self, name: tuple[str, ...], capacity: float) -> pulp.LpVariable | float:
        """A non-negative slack for a capacity row when elastic, else 0."""
        if not self.elastic:
            return 0.0
        var = self.lp.add_variable(f"slack_{len(self.slack)}", lowBound=0)
        self.slack[name] = var
        self.slack_scale[name] = max(capacity, 1e-9)
        return var


def new_model(
    space: RescaleSpace,
    ref: PlacementProblem,
    choices: dict[str, tuple[int, ...]],
    domain_x: dict[SubtaskKey, list[str]],
    domain_z: dict[tuple[str, int], list[str]],
    *,
    elastic: bool = False,
) -> RescaleModel:
    """The variables over the domains: ``x`` for per-subtask vertices, ``y`` for groups with a choice, ``z``."""
    m = RescaleModel(space=space, ref=ref, choices=choices, domain_x=domain_x, domain_z=domain_z, elastic=elastic)
    servers = {h.name for h in ref.servers}
    for n, s in enumerate(s for vid in ref.vertex_order if not m.is_rescalable(vid) for s in m.subtasks(vid)):
        for h in domain_x[s.key]:
            m.x[(s.key, h)] = m.lp.add_variable(f"x_{n}_{h}", cat=pulp.LpBinary)
    for g in space.groups:
        if g.per_subtask:
            continue
        ps = choices[g.id]
        if len(ps) > 1:
            for p in ps:
                m.y[(g.id, p)] = m.lp.add_variable(f"y_{m._tag(g.id)}_{p}", cat=pulp.LpBinary)
        for vid in g.members:
            for p in ps:
                hosts = domain_z.get((vid, p), ())
                if len(hosts) == 1 and (g.id, p) in m.y:
                    m.z[(vid, p, hosts[0])] = (m.y[(g.id, p)], p)  # all p instances on its one host
                    continue
                implied = next((h for h in hosts if h in servers), None)  # integer by the row that sums them
                for h in hosts:
                    m.z[(vid, p, h)] = (
                        m.lp.add_variable(
                            f"z_{m._tag(vid)}_{p}_{h}",
                            lowBound=0,
                            upBound=p,
                            cat=pulp.LpContinuous if h == implied else pulp.LpInteger,
                        ),
                        1,
                    )
    return m
