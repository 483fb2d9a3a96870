"""`placement lab` refuses bad input and missing privileges in one line, without starting anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from support import real_parts

ROOT = Path(__file__).resolve().parents[2]
PLACEMENT = str(Path(sys.executable).with_name("placement"))


def run(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, PLACEMENT, *args], check=False, capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_a_bad_inventory_field_is_one_line_naming_file_and_field_exit_2(tmp_path):
    bad = tmp_path / "lab.yaml"
    bad.write_text((ROOT / "inventory" / "lab.yaml").read_text().replace("bandwidth: 2mbit}", "bandwidth: fast}", 1))
    proc = run("lab", "up", "--inventory", str(bad), "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and f"{bad}: links[0].bandwidth" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "w").exists()


def test_a_missing_inventory_file_is_exit_2(tmp_path):
    proc = run("lab", "up", "--inventory", str(tmp_path / "nope.yaml"), "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 2 and proc.stderr.startswith(
        f"error: {tmp_path / 'nope.yaml'}: --inventory: no such file"
    )


def test_an_unsupported_flink_version_or_line_is_one_line_exit_2(tmp_path):
    lab = str(ROOT / "inventory" / "lab.yaml")
    for given, message in (
        ("1.18", "error: --flink-version: Flink 1.18 is not supported (supported: 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)\n"),
        (
            "1.18.1",
            "error: --flink-version: Flink 1.18.1 is not supported (supported: 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)\n",
        ),
    ):
        proc = run("lab", "up", "--inventory", lab, "--workdir", str(tmp_path / "w"), "--flink-version", given)
        assert (proc.returncode, proc.stderr) == (2, message)
        assert not (tmp_path / "w").exists()


def test_two_servers_are_refused_by_lab_up(tmp_path):
    inv = tmp_path / "two.yaml"
    text = (ROOT / "inventory" / "lab.yaml").read_text()
    inv.write_text(
        text.replace(
            "hosts:\n", "hosts:\n  - {name: server2, address: 10.203.0.9, role: server, cores: 1, memory: 1GiB}\n", 1
        )
    )
    proc = run("lab", "up", "--inventory", str(inv), "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 2 and "hosts: the lab runs exactly one server host, the inventory has 2" in proc.stderr


@real_parts.needs(
    "needs root to drop to nobody"
    if os.geteuid() != 0
    else None
    if shutil.which("setpriv")
    else "needs setpriv (util-linux) to drop to nobody"
)
def test_without_root_lab_up_says_so_in_one_line_and_exits_non_zero(tmp_path):
    work = tmp_path / "w"
    tmp_path.chmod(0o777)
    proc = run(
        "lab",
        "up",
        "--inventory",
        str(ROOT / "inventory" / "lab.yaml"),
        "--workdir",
        str(work),
        prefix=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"),
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "error: placement lab needs root and network namespaces: network namespaces need root\n"
    assert not work.exists()


def test_status_and_measure_without_a_lab_say_so(tmp_path):
    status = run("lab", "status", "--workdir", str(tmp_path))
    assert status.returncode == 1 and status.stdout.startswith(f"no lab in {tmp_path}")
    measure = run("lab", "measure", "--workdir", str(tmp_path), "--duration", "1")
    assert measure.returncode == 1
    assert measure.stderr == f"error: no lab is up in {tmp_path} (run `placement lab up --inventory FILE`)\n"
