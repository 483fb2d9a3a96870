"""``placement netem apply|show|clear``: shape the inventory's WAN links with tc, locally or over SSH.

Everything is validated (inventory, profile, hosts, interfaces, addresses) before any host is changed; see
``netem/README.md`` for the layout installed and the profile format.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

import click
from rich.console import Console
from rich.table import Table

from placement.cli.params import echo_json, json_option, quiet_option
from placement.errors import BadInput, PlacementError
from placement.inventory import Inventory, link_rate_warnings, load_inventory
from placement.inventory.wan_profiles import WanProfile, load_profile
from placement.netem import ops
from placement.netem.plan import host_index, shaped_hosts, shapes_for_host
from placement.netem.status import InterfaceStatus
from placement.netem.tc import Shape
from placement.remote import Executor, ExecutorFactory

# what a reader of --json checks first (v1: {"format", "hosts": [one entry per host]}; before, the bare list)
NETEM_STATUS_FORMAT = "placement.netem-status/v1"


@dataclass(frozen=True)
class Target:
    host: str
    index: int
    interface: str
    shapes: list[Shape]


def _resolve(name: str) -> str:
    infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    infos.sort(key=lambda info: info[0] != socket.AF_INET)  # prefer IPv4, as the inventory's examples do
    return str(infos[0][4][0])


def _targets(
    inv: Inventory, source: str, hosts: tuple[str, ...], profile: WanProfile | None, *, need_shapes: bool
) -> list[Target]:
    names = list(hosts) or shaped_hosts(inv)
    targets = []
    for name in dict.fromkeys(names):
        i = host_index(inv, name, source=source, field="--host")
        interface, shapes = shapes_for_host(inv, name, profile, resolve=_resolve, source=source)
        if need_shapes and not shapes:
            continue
        interface = interface or inv.hosts[i].interface or ""
        if not interface:
            raise BadInput(f"host {name!r} has no 'interface'", source=source, field=f"hosts[{i}].interface")
        targets.append(Target(name, i, interface, shapes))
    return targets


def _check_interfaces(
    factory: ExecutorFactory, inv: Inventory, source: str, targets: list[Target]
) -> dict[str, Executor]:
    """Open every host and check its interface first, so a typo on the last host changes no host at all."""
    executors = {}
    for t in targets:
        ex = factory.for_host(inv.hosts[t.index])
        try:
            ops.check_interface(ex, t.interface)
        except ops.InterfaceMissing as exc:
            raise BadInput(str(exc), source=source, field=f"hosts[{t.index}].interface") from None
        executors[t.host] = ex
    return executors


def _common(f):
    f = click.option(
        "--accept-new-host-keys",
        is_flag=True,
        help="record SSH host keys not yet in known_hosts (default: refuse unknown hosts)",
    )(f)
    f = click.option("--local", "force_local", is_flag=True, help="run tc on this machine for every selected host")(f)
    f = click.option("--dry-run", is_flag=True, help="print the commands instead of running them")(f)
    f = click.option(
        "--host",
        "hosts",
        multiple=True,
        metavar="H",
        help="only this host (repeatable; default: every host with a link)",
    )(f)
    f = click.option(
        "--inventory",
        "inventory_file",
        required=True,
        type=click.Path(dir_okay=False),
        help="inventory YAML (the format: README.md beside the inventories `placement examples` lists)",
    )(f)
    return f


def _factory(inv: Inventory, dry_run: bool, force_local: bool, accept_new: bool) -> ExecutorFactory:
    return ExecutorFactory(
        inv,
        dry_run=dry_run,
        force_local=force_local,
        accept_new_host_keys=accept_new,
        echo=lambda line: click.echo(line),
    )


def _describe(shape: Shape) -> str:
    parts = [f"→ {shape.dest} {shape.rate_mbit:g} Mbit/s"]
    if shape.delay_ms or shape.jitter_ms:
        parts.append(f"delay {shape.delay_ms:g} ms" + (f" ± {shape.jitter_ms:g} ms" if shape.jitter_ms else ""))
    if shape.loss_pct:
        parts.append(f"loss {shape.loss_pct:g}%")
    if shape.correlation_pct and (shape.jitter_ms or shape.loss_pct):
        parts.append(f"correlation {shape.correlation_pct:g}%")
    return ", ".join(parts)


@click.group()
def netem() -> None:
    """Shape the inventory's edge→server WAN links with tc (htb rate + netem delay/jitter/loss).

    Hosts whose address is on this machine are shaped locally, others over SSH (host keys verified).
    Named WAN profiles: `placement examples` lists them ($PLACEMENT_NETEM_DIR points elsewhere).
    """


@netem.command("apply")
@_common
@click.option(
    "--profile",
    "profile_name",
    metavar="NAME",
    help="a WAN profile by name (`placement examples` lists them) overriding every link's figures",
)
@click.option(
    "--require-delay",
    is_flag=True,
    help="fail, leaving that host unshaped, when its kernel has no netem for delay/jitter/loss",
)
@quiet_option("no line per link: warnings, errors and the one-line result only")
def apply_cmd(
    inventory_file: str,
    hosts: tuple[str, ...],
    dry_run: bool,
    force_local: bool,
    accept_new_host_keys: bool,
    profile_name: str | None,
    require_delay: bool,
    quiet: bool,
) -> None:
    """Install each link's rate limit (and delay, jitter, loss) on the sending host; replaces an earlier apply."""
    inv = load_inventory(inventory_file)
    profile = load_profile(profile_name, field="--profile") if profile_name else None
    targets = _targets(inv, inventory_file, hosts, profile, need_shapes=True)
    if profile is None:  # the links' own figures are shaped: said as `placement plan` says it
        for note in link_rate_warnings(inventory_file):
            click.echo(f"warning: {note}", err=True)
    for name in sorted(set(hosts) - {t.host for t in targets}):
        click.echo(f"{name}: no link leaves this host; nothing to shape")  # kept by -q: a host named for nothing
    if not targets:
        return
    factory = _factory(inv, dry_run, force_local, accept_new_host_keys)
    applied: list[tuple[Executor, Target]] = []
    try:
        executors = _check_interfaces(factory, inv, inventory_file, targets)
        for t in targets:
            ex = executors[t.host]
            try:
                outcome = ops.apply_host(ex, t.interface, t.shapes, require_delay=require_delay)
            except PlacementError:
                # hosts changed earlier in this run are reset too: a multi-host apply is all or nothing
                for done_ex, done in applied:
                    try:
                        ops.clear_host(done_ex, done.interface)
                    except PlacementError as exc:
                        click.echo(f"warning: could not undo {done.host}: {exc}", err=True)
                raise
            applied.append((ex, t))
            verb = "would shape" if outcome.dry_run else ("reshaped" if outcome.replaced else "shaped")
            for shape in t.shapes if not quiet else ():
                click.echo(f"{t.host} {t.interface}: {verb} {_describe(shape)}")
            if outcome.netem_missing:  # a warning: -q keeps it
                click.echo(
                    f"{t.host}: kernel has no netem ({outcome.netem_error}); rate limits applied, "
                    "delay/jitter/loss NOT emulated (--require-delay makes this an error)"
                )
    finally:
        factory.close()
    if quiet:
        links = sum(len(t.shapes) for t in targets)
        verb = "would shape" if dry_run else "shaped"
        click.echo(f"netem: {verb} {links} link(s) on {', '.join(t.host for t in targets)}")


