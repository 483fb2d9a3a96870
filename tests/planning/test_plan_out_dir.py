"""The plan directory is written whole or not at all, and an unwritable ``--out`` is bad input found before solving
(issue 26, defect 3; consistency: re-planning removes the old plan's files).

Read-only places are real: a tmpfs remounted read-only (tests run as root, who ignores permission bits, but not a
read-only mount). Before the fix the tables printed as if the plan had been made, then a PermissionError traceback.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from support.cli import EDGE_LAB, PROFILES, one_line_error, plan_args, run_placement


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory holding an earlier plan (``old/``), then made read-only by a read-only remount of its tmpfs."""
    where = tmp_path / "ro"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        done = run_placement(*plan_args(where / "old"), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("out", ["new", "old", "new/deeper"])
def test_an_unwritable_out_is_one_line_of_bad_input_before_any_solving(read_only_dir, tmp_path, out):
    before = _files(read_only_dir / "old")
    done = run_placement(*plan_args(read_only_dir / out), cwd=tmp_path)
    assert done.returncode == 2
    line = one_line_error(done)
    assert f"{read_only_dir / out}: --out: cannot write the plan directory here" in line
    assert "Read-only file system" in line
    assert done.stdout == ""  # no tables as if it had worked: found before solving
    assert _files(read_only_dir / "old") == before


def test_an_out_that_is_a_file_is_bad_input(tmp_path):
    (tmp_path / "plan").write_text("mine")
    done = run_placement(*plan_args(tmp_path / "plan"), cwd=tmp_path)
    assert done.returncode == 2
    line = one_line_error(done)
    assert "'--out'" in line and "is a file" in line
    assert (tmp_path / "plan").read_text() == "mine"


def test_replanning_into_the_same_out_removes_the_old_plans_files_and_keeps_the_users(tmp_path):
    """A vanilla plan on three Pis writes vanilla/rpi3.yaml; the same --out re-planned with rpi3 gone must not keep
    it (apply would read a stale TaskManager config). The apply audit log beside the plan stays."""
    inventory = yaml.safe_load(EDGE_LAB.read_text())
    inventory["flink"]["placement_mode"] = "vanilla"
    three = tmp_path / "three.yaml"
    three.write_text(yaml.safe_dump(inventory))
    inventory["hosts"] = [h for h in inventory["hosts"] if h["name"] != "rpi3"]
    inventory["links"] = [link for link in inventory["links"] if link["from"] != "rpi3"]
    inventory["pins"]["sources"] = {"Source: Sensors": ["rpi1", "rpi2"]}
    two = tmp_path / "two.yaml"
    two.write_text(yaml.safe_dump(inventory))
    sensors_on_two = json.loads((PROFILES / "iot-sensors.json").read_text())
    for v in sensors_on_two["vertices"]:  # parallelism 2 everywhere keeps the job valid on two Pis
        if v["parallelism"] == 3:
            v["parallelism"], v["subtasks"] = 2, v["subtasks"][:2]
    profile = tmp_path / "iot-2.json"
    profile.write_text(json.dumps(sensors_on_two))

    out = tmp_path / "plan"
    assert run_placement(*plan_args(out, three), cwd=tmp_path).returncode == 0
    assert (out / "vanilla" / "rpi3.yaml").is_file()
    (out / "apply-audit.jsonl").write_text('{"apply": 1}\n')
    done = run_placement(*plan_args(out, two, profile), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (out / "vanilla" / "rpi3.yaml").exists()
    assert sorted(p.name for p in (out / "vanilla").iterdir()) == ["rpi1.yaml", "rpi2.yaml", "server.yaml"]
    assert (out / "apply-audit.jsonl").read_text() == '{"apply": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging left
