"""``placement inventory``: validate an inventory (and, later, export it for Ansible)."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from placement.inventory import load_inventory


@click.group()
def inventory() -> None:
    """Work with inventory files (format: inventory/README.md)."""


@inventory.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the validated inventory, defaults filled in, as JSON")
def validate(file: str, as_json: bool) -> None:
    """Check FILE and show the hosts with their effective figures."""
    inv = load_inventory(file)
    if as_json:
        click.echo(json.dumps(inv.model_dump(mode="json", by_alias=True), indent=2))
        return
    table = Table(title=f"{file}: {inv.name} — valid")
    for col in ("host", "role", "model", "address", "cores", "memory MiB", "slots", "speed", "uplink"):
        table.add_column(col)
    for h in inv.hosts:
        uplink = ""
        if h.role == "edge":
            link = inv.uplink(h.name)
            uplink = f"{link.bandwidth:g} Mbit/s, {link.delay:g} ms → {link.to}"
        table.add_row(h.name, h.role, h.model, h.address, f"{h.cores:g}", f"{h.memory_mib:g}", str(h.task_slots), f"{h.speed:g}", uplink)
    Console().print(table)
    click.echo(f"placement mode: {inv.flink.placement_mode}; digest {inv.digest()}")
