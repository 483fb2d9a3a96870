"""The lab's WAN emulation beyond rate: ``tc netem`` where the kernel has it, else the user-space delay line.

Per edge host ``i`` with delay, jitter or loss (:attr:`placement.lab.topology.LabHost.emulation`):

* **tc netem** — the uplink's htb class gets a netem leaf (delay, jitter, loss, correlation) on the edge's veth, and
  the root-side veth's egress a netem root (delay, jitter): the downlink;
* **user-space delay line** — two processes of :mod:`placement.netem.delayline`, both in the root namespace: the
  uplink's queue ``UPLINK_QUEUE_BASE + i`` fed by a rule in the root namespace's PREROUTING (packets in on
  ``pllab<i>h`` from the edge's address: the server side's ingress), the downlink's queue in the edge's namespace
  (packets in on ``pllab<i>n`` from the lab network). The lines live outside the edge's namespace, as a real WAN is
  not part of the Pi: a power-loss fault kills the namespace's processes and leaves its link's delay running.

Every rule's comment starts with ``placement-delayline pl-lab-`` and every line's ``--label`` with ``pl-lab-``:
``lab down`` finds both by name, like the rest of the lab.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import placement
from placement.errors import PlacementError
from placement.lab import stopping
from placement.lab import topology as topo
from placement.netem import nfqueue
from placement.netem.delayline import MODULE, line_command
from placement.netem.line_schedule import LineFigures
from placement.netem.tc import Shape, netem_args
from placement.netns import ns_exec, run
from placement.polling import poll

UPLINK_QUEUE_BASE = 0xED00  # + the edge's index; downlink queues live in the edge's own namespace
DOWNLINK_QUEUE_BASE = 0xEE00
LABEL_PREFIX = topo.NS_PREFIX
LINE_MODULE = MODULE
PROBE_IFS = (f"{topo.IF_PREFIX}probe0", f"{topo.IF_PREFIX}probe1")
READY_TIMEOUT_S = 10.0


# ---- what this machine can do ------------------------------------------------------------------------------------


def netem_works() -> bool:
    """The kernel takes a netem qdisc: tried for real on a veth pair of our own (named like the lab's, so a crash
    leaves nothing ``lab down`` would not remove)."""
    a, b = PROBE_IFS
    run(["ip", "link", "delete", a], check=False)
    if run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=False).returncode != 0:
        return False
    try:
        return run(["tc", "qdisc", "add", "dev", a, "root", "netem", "delay", "1ms"], check=False).returncode == 0
    finally:
        run(["ip", "link", "delete", a], check=False)


def delay_line_unavailable() -> str | None:
    """None when the user-space delay line can run here, else what is missing."""
    if shutil.which("iptables") is None:
        return "iptables is not installed (Debian: iptables)"
    if not Path(nfqueue.QUEUE_TABLE).exists():
        return "the kernel has no nfnetlink_queue"
    if importlib.util.find_spec("netfilterqueue") is None:
        return (
            "the Python package netfilterqueue is not installed (pip install 'placement[delayline]'; it builds "
            "against Debian's libnetfilter-queue-dev)"
        )
    return None


def probe() -> topo.Emulators:
    netem = netem_works()
    return topo.Emulators(netem=netem, delay_line=not netem and delay_line_unavailable() is None)


# ---- the pieces of one link --------------------------------------------------------------------------------------


def uplink_rule(h: topo.LabHost) -> nfqueue.QueueRule:
    assert h.host_if is not None
    return nfqueue.QueueRule(h.host_if, h.address, UPLINK_QUEUE_BASE + h.index, f"{LABEL_PREFIX}{h.name} uplink")


def downlink_rule(h: topo.LabHost) -> nfqueue.QueueRule:
    assert h.ns_if is not None
    return nfqueue.QueueRule(
        h.ns_if, topo.LAB_NETWORK, DOWNLINK_QUEUE_BASE + h.index, f"{LABEL_PREFIX}{h.name} downlink"
    )


def line_argv(rule: nfqueue.QueueRule, h: topo.LabHost, *, uplink: bool, seed: int | None = None) -> list[str]:
    """The delay line of one direction: the uplink with the link's loss, the downlink delay and jitter only."""
    w = h.wan
    if uplink:
        return line_command(rule.queue, rule.label, w, seed=seed)
    downlink = LineFigures(w.delay_ms, w.jitter_ms, 0.0, w.correlation_pct)
    return line_command(rule.queue, rule.label, downlink, netns=h.namespace, seed=seed)


def downlink_netem_commands(h: topo.LabHost) -> list[list[str]]:
    """netem on the root-side veth's egress: the downlink's delay and jitter (its loss stays on the uplink)."""
    assert h.host_if is not None and h.rate_mbit is not None
    shape = Shape(topo.LAB_NETWORK, h.rate_mbit, h.wan.delay_ms, h.wan.jitter_ms, 0.0, h.wan.correlation_pct)
    return [["tc", "qdisc", "add", "dev", h.host_if, "root", "netem", *netem_args(shape)]]


