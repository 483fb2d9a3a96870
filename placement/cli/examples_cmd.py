"""``placement examples``: where the shipped example inputs are, and a copy of them to edit.

In a clone they are the repository's folders; in an installed package, the copies the wheel carries
(:mod:`placement.resources`). Either way a user can plan right away without knowing where pip put them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from placement.errors import BadInput
from placement.resources import repo_dir

# (folder, part of it, what it holds, file pattern): what a user edits or passes to a command
SHOWN = (
    ("inventory", "", "inventories (--inventory)", "*.yaml"),
    ("examples", "profiles", "job profiles (plan --profile)", "*.json"),
    ("examples", "metrics", "metric histories (profile METRICS_DIR)", "*"),
    ("netem", "", "WAN profiles (netem apply --profile NAME)", "*.yaml"),
)
COPIED = ("inventory", "examples", "netem")


@click.command()
@click.option("--copy", "copy_to", type=click.Path(file_okay=False), metavar="DIR",
              help=f"copy {', '.join(f'{name}/' for name in COPIED)} into DIR to edit them (never overwrites)")
def examples(copy_to: str | None) -> None:
    """List the example inventories, profiles, metric histories and WAN profiles that ship with placement."""
    if copy_to:
        _copy(Path(copy_to))
        return
    for folder, part, what, pattern in SHOWN:
        where = repo_dir(folder) / part
        names = sorted(p.stem if folder == "netem" else p.name  # a WAN profile goes by its name
                       for p in where.glob(pattern) if not p.name.startswith(("README", ".")))
        click.echo(f"{what}: {where}")
        click.echo(f"  {', '.join(names) or '(none)'}")


def _copy(target: Path) -> None:
    clashes = [target / name for name in COPIED if (target / name).exists()]
    if clashes:  # checked before copying anything: nothing half-done
        raise BadInput(f"{clashes[0]} exists; copy into an empty or new directory", source=str(target))
    target.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        shutil.copytree(repo_dir(name), target / name, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    click.echo(f"copied {', '.join(f'{name}/' for name in COPIED)} to {target}")
