"""``placement inventory``: validate an inventory and export it for Ansible."""

from __future__ import annotations

import hashlib
import re
import tarfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from placement.cli.fit import print_table
from placement.cli.params import echo_json, json_option, nonempty_path, quiet_option
from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.inventory.wan_profiles import load_profile
from placement.writers.ansible import LocalArchive, ansible_inventory, render


def _archive_flink_version(path: Path) -> str | None:
    """The release a Flink distribution archive holds, from its top directory (``flink-1.20.5/``, as Apache's
    archives and the role expect); None when it is not such an archive. Reads only the first entry."""
    try:
        with tarfile.open(path) as tar:
            first = tar.next()
    except (tarfile.TarError, OSError, EOFError):
        return None
    top = first.name.split("/", 1)[0] if first is not None else ""
    match = re.fullmatch(r"flink-(\d+\.\d+\.\d+\S*)", top)
    return match[1] if match else None


@click.group()
def inventory() -> None:
    """Work with inventory files (the format: README.md beside the inventories `placement examples` lists)."""


@inventory.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option("print the validated inventory, defaults filled in, as JSON")
@quiet_option("no table: errors and the one-line verdict (or the --json inventory) only")
def validate(file: str, as_json: bool, quiet: bool) -> None:
    """Check FILE and show the hosts with their effective figures."""
    inv = load_inventory(file)
    if as_json:
        echo_json(inv.model_dump(mode="json", by_alias=True))
        return
    verdict = f"{file}: {inv.name} — valid"
    if quiet:
        click.echo(verdict)
        return
    table = Table(title=verdict)
    for col in ("host", "role", "model", "address", "cores", "memory MiB", "slots", "speed", "uplink"):
        table.add_column(col)
    for h in inv.hosts:
        uplink = ""
        if h.role == "edge":
            link = inv.uplink(h.name)
            uplink = f"{link.bandwidth:g} Mbit/s, {link.delay:g} ms → {link.to}"
        table.add_row(
            h.name,
            h.role,
            h.model,
            h.address,
            f"{h.cores:g}",
            f"{h.memory_mib:g}",
            str(h.task_slots),
            f"{h.speed:g}",
            uplink,
        )
    console = Console()
    print_table(console, table)
    console.print(f"placement mode: {inv.flink.placement_mode}; digest {inv.digest()}", markup=False, highlight=False)


@inventory.command("ansible")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    callback=nonempty_path,
    help="write here instead of standard output",
)
@click.option(
    "--flink-archive",
    type=click.Path(dir_okay=False),
    help="a Flink distribution (.tgz) on this machine to copy to the hosts instead of downloading flink.archive_url",
)
@click.option(
    "--rate-only",
    is_flag=True,
    help="shape bandwidth only, without netem delay/loss leaves (for kernels without sch_netem)",
)
@click.option(
    "--wan-profile", help="shape every link like this named WAN profile (as `placement netem apply --profile`)"
)
def ansible(file: str, out: str | None, flink_archive: str | None, rate_only: bool, wan_profile: str | None) -> None:
    """Export FILE as an Ansible inventory for the shipped playbooks (site.yml, stop.yml, netem.yml: `placement
    examples` lists them, `placement examples --copy DIR` puts them into DIR/ansible/). Run them from that folder,
    whose ansible.cfg they use: cd DIR/ansible && ansible-playbook -i hosts.yml site.yml.

    Relative ssh key and known_hosts paths are taken relative to FILE's directory.
    """
    inv = load_inventory(file)
    profile = None
    if wan_profile is not None:
        profile = load_profile(wan_profile, field="--wan-profile")
    archive = None
    if flink_archive is not None:
        path = Path(flink_archive)
        if not path.is_file():
            raise BadInput("file not found", source=flink_archive, field="--flink-archive")
        sha512 = _sha512(path)
        expected = inv.flink.archive_sha512
        if expected and expected.lower() != sha512:
            raise BadInput(
                f"sha512 of {flink_archive} is {sha512[:16]}…, not the {expected[:16]}… the inventory expects",
                source=file,
                field="flink.archive_sha512",
            )
        held = _archive_flink_version(path)
        if held and inv.flink.version and held != inv.flink.version:
            raise BadInput(
                f"holds Flink {held}, but {file}: flink.version pins {inv.flink.version}",
                source=flink_archive,
                field="--flink-archive",
            )
        archive = LocalArchive(path=str(path.resolve()), sha512=sha512, flink_version=held)
    text = render(
        ansible_inventory(
            inv,
            base_dir=Path(file).resolve().parent,
            archive=archive,
            with_netem=not rate_only,
            wan_profile=profile,
            source=file,
        ),
        source=file,
    )
    if out is None:
        click.echo(text, nl=False)
        return
    target = Path(out)
    try:  # like `plan --out`: the folder is made when missing
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot create its directory: {exc.strerror or exc}", source=out, field="--out") from None
    # write-then-rename: an interrupted export never leaves half an inventory behind
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise BadInput(f"cannot write: {exc.strerror or exc}", source=out, field="--out") from None
    click.echo(f"wrote {out}: {len(inv.servers)} server(s), {len(inv.edges)} edge host(s)", err=True)


def _sha512(path: Path) -> str:
    digest = hashlib.sha512()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
