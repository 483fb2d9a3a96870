"""Warnings about input that is valid but probably not what the user meant, said before anything is solved.

Like a compiler's warnings (and ``--strict`` like ``-Werror``): each is one ``warning:`` line on stderr — also with
``--json``, whose stdout stays the summary alone — and the plan is made; ``plan --strict`` turns them into bad input
(exit 2) for scripts that would rather stop. What is warned about:

* a pin naming no vertex of the job when it looks like a typo (:attr:`PlacementProblem.input_warnings`);
* a profile of another job than the inventory's ``job.name`` (what ``redeploy.sh`` and ``apply`` resubmit);
* a link bandwidth in tc's ``bps`` units, which are bytes per second (``50mbps`` is 400 Mbit/s);
* a profile collected on another Flink release than the inventory's ``flink.version`` pin (the job's graph, its
  operators' costs and the extension that places it may differ between releases).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from placement.errors import BadInput
from placement.inventory import Inventory, link_rate_warnings
from placement.profile.format import JobProfile
from placement.units import bytes_rate_note, is_bytes_rate


def input_warnings(
    inv: Inventory, profile: JobProfile, inventory_path: str | Path, links: tuple[str, ...] = ()
) -> list[str]:
    """The warnings that need the inventory file and the options (the pins' are the problem's)."""
    notes = []
    if inv.job.name and inv.job.name != profile.job.name and inv.fleet_job(profile.job.name) is None:
        notes.append(
            f"{inventory_path}: job.name: is {inv.job.name!r} but the profile is of job "
            f"{profile.job.name!r}: redeploy.sh and apply would resubmit {inv.job.name!r}"
        )
    collected_on, pinned = profile.job.flink_version, inv.flink.version
    if collected_on and pinned and collected_on != pinned:
        notes.append(
            f"{inventory_path}: flink.version: the cluster is pinned to Flink {pinned} but the profile was "
            f"collected on {collected_on}: profile the job on {pinned} (graph and costs may differ)"
        )
    notes += link_rate_warnings(inventory_path)
    for text in links:  # --link HOST:BANDWIDTH[:DELAY]
        parts = text.split(":")
        if len(parts) > 1 and is_bytes_rate(parts[1]):
            notes.append(bytes_rate_note(f"--link {text}", parts[1].strip()))
    return notes


def warn_on_stderr(warning: str) -> None:
    print(f"warning: {warning}", file=sys.stderr)


def report_warnings(warnings: list[str], *, strict: bool, say: Callable[[str], None] = warn_on_stderr) -> None:
    """Say each warning (on stderr unless ``say`` is another sink), before anything is solved; under ``--strict`` the
    first is an error instead (nothing solved or written)."""
    if strict and warnings:
        more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
        raise BadInput(f"{warnings[0]}{more} [--strict]")
    for w in warnings:
        say(w)


def alone_policy_notes(inv: Inventory, job: str) -> list[str]:
    """A note when the inventory's ``jobs:`` entry of the one job being planned sets a priority or a budget: they rank
    and cap jobs planned together, so a plan of one job does not use them (said, not refused: an inventory serves
    every job of the fleet, and planning one of them alone is ordinary)."""
    entry = inv.fleet_job(job)
    if entry is None or (entry.priority is None and entry.budget is None):
        return []
    return [
        f"jobs[] entry {job!r} sets a priority or budget: they apply when jobs are planned together (several "
        "--profile); this plan of one job does not use them"
    ]
