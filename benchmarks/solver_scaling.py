"""Solver scaling: random layered jobs at (subtasks × hosts) 20×3, 100×10, 500×50, 2000×200.

Prints, per size and solver, model size, solve time, status and gap, with the greedy heuristic's and all-on-server's
WAN beside the ILP's (the baselines of the same run). Targets on a 2-core machine: 500×50 proven optimal in ≤ 10 s,
2000×200 within 1 % gap in ≤ 60 s.

    python benchmarks/solver_scaling.py [--sizes 20x3,100x10] [--solvers highs,cbc] [--time-limit 60] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from random_jobs import instance  # noqa: E402

from placement.costmodel import build_problem  # noqa: E402
from placement.solver import SolverOptions, solve  # noqa: E402
from placement.solver.ilp import _solve as solve_without_pooling  # noqa: E402
from placement.solver.baselines import all_on_server, greedy  # noqa: E402
from placement.solver.domains import restricted_domain  # noqa: E402

TARGETS = {(500, 50): (10.0, 0.0), (2000, 200): (60.0, 0.01)}  # seconds, gap


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20x3,100x10,500x50,2000x200")
    ap.add_argument("--solvers", default="highs,cbc,highs-unpooled",
                    help="highs, cbc, and highs-unpooled (the full model, without server pooling: the baseline)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    header = (f"{'size':>9} {'solver':>14} {'subtasks':>8} {'vars':>7} {'build s':>7} {'solve s':>8} {'status':>10} "
              f"{'gap':>8} {'ILP WAN':>9} {'greedy WAN':>10} {'all-srv WAN':>11} {'target':>8}")
    print(header)
    print("-" * len(header))
    failed = False
    for size in args.sizes.split(","):
        n, h = (int(x) for x in size.split("x"))
        inv, profile = instance(n, h, args.seed)
        t0 = time.perf_counter()
        problem = build_problem(inv, profile)
        n_vars = sum(len(d) for d in restricted_domain(problem).values())
        build = time.perf_counter() - t0
        g, a = greedy(problem), all_on_server(problem)
        g_wan = f"{g.cost.wan_mbit:.1f}" + ("" if g.cost.feasible else "*")
        a_wan = f"{a.cost.wan_mbit:.1f}" + ("" if a.cost.feasible else "*")
        for solver in args.solvers.split(","):
            t0 = time.perf_counter()
            options = SolverOptions(solver=solver.split("-")[0], time_limit=args.time_limit, gap=1e-4)  # type: ignore[arg-type]
            result = (solve_without_pooling if solver.endswith("-unpooled") else solve)(problem, options)
            seconds = time.perf_counter() - t0
            gap = result.gap
            ilp_wan = f"{result.cost.wan_mbit:.1f}" if result.cost else "-"
            target = ""
            if (n, h) in TARGETS and solver == "highs":
                limit, max_gap = TARGETS[(n, h)]
                ok = result.cost is not None and seconds <= limit and (gap or 0) <= max(max_gap, 1e-4)
                target = "met" if ok else "MISSED"
                failed |= not ok
            print(f"{size:>9} {solver:>14} {len(problem.subtasks):>8} {n_vars:>7} {build:>7.2f} {seconds:>8.2f} "
                  f"{result.status:>10} {'-' if gap is None else f'{gap:.2%}':>8} {ilp_wan:>9} {g_wan:>10} {a_wan:>11} "
                  f"{target:>8}", flush=True)
    print("(* = that baseline breaks a link or host capacity)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
