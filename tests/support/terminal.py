"""Running a command on a real pseudo-terminal of a given width, as a user at a small terminal sees it.

rich and click ask the terminal for its size (TIOCGWINSZ) and whether stdout is one (isatty); a pipe answers neither
like a terminal does, so width handling is only tested for real through a pty.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import time

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_on_terminal(
    argv: list[str],
    *,
    columns: int = 80,
    rows: int = 50,
    cwd=None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> tuple[int, list[str]]:
    """(exit status, the lines the terminal shows, colours stripped) of ``argv`` run with a pty as its stdout and
    stderr."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    environment = {**os.environ, **(env or {}), "TERM": "xterm"}
    for name in ("COLUMNS", "LINES"):  # the terminal's own size, not an inherited override
        environment.pop(name, None)
    process = subprocess.Popen(
        argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=environment, close_fds=True
    )
    os.close(follower)
    chunks = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
        if time.monotonic() > deadline:
            process.kill()
            raise TimeoutError(argv)
    os.close(leader)
    code = process.wait(timeout=30)
    text = ANSI.sub("", b"".join(chunks).decode("utf-8", errors="replace"))
    # a carriage return redraws the line (rich's spinner): what stays on screen is what came after the last one
    return code, [line.split("\r")[-1] for line in text.replace("\r\n", "\n").split("\n")]