def _status_table(host: str, status: InterfaceStatus) -> Table:
    table = Table(
        title=f"{host} {status.interface}: htb {status.root.handle if status.root else ''}, "
        f"{status.unshaped_packets} packets unshaped"
    )
    for col in ("dest", "Mbit/s", "delay ms", "loss %", "sent bytes", "drops", "overlimits"):
        # fold, never truncate: a counter cut to "3137…" would be worse than a wrapped one
        table.add_column(col, justify="left" if col == "dest" else "right", overflow="fold")
    for c in status.classes:
        delay = "-" if c.delay_ms is None else f"{c.delay_ms:g}" + (f"±{c.jitter_ms:g}" if c.jitter_ms else "")
        table.add_row(
            c.dest or c.classid,
            f"{c.rate_mbit:g}" if c.rate_mbit is not None else "?",
            delay,
            f"{c.loss_pct:g}" if c.loss_pct is not None else "-",
            str(c.bytes),
            str(c.drops + c.leaf_drops),
            str(c.overlimits),
        )
    return table


def _status_json(host: str, status: InterfaceStatus) -> dict[str, object]:
    return {
        "host": host,
        "interface": status.interface,
        "installed": status.installed,
        "root": status.root.describe() if status.root else None,
        "unshaped_packets": status.unshaped_packets,
        "classes": [
            {
                "class": c.classid,
                "dest": c.dest,
                "rate_mbit": c.rate_mbit,
                "ceil_mbit": c.ceil_mbit,
                "leaf": c.leaf,
                "delay_ms": c.delay_ms,
                "jitter_ms": c.jitter_ms,
                "loss_pct": c.loss_pct,
                "bytes": c.bytes,
                "packets": c.packets,
                "drops": c.drops + c.leaf_drops,
                "overlimits": c.overlimits,
            }
            for c in status.classes
        ],
    }


