"""Holding SIGINT back over a few steps that must happen together (a Ctrl-C is acted on right after them)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_interrupted = threading.Event()


def note_interrupts() -> None:
    """From here on a Ctrl-C raises KeyboardInterrupt as Python's own handler does, and is remembered: a library may
    catch the interrupt and raise something else in its place (pydantic-core building a schema turns it into a
    SchemaError, its context dropped), and the process must still end as interrupted. Only where Python's own handler
    is in place, on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def interrupt(signum, frame):
        _interrupted.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)


def interrupted() -> bool:
    """True once a Ctrl-C reached the handler of :func:`note_interrupts`."""
    return _interrupted.is_set()


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


@contextlib.contextmanager
def sigint_is_an_interrupt() -> Iterator[None]:
    """During the ``with`` body a Ctrl-C always ends in KeyboardInterrupt, whatever the handler in place raises.
    PySpark's handler cancels the Spark jobs over py4j first; when the Ctrl-C reached the whole process group and
    the driver JVM is already gone, that call raises py4j's "Answer from Java side is empty" instead, and the
    interrupt would be reported as a failed Spark job (exit 1, not 130); so would a KeyboardInterrupt that a cleanup's
    py4j call replaced on its way out (:func:`replaces_an_interrupt`). The handler in place still runs first."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # an ignored Ctrl-C stays ignored
        yield
        return

    def interrupt(signum, frame):
        if callable(previous):
            with contextlib.suppress(Exception):  # a KeyboardInterrupt (no Exception) of its own passes through
                previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    except Exception as exc:
        if replaces_an_interrupt(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def replaces_an_interrupt(exc: BaseException) -> bool:
    """True when ``exc`` was raised while a KeyboardInterrupt was on its way out: PySpark's ``collect`` leaves
    through ``SCCallSiteSync.__exit__``, a py4j call of its own, and with the driver JVM gone (the Ctrl-C reached its
    process group too) that call raises "Answer from Java side is empty", which replaces the interrupt (seen in 2 of
    10 interrupted profiles on a loaded machine)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False
