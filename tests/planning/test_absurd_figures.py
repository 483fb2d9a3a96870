"""Figures past physical plausibility are bad input, and a solver's failure is one line (issue 26, defect 9).

Mutation fuzzing of the shipped inputs found ``bytes_per_record_out: 1e308`` (finite, valid JSON): HiGHS failed on it
and the CBC fallback died with a PulpSolverError traceback. The bounds are in placement/profile/format.py.
"""

from __future__ import annotations

import json
import time

import psutil
import pytest

from support.cli import IOT, PROFILES, one_line_error, plan_args, run_placement, start_placement


def _mutated(tmp_path, mutate) -> str:
    doc = json.loads(IOT.read_text())
    field = mutate(doc)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(doc))
    return field


def _record_size(doc):
    doc["vertices"][1]["bytes_per_record_out"] = 1e308
    return "vertices[1].bytes_per_record_out"


def _subtask_rate(doc):
    doc["vertices"][0]["subtasks"][0]["records_out_per_s"] = 5e9
    return "vertices[0].subtasks[0].records_out_per_s"


def _edge_bytes(doc):
    """v2 figures on the first edge (the shipped profiles are v1), one of them absurd."""
    doc["format"] = "placement.profile/v2"
    edge = doc["edges"][0]
    n = next(v["parallelism"] for v in doc["vertices"] if v["id"] == edge["source"])
    edge["records_per_s"], edge["bytes_per_s"] = [10.0] * n, [1e300] + [1000.0] * (n - 1)
    return "edges[0].bytes_per_s"


def _state(doc):
    doc["vertices"][-1]["state_bytes"] = 1e200
    return f"vertices[{len(doc['vertices']) - 1}].state_bytes"


@pytest.mark.parametrize("mutate", [_record_size, _subtask_rate, _edge_bytes, _state])
def test_an_implausible_figure_is_one_line_of_bad_input(tmp_path, mutate):
    field = _mutated(tmp_path, mutate)
    done = run_placement(
        *plan_args(tmp_path / "plan", profile=tmp_path / "profile.json"), "--solver", "cbc", cwd=tmp_path
    )
    assert done.returncode == 2
    assert one_line_error(done).startswith(f"error: {tmp_path / 'profile.json'}: {field}: ")
    assert not (tmp_path / "plan").exists()


def test_a_solver_that_dies_is_one_line_not_a_traceback(tmp_path):
    """CBC killed for real while it solves (its child process, SIGKILL): exit 1, one line naming CBC."""
    process = start_placement(
        *plan_args(tmp_path / "plan", profile=PROFILES / "nexmark-hot-items.json"),
        "--solver",
        "cbc",
        "--max-rate",
        "--quiet",
        cwd=tmp_path,
    )
    killed = False
    while process.poll() is None and not killed:  # --max-rate solves many times: a cbc child shows up again and again
        for child in psutil.Process(process.pid).children():
            try:
                if "cbc" in child.name().lower():
                    child.kill()
                    killed = True
            except psutil.Error:  # it had finished
                pass
        time.sleep(0.0005)
    out, err = process.communicate(timeout=120)
    assert killed, "no cbc process was seen"
    assert process.returncode == 1, err
    lines = [line for line in err.splitlines() if not line.startswith("warning: ")]
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error: the CBC solver failed (PulpSolverError"), err
