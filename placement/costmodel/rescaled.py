"""Parallelism as a choice: which parallelisms each vertex may take, and the placement problem at a chosen one (pure).

The rules (Flink's, then the planner's):

* **Bounds.** ``1 ≤ p ≤ max parallelism`` — Flink refuses more (for keyed operators it is the number of key groups,
  frozen in their savepoints). The profile's ``max_parallelism`` when the collector saw it, else Flink's default for
  the profiled parallelism (``min(max(2^⌈log2(1.5·p)⌉, 128), 32768)``). The inventory's ``parallelism:
  {vertex: {min, max}}`` narrows it further. A chain of operators is one vertex, so it has one parallelism already.
* **FORWARD needs equal parallelism.** Vertices joined by FORWARD edges form a *forward group* with one parallelism.
  (Measured on Flink 2.3 with ``pipeline.jobvertex-parallelism-overrides``: a FORWARD edge from 2 to 3 subtasks left
  one downstream subtask without a single record — see tests/solver_rescale.)
* **Sources keep their parallelism**: each source subtask reads what is born on its host (``pins.sources`` lists one
  host per subtask), so more or fewer of them would not change where data is born. Their forward groups keep it too.
* A vertex with a **GLOBAL** input keeps its parallelism (everything goes to subtask 0; more instances never help), and
  so does a forward group in which a vertex has **two FORWARD inputs** (a union of equal-parallelism streams: its
  instances pair up subtask by subtask with two upstream vertices at once) or a **RESCALE** input (Flink wires it
  pointwise in blocks that depend on both parallelisms: which instance feeds which would change with each choice).

Vertices that keep their parallelism are *per-subtask* vertices: their subtasks keep the profile's own figures, scaled
to the target. Every other vertex is *rescalable*: at parallelism ``p`` its instances are interchangeable, each
receiving ``A_v/p + B_v`` records/s (:mod:`.rates`) and emitting ``1/p`` of the vertex's output; the edges into it
spread evenly (a key skew measured per profiled subtask does not carry over to another parallelism).

:meth:`RescaleSpace.problem_at` builds the ordinary :class:`~placement.costmodel.model.PlacementProblem` for a chosen
parallelism, so a rescaled plan is checked by the same :func:`~placement.costmodel.evaluate.evaluate` as any other
(every instance keeps up with its share of the input on its host: evaluate always checks it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from placement.costmodel import traffic
from placement.costmodel.demand import MIB
from placement.costmodel.model import (
    Channel,
    HostSpec,
    PlacementProblem,
    PlanOptions,
    Subtask,
    build_problem,
)
from placement.costmodel.rates import VertexRates, propagate, source_targets
from placement.errors import BadInput
from placement.inventory import Inventory
from placement.profile.format import JobProfile, ShipStrategy, copies

if TYPE_CHECKING:
    import networkx as nx

FLINK_MAX_PARALLELISM = 32768


def flink_default_max_parallelism(parallelism: int) -> int:
    """Flink's ``KeyGroupRangeAssignment.computeDefaultMaxParallelism``: ``1.5·p`` rounded up to a power of two,
    between 128 and 32768."""
    wanted = parallelism + parallelism // 2
    power = 1 << max(0, (wanted - 1).bit_length())
    return min(max(power, 128), FLINK_MAX_PARALLELISM)


def pointwise(strategy: ShipStrategy) -> bool:
    """Edges Flink wires pointwise (FORWARD, RESCALE): which subtasks pair up depends on both parallelisms."""
    return strategy in traffic.POINTWISE


def sent_by(ch: Channel, i: int) -> float:
    """Mbit/s ``u_i`` puts on the wire over ``ch`` — :meth:`Channel.sent_mbit`, without building every pair of the
    channel when all of ``u_i``'s receivers get the same share (HASH without measured shares, REBALANCE, BROADCAST)."""
    receivers = ch.receivers(i)
    if len(receivers) > 1 and ch.shares is None and ch.strategy in traffic.ALL_TO_ALL:
        return len(receivers) * ch.flow_mbit(i, receivers[0])
    return sum(ch.flow_mbit(i, j) for j in receivers)


def received_by(ch: Channel, j: int) -> float:
    """Mbit/s ``v_j`` receives over ``ch`` on the wire — :meth:`Channel.received_mbit`, without building every pair
    when its senders emit alike (the instances of a rescalable vertex) on an all-to-all edge."""
    senders = ch.senders(j)
    if len(senders) > 1 and ch.strategy in traffic.ALL_TO_ALL and len(set(ch.up_out_mbit)) == 1:
        return len(senders) * ch.flow_mbit(senders[0], j)
    return sum(ch.flow_mbit(i, j) for i in senders)


