"""From the inventory to the shapes one host's interface needs: pure, so the CLI, the lab and Ansible agree.

A link ``edge -> server`` is shaped on the edge's egress towards the server's address. Its figures come from, in
order of precedence: the profile the caller passes (``--profile``), the profile the link names (``profile:``), the
link's own fields.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping

from placement.errors import BadInput
from placement.inventory import Inventory, Link
from placement.inventory.wan_profiles import WanProfile, load_profile
from placement.netem.tc import Shape


def host_index(inv: Inventory, host: str, *, source: str | None = None, field: str = "host") -> int:
    for i, h in enumerate(inv.hosts):
        if h.name == host:
            return i
    known = ", ".join(h.name for h in inv.hosts)
    raise BadInput(f"unknown host {host!r} (hosts: {known})", source=source, field=field)


def _dest_address(address: str, resolve: Callable[[str], str] | None, *, source: str | None, field: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        pass
    if resolve is None:
        raise BadInput(f"{address!r} is not an IP address; tc filters match addresses", source=source, field=field)
    try:
        return str(ipaddress.ip_address(resolve(address)))
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot resolve {address!r}: {exc}", source=source, field=field) from None


def shapes_for_host(
    inv: Inventory,
    host: str,
    profile: WanProfile | None = None,
    *,
    link_profiles: Mapping[str, WanProfile] | None = None,
    resolve: Callable[[str], str] | None = None,
    source: str | None = None,
) -> tuple[str, list[Shape]]:
    """``(interface, shapes)`` for ``host``: one shape per link leaving it (none for a server).

    ``link_profiles`` maps the profile names links use to profiles; a name missing from it is read from the profile
    directory. ``resolve`` turns host names into addresses; without it a link to a host named by DNS name is an
    error (tc matches addresses). ``source`` is the inventory's file name for error messages.
    """
    i = host_index(inv, host, source=source)
    h = inv.hosts[i]
    shapes: list[Shape] = []
    for j, link in enumerate(inv.links):
        if link.from_ != host:
            continue
        figures: Link | WanProfile
        if profile is not None:
            figures = profile
        elif link.profile is not None:
            known = (link_profiles or {}).get(link.profile)
            figures = known if known is not None else load_profile(link.profile, field=f"links[{j}].profile")
        else:
            figures = link
        k = host_index(inv, link.to, source=source)
        dest = _dest_address(inv.hosts[k].address, resolve, source=source, field=f"hosts[{k}].address")
        shapes.append(
            Shape(
                dest=dest,
                rate_mbit=figures.bandwidth,
                delay_ms=figures.delay,
                jitter_ms=figures.jitter,
                loss_pct=figures.loss,
                correlation_pct=figures.correlation,
            )
        )
    if shapes and not h.interface:
        raise BadInput(
            f"host {host!r} has no 'interface': netem needs the interface that carries its WAN traffic",
            source=source,
            field=f"hosts[{i}].interface",
        )
    return h.interface or "", shapes


def shaped_hosts(inv: Inventory) -> list[str]:
    """Hosts with a link to shape, in inventory order: what ``placement netem`` acts on without ``--host``."""
    senders = {link.from_ for link in inv.links}
    return [h.name for h in inv.hosts if h.name in senders]
