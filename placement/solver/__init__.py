"""The placement ILP (PuLP; HiGHS first, CBC as fallback) and the baselines it is compared with.

Layout: :mod:`.domains` (families that fix variables to zero), :mod:`.constraints` (row families),
:mod:`.objectives` (WAN, server CPU, latency), :mod:`.backends` (running HiGHS/CBC), :mod:`.ilp` (stages),
:mod:`.elastic` (explaining infeasibility), :mod:`.baselines` (all-on-server, greedy).
"""

try:  # before any PuLP import: PuLP imports highspy under a bare `except:`, so a Ctrl-C landing there would silently
    import highspy  # noqa: F401  # mean "no HiGHS" and switch the solver; here it aborts the command as it should
except ImportError:  # no HiGHS: the CBC fallback says so when it is used
    pass

from placement.solver.ilp import solve
from placement.solver.result import PlanResult, Shortage, SolverOptions, Stage

__all__ = ["PlanResult", "Shortage", "SolverOptions", "Stage", "solve"]
