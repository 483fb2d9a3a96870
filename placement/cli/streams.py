"""stdout that cannot end a command: what it prints is the least of what it does.

``placement plan … | head -1`` closes the pipe after one line; ``>&-`` leaves no stdout at all; ``>/dev/full`` fails
every flush. A write that fails there must not stop the command half-way (a plan not written, a network half
shaped): :func:`guarded` puts a :class:`Guarded` stream in ``sys.stdout`` (and ``sys.stderr``) for the command's run.
A failed write is remembered, fd 1 is pointed at ``/dev/null`` (so Python's own final flush and any child process
write nowhere instead of failing too) and the command goes on. :func:`placement.cli.main` then says what was lost:

* the reader went away (``EPIPE``: ``| head``, ``| grep -q``): nothing said, exit 141 as ``git log | head`` (128 +
  SIGPIPE) — the reader chose to stop, the command's files are complete;
* stdout closed or failing (``>&-``, ``/dev/full``, an I/O error): one line on stderr, exit 1 — output was lost.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `git log | head`


class Guarded:
    """A text stream that swallows its stream's write errors, remembering the first in :attr:`lost`."""

    def __init__(self, stream, fd: int | None, closed: bool = False):
        self._stream = stream
        self._fd = fd  # the process's own fd 1 or 2 behind it, pointed at /dev/null once a write fails
        self.closed_at_start = closed
        self.lost: OSError | None = None
        self.wrote = False  # anything at all was to be written (a closed stdout is an error only then)

    def write(self, text: str) -> int:
        if not isinstance(text, str):  # as a text stream does; click tells text from binary streams by it
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self.wrote = True
        if self.lost is None:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._lose(exc)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.lost is None:
            try:
                self._stream.flush()
            except OSError as exc:
                self._lose(exc)

    def isatty(self) -> bool:
        if self.lost is not None or self.closed_at_start:
            return False
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def _lose(self, exc: OSError) -> None:
        self.lost = exc
        if self._fd is not None:
            with contextlib.suppress(OSError):
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self._fd)
                os.close(null)
            with contextlib.suppress(OSError, ValueError):
                self._stream.flush()  # what the stream still holds, now into /dev/null: no error at exit

    @property
    def broken_pipe(self) -> bool:
        return isinstance(self.lost, BrokenPipeError) or getattr(self.lost, "errno", None) == errno.EPIPE

    def problem(self) -> str | None:
        """What to say of the output lost, on one line, or None (nothing lost, or a reader that stopped reading)."""
        if self.closed_at_start:
            return "stdout is closed: the output was lost" if self.wrote else None
        if self.lost is None or self.broken_pipe:
            return None
        return f"stdout: {self.lost.strerror or self.lost}: the output was lost"

    def __getattr__(self, name: str):  # encoding, errors, fileno, buffer, … of the stream behind
        return getattr(self._stream, name)


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def _guard(name: str, fd: int, process: bool) -> Guarded:
    stream = getattr(sys, name)
    closed = stream is None
    if process and not _fd_open(fd):
        # no fd there (`>&-`): /dev/null takes its place, or the next file the command opens would get this number and
        # a child process (graphviz, ssh) would write its output into it
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        closed = True
    if closed:
        stream = io.TextIOWrapper(open(os.devnull, "wb"), encoding="utf-8")  # noqa: SIM115 (lives with the process)
    own_fd = None
    if process:
        with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
            own_fd = fd if stream.fileno() == fd else None
    return Guarded(stream, own_fd, closed=closed)


@contextlib.contextmanager
def guarded(process: bool) -> Iterator[Guarded]:
    """``sys.stdout`` and ``sys.stderr`` guarded while the block runs; yields stdout's guard. ``process``: this is the
    ``placement`` process itself, whose fds 1 and 2 may be repaired (not a test calling ``main([...])``)."""
    saved = sys.stdout, sys.stderr
    out, err = _guard("stdout", 1, process), _guard("stderr", 2, process)
    sys.stdout, sys.stderr = out, err
    try:
        yield out
    finally:
        out.flush()
        err.flush()
        if not process:  # in the process itself the guards stay: the interpreter's last flush goes through them
            sys.stdout, sys.stderr = saved
