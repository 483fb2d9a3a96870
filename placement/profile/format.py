"""The profile format: what was measured of one Flink job, per vertex and per subtask.

A profile is the contract between ``placement profile`` (which computes it from collected metrics) and
``placement plan`` (which reads it). It is JSON, documented in ``examples/profiles/README.md``:

* ``format`` — ``"placement.profile/v1"``.
* ``job`` — name (and optionally id) of the Flink job.
* ``vertices`` — one per Flink job vertex (a chain of operators), in any order: ``id``, ``name`` (the task name Flink
  shows, e.g. ``"Source: Sensors"`` or ``"Parse -> Filter"``), ``parallelism``, ``stateful``, ``state_bytes``,
  ``bytes_per_record_out`` and ``subtasks``; each subtask carries its mean ``records_in_per_s``, ``records_out_per_s``,
  ``busy_ms_per_s``, ``idle_ms_per_s``, ``backpressured_ms_per_s`` and the ``host_speed`` of the host it was measured on
  (1.0 = a server core). ``busy_ms_per_s`` may be ``null`` (NaN in Flink) — see :mod:`placement.costmodel.demand`.
* ``edges`` — ``source``/``target`` vertex ids and Flink's ``ship_strategy``.

Sources are vertices without inputs, sinks vertices without outputs.
"""

from __future__ import annotations

import hashlib
import json
import math
from enum import Enum
from pathlib import Path
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from placement.loading import FieldError, load_model

PROFILE_FORMAT = "placement.profile/v1"


