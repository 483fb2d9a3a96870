"""The placement ILP (PuLP; HiGHS first, CBC as fallback) and the baselines it is compared with.

Layout: :mod:`.domains` (families that fix variables to zero), :mod:`.constraints` (row families),
:mod:`.objectives` (WAN, server CPU, latency), :mod:`.backends` (running HiGHS/CBC), :mod:`.ilp` (stages),
:mod:`.elastic` (explaining infeasibility), :mod:`.baselines` (all-on-server, greedy).
"""

try:  # before any PuLP import: PuLP imports highspy under a bare `except:`, so a Ctrl-C landing there would silently
    import highspy  # noqa: F401  # mean "no HiGHS" and switch the solver; here it aborts the command as it should
except ImportError as exc:  # no HiGHS: the CBC fallback says so when it is used
    # pybind11 reports any exception in a module's initialisation as ImportError("initialization failed") raised from
    # it: a Ctrl-C there is an interrupt, not a missing HiGHS (and a second import would fail on half-registered types)
    if isinstance(exc.__cause__, KeyboardInterrupt) or isinstance(exc.__context__, KeyboardInterrupt):
        raise KeyboardInterrupt from exc

from placement.solver.ilp import solve
from placement.solver.result import PlanResult, Shortage, SolverOptions, Stage

__all__ = ["PlanResult", "Shortage", "SolverOptions", "Stage", "solve"]
