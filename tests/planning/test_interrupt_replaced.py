"""A Ctrl-C that a library catches and replaces with an error of its own still ends the command as interrupted:
pydantic-core, building a schema while the interrupt lands, raises a SchemaError with the interrupt's name in its
message and no context (seen once in a full suite run, ``test_ctrl_c_at_any_time_aborts[0.25]``: exit 1 and a
traceback). A real SIGINT reaches a real ``placement`` process; the command that takes it stands in for the library:
it catches the KeyboardInterrupt and raises a ValueError without context, as pydantic-core does."""

from __future__ import annotations

import signal
import subprocess
import sys

SCRIPT = """
import os, signal, sys
import click
from placement import cli as placement_cli

@click.command("swallow-interrupt")
def swallow_interrupt():
    caught = False
    try:
        os.kill(os.getpid(), signal.SIGINT)
        signal.pause()  # not reached: the handler raises
    except KeyboardInterrupt:
        caught = True
    if caught:  # outside the handler: no context, as pydantic-core's SchemaError has none
        raise ValueError("Error building 'literal' validator: KeyboardInterrupt")

import importlib.machinery
sys.modules[__name__].__spec__ = importlib.machinery.ModuleSpec("swallow_interrupt_cmd", None)
sys.modules["swallow_interrupt_cmd"] = sys.modules[__name__]
placement_cli.COMMANDS["swallow-interrupt"] = "swallow_interrupt_cmd:swallow_interrupt"
placement_cli.HELP["swallow-interrupt"] = "a stand-in for a library that replaces a Ctrl-C"
sys.argv = ["placement", "swallow-interrupt"]
placement_cli.main()
"""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# a runner that starts the suite in the background (nohup, `&` in a script) hands on SIGINT ignored, and Python then
# installs no KeyboardInterrupt handler: the child's own Ctrl-C would be lost and the test would wait for its timeout
INTERRUPTIBLE = {"preexec_fn": _default_sigint}


def test_an_interrupt_a_library_replaced_is_still_aborted_with_130():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, **INTERRUPTIBLE)
    assert (done.returncode, done.stderr.strip()) == (130, "aborted"), done.stderr


def test_an_error_without_an_interrupt_is_not_taken_for_one():
    script = SCRIPT.replace("os.kill(os.getpid(), signal.SIGINT)", "raise KeyboardInterrupt").replace(
        "signal.pause()  # not reached: the handler raises", ""
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, **INTERRUPTIBLE)
    # a KeyboardInterrupt raised by code (no signal) that a library replaced is an error, a traceback: no Ctrl-C came
    assert done.returncode == 1 and "ValueError" in done.stderr, done.stderr
