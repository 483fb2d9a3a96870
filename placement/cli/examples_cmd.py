"""``placement examples``: where the shipped example inputs and the Ansible playbooks are, and a copy of them to edit.

In a clone they are the repository's folders; in an installed package, the copies the wheel carries
(:mod:`placement.resources`). Either way a user can plan right away without knowing where pip put them.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import click

from placement.errors import BadInput
from placement.resources import repo_dir

# (folder, part of it, what it holds, file pattern): what a user edits or passes to a command
SHOWN = (
    ("inventory", "", "inventories (--inventory)", "*.yaml"),
    ("examples", "profiles", "job profiles (plan --profile)", "*.json"),
    ("examples", "metrics", "metric histories (profile METRICS_DIR, plan --forecast HISTORY)", "*"),
    ("netem", "", "WAN profiles (netem apply --profile NAME)", "*.yaml"),
    ("ansible", "", "Ansible playbooks (ansible-playbook in a copy: --copy DIR, cd DIR/ansible)", "*.yml"),
)
COPIED = ("inventory", "examples", "netem", "ansible")


@click.command()
@click.option(
    "--copy",
    "copy_to",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help=f"copy {', '.join(f'{name}/' for name in COPIED)} into DIR to edit them (never overwrites)",
)
def examples(copy_to: str | None) -> None:
    """List the example inventories, profiles, metric histories, WAN profiles and Ansible playbooks that ship with
    placement."""
    if copy_to:
        _copy(Path(copy_to))
        return
    for folder, part, what, pattern in SHOWN:
        where = repo_dir(folder) / part
        names = sorted(
            p.stem if folder == "netem" else p.name  # a WAN profile goes by its name
            for p in where.glob(pattern)
            if not p.name.startswith(("README", "."))
        )
        click.echo(f"{what}: {where}")
        click.echo(f"  {', '.join(names) or '(none)'}")


def _copy(target: Path) -> None:
    """The folders copied into ``target`` whole or not at all: copied into a hidden folder in ``target`` first, then
    renamed into place; any failure removes what this run made (the folders it created for ``target`` too)."""
    clashes = [target / name for name in COPIED if (target / name).exists()]
    if clashes:  # checked before copying anything: nothing half-done
        raise BadInput(f"{clashes[0]} exists; copy into an empty or new directory", source=str(target))
    created = _make_dirs(target)
    staging: Path | None = None
    placed: list[str] = []
    try:
        staging = Path(tempfile.mkdtemp(prefix=".placement-examples-", dir=target))
        for name in COPIED:
            shutil.copytree(repo_dir(name), staging / name, ignore=shutil.ignore_patterns("__pycache__", ".*"))
        for name in COPIED:
            (staging / name).rename(target / name)
            placed.append(name)
        staging.rmdir()
    except OSError as exc:
        for name in placed:
            with contextlib.suppress(OSError):
                (target / name).rename(staging / name)  # type: ignore[operator]
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise BadInput(f"cannot copy into it: {_why(exc, target)}", source=str(target)) from None
    click.echo(f"copied {', '.join(f'{name}/' for name in COPIED)} to {target}")


def _make_dirs(target: Path) -> list[Path]:
    """``target`` and its missing parents made, as ``mkdir -p``; the folders made, outermost first."""
    missing = [p for p in (target, *target.parents) if not p.is_dir()][::-1]
    made: list[Path] = []
    try:
        for folder in missing:
            folder.mkdir()
            made.append(folder)
    except OSError as exc:
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise BadInput(f"cannot create the directory: {_why(exc, target)}", source=str(target)) from None
    return made


def _why(exc: OSError, target: Path) -> str:
    """The reason, naming the path part at fault: a regular file where a folder should be, or the OS's reason."""
    for parent in (target, *target.parents):
        if parent.exists() and not parent.is_dir():
            return f"{parent} is a file, not a directory"
    return exc.strerror or str(exc)
