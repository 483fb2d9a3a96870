"""The per-file reduction both engines share (placement.profile.partials) and how the Spark engine cuts the files
into tasks: the result must not depend on which process reads a file, on how files are grouped, or on where the
history is mounted; and stage 1 must run where ``placement`` is not installed (a cluster's executors)."""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from placement.profile import partials
from placement.profile.history import select_runs
from placement.profile.pandas_job import aggregate_pandas
from placement.profile.partials import finish_partials, partials_job, task_partials
from placement.profile.spark_job import file_tasks
from support.synthetic import IOT_JOB, HistoryShape, write_history


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    root = tmp_path_factory.mktemp("history")
    write_history(IOT_JOB, HistoryShape(duration_s=400, restarts=1, seed=3), root, runs=2, jobs=2)
    return root


def _by_subtask(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["vertex_id", "subtask"]).reset_index(drop=True)


def test_any_cut_of_the_files_into_tasks_gives_the_same_aggregates(history):
    sel = select_runs(history)
    job = partials_job(sel, 60, per_subtask=200)  # a subset well below the samples: the draw matters
    assert job.fraction < 0.5
    paths = [str(p) for p in sel.parts]
    one_task = list(task_partials([paths], job))
    per_file = [frame for p in reversed(paths) for frame in task_partials([[p]], job)]
    a, b = (_by_subtask(finish_partials(f, job.vertex_ids)) for f in (one_task, per_file))
    pd.testing.assert_frame_equal(a, b, rtol=1e-12)
    pd.testing.assert_frame_equal(a, _by_subtask(aggregate_pandas(sel, 60, per_subtask=200)), rtol=1e-12)


def test_the_draw_depends_on_the_file_not_on_where_the_history_is_mounted(history, tmp_path):
    moved = tmp_path / "elsewhere" / "metrics"
    shutil.copytree(history, moved)
    here, there = select_runs(history), select_runs(moved)
    a = _by_subtask(aggregate_pandas(here, 60, per_subtask=200))
    b = _by_subtask(aggregate_pandas(there, 60, per_subtask=200))
    pd.testing.assert_frame_equal(a, b, rtol=1e-12)
    other_seed = _by_subtask(aggregate_pandas(here, 60, per_subtask=200, seed=1))
    assert not a["busy_ms_per_s_p95"].equals(other_seed["busy_ms_per_s_p95"])  # the seed does pick the samples


def test_files_are_packed_into_balanced_tasks_largest_first(tmp_path):
    sizes = [900, 50, 400, 400, 300, 20, 20, 20, 600, 100]
    parts = []
    for i, size in enumerate(sizes):
        parts.append(tmp_path / f"part-{i:05d}.parquet")
        parts[-1].write_bytes(b"x" * size)
    tasks = file_tasks(parts, 4)
    assert len(tasks) == 4
    assert sorted(p for t in tasks for p in t) == sorted(str(p) for p in parts)  # every file once
    loads = [sum(os.path.getsize(p) for p in t) for t in tasks]
    assert loads == sorted(loads, reverse=True)  # Spark starts them in this order
    assert max(loads) == 900 and min(loads) >= 600  # 2810 bytes: the 900 alone, the others within 300 of it
    assert file_tasks(parts[:2], 16) == [[str(parts[0])], [str(parts[1])]]  # never more tasks than files


def test_stage_one_runs_without_the_placement_package(history, tmp_path):
    """The Spark engine ships stage 1 by value (PySpark's cloudpickle): an executor needs NumPy, pandas and PyArrow,
    not placement. Here it runs in a Python that cannot import placement."""
    from pyspark import cloudpickle

    sel = select_runs(history)
    job = partials_job(sel, 60)
    paths = [str(p) for p in sel.parts[:2]]
    cloudpickle.register_pickle_by_value(partials)
    try:
        blob = cloudpickle.dumps(functools.partial(task_partials, job=job))
    finally:
        cloudpickle.unregister_pickle_by_value(partials)
    (tmp_path / "task.pkl").write_bytes(blob)
    script = f"""
import pickle, sys
sys.modules["placement"] = None  # any import of placement fails
task = pickle.loads(open({str(tmp_path / "task.pkl")!r}, "rb").read())
out = list(task([{paths!r}]))
pickle.dump(out, open({str(tmp_path / "out.pkl")!r}, "wb"))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = pickle.loads((tmp_path / "out.pkl").read_bytes())
    want = list(task_partials([paths], job))
    assert len(got) == 1 and got[0].keys() == want[0].keys() and len(got[0]["n"]) > 0
    pd.testing.assert_frame_equal(pd.DataFrame(got[0]), pd.DataFrame(want[0]))


def test_a_file_that_cannot_be_read_comes_back_as_a_failure_naming_it(history, tmp_path):
    sel = select_runs(history)
    job = partials_job(sel, 60)
    gone = str(tmp_path / "not-mounted" / "part-00000.parquet")
    out = list(task_partials([[str(sel.parts[0]), gone, str(sel.parts[1])]], job))
    assert len(out) == 1 and isinstance(out[0], partials.ReadFailure)
    assert out[0].path == gone and "FileNotFoundError" in out[0].error and out[0].host
