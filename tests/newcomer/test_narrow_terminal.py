"""An 80-column terminal: no figure or name is cut, no line is longer than the terminal (issue 26, defect 8).

Run through a real pseudo-terminal of 80 columns (tests/support/terminal.py), so rich and click see the width a user's
terminal reports. Before the fix ``plan --compare`` printed ``158.…`` and ``opti…``, ``profile`` cut numbers and vertex
names and printed its footnote as one 130-column line (the terminal broke it mid-word), ``inventory validate`` cut
addresses, and ``apply --help`` had a paragraph pre-wrapped at ~115 columns.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from rich.cells import cell_len

from placement.inventory import load_inventory
from support.cli import EDGE_LAB, IOT, PLACEMENT, REPO, plan_args, run_placement
from support.terminal import run_on_terminal

COLUMNS = 80


def _shown(argv: list[object], tmp_path, *, cells: bool = True) -> list[str]:
    """The lines shown at 80 columns; none longer, and (``cells``: output with tables) none with a cut cell."""
    code, lines = run_on_terminal([str(PLACEMENT), *map(str, argv)], columns=COLUMNS, cwd=tmp_path)
    assert code == 0, "\n".join(lines)
    too_long = [line for line in lines if len(line) > COLUMNS]
    assert not too_long, too_long
    if not cells:
        return lines
    spinner = re.compile("^[\u2800-\u28ff] ")  # rich's status line ("profiling DIR…") is no table cell
    assert not [line for line in lines if "…" in line and not spinner.match(line)], "\n".join(lines)
    return lines


def _tokens(lines: list[str]) -> set[str]:
    return {t for line in lines for t in re.split(r"[\s│┃]+", line) if t}


def test_plan_compare_shows_every_figure_whole(tmp_path):
    lines = _shown(["plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "a", "--compare"], tmp_path)
    summary = json.loads(
        run_placement(
            "plan",
            "--inventory",
            EDGE_LAB,
            "--profile",
            IOT,
            "--out",
            tmp_path / "b",
            "--compare",
            "--json",
            cwd=tmp_path,
        ).stdout
    )
    tokens = _tokens(lines)
    for result in summary["results"]:
        assert result["status"] in tokens
        assert result["strategy"] in " ".join(lines)
        for figure in (result["wan_mbit"], result["server_cores"], result["edge_cores"], *result["links"].values()):
            assert f"{figure:.2f}" in tokens, (figure, lines)
    assert any(r["wan_mbit"] > 100 for r in summary["results"])  # the figure that was cut: 158.40


def test_profile_shows_every_vertex_and_rate_whole(tmp_path):
    lines = _shown(
        ["profile", REPO / "examples" / "metrics" / "iot-sensors", "--out", tmp_path / "p.json", "--engine", "pandas"],
        tmp_path,
    )
    profile = json.loads((tmp_path / "p.json").read_text())
    text = " ".join(" ".join(lines).split())
    tokens = _tokens(lines)
    for v in profile["vertices"]:
        assert v["name"] in text
        assert f"{sum(s['records_out_per_s'] for s in v['subtasks']):,.0f}" in tokens
    assert "true rate: records per busy second of one subtask;" in text  # wrapped between words, whole


def test_inventory_validate_shows_addresses_whole(tmp_path):
    lines = _shown(["inventory", "validate", EDGE_LAB], tmp_path)
    tokens = _tokens(lines)
    for host in load_inventory(EDGE_LAB).hosts:
        assert host.address in tokens and host.name in tokens


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["plan"],
        ["apply"],
        ["profile"],
        ["watch"],
        ["metrics", "collect"],
        ["inventory", "validate"],
        ["lab", "up"],
        ["examples"],
    ],
)
def test_help_fits_80_columns(tmp_path, command):
    _shown([*command, "--help"], tmp_path, cells=False)  # help text may say "1m…" itself


@pytest.mark.parametrize("columns", [60, 100])
def test_a_pipe_honours_columns_and_keeps_every_figure_whole(tmp_path, columns):
    # a real pipe, not a terminal: the width is $COLUMNS (rich alone would take 80, the command 140)
    done = run_placement(
        *plan_args(tmp_path / "out"), "--compare", cwd=tmp_path, env={**os.environ, "COLUMNS": str(columns)}
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= columns
    assert not [line for line in lines if "…" in line], lines
    assert "158.40" in _tokens(lines) and "optimal" in _tokens(lines)


def test_a_pipe_without_columns_gets_the_wide_tables(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = run_placement(
        "plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "o", cwd=tmp_path, env=env
    )
    assert done.returncode == 0 and any(
        line.startswith("┏") and cell_len(line) > 80 for line in done.stdout.splitlines()
    )


def test_the_planning_spinner_is_for_a_terminal_only(tmp_path):
    done = run_placement("plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "o", cwd=tmp_path)
    assert done.returncode == 0 and "planning" not in done.stderr and "\x1b" not in done.stderr + done.stdout
    code, lines = run_on_terminal(
        [str(PLACEMENT), "plan", "--inventory", str(EDGE_LAB), "--profile", str(IOT), "--out", str(tmp_path / "t")],
        columns=COLUMNS,
        cwd=tmp_path,
    )
    assert code == 0 and any(line.startswith("┏") for line in lines)  # the tables still come, whole