@dataclass(frozen=True)
class Group:
    """A forward group: vertices that share one parallelism."""

    id: str  # its first vertex in topological order
    members: tuple[str, ...]  # vertex ids, topological
    choices: tuple[int, ...]  # allowed parallelisms, ascending (per-subtask groups: unused, see parallelism_of)
    per_subtask: bool  # keeps the profiled parallelism; subtasks keep their own figures
    reason: str | None = None  # why it keeps its parallelism


@dataclass(frozen=True)
class RescaleSpace:
    """Everything ``placement plan --rescale`` may choose, and the figures to judge a choice by."""

    profile: JobProfile
    inventory: Inventory
    rates: Mapping[str, VertexRates]  # vertex id -> target figures
    groups: tuple[Group, ...]
    targets: Mapping[str, float]  # source vertex id -> target records/s
    rate_scale: float
    inventory_source: str = "inventory"
    placement_mode: str = "custom"  # vanilla: whole operators per host after the source chains (model.PlanOptions)
    hosts: tuple[HostSpec, ...] | None = None  # None: the inventory's (a pooled copy while solving)
    warnings: tuple[str, ...] = field(default=())

    # ---- lookups -------------------------------------------------------------------------------------------------

    @cached_property
    def base(self) -> PlacementProblem:
        """The problem at the profiled parallelism and measured rates: hosts, resolved pins, path weights."""
        return self._at_factor(1.0)

    def _at_factor(self, factor: float) -> PlacementProblem:
        cache: dict[float, PlacementProblem] = self.__dict__.setdefault("_factor_cache", {})
        if factor not in cache:
            problem = build_problem(
                self.inventory,
                self.profile,
                PlanOptions(rate_scale=factor, placement_mode=self.placement_mode),
                inventory_source=self.inventory_source,
            )
            if self.hosts is not None:
                problem = replace(problem, hosts=self.hosts)
            cache[factor] = problem
        return cache[factor]

    @cached_property
    def group_of(self) -> dict[str, Group]:
        return {vid: g for g in self.groups for vid in g.members}

    @property
    def vertex_order(self) -> tuple[str, ...]:
        return self.base.vertex_order

    def profiled(self, vertex_id: str) -> int:
        return self.profile.vertex(vertex_id).parallelism

    def profiled_parallelism(self) -> dict[str, int]:
        return dict(self._profiled)

    @cached_property
    def _profiled(self) -> dict[str, int]:
        return {v.id: v.parallelism for v in self.profile.vertices}

    @property
    def rescalable(self) -> list[Group]:
        return [g for g in self.groups if not g.per_subtask]

    # ---- variants ------------------------------------------------------------------------------------------------

    def with_hosts(self, hosts: Sequence[HostSpec]) -> RescaleSpace:
        return replace(self, hosts=tuple(hosts))

    def restricted(self, choices: Mapping[str, Sequence[int]]) -> RescaleSpace:
        """The same space with group id -> allowed parallelisms replaced (the baselines fix them); a per-subtask
        group can only keep its parallelism."""
        groups = []
        for g in self.groups:
            if g.per_subtask:
                if g.id in choices:
                    raise ValueError(f"group {g.id} keeps its parallelism ({g.reason})")
                groups.append(g)
            else:
                groups.append(replace(g, choices=tuple(sorted(set(choices.get(g.id, g.choices))))))
        return replace(self, groups=tuple(groups))

    # ---- checks --------------------------------------------------------------------------------------------------

    def violations(self, parallelism: Mapping[str, int]) -> list[str]:
        """Which parallelism rules ``parallelism`` (vertex id -> p) breaks."""
        out = []
        name = self.profile.vertex
        for g in self.groups:
            if g.per_subtask:
                out += [
                    f"{name(vid).name!r} keeps its parallelism {self.profiled(vid)} ({g.reason}), got "
                    f"{parallelism.get(vid)}"
                    for vid in g.members
                    if parallelism.get(vid) != self.profiled(vid)
                ]
                continue
            values = {parallelism.get(vid) for vid in g.members}
            if len(values) > 1:
                out.append(
                    f"FORWARD-connected vertices {', '.join(repr(name(v).name) for v in g.members)} need one "
                    f"parallelism, got {sorted(values, key=str)}"
                )
            out += [
                f"{name(vid).name!r} at parallelism {parallelism.get(vid)}: allowed {_ranges(g.choices)}"
                for vid in g.members
                if parallelism.get(vid) not in g.choices
            ]
        return out

    def parallelism_of(self, group: Group, p: int | None = None) -> dict[str, int]:
        """vertex id -> parallelism of ``group``'s members at ``p`` (per-subtask groups: their own)."""
        if group.per_subtask:
            return {vid: self.profiled(vid) for vid in group.members}
        return {vid: p if p is not None else group.choices[0] for vid in group.members}

    # ---- the placement problem at a parallelism --------------------------------------------------------------------

    def problem_at(self, parallelism: Mapping[str, int]) -> PlacementProblem:
        """The placement problem at ``parallelism`` (vertex id -> p) and the target rates."""
        base = self.base
        channels = tuple(self.channel_at(ch, parallelism[ch.source], parallelism[ch.target]) for ch in base.channels)
        subtasks: list[Subtask] = []
        for vid in base.vertex_order:
            if self.group_of[vid].per_subtask:
                subtasks.extend(self._at_factor(self.rates[vid].factor).by_vertex[vid])
            else:
                subtasks.extend(self._instances(vid, parallelism[vid], parallelism))
        return replace(
            base,
            subtasks=tuple(subtasks),
            channels=channels,
            rate_scale=self.rate_scale,
            warnings=tuple(base.warnings) + tuple(self.warnings),
        )

    def channel_at(self, ch: Channel, n_up: int, n_down: int) -> Channel:
        """Job edge ``ch`` between ``n_up`` and ``n_down`` subtasks at the target rates. A rescalable upstream vertex
        spreads what it puts on the edge evenly over its instances; a rescalable downstream vertex gets even shares
        (key skew is measured per subtask of the profiled parallelism, not per key group, so it does not carry over)."""
        scaled = _channel(self._at_factor(self.rates[ch.source].factor), ch.source, ch.target)
        per_subtask = self.group_of[ch.source].per_subtask
        out = scaled.up_out_mbit if per_subtask else (sum(scaled.up_out_mbit) / n_up,) * n_up
        shares = scaled.receiver_shares if self.group_of[ch.target].per_subtask else None
        ratio = scaled.delivery_ratio  # flush cycles measured per profiled subtask: rescaled instances get their mean
        if ratio is not None and not self.group_of[ch.target].per_subtask:
            ratio = (sum(ratio) / len(ratio),) * n_down
        return replace(scaled, n_up=n_up, n_down=n_down, up_out_mbit=out, receiver_shares=shares, delivery_ratio=ratio)

    def instance(self, vertex_id: str, p: int) -> Subtask:
        """The first of ``p`` instances of a rescalable vertex (all have the same figures; ``out_mbit`` at the
        profiled parallelism of its downstream vertices)."""
        return self._instances(vertex_id, p, self._profiled, count=1)[0]

    def _instances(self, vid: str, p: int, parallelism: Mapping[str, int], count: int | None = None) -> list[Subtask]:
        """``p`` interchangeable instances of a rescalable vertex."""
        rates = self.rates[vid]
        scaled = self._at_factor(rates.factor)
        template = scaled.by_vertex[vid][0]
        v = self.profile.vertex(vid)
        emitted = sum(
            sum(ch.up_out_mbit) / p * copies(ch.strategy, parallelism[ch.target]) for ch in _outputs(scaled, vid)
        )
        memory = self.inventory.policy.memory_per_subtask + v.state_bytes / p / MIB  # demand.memory_mib at p
        checkpoint = template.checkpoint_mbit * v.parallelism / p  # demand.checkpoint_mbit: state / parallelism
        return [
            replace(
                template,
                index=i,
                parallelism=p,
                records_in_per_s=rates.instance_in(p),
                records_out_per_s=rates.instance_out(p),
                out_mbit=emitted,
                server_cores=rates.instance_cores(p),
                cpu_estimated=rates.estimated,
                memory_mib=memory,
                checkpoint_mbit=checkpoint,
            )
            for i in range(p if count is None else count)
        ]


