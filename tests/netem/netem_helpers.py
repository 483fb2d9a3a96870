"""Helpers for the netem tests: the CLI in-process, inventories for namespace "hosts", real TCP transfers.

Namespaces are named ``pn-...``, interfaces ``pn...`` and addresses lie in 10.201.0.0/16 (this area's share).
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from placement.cli import main
from placement.netns import Namespaces, netns_available, ns_exec, run
from support import real_parts

REPO = Path(__file__).resolve().parents[2]
# the shared helpers in tests/support are imported as `support.*` (tests/ is not a package; see tests/ansible)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``placement <args>`` in this process through main(), which maps errors to one line and an exit code."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def write_inventory(path: Path, *, edges: list[dict], server_address: str, server_interface: str | None = None) -> Path:
    """An inventory with one server and the given edge hosts (each dict: name, address, interface, link fields)."""
    hosts = [
        {
            "name": "server",
            "address": server_address,
            "role": "server",
            "cores": 2,
            "memory": "1GiB",
            **({"interface": server_interface} if server_interface else {}),
        }
    ]
    links = []
    for e in edges:
        host = {"name": e["name"], "address": e["address"], "role": "edge", "model": "rpi4b"}
        if e.get("interface") is not None:
            host["interface"] = e["interface"]
        hosts.append(host)
        links.append({"from": e["name"], "to": "server", **e.get("link", {"bandwidth": "20mbit"})})
    doc = {
        "version": 1,
        "name": "netem-test",
        "hosts": hosts,
        "links": links,
        "flink": {"rest_url": "http://127.0.0.1:8081"},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def root_qdisc(interface: str, ns: str | None = None) -> tuple[str, str]:
    out = run(ns_exec(ns, ["tc", "-j", "qdisc", "show", "dev", interface, "root"])).stdout
    q = json.loads(out)[0]
    return q["kind"], q["handle"]


def iperf_transfer(
    server_ns: str | None,
    server_addr: str,
    *,
    client_ns: str | None = None,
    seconds: float | None = None,
    nbytes: int | None = None,
    omit: int = 0,
    port: int = 5201,
    args: tuple[str, ...] = (),
) -> dict:
    """A real TCP transfer client -> server with iperf3 (``args``: more client options, e.g. ``-C cubic`` or ``-u``
    for UDP); returns iperf3's JSON ``end`` section."""
    server = subprocess.Popen(
        ns_exec(server_ns, ["iperf3", "-s", "-1", "-B", server_addr, "-p", str(port)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 5
        argv = ["iperf3", "-c", server_addr, "-p", str(port), "-J"]
        argv += ["-t", str(seconds)] if seconds else ["-n", str(nbytes)]
        if omit:
            argv += ["-O", str(omit)]
        argv += args
        while True:  # the server needs a moment to listen
            proc = subprocess.run(ns_exec(client_ns, argv), capture_output=True, text=True, timeout=60, check=False)
            try:
                report = json.loads(proc.stdout)
            except json.JSONDecodeError:
                report = {"error": proc.stderr.strip() or f"exit {proc.returncode}"}
            # iperf3 3.12 exits 0 even when it could not connect; the JSON carries the error
            if "error" not in report or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "error" not in report, report["error"]
        return report["end"]
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def connect_rtt_ms(addr: str, port: int = 9, samples: int = 7) -> float:
    """The quickest of ``samples`` TCP connects to a closed port, refused: one round trip. A busy machine only adds
    to a sample (the wake-up waits for a CPU), so the quickest is the link's own; a median takes on the load."""
    times = []
    for _ in range(samples):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            t0 = time.perf_counter()
            with contextlib.suppress(ConnectionRefusedError):
                s.connect((addr, port))
            times.append((time.perf_counter() - t0) * 1000)
    return min(times)


_NETEM_PROBE: list[str | None] = []


NETEM_UNKNOWN = "qdisc kind is unknown"  # tc's answer when the kernel has no sch_netem: a kernel-level fact


def netem_missing_reason() -> str | None:
    """Probe the kernel for sch_netem for real, on a veth of our own: None when it works, else tc's complaint.

    Only tc's "unknown qdisc kind" answer is the kernel fact; a probe that cannot run (no namespaces) or fails
    otherwise is a missing real part (support/real_parts.py: a failure under strict mode)."""
    if not _NETEM_PROBE:
        real_parts.require(netns_available())
        with Namespaces("pn-probe") as nets:
            pair = nets.add("p", "10.201.250.1", "10.201.250.2")
            proc = run(["tc", "qdisc", "add", "dev", pair.host_if, "root", "netem", "delay", "1ms"], check=False)
        if proc.returncode != 0 and NETEM_UNKNOWN not in proc.stderr:
            real_parts.missing(f"tc cannot probe for netem: {proc.stderr.strip()}")
        _NETEM_PROBE.append(None if proc.returncode == 0 else f"kernel has no netem qdisc: {proc.stderr.strip()}")
    return _NETEM_PROBE[0]


_RECEIVER = """
import socket, sys
srv = socket.create_server((sys.argv[1], int(sys.argv[2])))
conn, _ = srv.accept()
total = 0
while chunk := conn.recv(1 << 16):
    total += len(chunk)
print(total, flush=True)
"""


def socket_transfer(server_ns: str | None, server_addr: str, nbytes: int, *, port: int = 5301) -> int:
    """Send exactly ``nbytes`` over one TCP connection to a receiver in ``server_ns``; returns what it received."""
    receiver = subprocess.Popen(
        ns_exec(server_ns, [sys.executable, "-c", _RECEIVER, server_addr, str(port)]), stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                sock = socket.create_connection((server_addr, port), timeout=30)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        with sock:
            block = b"x" * (1 << 16)
            left = nbytes
            while left:
                left -= sock.send(block[: min(left, len(block))])
            sock.shutdown(socket.SHUT_WR)
        out, _ = receiver.communicate(timeout=60)
        return int(out.strip())
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
