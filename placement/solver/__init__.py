"""The placement ILP (PuLP; HiGHS first, CBC as fallback) and the baselines it is compared with.

Layout: :mod:`.domains` (families that fix variables to zero), :mod:`.constraints` (row families),
:mod:`.objectives` (WAN, server CPU, latency), :mod:`.backends` (running HiGHS/CBC), :mod:`.ilp` (stages),
:mod:`.elastic` (explaining infeasibility), :mod:`.baselines` (all-on-server, greedy).
"""

from placement.solver.ilp import solve
from placement.solver.result import PlanResult, Shortage, SolverOptions, Stage

__all__ = ["PlanResult", "Shortage", "SolverOptions", "Stage", "solve"]