def _channel(problem: PlacementProblem, source: str, target: str) -> Channel:
    return next(ch for ch in _outputs(problem, source) if ch.target == target)


def _outputs(problem: PlacementProblem, source: str) -> list[Channel]:
    """The channels out of ``source`` (indexed once per problem: the solver asks for them per vertex and choice)."""
    index: dict[str, list[Channel]] | None = problem.__dict__.get("_outputs_by_source")
    if index is None:
        index = {}
        for ch in problem.channels:
            index.setdefault(ch.source, []).append(ch)
        problem.__dict__["_outputs_by_source"] = index
    return index.get(source, [])


def _ranges(values: Sequence[int]) -> str:
    if not values:
        return "none"
    if list(values) == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}" if len(values) == 1 else f"{values[0]}..{values[-1]}"
    return ", ".join(map(str, values))


# ---- building the space ----------------------------------------------------------------------------------------


def _forward_groups(profile: JobProfile) -> list[list[str]]:
    import networkx as nx  # here, not at the top: a plan without --rescale does not pay its import

    g: nx.Graph[str] = nx.Graph()
    g.add_nodes_from(v.id for v in profile.vertices)
    g.add_edges_from((e.source, e.target) for e in profile.edges if pointwise(e.ship_strategy))
    order = {v.id: n for n, v in enumerate(profile.topological_vertices())}
    return sorted((sorted(c, key=order.__getitem__) for c in nx.connected_components(g)), key=lambda c: order[c[0]])


