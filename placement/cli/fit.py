"""Tables that fit the terminal without cutting a figure.

rich squeezes a table wider than the terminal by shortening cells to ``158.…`` and ``opti…``: a number cut like that
reads as another number. :func:`fitted` keeps a table when it fits with its text wrapped between words, and otherwise
stacks it: one block per row, each cell on a line of its own after its column's header, where nothing needs cutting
(a value longer than the terminal wraps, whole).
"""

from __future__ import annotations

import os
import sys

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.errors import MarkupError
from rich.table import Table
from rich.text import Text

PIPED_WIDTH = 140  # a file or CI log without COLUMNS: wide enough for the comparison tables


def report_console(*, stderr: bool = False, highlight: bool = True) -> Console:
    """The console a command's tables go to: the terminal's width, else ``$COLUMNS`` where it is set (``COLUMNS=100
    placement plan … | less``), else :data:`PIPED_WIDTH` (rich's own choice for a pipe would be 80, and a table
    stacked at 80 in a log reads worse than a wide one)."""
    stream = sys.stderr if stderr else sys.stdout
    tty = stream is not None and stream.isatty()
    width = None if tty or os.environ.get("COLUMNS", "").strip().isdigit() else PIPED_WIDTH
    return Console(stderr=stderr, width=width, highlight=highlight)


def _text(renderable: object) -> Text:
    """A cell as the table shows it: a str cell is rich markup there, so it is here."""
    if isinstance(renderable, Text):
        return renderable
    try:
        return Text.from_markup(str(renderable))
    except MarkupError:
        return Text(str(renderable))


def _plain(renderable: object) -> str:
    return _text(renderable).plain


def stacked(table: Table) -> RenderableType:
    """``table`` as blocks of ``header: value`` lines, one block per row, headed by the row's first cell."""
    headers = [" ".join(_plain(c.header).split()) for c in table.columns]
    rows = list(zip(*(list(c.cells) for c in table.columns)))
    parts: list[RenderableType] = []
    if table.title:
        parts.append(Text(_plain(table.title), style="bold"))
    for row in rows:
        block = Table.grid(padding=(0, 1))
        block.add_column(style="dim", no_wrap=True)
        block.add_column(overflow="fold")
        for header, cell in zip(headers[1:], row[1:]):
            block.add_row(f"{header}:", cell)
        if len(parts) > (1 if table.title else 0):
            parts.append(Text(""))  # a blank line between rows' blocks
        parts.extend([Text.assemble((f"{headers[0]}: " if headers[0] else "", "dim"), _text(row[0])), block])
    if table.caption:
        parts.append(Text(_plain(table.caption), style="dim"))
    return Group(*parts)


def _minimum_width(table: Table) -> int:
    """The narrowest the table gets without breaking a word or a number: rich's own measurement allows less (it
    then shortens cells), so it is counted here: each column its longest word plus padding, and the rules between."""
    words = [
        max((cell_len(word) for cell in (c.header, *c.cells) for word in _plain(cell).split()), default=0)
        for c in table.columns
    ]
    padding = table.padding[1] + table.padding[3]  # right and left of every cell
    rules = (len(words) + 1 if table.show_edge else len(words) - 1) if table.box else 0
    return sum(words) + len(words) * padding + rules


def fitted(console: Console, table: Table) -> RenderableType:
    """``table`` when it fits ``console`` with its text wrapped between words (its minimum width: each column as wide
    as its longest word or number), else :func:`stacked`. A kept table folds rather than shortens a cell with "…"."""
    if _minimum_width(table) > console.width:
        return stacked(table)
    for column in table.columns:
        column.overflow = "fold"
    return table


def print_table(console: Console, table: Table) -> None:
    console.print(fitted(console, table))
