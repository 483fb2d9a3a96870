"""stdout that goes away (issue 46, items 1-3): `| head -1`, a reader that closed the pipe, `>&-`, `>/dev/full`, and
`examples --copy` into a place it cannot write.

Before the fix ``plan … | head -1`` exited 1 with nothing said and no plan written (the tables are printed before the
files, and rich ends the process on the broken pipe), ``>&-`` and ``>/dev/full`` ended in a traceback, no plan, and
``examples --copy`` into /proc, under a regular file or into an unwritable folder ended in tracebacks. Now the command
always does its work: a reader that stopped reading is not an error (exit 141, nothing said, as ``git log | head``);
output lost to a closed or failing stdout is one line on stderr and exit 1. Real processes and real pipes throughout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from placement.cli import examples_cmd
from support.cli import EDGE_LAB, PLACEMENT, one_line_error, plan_args, run_main, run_placement

EXIT_BROKEN_PIPE = 141


def assert_plan_written(out: Path) -> None:
    doc = json.loads((out / "plan.json").read_text())
    assert doc["job"] == "iot-sensors" and doc["assignment"]
    assert (out / "schedulercfg").read_text().startswith("Source: Sensors (1/3); ")
    assert (out / "redeploy.sh").is_file()


def run_shell(script: str, *args: object, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """``script`` run by bash with ``"$@"`` = the placement command and ``args``."""
    return subprocess.run(
        ["bash", "-c", script, "bash", str(PLACEMENT), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        **kwargs,
    )


def test_plan_into_head_writes_the_plan(tmp_path):
    done = run_shell('"$@" | head -1; exit "${PIPESTATUS[0]}"', *plan_args(tmp_path / "p"), cwd=tmp_path)
    # 141 when a write came after head left, 0 when all of it fitted in the pipe before: never a message
    assert done.returncode in (0, EXIT_BROKEN_PIPE), done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("iot-sensors on edge-lab") and done.stdout.count("\n") == 1
    assert_plan_written(tmp_path / "p")


def test_plan_into_grep_q_writes_the_plan(tmp_path):
    done = run_shell('"$@" | grep -q optimal; echo "${PIPESTATUS[*]}"', *plan_args(tmp_path / "p"), cwd=tmp_path)
    placement, grep = done.stdout.split()
    assert grep == "0" and placement in ("0", str(EXIT_BROKEN_PIPE)) and done.stderr == ""
    assert_plan_written(tmp_path / "p")


def _into_closed_pipe(argv: list[object], cwd: Path) -> subprocess.CompletedProcess:
    """``placement argv`` whose stdout is a pipe its reader closed before the first write: every write is EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.Popen(
            [str(PLACEMENT), *map(str, argv)], cwd=cwd, stdout=write, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write)
    _, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err)


@pytest.mark.parametrize(
    "argv",
    [
        ["inventory", "validate", EDGE_LAB],
        ["netem", "apply", "--inventory", EDGE_LAB, "--dry-run"],
        ["plan", "--inventory", EDGE_LAB, "--profile", "IOT", "--out", "OUT", "--compare"],
        ["plan", "--inventory", EDGE_LAB, "--profile", "IOT", "--out", "OUT", "--json"],
    ],
    ids=["inventory validate", "netem apply --dry-run", "plan", "plan --json"],
)
def test_a_reader_gone_is_exit_141_and_nothing_said(argv, tmp_path):
    from support.cli import IOT

    argv = [IOT if a == "IOT" else tmp_path / "p" if a == "OUT" else a for a in argv]
    done = _into_closed_pipe(argv, tmp_path)
    assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, "")
    if argv[0] == "plan":
        assert_plan_written(tmp_path / "p")


def test_a_closed_stdout_writes_the_plan_and_says_the_output_was_lost(tmp_path):
    done = run_shell('exec "$@" >&-', *plan_args(tmp_path / "p"), cwd=tmp_path)
    assert done.returncode == 1
    assert one_line_error(done) == "error: stdout is closed: the output was lost"
    assert_plan_written(tmp_path / "p")
    # nothing took fd 1's place: the files written while it was closed hold what they should
    assert not list(tmp_path.glob("p/*.dot")) or "digraph" in next(tmp_path.glob("p/*.dot")).read_text()


