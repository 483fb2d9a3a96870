"""``placement plan``'s contingencies as a table, or why there is none (presentation only; planning them is
:mod:`placement.planning.contingency`)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from placement.costmodel.model import PlacementProblem
from placement.planning.contingency import VANILLA_NOTE
from placement.solver.contingency import Contingency


def table(problem: PlacementProblem, contingencies: Sequence[Contingency]) -> Table:
    t = Table(title="While an edge host or its uplink is lost (contingency)")
    for col in ("lost", "status", "what moves", "WAN Mbit/s", "server cores"):
        t.add_column(col, justify="left" if col in ("lost", "status", "what moves") else "right")
    for c in contingencies:
        if not c.feasible:
            t.add_row(c.lost, "[red]infeasible[/]", escape(c.shortfall.split(", ", 1)[-1]), "", "")
            continue
        by_target: dict[str, list[str]] = {}
        for key, (_was, to) in c.moves.items():
            by_target.setdefault(to, []).append(problem.subtask_by_key[key].label)
        moves = "; ".join(f"{', '.join(labels)} → {to}" for to, labels in by_target.items()) or "nothing"
        cost = c.result.cost
        assert cost is not None, "a feasible contingency has its cost"
        t.add_row(c.lost, c.result.status, escape(moves), f"{cost.wan_mbit:.2f}", f"{cost.server_cores:.2f}")
    return t


def print_all(
    console, problem: PlacementProblem, contingencies: Sequence[Contingency], placement_mode: str, asked: str
) -> None:
    """The contingency table, or why there is none."""
    from placement.cli.fit import print_table

    if contingencies:
        print_table(console, table(problem, contingencies))
    elif placement_mode == "vanilla" and asked != "off":
        console.print(f"[dim]note: {escape(VANILLA_NOTE)}[/]")
