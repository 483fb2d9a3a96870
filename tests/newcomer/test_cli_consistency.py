"""One CLI, one way (issue 26, consistency list): every option described, the same exit codes section and examples
in every help, "did you mean" for a mistyped command, one spelling of --work-dir (the old one still parsed), URLs
without a scheme named as the option's bad value, JSON that keeps "→", help that cites no repository path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
import yaml

from placement.cli import cli
from placement.cli.epilog import EXIT_CODES
from support.cli import EDGE_LAB, one_line_error, plan_args, run_placement, unreachable_edge_lab


def _commands(command=cli, path=(), parent=None):
    ctx = click.Context(command, info_name=path[-1] if path else "placement", parent=parent)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            yield from _commands(command.get_command(ctx, name), (*path, name), ctx)


COMMANDS = list(_commands())


def test_the_walk_sees_every_command():
    assert {" ".join(p) for p, _, _ in COMMANDS} >= {
        "",
        "plan",
        "apply",
        "lab status",
        "metrics collect",
        "watch",
        "scheduler taskmanagers",
        "inventory ansible",
    }


@pytest.mark.parametrize("path, command, ctx", COMMANDS, ids=[" ".join(p) or "placement" for p, _, _ in COMMANDS])
def test_every_help_describes_every_option_and_ends_with_the_exit_codes(path, command, ctx):
    undescribed = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert undescribed == []
    text = " ".join(command.get_help(ctx).split())
    assert text.endswith(" ".join(EXIT_CODES.split()))
    # a pip user has no repository: folders are named through `placement examples` (its own --copy names them)
    if path != ("examples",):
        assert re.findall(r"(?<![\w/])(?:inventory|examples|deploy|netem|scheduler|ansible)/", text) == []


@pytest.mark.parametrize("command", ["", "plan", "apply", "profile", "inventory validate", "metrics collect"])
def test_the_main_commands_show_examples(command):
    _, cmd, ctx = next(c for c in COMMANDS if " ".join(c[0]) == command)
    assert "Examples:" in cmd.get_help(ctx) and "placement " in cmd.get_help(ctx).split("Examples:")[1]


def test_a_mistyped_command_gets_did_you_mean(tmp_path):
    done = run_placement("pln", cwd=tmp_path)
    assert done.returncode == 2
    assert "No such command 'pln'. Did you mean 'plan'?" in one_line_error(done)


def test_a_mistyped_option_gets_did_you_mean(tmp_path):
    done = run_placement("plan", "--inventroy", "x.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "--inventroy" in one_line_error(done) and "--inventory" in done.stderr


def test_work_dir_is_one_spelling_and_the_old_one_still_parses():
    lab = cli.get_command(click.Context(cli), "lab")
    lab_ctx = lab.make_context("lab", ["status"])
    status = lab.get_command(lab_ctx, "status")
    for spelling in ("--work-dir", "--workdir"):
        assert status.make_context("status", [spelling, "/tmp/x"], parent=lab_ctx).params["work_dir"] == Path("/tmp/x")
    help_text = status.get_help(status.make_context("status", [], parent=lab_ctx))
    assert "--work-dir" in help_text and "--workdir" not in help_text
    watch = cli.get_command(click.Context(cli), "watch")
    assert any("--work-dir" in p.opts for p in watch.params)


def test_a_url_without_a_scheme_names_the_option(tmp_path):
    done = run_placement(
        "metrics", "collect", "--rest", "127.0.0.1:59999", "--job", "x", "--out", tmp_path / "m", cwd=tmp_path
    )
    assert done.returncode == 2
    assert (
        "'--rest': '127.0.0.1:59999' is not an http(s) URL; did you mean 'http://127.0.0.1:59999'?"
        in one_line_error(done)
    )
    assert not (tmp_path / "m").exists()


def test_plan_json_keeps_arrows_and_quiet_prints_nothing(tmp_path):
    done = run_placement(*plan_args(tmp_path / "plan"), "--json", cwd=tmp_path)
    assert "rpi1→server" in done.stdout and "\\u2192" not in done.stdout
    assert "\\u2192" not in (tmp_path / "plan" / "plan.json").read_text(encoding="utf-8")
    quiet = run_placement(*plan_args(tmp_path / "quiet"), "--quiet", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert json.loads((tmp_path / "quiet" / "plan.json").read_text(encoding="utf-8"))["job"] == "iot-sensors"


def test_job_means_the_same_in_profile_as_in_collect_and_apply(tmp_path):
    """--job ID / --job-name NAME, as metrics collect and apply spell them."""
    history = Path(__file__).resolve().parents[2] / "examples" / "metrics" / "iot-sensors"
    by_name = run_placement(
        "profile",
        history,
        "--out",
        tmp_path / "p.json",
        "--job-name",
        "iot-sensors",
        "--engine",
        "pandas",
        "--quiet",
        cwd=tmp_path,
    )
    assert by_name.returncode == 0, by_name.stderr
    assert json.loads((tmp_path / "p.json").read_text())["job"]["name"] == "iot-sensors"
    both = run_placement(
        "profile",
        history,
        "--out",
        tmp_path / "q.json",
        "--job",
        "x",
        "--job-name",
        "iot-sensors",
        "--engine",
        "pandas",
        cwd=tmp_path,
    )
    assert both.returncode == 2 and "--job: give --job ID or --job-name NAME, not both" in one_line_error(both)


def test_metrics_collect_says_at_once_that_nothing_answers(tmp_path):
    """A JobManager that is not there is asked once, not through 15 s of retries: a real socket that hangs up on
    every connection counts them."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    accepted, stop = [], threading.Event()

    def hang_up() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        done = run_placement(
            "metrics",
            "collect",
            "--rest",
            f"http://127.0.0.1:{server.getsockname()[1]}",
            "--job-name",
            "x",
            "--duration",
            "5",
            "--out",
            tmp_path / "m",
            cwd=tmp_path,
            timeout=120,
        )
    finally:
        stop.set()
        thread.join()
        server.close()
    assert done.returncode == 1
    assert "cannot reach the JobManager" in one_line_error(done)
    assert len(accepted) == 1
    assert not (tmp_path / "m").exists()


