"""Rescale and place together: each operator's parallelism and the host of every subtask from one ILP (issue 14).

Layout: :mod:`.model` (variables ``y`` parallelism choice, ``z`` instance counts, ``x`` per-subtask placement),
:mod:`.domains` (families that fix variables to zero, incl. the per-``p`` rate rows), :mod:`.constraints` (row
families), :mod:`.objectives` (WAN, server CPU, latency, subtasks), :mod:`.realize` (counts -> subtask indexes),
:mod:`.solve` (stages, re-check), :mod:`.baselines` (placement alone, DS2 then placement). The figures come from
:mod:`placement.costmodel.rates` and :mod:`placement.costmodel.rescaled`.
"""

from placement.solver.rescale.baselines import (
    ds2_parallelism,
    ds2_then_place,
    placement_alone,
)
from placement.solver.rescale.solve import RescaleResult, solve_rescale

__all__ = ["RescaleResult", "ds2_parallelism", "ds2_then_place", "placement_alone", "solve_rescale"]
