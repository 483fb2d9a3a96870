"""Network namespaces and veth pairs: the "hosts" and "wires" of the lab and of network tests.

Only names this process created are ever deleted. Everything goes through ``ip`` (iproute2); every failure is a
:class:`placement.errors.PlacementError` that says which command failed and what ``ip`` printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from placement.errors import PlacementError


class NetnsUnavailable(PlacementError):
    """No root or no namespace support: the lab and network tests cannot run here."""


def run(argv: Sequence[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise PlacementError(f"`{' '.join(argv)}` failed: {detail[-1] if detail else f'exit {proc.returncode}'}")
    return proc


def netns_available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 ('ip') is not installed"
    probe = f"pl-probe-{os.getpid()}"
    made = run(["ip", "netns", "add", probe], check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    run(["ip", "netns", "delete", probe], check=False)
    return None


def require_netns() -> None:
    reason = netns_available()
    if reason:
        raise NetnsUnavailable(reason)


def ns_exec(ns: str | None, argv: Sequence[str]) -> list[str]:
    """The argv that runs ``argv`` inside namespace ``ns`` (or as is when ``ns`` is None)."""
    return ["ip", "netns", "exec", ns, *argv] if ns else list(argv)


def list_namespaces() -> list[str]:
    out = run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def link_exists(name: str, ns: str | None = None) -> bool:
    return run(ns_exec(ns, ["ip", "link", "show", "dev", name]), check=False).returncode == 0


@dataclass(frozen=True)
class VethPair:
    """One wire: ``host_if`` in the root namespace with ``host_addr``, ``ns_if`` inside ``ns`` with ``ns_addr``."""

    ns: str
    host_if: str
    ns_if: str
    host_addr: str
    ns_addr: str
    prefix_len: int = 30


def create_namespace(name: str) -> None:
    run(["ip", "netns", "add", name])
    run(ns_exec(name, ["ip", "link", "set", "lo", "up"]))


def delete_namespace(name: str) -> None:
    """Delete ``name`` if it exists (its end of any veth goes with it, and so does the root-side peer)."""
    if name in list_namespaces():
        run(["ip", "netns", "delete", name], check=False)


def create_veth(pair: VethPair) -> None:
    """Make the veth pair, move one end into the namespace, address both ends and bring them up."""
    run(["ip", "link", "add", pair.host_if, "type", "veth", "peer", "name", pair.ns_if])
    try:
        run(["ip", "link", "set", pair.ns_if, "netns", pair.ns])
        run(["ip", "addr", "add", f"{pair.host_addr}/{pair.prefix_len}", "dev", pair.host_if])
        run(["ip", "link", "set", pair.host_if, "up"])
        run(ns_exec(pair.ns, ["ip", "addr", "add", f"{pair.ns_addr}/{pair.prefix_len}", "dev", pair.ns_if]))
        run(ns_exec(pair.ns, ["ip", "link", "set", pair.ns_if, "up"]))
    except PlacementError:
        delete_veth(pair)
        raise


def delete_veth(pair: VethPair) -> None:
    if link_exists(pair.host_if):
        run(["ip", "link", "delete", pair.host_if], check=False)


class Namespaces:
    """Context manager for tests and the lab: namespaces and veths made inside are removed on exit, even on error.

    >>> with Namespaces("pn-test") as nets:          # doctest: +SKIP
    ...     wire = nets.add("edge1", "10.201.0.1", "10.201.0.2")
    ...     run(ns_exec(wire.ns, ["ping", "-c1", wire.host_addr]))
    """

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.namespaces: list[str] = []
        self.pairs: list[VethPair] = []

    def __enter__(self) -> Namespaces:
        require_netns()
        return self

    def add(self, name: str, host_addr: str, ns_addr: str, prefix_len: int = 30) -> VethPair:
        """A namespace ``<prefix>-<name>`` joined to the root namespace by a fresh veth pair."""
        ns = f"{self.prefix}-{name}"
        # interface names are limited to 15 characters
        tag = f"{self.prefix}{len(self.pairs)}"[-11:]
        pair = VethPair(
            ns=ns, host_if=f"{tag}h", ns_if=f"{tag}n", host_addr=host_addr, ns_addr=ns_addr, prefix_len=prefix_len
        )
        delete_namespace(ns)  # left over from a crashed run of our own prefix
        delete_veth(pair)
        create_namespace(ns)
        self.namespaces.append(ns)
        create_veth(pair)
        self.pairs.append(pair)
        return pair

    def close(self) -> None:
        for pair in reversed(self.pairs):
            delete_veth(pair)
        for ns in reversed(self.namespaces):
            delete_namespace(ns)
        self.pairs.clear()
        self.namespaces.clear()

    def __exit__(self, *exc: object) -> None:
        self.close()
