"""``placement watch`` bad input (one line, exit 2, nothing started) and the loop's pure helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement.cli import main
from placement.watch.loop import moves
from placement.watch.signals import Window, demand_scale

REPO = Path(__file__).resolve().parents[2]
INVENTORY = str(REPO / "inventory" / "lab.yaml")


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.mark.parametrize(("args", "message"), [
    (["--window", "1000"], "error: --window: the window (1000 s) must fit in the kept history (900 s)"),
    (["--flush", "60"], "error: --flush: a part is flushed every 60 s: the window (90 s) needs at least two"),
    (["--interval", "0"], "error: --interval: must be > 0"),
    (["--min-gain", "1.5"], "min_gain must be in [0, 1)"),
    (["--reprice-change", "0"], "rate_change and reprice_change must be > 0"),
    (["--apply", "ask"], "error: --apply: --apply ask needs a terminal to ask on"),
])
def test_bad_options_are_one_line_and_start_nothing(args, message, capsys, tmp_path):
    code, _, err = run(["watch", "--inventory", INVENTORY, "--job-name", "j", "--work-dir", str(tmp_path / "w"),
                          *args], capsys)
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "w").exists()


def test_a_missing_inventory_names_the_file(capsys, tmp_path):
    code, _, err = run(["watch", "--inventory", str(tmp_path / "nope.yaml"), "--job-name", "j"], capsys)
    assert code == 2 and "nope.yaml" in err and len(err.strip().splitlines()) == 1


def test_moves_and_demand_scale():
    running = {("a", 0): "rpi1", ("b", 0): "server", ("b", 1): "server"}
    assert moves(running, running) == 0
    assert moves({("a", 0): "rpi1", ("b", 0): "rpi1", ("b", 1): "server"}, running) == 1
    assert moves({("a", 0): "rpi1", ("b", 0): "server"}, running) == 1  # a subtask fewer (a rescaled plan)
    assert moves(running, None) == 3
    w = Window(0, 1, "j", {"Src": 100.0}, {"Src": 500.0, "Map": 900.0})
    assert demand_scale(w, 4.0) == pytest.approx(2.0)  # the source is held back half of the time
    assert demand_scale(Window(0, 1, "j", {"Src": 100.0}, {"Src": 200.0}), 4.0) == pytest.approx(1.25)
    assert demand_scale(Window(0, 1, "j", {"Src": 100.0}, {"Src": 990.0}), 4.0) == 4.0  # capped
    assert demand_scale(Window(0, 1, "j", {"Src": 100.0}, {}), 4.0) == 1.0
    # a step the 60 s meters have not caught up with: the counter over the last tick says 2.5x
    stepped = Window(0, 1, "j", {"Src": 100.0, "Other": 50.0}, {}, fresh_source_rates={"Src": 250.0, "Other": 40.0})
    assert demand_scale(stepped, 4.0) == pytest.approx(2.5)
    assert stepped.rates_now() == {"Src": 250.0, "Other": 40.0}


def test_the_planner_is_placement_plan_itself(tmp_path):
    """watch re-plans through the `placement plan` command (--json): its plan dir, WAN, links and busiest resource."""
    from placement.cli.watch_cmd import plan_command
    from placement.writers.planjson import load_plan

    plan = plan_command(REPO / "inventory" / "edge-lab.yaml", rescale=False)
    out = plan(REPO / "examples" / "profiles" / "iot-sensors.json", tmp_path / "p", 1.0)
    doc = load_plan(tmp_path / "p")
    assert out.fits and out.wan_mbit == pytest.approx(sum(link.mbit for link in doc.links))
    assert out.assignment == {(a.vertex_id, a.subtask): a.host for a in doc.assignment}
    assert 0 < out.peak < 1 and (tmp_path / "p" / "schedulercfg").is_file()
    tight = plan(REPO / "examples" / "profiles" / "iot-sensors.json", tmp_path / "q", 50.0)  # 50x the load
    assert not tight.fits and tight.wan_mbit is None  # the first thing short at 50×: a thread that cannot keep up
    assert any("cannot keep up on" in v and "one thread would need" in v for v in tight.violations)


def test_watch_rescale_plans_parallelism_through_placement_plan_rescale(tmp_path):
    """``watch --rescale`` re-plans with ``placement plan --rescale``: the plan it would apply records the parallelism
    it changes (the IoT example's Window Aggregate keeps up with one instance: 2 -> 1), and the moves it counts against
    the running placement include the subtask that goes away."""
    from placement.cli.watch_cmd import plan_command
    from placement.writers.planjson import load_plan

    profile = REPO / "examples" / "profiles" / "iot-sensors.json"
    out = plan_command(REPO / "inventory" / "edge-lab.yaml", rescale=True)(profile, tmp_path / "r", 1.0)
    same = plan_command(REPO / "inventory" / "edge-lab.yaml", rescale=False)(profile, tmp_path / "s", 1.0)
    doc = load_plan(tmp_path / "r")
    assert out.fits and doc.rescale is not None and doc.rescale.changed == {"Window Aggregate": [2, 1]}
    assert [a.vertex for a in load_plan(tmp_path / "s").assignment].count("Window Aggregate") == 2
    window = {(a.vertex_id, a.subtask) for a in doc.assignment if a.vertex == "Window Aggregate"}
    assert window == {k for k in out.assignment if k[0] == next(iter(window))[0]} and len(window) == 1
    assert moves(out.assignment, same.assignment) >= 1  # at least the Window Aggregate subtask that goes away
