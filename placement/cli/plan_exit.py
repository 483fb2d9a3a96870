"""How ``placement plan`` ends once the plan directory is written: the ``--json`` summary, and an infeasible plan's
exit status and one-line error. Apart from :mod:`placement.cli.plan_tables` so that ``--quiet`` and ``--json``, which
print no table, import no rich."""

from __future__ import annotations

import sys

from placement.cli.params import echo_json
from placement.errors import EXIT_INFEASIBLE, Infeasible
from placement.solver.result import PlanResult


def finish(summary: dict, result: PlanResult, as_json: bool) -> None:
    """The --json summary on stdout, then an infeasible plan's exit: 3, with its one-line error unless --json said
    it."""
    if as_json:
        echo_json(summary)
    if result.status == "infeasible":
        if as_json:
            sys.exit(EXIT_INFEASIBLE)
        raise Infeasible(infeasible_error(result))


def infeasible_error(result: PlanResult) -> str:
    """The one-line error after the table: the largest shortfall and the first structural cause, counting the rest."""
    if not result.shortages:
        return f"no placement fits: {result.reason}"
    more = len(result.shortages) - 1
    text = f"no placement fits: {result.shortages[0].message}" + (
        f" and {_count(more, 'more shortfall')} (table above)" if more else ""
    )
    if result.causes:
        text += f"; {result.causes[0]}" + (
            f" ({_count(len(result.causes) - 1, 'more cause')} above)" if len(result.causes) > 1 else ""
        )
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