@netem.command("show")
@_common
@json_option("print the figures as JSON instead of tables")
@quiet_option("no tables: one line per host (or the --json figures) only")
def show_cmd(
    inventory_file: str,
    hosts: tuple[str, ...],
    dry_run: bool,
    force_local: bool,
    accept_new_host_keys: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Show what is installed on each host: rate, delay, loss and the bytes, drops and overlimits counted so far."""
    inv = load_inventory(inventory_file)
    targets = _targets(inv, inventory_file, hosts, None, need_shapes=False)
    factory = _factory(inv, dry_run, force_local, accept_new_host_keys)
    out: list[dict[str, object]] = []
    console = Console()
    try:
        executors = _check_interfaces(factory, inv, inventory_file, targets)
        for t in targets:
            status = ops.show_host(executors[t.host], t.interface)
            if as_json:
                out.append(_status_json(t.host, status))
            elif dry_run:
                continue
            elif status.installed and quiet:
                drops = sum(c.drops + c.leaf_drops for c in status.classes)
                click.echo(f"{t.host} {t.interface}: shaped, {len(status.classes)} classes, {drops} drops")
            elif status.installed:
                console.print(_status_table(t.host, status))
            else:
                root = status.root.describe() if status.root else "unknown"
                click.echo(f"{t.host} {t.interface}: not shaped by placement (root qdisc {root})")
    finally:
        factory.close()
    if as_json:
        echo_json({"format": NETEM_STATUS_FORMAT, "hosts": out})


@netem.command("clear")
@_common
def clear_cmd(
    inventory_file: str, hosts: tuple[str, ...], dry_run: bool, force_local: bool, accept_new_host_keys: bool
) -> None:
    """Remove what apply installed; the interface gets its original (kernel default) root qdisc back."""
    inv = load_inventory(inventory_file)
    targets = _targets(inv, inventory_file, hosts, None, need_shapes=False)
    factory = _factory(inv, dry_run, force_local, accept_new_host_keys)
    try:
        executors = _check_interfaces(factory, inv, inventory_file, targets)
        for t in targets:
            outcome = ops.clear_host(executors[t.host], t.interface)
            if dry_run:
                continue
            if outcome.removed:
                after = outcome.root_after.describe() if outcome.root_after else "unknown"
                click.echo(f"{t.host} {t.interface}: cleared; root qdisc is {after} again")
            else:
                before = outcome.root_before.describe() if outcome.root_before else "unknown"
                click.echo(f"{t.host} {t.interface}: nothing to clear (root qdisc {before})")
    finally:
        factory.close()
