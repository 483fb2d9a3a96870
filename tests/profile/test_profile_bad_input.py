"""Bad input to ``placement profile``: one line naming the file and field, exit 2, no profile written.

Every check here happens before an engine starts (or uses the pandas engine), so no JVM is needed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from profile_support import EXAMPLE, INVENTORY

from placement.cli import main
from support.synthetic import IOT_JOB, HistoryShape, SynthJob, SynthVertex, write_run


def run_profile(args: list[str], capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        main(["profile", *args])
    _, err = capsys.readouterr()
    return int(e.value.code or 0), err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.startswith("error: ") and err.strip().count("\n") == 0, err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


@pytest.fixture
def history(tmp_path: Path) -> Path:
    root = tmp_path / "history"
    shutil.copytree(EXAMPLE, root)
    return root


def first_part(root: Path) -> Path:
    return min(root.glob("job_id=*/run_id=*/part-*.parquet"))


def test_missing_directory(tmp_path, capsys):
    out = tmp_path / "p.json"
    code, err = run_profile([str(tmp_path / "nope"), "--out", str(out)], capsys)
    assert_one_line_error(code, err, "nope", "metrics directory not found")
    assert not out.exists()


def test_empty_directory(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, err = run_profile([str(tmp_path / "empty"), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, "empty", "no runs found")


def test_a_file_instead_of_a_directory(tmp_path, capsys):
    f = tmp_path / "x.parquet"
    f.write_text("hello")
    code, err = run_profile([str(f), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, "x.parquet", "not a directory")


def test_corrupt_parquet_names_the_file(history, tmp_path, capsys):
    part = first_part(history)
    part.write_bytes(part.read_bytes()[: len(part.read_bytes()) // 2])  # truncated: no footer
    out = tmp_path / "p.json"
    code, err = run_profile([str(history), "--out", str(out)], capsys)
    assert_one_line_error(code, err, str(part), "not a readable Parquet file")
    assert not out.exists()


def test_parquet_without_a_metric_column_names_the_column(history, tmp_path, capsys):
    part = first_part(history)
    pq.write_table(pq.read_table(part).drop(["busy_ms_per_s"]), part)
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, str(part), "busy_ms_per_s", "metric column missing")


def test_parquet_with_a_wrong_column_type(history, tmp_path, capsys):
    part = first_part(history)
    t = pq.read_table(part)
    pq.write_table(t.set_column(t.schema.get_field_index("subtask"), "subtask", t["subtask"].cast("string")), part)
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, "subtask", "expected int32")


def test_broken_manifest_json(history, tmp_path, capsys):
    m = min(history.glob("job_id=*/run_id=*/_manifest.json"))
    m.write_text('{"format": "placement.metrics/v1", ')
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, str(m), "invalid JSON")


def test_manifest_with_a_bad_field(history, tmp_path, capsys):
    m = min(history.glob("job_id=*/run_id=*/_manifest.json"))
    data = json.loads(m.read_text())
    data["vertices"][0]["parallelism"] = 0
    m.write_text(json.dumps(data))
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, str(m), "vertices[0].parallelism")


def test_all_metrics_absent(tmp_path, capsys):
    """Every busy reading null (a job whose tasks never reported busy time): nothing to estimate from."""
    root = tmp_path / "h"
    write_run(IOT_JOB, HistoryShape(duration_s=120, restarts=0, backpressure_episodes=0, seed=3), root)
    for part in root.glob("job_id=*/run_id=*/part-*.parquet"):
        t = pq.read_table(part)
        i = t.schema.get_field_index("busy_ms_per_s")
        pq.write_table(t.set_column(i, t.schema.field(i), pa.nulls(t.num_rows, pa.float64())), part)
    code, err = run_profile(
        [str(root), "--out", str(tmp_path / "p.json"), "--warmup", "0", "--engine", "pandas"], capsys
    )
    assert_one_line_error(code, err, "busy_ms_per_s", "absent from every usable sample")


def test_every_sample_in_warmup(tmp_path, capsys):
    root = tmp_path / "h"
    write_run(IOT_JOB, HistoryShape(duration_s=30, restarts=0, backpressure_episodes=0, seed=3), root)
    code, err = run_profile([str(root), "--out", str(tmp_path / "p.json"), "--engine", "pandas"], capsys)
    assert_one_line_error(code, err, "no usable samples", "--warmup 60")


def test_several_jobs_need_a_choice(history, tmp_path, capsys):
    other = SynthJob("other-job", (SynthVertex("Source: X", 1, true_rate=1e5, source_rate=100.0),), ())
    write_run(other, HistoryShape(duration_s=100, restarts=0, backpressure_episodes=0), history)
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json")], capsys)
    assert_one_line_error(code, err, "--job", "iot-sensors", "other-job")
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json"), "--job", "nothing"], capsys)
    assert_one_line_error(code, err, "--job", "no runs of job 'nothing'")


def test_unknown_run(history, tmp_path, capsys):
    code, err = run_profile([str(history), "--out", str(tmp_path / "p.json"), "--run", "run-9"], capsys)
    assert_one_line_error(code, err, "--run", "run-9")


def test_unknown_stateful_vertex_and_contradiction(tmp_path, capsys):
    code, err = run_profile(
        [str(EXAMPLE), "--out", str(tmp_path / "p.json"), "--engine", "pandas", "--stateful", "Nope"], capsys
    )
    assert_one_line_error(code, err, "--stateful", "no vertex 'Nope'")
    code, err = run_profile(
        [
            str(EXAMPLE),
            "--out",
            str(tmp_path / "p.json"),
            "--engine",
            "pandas",
            "--stateful",
            "Parse",
            "--stateless",
            "Parse",
        ],
        capsys,
    )
    assert_one_line_error(code, err, "both --stateful and --stateless")


def test_bad_inventory_and_warmup(tmp_path, capsys):
    code, err = run_profile(
        [str(EXAMPLE), "--out", str(tmp_path / "p.json"), "--inventory", str(tmp_path / "inv.yaml")], capsys
    )
    assert_one_line_error(code, err, "inv.yaml", "file not found")
    code, err = run_profile([str(EXAMPLE), "--out", str(tmp_path / "p.json"), "--warmup", "-1"], capsys)
    assert_one_line_error(code, err, "--warmup")


def test_pandas_engine_profile_validates_and_is_written_atomically(tmp_path, capsys):
    out = tmp_path / "deep" / "p.json"
    details = tmp_path / "deep" / "subtasks.csv"
    # Earlier files, each with a second name (a hard link) that keeps its inode in view: an atomic write puts a whole
    # new file in place with a rename, so the old inode keeps the old bytes; writing into the file in place would
    # truncate and rewrite that very inode, and a reader could see it half-written.
    out.parent.mkdir()
    for path in (out, details):
        path.write_text("earlier run\n")
        (path.parent / f"{path.name}.earlier").hardlink_to(path)
    code, err = run_profile(
        [
            str(EXAMPLE),
            "--out",
            str(out),
            "--engine",
            "pandas",
            "--inventory",
            str(INVENTORY),
            "--details",
            str(details),
            "--quiet",
        ],
        capsys,
    )
    assert code == 0, err
    for path in (out, details):
        earlier = path.parent / f"{path.name}.earlier"
        assert earlier.read_text() == "earlier run\n" and path.stat().st_ino != earlier.stat().st_ino
    prof = json.loads(out.read_text())
    assert prof["format"] == "placement.profile/v2"
    assert sorted(p.name for p in out.parent.iterdir()) == [  # no temp files left behind
        "p.json",
        "p.json.earlier",
        "subtasks.csv",
        "subtasks.csv.earlier",
    ]
    table = pd.read_csv(details)
    assert len(table) == sum(v["parallelism"] for v in prof["vertices"])
    win = table[table["vertex"] == "Window Aggregate"]
    assert (win["busy_ms_per_s_p95"] > win["busy_ms_per_s_p50"]).all()
    assert (win["true_processing_rate"] - 30_000).abs().max() < 0.02 * 30_000
    src = table[table["vertex"] == "Source: Sensors"]
    assert list(src["host_speed"]) == [0.3, 0.3, 0.3] and (src["true_processing_rate"] == 0).all()
    assert (src["true_output_processing_rate"] > 0).all()


def test_a_profile_that_cannot_be_written_leaves_the_earlier_one_whole(tmp_path, capsys):
    out = tmp_path / "p.json"
    out.write_text("earlier run\n")
    (tmp_path / ".p.json.tmp").mkdir()  # where the new profile would be written first: the write fails for real
    with pytest.raises(SystemExit) as e:
        main(["profile", str(EXAMPLE), "--out", str(out), "--engine", "pandas", "--quiet"])
    _, err = capsys.readouterr()
    assert e.value.code == 1 and err == f"error: {out}: --out: cannot write: Is a directory\n"
    assert out.read_text() == "earlier run\n"  # nothing half-applied
    assert sorted(p.name for p in tmp_path.iterdir()) == [".p.json.tmp", "p.json"]
