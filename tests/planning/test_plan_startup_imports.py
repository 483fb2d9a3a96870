"""What ``placement plan`` imports (issue #46 item 13, benchmarks/cli_startup.py): a plain plan of a shipped example
loads neither networkx, pandas nor pyarrow, nor the planners of options it was not given (--rescale, --compare,
several jobs' decomposition) and their tables; those options still load them, which shows the check sees imports.
A plan that prints no table (--quiet, --json) loads no rich, and the modules a plan imports are imported with the
garbage collector off and then frozen (:mod:`placement.cli.imports`).

Each case runs in a fresh interpreter (this session has imported everything already) and lists the modules loaded
once the command has finished."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import EDGE_LAB, PROFILES

LIBRARIES = ("networkx", "pandas", "pyarrow", "statsmodels", "scipy")  # the heavy imports no plain plan needs
OPTION_ONLY = (
    "placement.planning.rescale",  # --rescale
    "placement.solver.rescale",
    "placement.cli.rescale_tables",
    "placement.solver.baselines",  # --compare of one job
    "placement.solver.one_by_one",  # --compare of several jobs
    "placement.cli.jobs_tables",  # several jobs
    "placement.solver.fleet",  # --method decompose, or a fleet too big for the exact model
    "placement.writers.fleetjson",  # several jobs' fleet.json, or a fleet's directory given to --running
    "placement.solver.elastic",  # what is short, when nothing fits
    "placement.solver.causes",
)
WATCHED = (*LIBRARIES, *OPTION_ONLY)

REPORT = """
import gc, json, sys
from placement.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
loaded = [m for m in json.loads(WATCHED) if m in sys.modules]
report = {"code": code, "loaded": loaded, "rich": "rich" in sys.modules, "frozen": gc.get_freeze_count()}
print(json.dumps(report), file=sys.stderr)
"""


def report_after(argv: list[object], cwd: Path) -> dict:
    """``placement ARGV`` run in a fresh interpreter: its exit code, which of :data:`WATCHED` it had imported, whether
    it imported rich, and how many objects the collector had been told to leave alone (:func:`gc.freeze`)."""
    script = f"WATCHED = {json.dumps(json.dumps(WATCHED))}\n{REPORT}"
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, argv)], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def loaded_after(argv: list[object], cwd: Path) -> tuple[int, list[str]]:
    """Exit code of ``placement ARGV`` in a fresh interpreter, and which of :data:`WATCHED` it had imported."""
    report = report_after(argv, cwd)
    return report["code"], report["loaded"]


def test_importing_the_plan_command_loads_no_heavy_library(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, placement.cli.plan_render; print([m for m in {(*WATCHED, 'rich')!r} if m in sys.modules])",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("profile", sorted(PROFILES.glob("*.json")), ids=lambda p: p.stem)
@pytest.mark.parametrize("output", ["--quiet", "--json", "tables"])
def test_a_plain_plan_loads_no_heavy_library_nor_other_options_planners(profile, output, tmp_path):
    args = ["plan", "--inventory", EDGE_LAB, "--profile", profile, "--out", tmp_path / "plan"]
    report = report_after(args + ([output] if output != "tables" else []), tmp_path)
    assert report["code"] in (0, None)
    assert report["loaded"] == []
    assert report["rich"] == (output == "tables")  # only the tables need it
    assert report["frozen"] > 10_000  # the imports' objects, left out of the collector's walks
    assert (tmp_path / "plan" / "plan.json").is_file()


def test_the_options_that_need_them_still_load_them(tmp_path):
    iot = PROFILES / "iot-sensors.json"
    plan = ["plan", "--inventory", EDGE_LAB, "--out", tmp_path / "plan", "--quiet"]
    _, rescaled = loaded_after([*plan, "--profile", iot, "--rescale", "--compare"], tmp_path)
    assert {"networkx", "placement.planning.rescale", "placement.solver.rescale"} <= set(rescaled)
    _, compared = loaded_after([*plan, "--profile", iot, "--compare"], tmp_path)
    assert "placement.solver.baselines" in compared
    _, several = loaded_after(
        [*plan, "--profile", iot, "--profile", PROFILES / "branching-join.json", "--compare"], tmp_path
    )
    assert {"placement.solver.one_by_one", "placement.writers.fleetjson"} <= set(several)
    _, infeasible = loaded_after([*plan, "--profile", iot, "--rate-scale", "1000"], tmp_path)
    assert {"placement.solver.elastic", "placement.solver.causes"} <= set(infeasible)
    _, decomposed = loaded_after([*plan, "--profile", iot, "--method", "decompose"], tmp_path)
    assert "placement.solver.fleet" in decomposed


def test_forecast_loads_statsmodels_only_when_given(tmp_path):
    history = PROFILES.parent / "metrics" / "iot-sensors-week"
    plan = ["plan", "--inventory", EDGE_LAB, "--profile", PROFILES / "iot-sensors.json", "--out", tmp_path / "p"]
    _, forecast = loaded_after([*plan, "--quiet", "--forecast", history], tmp_path)
    assert {"statsmodels", "scipy"} <= set(forecast)


def test_importing_unswept_turns_the_collector_back_on_and_freezes_only_a_first_import(tmp_path):
    script = """
import gc, sys
from placement.cli.imports import import_unswept
import_unswept("sys")  # imported already: nothing to freeze
before = gc.get_freeze_count()
module = import_unswept("placement.cli.plan_render")
print(before, gc.get_freeze_count() > 10_000, gc.isenabled(), module is sys.modules["placement.cli.plan_render"])
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True", "True", "True"]
