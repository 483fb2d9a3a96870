"""CLI startup: how long the installed ``placement`` command takes, end to end, beside a baseline of the same run.

Rows: ``python -c pass`` and ``python -c "import click"`` (the floor any click CLI pays on this machine, measured in the
same run so a loaded machine shows as a slow baseline, not as a slow CLI), ``placement --help``, a mistyped option
(``plan --inventroy``: the answer must not wait for the solver's imports), the libraries a plan cannot do without
(click, pydantic, PyYAML, PuLP, highspy with numpy, graphviz: the floor under any plan of this design), the modules
``plan`` imports (``import placement.cli.plan_render``, what a plan pays before it reads a file), and ``plan`` of each
shipped example profile on the shipped ``edge-lab`` inventory, files written. Each figure is the median of ``--runs``
runs, after one run of each command not counted (it compiles the bytecode: the children write it under a temporary
``PYTHONPYCACHEPREFIX``, also when ``PYTHONDONTWRITEBYTECODE`` is set here, so a figure is what an installed
``placement`` takes, not the compiler's time). The header shows the load average: on a loaded machine every row is
slower, the baseline with them.

Targets (a quiet 2-core machine): ``--help`` ≤ 0.3 s, ``plan`` of a shipped example ≤ 0.4 s (issue #46: it was ~0.9 s
when every plan imported pandas and pyarrow for ``--running-cluster``). The verdict column compares against them;
``over baseline`` is the median minus the ``import click`` baseline.

    python benchmarks/cli_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from placement.resources import repo_dir

PLACEMENT = str(Path(sys.executable).parent / "placement")
TARGETS = {"help": 0.3, "plan": 0.4}  # seconds, see the module doc
LIBRARIES = "import click, graphviz, highspy, pulp, yaml; from pydantic import BaseModel"


def measured_package(env: dict[str, str], cwd: Path) -> str:
    """Where the children import ``placement`` from (a checkout on PYTHONPATH goes before the installed one): the
    header says it, so a figure is not taken for another tree's."""
    argv = [sys.executable, "-c", "import pathlib, placement; print(pathlib.Path(placement.__file__).parent)"]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


def child_env(work: Path) -> dict[str, str]:
    """The children's environment: bytecode written (under ``work``) and read, as an installed command has it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def median_seconds(argv: list[str], runs: int, cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    """Median wall time of ``runs`` runs of ``argv`` (after one not counted) and the exit status of the last one."""
    times, code = [], 0
    for i in range(runs + 1):
        start = time.perf_counter()
        code = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times), code


def rows(work: Path) -> list[tuple[str, list[str], str | None, int]]:
    """(label, argv, target key, expected exit status)."""
    inventory = repo_dir("inventory") / "edge-lab.yaml"
    out = [
        ("python -c pass", [sys.executable, "-c", "pass"], None, 0),
        ("python -c 'import click'", [sys.executable, "-c", "import click"], None, 0),
        ("placement --help", [PLACEMENT, "--help"], "help", 0),
        ("placement plan --inventroy", [PLACEMENT, "plan", "--inventroy", str(inventory)], None, 2),
        ("import the libraries a plan needs", [sys.executable, "-c", LIBRARIES], None, 0),
        ("import placement.cli.plan_render", [sys.executable, "-c", "import placement.cli.plan_render"], None, 0),
    ]
    for profile in sorted((repo_dir("examples") / "profiles").glob("*.json")):
        argv = [
            PLACEMENT,
            "plan",
            "--inventory",
            str(inventory),
            "--profile",
            str(profile),
            "--out",
            str(work / profile.stem),
            "--quiet",
        ]
        out.append((f"placement plan {profile.stem}", argv, "plan", 0))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = child_env(work)
        package = measured_package(env, work)
        measured = [
            (label, *median_seconds(argv, args.runs, work, env), key, expected)
            for label, argv, key, expected in rows(work)
        ]
    floor = measured[1][1]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min): above the core count every row is slower")
    print(f"placement imported from {package}")
    print(f"{'command':<38} {'median s':>9} {'over baseline':>14} {'target s':>9}  verdict   (median of {args.runs})")
    for label, seconds, code, key, expected in measured:
        target = TARGETS.get(key) if key else None
        if code != expected:
            verdict = f"ERROR (exit {code})"
        elif target is None:
            verdict = ""
        else:
            verdict = "PASS" if seconds <= target else "FAIL"
        failed |= verdict.startswith(("FAIL", "ERROR"))
        print(f"{label:<38} {seconds:>9.3f} {seconds - floor:>14.3f} {target if target else '':>9}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