class ShipStrategy(str, Enum):
    """How records travel along a job edge (Flink's names)."""

    FORWARD = "FORWARD"  # subtask i -> subtask i; needs equal parallelism
    HASH = "HASH"  # keyed: every upstream subtask to every downstream subtask, by key
    REBALANCE = "REBALANCE"  # round-robin over all downstream subtasks
    RESCALE = "RESCALE"  # round-robin over a subset; planned like REBALANCE (an upper bound on fan-out)
    BROADCAST = "BROADCAST"  # every record to every downstream subtask
    GLOBAL = "GLOBAL"  # everything to downstream subtask 0

    @classmethod
    def parse(cls, text: str) -> ShipStrategy:
        # Flink's plan JSON spells some strategies as e.g. "HASH[...]" or "REBALANCE"; keep the leading word.
        word = text.strip().upper().split("[")[0].split(" ")[0]
        return cls(word)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _finite_or_none(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


class SubtaskProfile(Strict):
    index: int = Field(ge=0, description="0-based subtask index")
    records_in_per_s: float = Field(0.0, ge=0)
    records_out_per_s: float = Field(0.0, ge=0)
    busy_ms_per_s: float | None = Field(None, ge=0, le=1000, description="null when Flink reported NaN")
    idle_ms_per_s: float | None = Field(None, ge=0, le=1000)
    backpressured_ms_per_s: float | None = Field(None, ge=0, le=1000)
    host_speed: float = Field(1.0, gt=0, description="speed of the host it was measured on (server core = 1)")
    samples: int | None = Field(None, ge=0)
    confident: bool = Field(True, description="false when busy time was too low to estimate a rate")

    @field_validator("busy_ms_per_s", "idle_ms_per_s", "backpressured_ms_per_s", mode="before")
    @classmethod
    def _nan_is_unknown(cls, v: float | None) -> float | None:
        return _finite_or_none(v)


class VertexProfile(Strict):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    parallelism: int = Field(ge=1)
    stateful: bool = False
    state_bytes: float = Field(0.0, ge=0, description="checkpointed state, all subtasks together")
    bytes_per_record_out: float = Field(0.0, ge=0)
    subtasks: list[SubtaskProfile]
    stats: dict[str, float | int | str | bool | None] = Field(
        default_factory=dict, description="extra figures from the profiling job (p95s, selectivity, ...)"
    )

    @model_validator(mode="after")
    def _subtasks_match(self) -> VertexProfile:
        if len(self.subtasks) != self.parallelism:
            raise FieldError("subtasks", f"vertex {self.name!r} has parallelism {self.parallelism} but {len(self.subtasks)} subtasks")
        if sorted(s.index for s in self.subtasks) != list(range(self.parallelism)):
            raise FieldError("subtasks", f"vertex {self.name!r}: subtask indexes must be 0..{self.parallelism - 1}")
        self.subtasks.sort(key=lambda s: s.index)
        return self

    @property
    def records_in_per_s(self) -> float:
        return sum(s.records_in_per_s for s in self.subtasks)

    @property
    def records_out_per_s(self) -> float:
        return sum(s.records_out_per_s for s in self.subtasks)


class EdgeProfile(Strict):
    source: str
    target: str
    ship_strategy: ShipStrategy

    @field_validator("ship_strategy", mode="before")
    @classmethod
    def _strategy(cls, v: object) -> ShipStrategy:
        if isinstance(v, str):
            try:
                return ShipStrategy.parse(v)
            except ValueError:
                raise ValueError(
                    f"unknown ship strategy {v!r} (one of {', '.join(s.value for s in ShipStrategy)})"
                ) from None
        return v  # type: ignore[return-value]


class JobInfo(Strict):
    name: str
    id: str | None = None
    origin: Literal["example", "synthetic", "collected"] = "collected"
    note: str | None = None


class JobProfile(Strict):
    format: Literal["placement.profile/v1"] = PROFILE_FORMAT
    job: JobInfo
    vertices: list[VertexProfile] = Field(min_length=1)
    edges: list[EdgeProfile] = Field(default_factory=list)

    @model_validator(mode="after")
    def _graph_checks(self) -> JobProfile:
        ids: dict[str, int] = {}
        names: dict[str, int] = {}
        for i, v in enumerate(self.vertices):
            if v.id in ids:
                raise FieldError(f"vertices[{i}].id", f"duplicate vertex id {v.id!r}")
            if v.name in names:
                raise FieldError(f"vertices[{i}].name", f"duplicate vertex name {v.name!r}")
            ids[v.id] = i
            names[v.name] = i
        for i, e in enumerate(self.edges):
            for end in ("source", "target"):
                if getattr(e, end) not in ids:
                    raise FieldError(f"edges[{i}].{end}", f"unknown vertex id {getattr(e, end)!r}")
            if e.ship_strategy is ShipStrategy.FORWARD:
                up, down = self.vertex(e.source), self.vertex(e.target)
                if up.parallelism != down.parallelism:
                    raise FieldError(
                        f"edges[{i}].ship_strategy",
                        f"FORWARD needs equal parallelism, {up.name!r} has {up.parallelism} and {down.name!r} {down.parallelism}",
                    )
        if not nx.is_directed_acyclic_graph(self.graph()):
            cycle = nx.find_cycle(self.graph())
            raise FieldError("edges", f"the job graph has a cycle through {cycle[0][0]!r}")
        return self

    def vertex(self, vertex_id: str) -> VertexProfile:
        for v in self.vertices:
            if v.id == vertex_id:
                return v
        raise KeyError(vertex_id)

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(v.id for v in self.vertices)
        g.add_edges_from((e.source, e.target) for e in self.edges)
        return g

    def topological_vertices(self) -> list[VertexProfile]:
        """Vertices in a deterministic topological order (ties broken by position in the file)."""
        order = {v.id: i for i, v in enumerate(self.vertices)}
        ids = nx.lexicographical_topological_sort(self.graph(), key=lambda vid: order[vid])
        return [self.vertex(vid) for vid in ids]

    def sources(self) -> list[VertexProfile]:
        g = self.graph()
        return [v for v in self.vertices if g.in_degree(v.id) == 0]

    def sinks(self) -> list[VertexProfile]:
        g = self.graph()
        return [v for v in self.vertices if g.out_degree(v.id) == 0]

    def digest(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def load_profile(path: str | Path) -> JobProfile:
    """Load and validate a profile JSON file."""
    return load_model(path, JobProfile)
