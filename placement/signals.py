"""Holding SIGINT back over a few steps that must happen together (a Ctrl-C is acted on right after them)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def sigint_held_back() -> Iterator[None]:
    """A Ctrl-C during the ``with`` body is recorded and acted on at its end (by the handler that was in place), so
    the KeyboardInterrupt is raised after the body, never inside it. A Python-level handler, not a signal mask: the
    mask blocks the calling thread only, and a solver's native threads would take the signal instead."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and callable(previous):
        previous(signal.SIGINT, None)