def _keeps_parallelism(profile: JobProfile, members: list[str]) -> str | None:
    """Why a forward group keeps its profiled parallelism (None: it may be rescaled) — short, for tables."""
    names = {v.id: v.name for v in profile.vertices}
    inputs: dict[str, list[ShipStrategy]] = {vid: [] for vid in members}
    for e in profile.edges:
        if e.target in inputs:
            inputs[e.target].append(e.ship_strategy)
    for vid in members:
        if not inputs[vid]:
            return (
                "a source (reads where its data is born)"
                if len(members) == 1
                else f"FORWARD from source {names[vid]!r}"
            )
    for vid in members:
        if ShipStrategy.RESCALE in inputs[vid]:
            return f"RESCALE into {names[vid]!r} (wired by both parallelisms)"
        if ShipStrategy.GLOBAL in inputs[vid]:
            return f"GLOBAL into {names[vid]!r} (all goes to subtask 0)"
        if sum(pointwise(s) for s in inputs[vid]) > 1:
            return f"{names[vid]!r} unions two FORWARD inputs"
    return None


def _user_bounds(
    inv: Inventory, profile: JobProfile, source: str, warnings: list[str]
) -> dict[str, tuple[int, int, str]]:
    """vertex id -> (min, max, inventory field) from the inventory's ``parallelism`` section."""
    out: dict[str, tuple[int, int, str]] = {}
    unmatched = []
    for key, bounds in inv.parallelism.items():
        match = [v for v in profile.vertices if key in (v.name, v.id)]
        if not match:
            unmatched.append(f"parallelism.{key}")
            continue
        out[match[0].id] = (bounds.min or 1, bounds.max or FLINK_MAX_PARALLELISM, f"parallelism.{key}")
    if unmatched:
        warnings.append(
            f"{len(unmatched)} parallelism bounds name no vertex of job {profile.job.name!r} and are "
            f"ignored: {', '.join(unmatched)}"
        )
    return out


def build_space(
    inv: Inventory,
    profile: JobProfile,
    *,
    rate_scale: float = 1.0,
    target_rates: Mapping[str, float] | None = None,
    inventory_source: str = "inventory",
    option: str = "--target-rate",
    placement_mode: str = "custom",
) -> RescaleSpace:
    """The rescale space of ``profile`` on ``inv`` at the target (``--rate-scale`` / ``--target-rate``)."""
    warnings: list[str] = []
    targets = source_targets(profile, rate_scale=rate_scale, target_rates=target_rates, option=option)
    rates = propagate(profile, targets)
    bounds = _user_bounds(inv, profile, inventory_source, warnings)
    max_par = {v.id: v.max_parallelism or flink_default_max_parallelism(v.parallelism) for v in profile.vertices}
    groups = []
    for members in _forward_groups(profile):
        reason = _keeps_parallelism(profile, members)
        low, high = 1, FLINK_MAX_PARALLELISM
        for vid in members:
            v_low, v_high, _ = bounds.get(vid, (1, FLINK_MAX_PARALLELISM, ""))
            low, high = max(low, v_low), min(high, v_high, max_par[vid])
        bounded = [vid for vid in members if vid in bounds]
        if reason is not None:
            for vid in bounded:  # each member keeps its own (RESCALE-connected ones may differ)
                v, (v_low, v_high, where) = profile.vertex(vid), bounds[vid]
                if not v_low <= v.parallelism <= v_high:
                    raise BadInput(
                        f"{v.name!r} keeps its parallelism {v.parallelism} ({reason}); the bounds exclude it",
                        source=inventory_source,
                        field=where,
                    )
            choices: tuple[int, ...] = (profile.vertex(members[0]).parallelism,)
        else:
            if low > high:
                v = profile.vertex(bounded[0]) if bounded else profile.vertex(members[0])
                others = [profile.vertex(m).name for m in members if m != v.id]
                detail = f" with its FORWARD-connected {', '.join(map(repr, others))}" if others else ""
                raise BadInput(
                    f"no parallelism of {v.name!r} fits: {low}..{high} after its max parallelism "
                    f"{max_par[v.id]}{detail}",
                    source=inventory_source,
                    field=bounds[v.id][2] if v.id in bounds else "parallelism",
                )
            choices = tuple(range(low, high + 1))
        groups.append(
            Group(id=members[0], members=tuple(members), choices=choices, per_subtask=reason is not None, reason=reason)
        )
    return RescaleSpace(
        profile=profile,
        inventory=inv,
        rates=rates,
        groups=tuple(groups),
        targets=targets,
        rate_scale=rate_scale,
        inventory_source=inventory_source,
        placement_mode=placement_mode,
        warnings=tuple(warnings),
    )
