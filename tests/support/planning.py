"""Fakes for :func:`placement.planning.plan` called without a cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from placement.costmodel.model import RunningUse
from placement.inventory import Inventory
from placement.planning.running import RunningPlans


@dataclass
class FakeClusterReader:
    """A :class:`placement.planning.request.ClusterReader` with fixed running jobs: ``uses`` (host -> the jobs' use
    of it) and ``jobs`` (job, where its figures come from); remembers what it was asked."""

    uses: dict[str, list[RunningUse]] = field(default_factory=dict)
    jobs: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    asked: list[tuple[str, ...]] = field(default_factory=list)  # the planned jobs of each read

    def __call__(
        self, inv: Inventory, planned: Sequence[str], given: Sequence[tuple[str, str]], inventory_path: str
    ) -> RunningPlans:
        self.asked.append(tuple(planned))
        return RunningPlans(dict(self.uses), list(self.jobs), notes=list(self.notes))
