"""Faults an edge fleet has, made for real on the lab: a Pi's power lost and back, its uplink cut and back.

* power loss — SIGKILL every process of the Pi's network namespace (its TaskManager JVM, its sshd): nothing is shut
  down cleanly, the kernel closes their sockets as it would after a crash; power back starts its sshd and its
  TaskManager again with the command lines the lab started them with (same config, same resource id);
* uplink cut — the server-side end of the Pi's veth set down: the Pi and its processes live on, but no packet reaches
  the server or comes back (no reset: the JobManager learns of it from missed heartbeats); uplink back — set up again.
"""

from __future__ import annotations

import os
from pathlib import Path

from placement.errors import PlacementError
from placement.lab import sshd as lab_sshd
from placement.lab import stopping
from placement.lab.flink import relaunch_from_state
from placement.netns import run
from placement.polling import poll


def host_entry(state: dict, host: str) -> dict:
    """The lab state's entry for edge host ``host``."""
    entry = next((h for h in state["hosts"] if h["name"] == host), None)
    if entry is None or not entry.get("namespace"):
        raise PlacementError(
            f"{host!r} is not an edge host of the lab ({', '.join(h['name'] for h in state['hosts'])})"
        )
    return entry


def namespace_pids(namespace: str) -> set[int]:
    out = run(["ip", "netns", "pids", namespace], check=False).stdout
    return {int(p) for p in out.split() if p.isdigit()} - {os.getpid()}


def power_loss(state: dict, host: str, timeout: float = 10.0) -> int:
    """SIGKILL every process of ``host``; returns how many there were. Waits until none is left."""
    ns = host_entry(state, host)["namespace"]
    killed: set[int] = set()

    def kill_what_is_listed() -> set[int]:
        # listed again each round: a process entering the namespace while the power goes (an `ip netns exec`
        # between its setns and its exec) is lost with the rest, as it would be in a box without power
        listed = namespace_pids(ns)
        stopping.kill(listed, timeout=0)
        killed.update(listed)
        return namespace_pids(ns)

    left, emptied = poll(kill_what_is_listed, lambda listed: not listed, timeout=timeout, every=0.05)
    if not emptied:
        raise PlacementError(f"lab host {host}: processes still alive after SIGKILL: {sorted(left)}")
    return len(killed)


def power_back(state: dict, host: str) -> None:
    """``host`` boots: its sshd and its TaskManager start again as the lab started them."""
    entry = host_entry(state, host)
    work = Path(state["work_dir"])
    lab_sshd.restart_sshd(work, host, entry["namespace"], entry["address"])
    relaunch_from_state(work / "flink", f"taskmanager {host}")


def cut_uplink(state: dict, host: str) -> None:
    run(["ip", "link", "set", "dev", host_entry(state, host)["host_if"], "down"])


def restore_uplink(state: dict, host: str) -> None:
    run(["ip", "link", "set", "dev", host_entry(state, host)["host_if"], "up"])
