"""``apply --dry-run``'s diff against what runs (issue 46, item 12): each subtask the plan moves, from where to where,
the unchanged ones counted. The running placement is read through the FlinkPort by preflight's own ``observe``,
here from the in-memory ``FakeFlinkRest`` (hosts are this machine, by ``LocalExecutor``); the same read against a
real Flink is held by tests/apply/test_apply_vanilla.py's dry run."""

from __future__ import annotations

from pathlib import Path

import yaml

from placement.apply import presumed_view
from placement.apply.diff import placement_diff
from placement.apply.planner import plan_apply
from placement.apply.preflight import observe
from placement.apply.request import load_request
from placement.cli.apply_cmd import MOVES_SHOWN, diff_lines
from placement.remote import LocalExecutor
from support.fake_flink import FakeFlinkRest
from support.plan_dirs import write_plan_dir

JOB = "diffed"
RUNNING = {"Source: S": ["rpi1", "rpi1"], "Map": ["rpi1", "server"], "Sink: K": ["server"]}


def inventory(tmp: Path, mode: str) -> Path:
    doc = {
        "version": 1,
        "name": "diff",
        "hosts": [
            {"name": "server", "address": "10.205.0.1", "role": "server", "cores": 4, "memory": "4GiB"},
            {"name": "rpi1", "address": "10.205.0.2", "role": "edge", "model": "rpi4b"},
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {
            "rest_url": "http://fake-flink:8081",
            "home": str(tmp / "flink-home"),
            "placement_mode": mode,
            "savepoint_dir": f"file://{tmp / 'savepoints'}",
        },
        "job": {"name": JOB, "entry_class": "Main", "program_args": []},
    }
    path = tmp / f"inventory-{mode}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def read(tmp_path: Path, mode: str, planned: dict[str, list[str]]):
    """The request for ``planned`` and the view preflight reads of a cluster running ``RUNNING``."""
    tmp_path.mkdir(exist_ok=True)
    inv = inventory(tmp_path, mode)
    req = load_request(write_plan_dir(tmp_path / f"plan-{mode}", inv, planned, job=JOB), inv, jar_id="1_job.jar")
    fake = FakeFlinkRest(("server", "rpi1"))
    fake.start(JOB, RUNNING)
    view, _problems = observe(req, fake, {h.name: LocalExecutor(h.name) for h in req.inventory.hosts})
    assert view is not None
    return req, view


def test_custom_mode_lists_each_moved_subtask_and_counts_the_rest(tmp_path):
    planned = {"Source: S": ["rpi1", "rpi1"], "Map": ["server", "server"], "Sink: K": ["server"]}
    req, view = read(tmp_path, "custom", planned)
    diff = placement_diff(req, view)
    assert diff is not None
    assert [m.line() for m in diff.moves] == ["~ Map[0]: rpi1 -> server"]
    assert diff.summary() == "subtasks: 1 to move, 4 unchanged"


def test_a_plan_that_changes_parallelism_adds_and_removes_subtasks(tmp_path):
    more = {"Source: S": ["rpi1", "rpi1"], "Map": ["rpi1", "rpi1", "server"], "Sink: K": ["server"]}
    req, view = read(tmp_path / "more", "custom", more)
    diff = placement_diff(req, view)
    assert diff is not None
    assert [m.line() for m in diff.moves] == ["~ Map[1]: server -> rpi1", "+ Map[2]: -> server (a new subtask)"]
    assert diff.summary() == "subtasks: 1 to move, 1 to add, 4 unchanged"
    fewer = {"Source: S": ["rpi1", "rpi1"], "Map": ["rpi1"], "Sink: K": ["server"]}
    req, view = read(tmp_path / "fewer", "custom", fewer)
    diff = placement_diff(req, view)
    assert diff is not None and [m.line() for m in diff.moves] == ["- Map[1]: server -> (removed)"]
    assert diff.summary() == "subtasks: 1 to remove, 4 unchanged"


def test_vanilla_mode_compares_each_vertexs_hosts_as_counts(tmp_path):
    planned = {"Source: S": ["rpi1", "rpi1"], "Map": ["server", "server"], "Sink: K": ["server"]}
    req, view = read(tmp_path, "vanilla", planned)
    diff = placement_diff(req, view)
    assert diff is not None
    assert [m.line() for m in diff.moves] == ["~ Map: rpi1, server -> server ×2"]
    assert diff.summary() == "subtasks: 1 to move, 4 unchanged"


def test_a_plan_in_effect_moves_nothing(tmp_path):
    req, view = read(tmp_path, "custom", RUNNING)
    diff = placement_diff(req, view)
    assert diff is not None and diff.moves == ()
    assert diff.summary() == "nothing moves: all 5 subtasks run where the plan puts them"


def test_the_dry_run_lines_and_a_cluster_not_read(tmp_path):
    planned = {"Source: S": ["rpi1", "rpi1"], "Map": ["server", "server"], "Sink: K": ["server"]}
    req, view = read(tmp_path, "custom", planned)
    assert diff_lines(req, view) == [
        "placement against the running job:",
        "  ~ Map[0]: rpi1 -> server",
        "  subtasks: 1 to move, 4 unchanged",
    ]
    presumed = presumed_view(req)
    assert placement_diff(req, presumed) is None
    assert diff_lines(req, presumed) == ["placement against the running job: unknown, the cluster could not be read"]
    assert "the running placement differs from the plan" not in plan_apply(req, presumed, holder="t").notes


def test_a_long_diff_lists_the_first_moves_and_counts_the_others(tmp_path):
    n = MOVES_SHOWN + 5
    inv = inventory(tmp_path, "custom")
    req = load_request(write_plan_dir(tmp_path / "wide", inv, {"Map": ["server"] * n}, job=JOB), inv, jar_id="1_j")
    fake = FakeFlinkRest(("server", "rpi1"))
    fake.start(JOB, {"Map": ["rpi1"] * n})
    view, _ = observe(req, fake, {h.name: LocalExecutor(h.name) for h in req.inventory.hosts})
    assert view is not None
    lines = diff_lines(req, view)
    assert len(lines) == 1 + MOVES_SHOWN + 2
    assert lines[-2] == "  … and 5 more" and lines[-1] == f"  subtasks: {n} to move, 0 unchanged"
