"""``placement plan``'s contingencies as a table, or why there is none (presentation only; planning them is
:mod:`placement.planning.contingency`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.markup import escape
from rich.table import Table

from placement.costmodel.model import PlacementProblem
from placement.planning.contingency import VANILLA_NOTE
from placement.solver.contingency import Contingency


def table(problem: PlacementProblem, contingencies: Sequence[Contingency]) -> Table:
    rows = []
    for c in contingencies:
        if not c.feasible:
            rows.append(ContingencyRow(c.lost, "infeasible", c.shortfall))
            continue
        cost = c.result.cost
        assert cost is not None, "a feasible contingency has its cost"
        moves = [(problem.subtask_by_key[key].label, to) for key, (_was, to) in c.moves.items()]
        rows.append(ContingencyRow(c.lost, c.result.status, "", moves, cost.wan_mbit, cost.server_cores))
    return rows_table(rows)


@dataclass(frozen=True)
class ContingencyRow:
    """One lost host's row: its status, what is short (infeasible) or which subtask goes where, and its figures."""

    lost: str
    status: str
    shortfall: str = ""
    moves: Sequence[tuple[str, str]] = ()  # (label, the host it runs on meanwhile)
    wan_mbit: float | None = None
    server_cores: float | None = None


def rows_table(rows: Sequence[ContingencyRow]) -> Table:
    t = Table(title="While an edge host or its uplink is lost (contingency)")
    for col in ("lost", "status", "what moves", "WAN Mbit/s", "server cores"):
        t.add_column(col, justify="left" if col in ("lost", "status", "what moves") else "right")
    for r in rows:
        if r.status == "infeasible":
            t.add_row(r.lost, "[red]infeasible[/]", escape(r.shortfall.split(", ", 1)[-1]), "", "")
            continue
        by_target: dict[str, list[str]] = {}
        for label, to in r.moves:
            by_target.setdefault(to, []).append(label)
        moves = "; ".join(f"{', '.join(labels)} → {to}" for to, labels in by_target.items()) or "nothing"
        figures = [f"{x:.2f}" if x is not None else "–" for x in (r.wan_mbit, r.server_cores)]
        t.add_row(r.lost, r.status, escape(moves), *figures)
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
