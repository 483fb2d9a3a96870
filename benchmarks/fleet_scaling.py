"""Fleet scaling: the hard family (benchmarks/hard_jobs.py) and the random layered family (random_jobs.py) up to a city
fleet of 100 000 subtasks on 10 000 Pis, with the exact model and the fleet decomposition (``--method decompose``).

Every row runs in a child process that loads the instance from files (as ``placement plan`` does), builds the
problem and solves it, so its peak memory is the planner's alone (instances are generated once, by another child,
into ``--cache``). Columns: build s (``build_problem``: inventory + profile -> problem), solve s (the solver,
its own model build included), status, gap (the largest of the stages), WAN and the WAN stage's proven bound, peak
RSS, and the 1-minute load average when the row started (the machine is shared: figures under load are slower).

Targets on 2 cores: hard 2000×200 with the exact model proven optimal (gap 0) in ≤ 10 s; the fleet of 100 000
subtasks × 10 004 hosts (4 servers) within a 1 % gap, certified by the bound, in ≤ 60 s build + solve and ≤ 4 GiB.

    python benchmarks/fleet_scaling.py [--rows standard|quick] [--cache DIR] [--time-limit 120] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# (family, subtasks, hosts, servers or None for the generator's default, method, gap, target: (seconds, gap, MiB))
ROWS = {
    "quick": [
        ("hard", 2000, 200, None, "exact", 0.0, (10.0, 0.0, None)),
        ("hard", 2000, 200, None, "decompose", 0.0, None),
        ("hard", 10_000, 1_004, 4, "decompose", 0.01, None),
        ("random", 2000, 200, None, "exact", 0.0, None),
    ],
    "standard": [
        ("hard", 2000, 200, None, "exact", 0.0, (10.0, 0.0, None)),
        ("hard", 2000, 200, None, "decompose", 0.0, None),
        ("hard", 10_000, 1_004, 4, "exact", 0.01, None),
        ("hard", 10_000, 1_004, 4, "decompose", 0.01, None),
        ("hard", 100_000, 10_004, 4, "decompose", 0.01, (60.0, 0.01, 4096.0)),
        ("random", 2000, 200, None, "exact", 0.0, None),
        ("random", 10_000, 1_000, None, "exact", 0.01, None),
        ("random", 10_000, 1_000, None, "decompose", 0.01, None),
        ("random", 100_000, 10_000, None, "decompose", 0.01, None),
    ],
}


def _instance_files(cache: Path, family: str, n: int, hosts: int, servers: int | None, seed: int) -> tuple[Path, Path]:
    d = cache / f"{family}-{n}x{hosts}-s{servers or 'default'}-seed{seed}"
    inv_path, prof_path = d / "inventory.json", d / "profile.json"
    if not prof_path.exists():
        d.mkdir(parents=True, exist_ok=True)
        code = (
            "import json, sys; sys.path.insert(0, %r)\n"  # noqa: UP031 - %r writes the script's Python literals
            "from hard_jobs import instance as hard; from random_jobs import instance as rand\n"
            "inv, prof = (hard(%d, %d, %d, servers=%r) if %r == 'hard' else rand(%d, %d, %d))\n"
            "open(%r, 'w').write(json.dumps(inv.model_dump(mode='json', by_alias=True)))\n"
            "open(%r, 'w').write(json.dumps(prof.model_dump(mode='json')))\n"
            % (str(HERE), n, hosts, seed, servers, family, n, hosts, seed, str(inv_path), str(prof_path))
        )
        subprocess.run([sys.executable, "-c", code], check=True)
    return inv_path, prof_path


def child(spec: dict) -> dict:
    """One row, in this process: load, build, solve; what the table prints."""
    from placement.costmodel import build_problem
    from placement.inventory import load_inventory
    from placement.profile.format import load_profile
    from placement.solver import SolverOptions
    from placement.solver.methods import solve_with

    inv, prof = load_inventory(spec["inventory"]), load_profile(spec["profile"])
    t0 = time.perf_counter()
    problem = build_problem(inv, prof)
    t1 = time.perf_counter()
    result = solve_with(problem, SolverOptions(time_limit=spec["time_limit"], gap=spec["gap"]), spec["method"])
    t2 = time.perf_counter()
    first = result.stages[0].info if result.stages else None
    return {
        "subtasks": len(problem.subtasks),
        "hosts": len(problem.hosts),
        "build_s": t1 - t0,
        "solve_s": t2 - t1,
        "status": result.status,
        "gap": result.gap,
        "wan": result.cost.wan_mbit if result.cost else None,
        "bound": first.bound if first else None,
        "feasible": bool(result.cost and result.cost.feasible),
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "stages": [(s.name, s.info.status, s.info.seconds, s.info.gap) for s in result.stages],
        "notes": list(result.notes),
    }


def run(rows: str, cache: Path, time_limit: float, seed: int, verbose: bool = False) -> int:
    header = (
        f"{'family':>7} {'size':>13} {'method':>10} {'build s':>8} {'solve s':>8} {'status':>9} {'gap':>8} "
        f"{'WAN':>10} {'WAN bound':>10} {'peak MiB':>9} {'load':>5} {'target':>8}"
    )
    print(header)
    print("-" * len(header))
    failed = False
    for family, n, hosts, servers, method, gap, target in ROWS[rows]:
        inv_path, prof_path = _instance_files(cache, family, n, hosts, servers, seed)
        load = os.getloadavg()[0]
        spec = {
            "inventory": str(inv_path),
            "profile": str(prof_path),
            "method": method,
            "gap": gap,
            "time_limit": time_limit,
        }
        out = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            print(f"{family:>7} {n}x{hosts:<7} {method:>10} ERROR {out.stderr.strip().splitlines()[-1:]}")
            failed = True
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        verdict = ""
        if target is not None:
            seconds, max_gap, mib = target
            ok = (
                r["feasible"]
                and r["build_s"] + r["solve_s"] <= seconds
                and (r["gap"] or 0.0) <= max(max_gap, 1e-9)
                and (mib is None or r["rss_mib"] <= mib)
            )
            verdict = "met" if ok else "MISSED"
            failed |= not ok
        gap_text = "-" if r["gap"] is None else f"{r['gap']:.3%}"
        print(
            f"{family:>7} {r['subtasks']:>6}x{r['hosts']:<6} {method:>10} {r['build_s']:>8.2f} {r['solve_s']:>8.2f} "
            f"{r['status']:>9} {gap_text:>8} {r['wan'] or 0:>10.1f} {r['bound'] or 0:>10.1f} {r['rss_mib']:>9.0f} "
            f"{load:>5.1f} {verdict:>8}",
            flush=True,
        )
        if verbose:
            stages = ", ".join(f"{name} {status} {seconds:.2f} s" for name, status, seconds, _ in r["stages"])
            print(f"{'':>9}stages: {stages}" + "".join(f"\n{'':>9}{n}" for n in r["notes"]), flush=True)
    print(
        "(gap: the largest of the stages' gaps, each against the bound HiGHS proves for that stage; load: 1-minute "
        "load average of this shared 2-core machine when the row started)"
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", choices=sorted(ROWS), default="standard")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/placement-bench-instances"))
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbose", action="store_true", help="each row's stage times and the planner's notes")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    return run(args.rows, args.cache, args.time_limit, args.seed, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