def test_a_closed_stdout_with_nothing_to_print_is_no_error(tmp_path):
    done = run_shell('exec "$@" >&-', *plan_args(tmp_path / "p"), "--quiet", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert_plan_written(tmp_path / "p")


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["tables", "json"])
def test_dev_full_writes_the_plan_and_says_the_output_was_lost(extra, tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(PLACEMENT), *map(str, plan_args(tmp_path / "p")), *extra],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1
    assert one_line_error(done) == "error: stdout: No space left on device: the output was lost"
    assert_plan_written(tmp_path / "p")


def test_a_failed_command_keeps_its_exit_code_into_a_closed_pipe(tmp_path):
    done = _into_closed_pipe(
        ["plan", "--inventory", tmp_path / "none.yaml", "--profile", "x.json", "--out", tmp_path / "p"], tmp_path
    )
    assert done.returncode == 2 and "none.yaml" in done.stderr and "Traceback" not in done.stderr


# examples --copy -------------------------------------------------------------------------------------------------


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write into: root writes through any mode bits, but not into sysfs."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    return folder


@pytest.mark.parametrize("case", ["in /proc", "under a file", "deep under a file", "unwritable", "new in unwritable"])
def test_examples_copy_where_it_cannot_is_one_line_and_nothing_copied(case, tmp_path):
    (tmp_path / "notes.txt").write_text("a file\n")
    target, named = {
        "in /proc": lambda: ("/proc/x", "No such file or directory"),
        "under a file": lambda: (tmp_path / "notes.txt" / "sub", "notes.txt is a file, not a directory"),
        "deep under a file": lambda: (tmp_path / "notes.txt" / "a" / "b", "notes.txt is a file, not a directory"),
        "unwritable": lambda: (_unwritable(tmp_path), ""),
        "new in unwritable": lambda: (_unwritable(tmp_path) / "new", ""),
    }[case]()
    before = sorted(tmp_path.rglob("*"))
    done = run_placement("examples", "--copy", target, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = one_line_error(done)
    assert line.startswith(f"error: {target}: ") and named in line
    assert sorted(tmp_path.rglob("*")) == before  # nothing half-copied, no folder made for it
    assert not list(Path(target).glob(".placement-examples-*")) if Path(target).is_dir() else True


def test_examples_copy_that_fails_half_way_leaves_nothing(tmp_path, monkeypatch, capsys):
    """A disk that fills up during the second folder: the first is not left behind, nor the folders made for DIR."""
    real = shutil.copytree
    calls = []

    def filling(src, dst, *args, **kwargs):
        if Path(dst).parent.name.startswith(".placement-examples-"):  # a folder copied, not copytree's recursion
            calls.append(dst)
            if len(calls) == 2:
                real(src, dst, *args, **kwargs)  # all of it there, then the disk is full
                raise OSError(28, "No space left on device")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(examples_cmd.shutil, "copytree", filling)
    code, _, err = run_main(["examples", "--copy", tmp_path / "new" / "ex"], capsys)
    assert len(calls) == 2 and code == 2
    assert err == f"error: {tmp_path / 'new' / 'ex'}: cannot copy into it: No space left on device\n"
    assert list(tmp_path.iterdir()) == []


def test_examples_copy_that_fails_renaming_puts_nothing_in_place(tmp_path, monkeypatch, capsys):
    real = Path.rename

    def failing(self, target):
        if Path(target).name == "netem" and Path(target).parent == tmp_path:
            raise OSError(5, "Input/output error")
        return real(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    code, _, err = run_main(["examples", "--copy", tmp_path], capsys)
    assert code == 2 and "Input/output error" in err
    assert list(tmp_path.iterdir()) == []


def test_examples_copy_still_copies(tmp_path):
    done = run_placement("examples", "--copy", tmp_path / "ex", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "ex").iterdir()) == ["ansible", "examples", "inventory", "netem"]
    assert (tmp_path / "ex" / "inventory" / "edge-lab.yaml").read_text() == EDGE_LAB.read_text()
