"""The user-space delay line: delay, jitter and loss for one direction of a link where the kernel has no sch_netem.

``python -m placement.netem.delayline --queue N [--netns NS] --delay-ms D --jitter-ms J --loss-pct P
--correlation-pct C [--seed S]`` binds NFQUEUE ``N`` (in namespace ``NS`` when given: the queue's socket is opened
there, the process itself stays where it was started, so the namespace's own processes dying — a lab host losing
power — leave the line running) and holds every packet the queue gets for as long as :mod:`.line_schedule` says,
then lets it go on (verdict accept) or drops it. It never reads a packet's bytes (the queue copies metadata only).
The rules that feed the queue are :mod:`.nfqueue`'s; rate stays with htb on the sender's interface.

One event loop does everything: ``select`` on the queue's socket with a timeout until the next packet is due, release
what is due, then read what the kernel queued without blocking. (A second thread that releases while the queue's own
``run()`` blocks starves under load.) SIGTERM or SIGINT releases every held packet and unbinds the queue.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import random
import select
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol

from placement.netem.line_schedule import LineFigures, LineSchedule

CLONE_NEWNET = 0x40000000  # os.CLONE_NEWNET from Python 3.12 on
QUEUE_MAX_PACKETS = 16_384  # the kernel's queue length: a satellite link's 300 ms at 10 Mbit/s is ~250 frames
READY = "delay line ready"
MODULE = "placement.netem.delayline"  # what `python -m` runs (and what finds a line in ps)


class Verdict(Protocol):
    """What the line needs of a queued packet (netfilterqueue's ``Packet``)."""

    def accept(self) -> None: ...

    def drop(self) -> None: ...


class HeldPackets:
    """Packets in arrival order, each with the time it leaves; the schedule keeps that order, so a deque suffices."""

    def __init__(self, schedule: LineSchedule, now: Callable[[], float] = time.monotonic):
        self.schedule = schedule
        self.now = now
        self.held: deque[tuple[float, Verdict]] = deque()
        self.passed = 0
        self.lost = 0

    def take(self, packet: Verdict) -> None:
        leave = self.schedule.admit(self.now())
        if leave is None:
            packet.drop()
            self.lost += 1
        else:
            self.held.append((leave, packet))

    def release_due(self) -> None:
        now = self.now()
        while self.held and self.held[0][0] <= now:
            self.held.popleft()[1].accept()
            self.passed += 1

    def release_all(self) -> None:
        while self.held:
            with contextlib.suppress(RuntimeError, OSError):  # the queue may be gone already
                self.held.popleft()[1].accept()
                self.passed += 1

    def seconds_to_next(self) -> float | None:
        return max(0.0, self.held[0][0] - self.now()) if self.held else None


def line_command(
    queue: int, label: str, figures: LineFigures, *, netns: str | None = None, seed: int | None = None
) -> list[str]:
    """The argv of the delay line for queue ``queue`` (this interpreter, so a venv's or a wheel's line is the same)."""
    argv = [sys.executable, "-m", MODULE, "--queue", str(queue), "--label", label]
    argv += ["--delay-ms", f"{figures.delay_ms:g}", "--jitter-ms", f"{figures.jitter_ms:g}"]
    argv += ["--correlation-pct", f"{figures.correlation_pct:g}"]
    if figures.loss_pct > 0:
        argv += ["--loss-pct", f"{figures.loss_pct:g}"]
    if netns is not None:
        argv += ["--netns", netns]
    if seed is not None:
        argv += ["--seed", str(seed)]
    return argv


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def network_namespace(name: str | None) -> Iterator[None]:
    """Run the body inside the named namespace (``ip netns``' /run/netns/<name>), then come back."""
    if name is None:
        yield
        return
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


def serve(queue_num: int, netns: str | None, line: HeldPackets) -> None:
    """Bind the queue and run the one loop until a signal ends it."""
    from netfilterqueue import COPY_META, NetfilterQueue

    with network_namespace(netns):  # the socket belongs to the namespace it is opened in
        queue = NetfilterQueue()
        queue.bind(queue_num, line.take, max_len=QUEUE_MAX_PACKETS, mode=COPY_META)
    print(READY, flush=True)
    fd = queue.get_fd()
    try:
        while True:
            line.release_due()
            readable, _, _ = select.select([fd], [], [], line.seconds_to_next())
            if readable:
                queue.run(block=False)
    finally:
        line.release_all()
        queue.unbind()


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m placement.netem.delayline", description=__doc__.split("\n")[0])
    parser.add_argument("--queue", type=int, required=True, help="the NFQUEUE number the link's rule sends to")
    parser.add_argument("--netns", help="the namespace the queue (and its rule) lives in; default: this process's")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay")
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="± around the delay, uniform")
    parser.add_argument("--loss-pct", type=float, default=0.0, help="long-run share of packets lost")
    parser.add_argument(
        "--correlation-pct", type=float, default=0.0, help="of one packet's loss and jitter with the next"
    )
    parser.add_argument("--seed", type=int, help="seeds the loss and jitter process (tests); default: fresh")
    parser.add_argument("--label", default="", help="names the link in ps and the logs (the lab finds lines by it)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        figures = LineFigures(args.delay_ms, args.jitter_ms, args.loss_pct, args.correlation_pct)
    except ValueError as exc:
        print(f"delay line: {exc}", file=sys.stderr)
        return 2
    line = HeldPackets(LineSchedule(figures, random.Random(args.seed)))
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _stop)
    try:
        serve(args.queue, args.netns, line)
    except SystemExit:
        pass
    except OSError as exc:
        print(f"delay line {args.label or args.queue}: {exc}", file=sys.stderr)
        return 1
    finally:
        print(f"delay line {args.label or args.queue}: passed {line.passed}, lost {line.lost}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
