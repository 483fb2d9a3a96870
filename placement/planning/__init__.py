"""Planning: ``plan(PlanRequest) -> PlanOutcome`` for one job or several, the one way every caller plans.

``placement plan`` builds a :class:`PlanRequest` from its options, ``placement watch`` from a window's profile, the
lab and the benchmarks from theirs; :func:`plan` validates it (:mod:`placement.planning.request`, the one place
options are checked against each other), loads, applies the what-if, takes the running jobs as fixed load, builds and
solves the problem and plans its contingencies (:mod:`placement.planning.pipeline`). The outcome holds what is
printed; :func:`summary_json` is the ``--json`` summary and :func:`write_outcome` writes the plan directory, a step
of its own. The layer sits above the solver and the writers and below apply, watch, lab and cli.

The request is light to import (a refused option answers without loading the solver); the rest is imported on
first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from placement.planning.request import ClusterRead, ClusterReader, PlanRequest

if TYPE_CHECKING:
    from placement.planning.outcome import PlanOutcome
    from placement.planning.pipeline import plan
    from placement.planning.summary import summary_json
    from placement.planning.write import Written, write_outcome

__all__ = [
    "ClusterRead",
    "ClusterReader",
    "PlanOutcome",
    "PlanRequest",
    "Written",
    "plan",
    "summary_json",
    "write_outcome",
]

_LAZY = {
    "PlanOutcome": "outcome",
    "plan": "pipeline",
    "summary_json": "summary",
    "Written": "write",
    "write_outcome": "write",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"placement.planning.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'placement.planning' has no attribute {name!r}")