# ---- starting and stopping ---------------------------------------------------------------------------------------


def _package_env() -> dict[str, str]:
    """This process's environment with the placement package it runs from first on the path (a clone or a wheel)."""
    here = str(Path(placement.__path__[0]).resolve().parent)  # the folder that holds the package, not a shipped one
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


def bound_queues(namespace: str | None) -> dict[int, nfqueue.QueueStats]:
    proc = run(ns_exec(namespace, ["cat", nfqueue.QUEUE_TABLE]), check=False)
    return nfqueue.parse_queue_table(proc.stdout)


def start_line(argv: list[str], rule: nfqueue.QueueRule, namespace: str | None, log: Path) -> int:
    """Start one delay line, wait until its queue is bound, then route the link's packets to it; returns its pid."""
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=_package_env(),
            start_new_session=True,  # outlives the launcher (`lab up` returns) and its terminal's Ctrl-C
        )
    _, bound = poll(
        lambda: rule.queue in bound_queues(namespace) or proc.poll() is not None,
        lambda done: done,
        timeout=READY_TIMEOUT_S,
        every=0.05,
    )
    if proc.poll() is not None or not bound:
        stopping.stop([proc.pid], timeout=2)
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.is_file() else []
        raise PlacementError(f"delay line {rule.label} did not start: {tail[0] if tail else 'no output'} ({log})")
    run(ns_exec(namespace, nfqueue.add_command(rule)))
    return proc.pid


def start_link(h: topo.LabHost, log_dir: Path) -> dict[str, int]:
    """Emulate ``h``'s delay, jitter and loss as its plan says; returns the processes started (name -> pid)."""
    if h.emulation == topo.NETEM:
        for argv in downlink_netem_commands(h):
            run(argv)
        return {}
    if h.emulation != topo.DELAY_LINE:
        return {}
    log_dir.mkdir(parents=True, exist_ok=True)
    pids = {}
    for rule, namespace, uplink in ((uplink_rule(h), None, True), (downlink_rule(h), h.namespace, False)):
        name = f"delay line {h.name} {'uplink' if uplink else 'downlink'}"
        pids[name] = start_line(line_argv(rule, h, uplink=uplink), rule, namespace, log_dir / f"{rule.label}.log")
    return pids


def clear_rules(namespace: str | None = None) -> list[str]:
    """Remove every lab delay-line rule of ``namespace`` (the root namespace's by default); returns the rules."""
    if shutil.which("iptables") is None:  # then no line ever ran here
        return []
    listing = run(ns_exec(namespace, nfqueue.list_command()), check=False).stdout
    rules = nfqueue.our_rules(listing, LABEL_PREFIX)
    for line in rules:
        run(ns_exec(namespace, nfqueue.delete_listed_command(line)), check=False)
    return rules


def lab_rules() -> list[str]:
    """The root namespace's lab delay-line rules (an edge namespace's go with it)."""
    if shutil.which("iptables") is None:
        return []
    return nfqueue.our_rules(run(nfqueue.list_command(), check=False).stdout, LABEL_PREFIX)


def is_lab_line(cmdline: list[str]) -> bool:
    """A delay line the lab started (``--label pl-lab-...``): found by ``lab down`` even without a state file."""
    if LINE_MODULE not in cmdline or "--label" not in cmdline:
        return False
    at = cmdline.index("--label") + 1
    return at < len(cmdline) and cmdline[at].startswith(LABEL_PREFIX)


def lab_line_pids() -> set[int]:
    pids = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if is_lab_line((proc / "cmdline").read_bytes().decode(errors="replace").split("\0")):
                    pids.add(int(proc.name))
    return pids


# ---- status --------------------------------------------------------------------------------------------------------


def link_status(entry: dict, processes: dict[str, int]) -> dict:
    """What runs for one edge host's link: the emulation, its figures and, for a delay line, whether each direction's
    process lives and what its queue holds and dropped (the kernel's queue table)."""
    status: dict = {"emulation": entry.get("emulation", topo.RATE_ONLY), "wan": entry.get("wan")}
    if status["emulation"] != topo.DELAY_LINE:
        return status
    for direction, namespace in (("uplink", None), ("downlink", entry.get("namespace"))):
        pid = processes.get(f"delay line {entry['name']} {direction}")
        queue = entry.get(f"{direction}_queue")
        stats = bound_queues(namespace).get(queue) if isinstance(queue, int) else None
        status[direction] = {
            "pid": pid,
            "running": pid is not None and _alive(pid),
            "queue": queue,
            "held": stats.held if stats else None,
            "dropped": (stats.dropped_full + stats.dropped_user) if stats else None,
        }
    return status


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
