"""Holding SIGINT back over a few steps that must happen together (a Ctrl-C is delivered right after them)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_held_back() -> Iterator[None]:
    """Block SIGINT at the OS level for the ``with`` body; one that arrives meanwhile is delivered at its end, so the
    KeyboardInterrupt is raised after the body, never inside it. Only the main thread receives it in Python."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
