"""SSH failures reach the user as one line: no traceback from paramiko's own loggers on stderr.

A "host" whose port accepts TCP and hangs up without an SSH banner (a firewall or a service on the wrong port) made
paramiko log "Error reading SSH protocol banner" with a traceback through Python's last-resort handler, before
apply's one-line refusal. The listener here is real (a TCP socket on this machine); the client runs in a process of
its own so that its stderr is exactly what a user would see.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

SCRIPT = """
import sys
from placement.inventory import SshSettings
from placement.remote import HostUnreachable, SshExecutor

ex = SshExecutor("edge", "127.0.0.1", SshSettings(port=int(sys.argv[1]), known_hosts=sys.argv[2], key=sys.argv[2]),
                 connect_timeout=5)
try:
    ex.run(["true"])
except HostUnreachable as exc:
    print(exc)
"""


def test_a_port_that_hangs_up_without_a_banner_is_one_line_and_no_library_traceback(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def hang_up() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n")
            conn.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    known = tmp_path / "known_hosts"
    known.write_text("")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(port), str(known)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr  # nothing from paramiko's loggers
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edge (127.0.0.1): ssh failed: "), proc.stdout
    assert "banner" in lines[0].lower()
