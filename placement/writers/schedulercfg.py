"""schedulercfg — the placement file the scheduler extension (``scheduler/``) reads on stock Flink.

One line per subtask, ``<task name> (<i>/<n>); <TaskManager address>``, i 1-based, in topological vertex order then
subtask order: the seed projects' format (their patched Flinks, flink-placement and CAPSys, read it too).

The extension matches a label exactly first, so a label that is a substring of another task's name (``Map (1/2)``
inside ``FlatMap (1/2)``) places the right subtask; the seed forks match with ``contains()`` and would not:
:func:`label_collisions` finds those for a warning. Two vertices with the same name cannot be told apart by name at
all: their lines carry the job vertex id in place of the name (``<32 hex digits> (<i>/<n>)``), which the extension
understands (the seed forks do not).

Contingencies (issue 43) follow the plan's lines as sections: ``[lost <address>]``, then the lines of the subtasks
that run elsewhere while that TaskManager is lost (the others keep their plan line). The extension uses a section
when the TaskManager it names is not alive at (re)scheduling; a contingency nothing fits has no section, only a
comment saying what is short. The seed forks read no sections: a plan for them is written without
(``contingencies=()``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from placement.errors import BadInput
from placement.writers.planjson import ContingencyRecord, SubtaskAssignment


def label_collisions(assignment: Sequence[SubtaskAssignment]) -> list[tuple[str, str]]:
    """(label, other task's name) pairs where the label would also match the other task under ``contains()``."""
    labels = [a.label for a in assignment]
    names = set(labels)
    return [(label, other) for label in labels for other in names if other != label and label in other]


def file_labels(assignment: Sequence[SubtaskAssignment]) -> dict[tuple[str, int], str]:
    """(vertex id, subtask) -> the label its line carries: ``Name (i/n)``, or ``<vertex id> (i/n)`` where another
    vertex of the job has the same name."""
    names = Counter(name for _vid, name in {(a.vertex_id, a.vertex) for a in assignment})
    return {
        (a.vertex_id, a.subtask): a.label
        if names[a.vertex] == 1
        else f"{a.vertex_id} ({a.subtask + 1}/{a.parallelism})"
        for a in assignment
    }


def render_schedulercfg(
    assignment: Sequence[SubtaskAssignment],
    vertex_order: Sequence[str],
    contingencies: Sequence[ContingencyRecord] = (),
) -> str:
    """The schedulercfg text: the plan's lines, then a section per contingency that moves anything."""
    rank = {vid: n for n, vid in enumerate(vertex_order)}
    labels = file_labels(assignment)
    rows = sorted(assignment, key=lambda a: (rank[a.vertex_id], a.subtask))
    text = "".join(f"{labels[(a.vertex_id, a.subtask)]}; {a.address}\n" for a in rows)
    shared = {a for a, n in Counter(c.address for c in contingencies).items() if n > 1}
    for c in contingencies:
        if c.shortfall:
            text += f"\n# no contingency for {c.lost} ({c.address}): {c.shortfall}\n"
        elif c.moves:
            moves = sorted(c.moves, key=lambda m: (rank[m.vertex_id], m.subtask))
            # a header names its TaskManager as a line does; where hosts share an address, by its resource id (the
            # inventory's host name, as apply, the lab and the Ansible role set it)
            text += f"\n[lost {c.lost if c.address in shared else c.address}]\n" + "".join(
                f"{labels[(m.vertex_id, m.subtask)]}; {m.address}\n" for m in moves
            )
    return text


def parse_schedulercfg(text: str) -> dict[str, str]:
    """label -> address of the plan's lines (for checks and for reading a schedulercfg back); blank lines and ``#``
    comments skipped, the default line ``*; <TaskManager>`` kept under the label ``*``."""
    return parse_sections(text)[""]


def parse_sections(text: str) -> dict[str, dict[str, str]]:
    """The plan's lines under ``""`` and each contingency section's under the address its ``[lost <address>]`` names."""
    sections: dict[str, dict[str, str]] = {"": {}}
    out = sections[""]
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        head = line.strip()
        if head.startswith("["):
            lost = head[len("[lost ") : -1].strip() if head.startswith("[lost ") and head.endswith("]") else ""
            if not lost or " " in lost:
                raise BadInput(f"line {n} is not a section header '[lost <address>]'", source="schedulercfg")
            if lost in sections:
                raise BadInput(f"line {n}: a second section for {lost!r}", source="schedulercfg")
            out = sections[lost] = {}
            continue
        label, sep, address = line.rpartition(";")
        if not sep or not label.strip() or not address.strip() or " " in address.strip():
            raise BadInput(f"line {n} is not '<task name> (<i>/<n>); <address>'", source="schedulercfg")
        if label.strip() in out:
            raise BadInput(f"line {n}: a second line for {label.strip()!r}", source="schedulercfg")
        out[label.strip()] = address.strip()
    return sections
