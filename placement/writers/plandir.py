"""Writing a plan directory whole or not at all.

The files are written into a staging directory beside ``--out`` (same file system, so a rename moves it), which then
takes the place of the old plan directory in one step: a reader, a Ctrl-C or a full disk sees the old plan or the new
one, never a mix, and files of an older plan that the new one does not write (``vanilla/rpi3.yaml`` of a plan that used
a Pi the new one does not) are gone. Entries that are not plan artifacts (``apply-audit.jsonl`` that ``placement apply``
keeps beside the plan, anything a user put there) are copied into the new directory first.

:func:`check_writable` runs before solving, so an unwritable ``--out`` is one line of bad input, not a traceback after
the tables.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from placement.errors import BadInput
from placement.signals import sigint_held_back

# What `placement plan` writes (see placement.writers.bundle): everything else in --out is the user's and is kept.
PLAN_ARTIFACTS = frozenset(
    {"plan.json", "schedulercfg", "redeploy.sh", "placement.json", "plan.dot", "plan.svg", "plan.png", "vanilla"}
)


def _unwritable(out: Path, why: str) -> BadInput:
    return BadInput(f"cannot write the plan directory here: {why}", source=str(out), field="--out")


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable(out: Path) -> None:
    """Raise BadInput unless a plan directory can be written to ``out``: tried for real (a staging directory made
    and removed beside it), because permission bits lie both ways (root ignores them, a read-only mount does not)."""
    out = Path(os.path.abspath(out))
    if out.exists() and not out.is_dir():
        raise _unwritable(out, "it is a file")
    parent = _nearest_existing(out.parent)
    if not parent.is_dir():
        raise _unwritable(out, f"{parent} is not a directory")
    try:
        with sigint_held_back():  # a Ctrl-C between the two would leave the probe behind
            probe = tempfile.mkdtemp(prefix=f".{out.name}.probe-", dir=parent)
            os.rmdir(probe)
    except OSError as exc:
        raise _unwritable(out, f"{parent}: {exc.strerror or exc}") from None
    # Replacing an existing directory renames it, which needs write access to it (its ".." entry changes).
    if out.is_dir() and not os.access(out, os.W_OK):
        raise _unwritable(out, "permission denied")


def _copy_foreign_entries(old: Path, stage: Path, artifacts: frozenset[str] = PLAN_ARTIFACTS) -> None:
    for entry in old.iterdir():
        if entry.name in artifacts:
            continue
        if (stage / entry.name).is_dir() and entry.is_dir() and not entry.is_symlink():
            # a directory the new plan writes too (a job's plan directory in a fleet's, issue 24): keep what is not
            # a plan artifact in it (apply-audit.jsonl of that job)
            _copy_foreign_entries(entry, stage / entry.name)
            continue
        if (stage / entry.name).exists():
            continue  # the new plan writes it
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, stage / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, stage / entry.name, follow_symlinks=False)


def write_whole(
    out: Path,
    files: Mapping[str, bytes],
    executable: frozenset[str] = frozenset(),
    artifacts: frozenset[str] = PLAN_ARTIFACTS,
) -> list[Path]:
    """Write ``files`` (relative name -> content) as the directory ``out``, replacing a previous plan there whole
    (``artifacts``: the names of a previous plan's entries, which are not kept). Returns the paths written, as they
    are under ``out``."""
    out = Path(os.path.abspath(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    stage: Path | None = None
    retired: Path | None = None  # the previous plan, between the swap and its removal
    try:
        # a Ctrl-C while mkdtemp makes the directory, or before its name is kept, would leave it behind: the name
        # is known to the cleanup below before the interrupt is raised
        with sigint_held_back():
            stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
            retired = stage.with_name(f"{stage.name}.old")
        os.chmod(stage, 0o755)  # mkdtemp makes it 0700; a plan directory is as readable as any other
        for name, data in files.items():
            target = stage / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            os.chmod(target, 0o755 if name in executable else 0o644)
        if out.is_dir():
            _copy_foreign_entries(out, stage, artifacts)
        with sigint_held_back():  # two renames that must both happen, or the plan directory would be missing
            if out.is_dir():
                os.rename(out, retired)
            os.rename(stage, out)
    except OSError as exc:
        raise _unwritable(out, exc.strerror or str(exc)) from None
    finally:
        with sigint_held_back():  # a second Ctrl-C must not cut the cleanup short
            for leftover in (stage, retired):  # the stage is left only when the swap did not happen
                if leftover is not None:
                    shutil.rmtree(leftover, ignore_errors=True)
    return [out / name for name in files]
