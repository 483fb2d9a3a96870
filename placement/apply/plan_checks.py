"""What a plan directory must agree with before apply touches anything: checks without a cluster (pure, no I/O).

``placement plan`` writes plan.json and, in custom mode, the schedulercfg from one solution; the extension places by
the schedulercfg while apply verifies by plan.json, so two files that disagree (one edited by hand) would stop the job
and then fail its verify. A plan.json edited so that it breaks the inventory's pins, or a plan of another job than
the one the inventory's ``job:`` describes, is refused here too: each as one :class:`~placement.errors.BadInput`
naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from placement.errors import BadInput
from placement.inventory import Inventory
from placement.writers.planjson import PlanDocument, SubtaskAssignment
from placement.writers.schedulercfg import file_labels, parse_sections, render_schedulercfg

_WRITE_AGAIN = "write the plan directory again with `placement plan`"


def check_plan_targets_its_job(
    plan: PlanDocument, inventory: Inventory, inventory_path: Path, *, named: bool, plan_file: Path
) -> None:
    """Without --job or --job-name, apply stops the job named in the inventory's ``job:`` (or the ``jobs:`` entry of
    the plan's job) and resubmits its program: a plan of another job would stop the wrong one. ``inventory`` is the
    one :meth:`Inventory.for_job` gave for the plan's job."""
    target = inventory.job.name
    if named or target is None or target == plan.job:
        return
    raise BadInput(
        f"no entry named {plan.job!r}, the job {plan_file} is a plan of: apply would stop and resubmit {target!r} "
        f"(job.name); add a jobs: entry for {plan.job!r} (name, program_args), or name the running job with "
        "--job-name",
        source=str(inventory_path),
        field="jobs",
    )


def check_assignment(plan: PlanDocument, inventory: Inventory, *, source: str) -> None:
    """Every subtask on an inventory host at that host's address, and where the inventory's pins allow it."""
    hosts = {h.name: h for h in inventory.hosts}  # by name once: a fleet's inventory has thousands
    for i, a in enumerate(plan.assignment):
        host = hosts.get(a.host)
        if host is None:
            raise BadInput(f"host {a.host!r} is not in the inventory", source=source, field=f"assignment[{i}].host")
        if a.address != host.address:
            raise BadInput(
                f"{a.address!r} is not the address of host {a.host!r} ({host.address}): plan.json was edited by "
                f"hand; {_WRITE_AGAIN}",
                source=source,
                field=f"assignment[{i}].address",
            )
    for i, a in enumerate(plan.assignment):
        broken = pin_broken(a, inventory)
        if broken:
            raise BadInput(
                f"{a.label} on {a.host!r} breaks the inventory's {broken}: plan.json was edited by hand; "
                f"{_WRITE_AGAIN}",
                source=source,
                field=f"assignment[{i}].host",
            )


