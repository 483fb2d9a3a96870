"""Bad input through the real CLI entry point: one line naming file and field, exit 2, nothing changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from netem_helpers import REPO, run_cli, write_inventory


def _inv(tmp_path: Path, **link: str) -> Path:
    return write_inventory(
        tmp_path / "inv.yaml",
        server_address="10.201.3.2",
        edges=[
            {
                "name": "edge1",
                "address": "10.201.3.1",
                "interface": "pnnosuch0",
                "link": {"bandwidth": "20mbit", **link},
            }
        ],
    )


def _assert_one_line_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err + out
    for fragment in fragments:
        assert fragment in lines[0]


def test_unknown_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inv(tmp_path)
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--host", "rpi9", "--local")
    _assert_one_line_error(code, out, err, f"{inv}: --host: unknown host 'rpi9' (hosts: server, edge1)")


def test_unknown_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inv(tmp_path)
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--profile", "5g-dream", "--local")
    _assert_one_line_error(code, out, err, "--profile: unknown WAN profile '5g-dream' (known: 3g, constrained-5mbit")


def test_bandwidth_fast(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inv(tmp_path, bandwidth="fast")
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--local")
    _assert_one_line_error(code, out, err, f"{inv}: links[0].bandwidth: 'fast' is not a rate like '50mbit'")


def test_negative_delay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inv(tmp_path, delay="-20ms")
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--local")
    _assert_one_line_error(code, out, err, f"{inv}: links[0].delay:")


def test_interface_not_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = write_inventory(
        tmp_path / "inv.yaml",
        server_address="10.201.3.2",
        edges=[{"name": "edge1", "address": "10.201.3.1", "interface": None}],
    )
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--local")
    _assert_one_line_error(code, out, err, f"{inv}: hosts[1].interface: host 'edge1' has no 'interface'")


def test_interface_missing_on_the_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # runs `ip link show dev pnnosuch0` here for real: no root needed, and nothing exists to change
    inv = _inv(tmp_path)
    for sub in ("apply", "show", "clear"):
        code, out, err = run_cli(capsys, "netem", sub, "--inventory", str(inv), "--local")
        _assert_one_line_error(code, out, err, f"{inv}: hosts[1].interface: edge1: no interface 'pnnosuch0'")


def test_missing_inventory_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "netem", "show", "--inventory", str(tmp_path / "none.yaml"))
    _assert_one_line_error(code, out, err, "none.yaml: file not found")


def test_installed_entry_point_maps_errors_to_exit_2(tmp_path: Path) -> None:
    inv = _inv(tmp_path, bandwidth="fast")
    exe = Path(sys.executable).with_name("placement")
    proc = subprocess.run(
        [str(exe), "netem", "apply", "--inventory", str(inv)], capture_output=True, text=True, timeout=60, check=False
    )
    _assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, "links[0].bandwidth")


def test_dry_run_prints_commands_and_touches_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "netem",
        "apply",
        "--inventory",
        str(REPO / "inventory" / "edge-lab.yaml"),
        "--dry-run",
        "--host",
        "rpi1",
        "--profile",
        "satellite",
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "rpi1: tc qdisc add dev eth0 root handle ede: htb default 0"
    assert (
        "rpi1: tc qdisc add dev eth0 parent ede:10 handle 10: netem limit 1000 delay 300ms 10ms 25% loss 0.5% 25%"
        in lines
    )
    assert (
        lines[-1]
        == "rpi1 eth0: would shape → 192.168.1.180 10 Mbit/s, delay 300 ms ± 10 ms, loss 0.5%, correlation 25%"
    )


def test_a_bandwidth_in_bytes_per_second_is_warned_as_plan_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tc's ``mbps`` is megabytes: ``plan`` warned, ``netem`` shaped 400 Mbit/s without a word (issue 46, item 9)."""
    import yaml

    doc = yaml.safe_load((REPO / "inventory" / "edge-lab.yaml").read_text())
    doc["links"][0]["bandwidth"] = "50mbps"
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    said = (
        f"warning: {inv}: links[0].bandwidth: '50mbps' is in tc's bytes per second (400 Mbit/s); write '50mbit' "
        "for megabits\n"
    )
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv), "--dry-run", "--host", "rpi1")
    assert code == 0, err
    assert err == said and "rate 400mbit" in out
    code, _, err = run_cli(
        capsys,
        "plan",
        "--inventory",
        str(inv),
        "--profile",
        str(REPO / "examples" / "profiles" / "iot-sensors.json"),
        "--out",
        str(tmp_path / "plan"),
    )
    assert code == 0 and said in err
    code, _, err = run_cli(
        capsys, "netem", "apply", "--inventory", str(inv), "--dry-run", "--host", "rpi1", "--profile", "lte"
    )
    assert code == 0 and "warning" not in err  # the profile's figures are shaped, not the link's