def test_watch_keeps_to_its_duration_and_fails_when_it_never_saw_the_job(tmp_path):
    doc = yaml.safe_load(EDGE_LAB.read_text())
    doc["flink"]["rest_url"] = "http://127.0.0.1:1"  # nothing listens there
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(yaml.safe_dump(doc))
    done = run_placement(
        "watch",
        "--inventory",
        inventory,
        "--job-name",
        "iot-sensors",
        "--duration",
        "1",
        "--engine",
        "pandas",
        "--work-dir",
        tmp_path / "w",
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("error: the watch never saw job 'iot-sensors': ")
    decisions = (tmp_path / "w" / "decisions.jsonl").read_text().splitlines()
    assert len(decisions) == 1  # one decision at the end of --duration 1, not after the 30 s interval


def _option(command: click.Command, name: str) -> click.Option | None:
    return next((p for p in command.params if isinstance(p, click.Option) and name in p.opts), None)


WITH_JSON = [(" ".join(p), c) for p, c, _ in COMMANDS if _option(c, "--json") is not None]


def test_the_walk_sees_every_command_with_json():
    assert {name for name, _ in WITH_JSON} >= {"plan", "show", "apply", "profile", "metrics collect", "lab status"}


@pytest.mark.parametrize("name, command", WITH_JSON, ids=[name for name, _ in WITH_JSON])
def test_every_command_with_json_has_quiet_spelled_alike(name, command):
    """--json and -q/--quiet from the same helpers (placement.cli.params): one spelling, one parameter name."""
    as_json, quiet = _option(command, "--json"), _option(command, "--quiet")
    assert as_json is not None and as_json.name == "as_json" and as_json.is_flag
    assert quiet is not None, f"{name} has --json but no --quiet"
    assert sorted(quiet.opts) == ["--quiet", "-q"] and quiet.name == "quiet" and quiet.is_flag


def test_quiet_is_spelled_alike_wherever_it_is():
    quiet = [(" ".join(p), _option(c, "--quiet")) for p, c, _ in COMMANDS if _option(c, "--quiet") is not None]
    assert {name for name, _ in quiet} >= {"plan", "apply", "watch", "netem apply", "lab up", "inventory validate"}
    assert [name for name, q in quiet if q is None or sorted(q.opts) != ["--quiet", "-q"]] == []


# What prints each --json document offline (the others are held to their format where a cluster runs them:
# metrics collect in tests/collect, lab measure in tests/lab, netem show in tests/netem, scheduler build in
# tests/scheduler). inventory validate's document is the inventory itself: it loads as one, so it has no format.
OFFLINE_JSON = {
    "plan": lambda tmp: plan_args(tmp / "plan"),
    "show": lambda tmp: ["show", _planned(tmp)],
    "apply": lambda tmp: ["apply", _planned(tmp), "--inventory", unreachable_edge_lab(tmp), "--dry-run"],
    "profile": lambda tmp: [
        "profile",
        HISTORY,
        "--out",
        tmp / "p.json",
        "--job-name",
        "iot-sensors",
        "--engine",
        "pandas",
    ],
    "lab status": lambda tmp: ["lab", "status", "--work-dir", tmp / "no-lab"],
    "scheduler status": lambda tmp: ["scheduler", "status"],
}
ELSEWHERE = {"metrics collect", "lab measure", "netem show", "scheduler build", "inventory validate"}
HISTORY = Path(__file__).resolve().parents[2] / "examples" / "metrics" / "iot-sensors"


def _planned(tmp: Path) -> Path:
    done = run_placement(*plan_args(tmp / "planned", unreachable_edge_lab(tmp)), "-q", cwd=tmp)
    assert done.returncode == 0, done.stderr
    return tmp / "planned"


def test_every_json_document_is_held_to_a_versioned_format_somewhere():
    assert {name for name, _ in WITH_JSON} == set(OFFLINE_JSON) | ELSEWHERE


@pytest.mark.parametrize("name", sorted(OFFLINE_JSON))
def test_every_json_document_says_its_versioned_format_first(name, tmp_path):
    done = run_placement(*OFFLINE_JSON[name](tmp_path), "--json", cwd=tmp_path, timeout=180)
    doc = json.loads(done.stdout)  # the whole of stdout, whatever the exit code
    assert "Traceback" not in done.stderr
    assert next(iter(doc)) == "format" and re.fullmatch(r"placement\.[a-z-]+/v\d+", doc["format"]), doc["format"]


def test_inventory_validate_json_is_an_inventory(tmp_path):
    done = run_placement("inventory", "validate", EDGE_LAB, "--json", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "again.yaml").write_text(done.stdout, encoding="utf-8")  # JSON is YAML
    again = run_placement("inventory", "validate", tmp_path / "again.yaml", "-q", cwd=tmp_path)
    assert (again.returncode, again.stdout) == (0, f"{tmp_path / 'again.yaml'}: edge-lab — valid\n"), again.stderr
