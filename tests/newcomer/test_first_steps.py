"""What a newcomer does first, on a fresh clone: the README's commands, `make demo` and its picture, and the messages
of the first mistakes (a closed port, an output folder that does not exist yet)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import click
import pytest
import yaml

from placement.cli import cli, main
from support import real_parts

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    return exit_info.value.code, *capsys.readouterr()


def _code(markdown: str) -> list[str]:
    """The text of every fenced block and inline code span."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", markdown, flags=re.S)
    rest = re.sub(r"```.*?```", "", markdown, flags=re.S)
    return blocks + re.findall(r"`([^`\n]+)`", rest)


def test_readme_calls_placement_one_way_and_every_command_exists():
    assert ".venv/bin/placement" not in README
    assert "source .venv/bin/activate" in README  # said once: how `placement` gets on the PATH
    ctx = click.Context(cli)
    calls = [
        m
        for code in _code(README)
        for m in re.finditer(r'(?m)^(?:sudo env "PATH=\$PATH" )?placement ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?', code)
    ]
    assert len(calls) > 15
    for call in calls:
        command = cli.get_command(ctx, call.group(1))
        assert command is not None, call.group(0)
        if isinstance(command, click.Group) and call.group(2):  # `placement netem` alone names the group
            assert call.group(2) in command.commands, call.group(0)


def _path_without(tool: str, tmp_path: Path) -> str:
    """A PATH that has every program of this one but ``tool``."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            if entry.name != tool and not (farm / entry.name).exists():
                (farm / entry.name).symlink_to(entry.path)
    return str(farm)


def test_setup_for_the_demo_brings_graphviz(tmp_path):
    bare = _path_without("dot", tmp_path)
    check = subprocess.run(
        [REPO / "scripts" / "setup.sh", "--check"],
        env={**os.environ, "PATH": bare},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0 and check.stdout.strip() == "missing Debian packages: graphviz"
    full = subprocess.run(
        [REPO / "scripts" / "setup.sh", "--check", "--full"],
        env={**os.environ, "PATH": bare},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "graphviz" in full.stdout.split()


def test_make_demo_draws_the_plan(tmp_path):
    real_parts.require(None if shutil.which("dot") else "Graphviz's dot is missing (apt-get install graphviz)")
    done = subprocess.run(
        ["make", "-s", "-C", REPO, "demo", f"OUT={tmp_path}"], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    plan = tmp_path / "iot-sensors"
    assert (plan / "plan.svg").read_text().count("Mbit/s") >= 3  # one label per uplink the plan uses
    assert (plan / "plan.png").read_bytes().startswith(b"\x89PNG")
    assert "Strategies compared" in done.stdout and "pins name no vertex" not in done.stdout  # no puzzling pin note


def test_metrics_collect_against_a_closed_port_says_why_in_whole_words(tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run(
        [
            "metrics",
            "collect",
            "--rest",
            f"http://127.0.0.1:{port}",
            "--job-name",
            "x",
            "--duration",
            "1",
            "--out",
            tmp_path / "m",
        ],
        capsys,
    )
    assert code == 1 and err.count("\n") == 1
    assert err == (
        f"error: Flink REST GET http://127.0.0.1:{port}/jobs/overview: cannot reach the JobManager "
        f"(ConnectionError: Connection refused)\n"
    )


def test_inventory_ansible_out_makes_its_folder(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "hosts.yml"
    code, _, err = run(["inventory", "ansible", REPO / "inventory" / "edge-lab.yaml", "--out", out], capsys)
    assert code == 0, err
    assert set(yaml.safe_load(out.read_text())["all"]["children"]) >= {"servers", "edges"}