def pin_broken(a: SubtaskAssignment, inventory: Inventory) -> str | None:
    """The pin (``pins.<section>.<key> (<hosts>)``) that subtask ``a`` on its host breaks, or None. Pins name a
    vertex by name or id, as the planner matches them."""
    pins = inventory.pins
    for key in dict.fromkeys((a.vertex, a.vertex_id)):
        if key in pins.sources:
            births = _as_list(pins.sources[key])
            birth = births[0] if len(births) == 1 else births[a.subtask] if a.subtask < len(births) else None
            if birth is not None and a.host != birth:
                return f"pins.sources.{key} ({', '.join(births)})"
        if key in pins.operators and a.host not in _as_list(pins.operators[key]):
            return f"pins.operators.{key} ({', '.join(_as_list(pins.operators[key]))})"
        if key in pins.forbid and a.host in _as_list(pins.forbid[key]):
            return f"pins.forbid.{key} ({', '.join(_as_list(pins.forbid[key]))})"
    return None


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def check_schedulercfg(text: str, plan: PlanDocument, inv: Inventory, *, source: str) -> None:
    """The plan's schedulercfg is whole, names this inventory's hosts and says what plan.json says: every planned
    subtask has its line, on the host plan.json puts it, and each contingency section moves what plan.json's
    contingencies move. A partial or hand-edited file is refused here, before anything changes (the extension would
    refuse it at submission, after the job was stopped, or place the job elsewhere than apply then verifies)."""
    if not text.strip():
        raise BadInput(
            "empty (custom mode needs one line per subtask: '<task name> (<i>/<n>); <TaskManager>')", source=source
        )
    try:
        sections = parse_sections(text)
    except BadInput as exc:
        raise BadInput(str(exc).split(": ", 1)[-1], source=source) from None
    order = list(dict.fromkeys(a.vertex_id for a in plan.assignment))
    wanted = parse_sections(render_schedulercfg(plan.assignment, order, plan.contingencies or ()))
    lines = sections[""]
    missing = [label for label in wanted[""] if label not in lines]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise BadInput(
            f"no line for {', '.join(repr(m) for m in missing[:5])}{more} (a partial file: every subtask of "
            "the plan needs its line; write it again with `placement plan`)",
            source=source,
        )
    host_of = {h.address: h.name for h in inv.hosts} | {h.name: h.name for h in inv.hosts}
    for section in sections.values():
        for label, where in section.items():
            if where not in host_of:
                raise BadInput(
                    f"line {label!r} names TaskManager {where!r}, which is no host of the inventory", source=source
                )
    _same_lines(lines, wanted[""], host_of, plan.assignment, source=source, where="")
    _same_sections(sections, wanted, host_of, plan, source=source)


def _same_lines(
    lines: dict[str, str],
    wanted: dict[str, str],
    host_of: dict[str, str],
    assignment: Sequence[SubtaskAssignment],
    *,
    source: str,
    where: str,
) -> None:
    """The lines of one section name the hosts plan.json names, and no subtask plan.json does not have."""
    row = {label: i for i, label in enumerate(_file_labels(assignment))}
    for label, address in wanted.items():
        have = host_of[lines[label]] if label in lines else None
        if have is not None and have != host_of[address]:
            field = f"assignment[{row[label]}].host" if not where and label in row else "contingencies"
            raise BadInput(
                f"{where}line {label!r} places it on {have!r}, plan.json ({field}) on {host_of[address]!r}: the "
                f"two files disagree (one was edited by hand); {_WRITE_AGAIN}",
                source=source,
            )
    extra = [label for label in lines if label not in wanted and label != "*"]
    if extra:
        raise BadInput(
            f"{where}line {extra[0]!r} is no subtask plan.json places{' there' if where else ''} (a schedulercfg of "
            f"another plan?); {_WRITE_AGAIN}",
            source=source,
        )


def _same_sections(
    sections: dict[str, dict[str, str]],
    wanted: dict[str, dict[str, str]],
    host_of: dict[str, str],
    plan: PlanDocument,
    *,
    source: str,
) -> None:
    """Each ``[lost <address>]`` section moves what plan.json's contingency of that host moves."""
    lost = {host_of.get(k, k): k for k in sections if k}
    want = {host_of.get(k, k): k for k in wanted if k}
    unknown = sorted(set(lost) - set(want))  # an edited header: said as what was edited, before what it hides
    if unknown:
        raise BadInput(
            f"section [lost {lost[unknown[0]]}]: plan.json has no contingency for it; {_WRITE_AGAIN}", source=source
        )
    for host in sorted(want):
        if host not in lost:
            raise BadInput(
                f"no section [lost {want[host]}], which plan.json's contingencies move subtasks in; {_WRITE_AGAIN}",
                source=source,
            )
        section, expected = sections[lost[host]], wanted[want[host]]
        missing = [label for label in expected if label not in section]
        if missing:
            raise BadInput(
                f"section [lost {lost[host]}]: no line for {missing[0]!r}, which plan.json's contingency moves; "
                f"{_WRITE_AGAIN}",
                source=source,
            )
        _same_lines(section, expected, host_of, plan.assignment, source=source, where=f"section [lost {lost[host]}]: ")


def _file_labels(assignment: Sequence[SubtaskAssignment]) -> list[str]:
    """The label each assignment row's schedulercfg line carries, in the rows' order."""
    labels = file_labels(assignment)
    return [labels[(a.vertex_id, a.subtask)] for a in assignment]
