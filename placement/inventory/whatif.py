"""What-if edits of an inventory for one ``placement plan`` run: more hosts, other uplinks — the file is not touched.

``--add-host TEMPLATE=N`` adds ``N`` hosts like ``TEMPLATE``, an existing host's name or a host model
(:data:`placement.inventory.HOST_MODELS`; then the template is the edge host of that model with the most source
subtasks born on it — the one most likely short — and the copies get the model's own figures):

* a copy is named ``<template>-add<k>`` and has the template's role, model, figures and flags;
* an edge copy gets an uplink like the template's (same server, bandwidth, delay, jitter, loss);
* **births**: a new Pi stands next to its template and takes over part of its data. The source subtasks born on the
  template (in the order of ``pins.sources``) are dealt round-robin over the template and its copies — with one copy,
  every second one moves. A template with fewer born subtasks than hosts leaves some copies without data; since a
  subtask only runs on a Pi where all of its input is, such a copy can run nothing, and the plan says so;
* a pin (``pins.operators``) or forbid naming the template names its copies too.

``--link HOST:BANDWIDTH[:DELAY]`` sets an edge host's uplink bandwidth (``10mbit``) and, optionally, its delay
(``20ms``); ``--link HOST:PROFILE`` gives it a shipped WAN profile's figures (``rpi1:lte``: bandwidth, delay, jitter
and loss), and ``*`` for HOST every edge host's. Edits apply in order: add hosts first, then links (so an added Pi's
link can be set too).

A plan made on an edited inventory records the edited inventory's digest, so ``placement apply`` refuses it as stale
against the real file: what-if plans are for reading.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from placement.errors import BadInput
from placement.inventory import HOST_MODELS, Inventory
from placement.inventory.wan_profiles import PROFILE_NAME, list_profiles
from placement.units import parse_rate_mbit, parse_time_ms

MAX_ADDED = 100_000


@dataclass(frozen=True)
class AddHosts:
    template: str  # a host name or a host model
    count: int


@dataclass(frozen=True)
class LinkEdit:
    host: str  # "*": every edge host
    bandwidth_mbit: float = 0.0
    delay_ms: float | None = None
    profile: str | None = None  # a WAN profile's name: its figures instead of bandwidth and delay


def parse_add_host(text: str) -> AddHosts:
    """``"rpi4b=3"`` -> AddHosts("rpi4b", 3)."""
    m = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_-]*)\s*=\s*([0-9]+)\s*", text)
    if not m:
        raise BadInput(f"{text!r} is not TEMPLATE=COUNT (a host or host model, e.g. rpi4b=3)", field="--add-host")
    count = int(m.group(2))
    if not 1 <= count <= MAX_ADDED:
        raise BadInput(f"{text!r}: the count must be 1 to {MAX_ADDED}", field="--add-host")
    return AddHosts(m.group(1), count)


def parse_link(text: str) -> LinkEdit:
    """``"rpi1:10mbit"``, ``"rpi1:10mbit:20ms"`` or ``"rpi1:lte"`` (a WAN profile) -> LinkEdit."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[0].strip() or not parts[1].strip():
        raise BadInput(
            f"{text!r} is not HOST:BANDWIDTH[:DELAY] or HOST:PROFILE (e.g. rpi1:10mbit, rpi1:10mbit:20ms, rpi1:lte)",
            field="--link",
        )
    if len(parts) == 2 and PROFILE_NAME.match(parts[1].strip()) and parts[1].strip() in list_profiles():
        return LinkEdit(parts[0].strip(), profile=parts[1].strip())
    try:
        bandwidth = parse_rate_mbit(parts[1].strip())
        delay = parse_time_ms(parts[2].strip()) if len(parts) == 3 and parts[2].strip() else None
    except ValueError as exc:
        raise BadInput(f"{text!r}: {exc}", field="--link") from None
    if bandwidth <= 0:
        raise BadInput(f"{text!r}: the bandwidth must be above 0", field="--link")
    return LinkEdit(parts[0].strip(), bandwidth, delay)


def _births(doc: dict, sources: dict[str, int] | None = None) -> dict[str, int]:
    """Born subtasks per host (of the planned job's sources when given)."""
    count: dict[str, int] = {}
    for vertex, hosts in doc["pins"]["sources"].items():
        if sources is not None and vertex not in sources:
            continue
        listed = ([hosts] * (sources[vertex] if sources else 1)) if isinstance(hosts, str) else hosts
        for h in listed:
            count[h] = count.get(h, 0) + 1
    return count


def _template(doc: dict, name: str, sources: dict[str, int] | None) -> tuple[dict, str | None]:
    """The template host document and the model to give the copies (None: the template's own)."""
    hosts = {h["name"]: h for h in doc["hosts"]}
    if name in hosts:
        return hosts[name], None
    if name not in HOST_MODELS:
        raise BadInput(
            f"{name!r} is neither a host of the inventory nor a host model ({', '.join(sorted(HOST_MODELS))})",
            field="--add-host",
        )
    births = _births(doc, sources)
    edges = [h for h in doc["hosts"] if h["role"] == "edge"]
    same = [h for h in edges if h.get("model") == name] or edges
    if not same:
        raise BadInput(f"the inventory has no edge host to model a new {name!r} Pi on", field="--add-host")
    return max(same, key=lambda h: births.get(h["name"], 0)), name  # max keeps the first of equals


def _deal_births(doc: dict, template: str, names: list[str], sources: dict[str, int] | None) -> None:
    """The template's born subtasks, in order, dealt round-robin over the template and its copies (only the planned
    job's sources when ``sources`` (vertex name or id -> parallelism) is given; a one-host pin is spelled out first)."""
    hosts = [template, *names]
    k = 0
    for vertex, pinned in doc["pins"]["sources"].items():
        if sources is not None and vertex not in sources:
            continue
        if isinstance(pinned, str):
            if sources is None or pinned != template:
                continue
            pinned = [pinned] * sources[vertex]
        listed = list(pinned)
        for i, h in enumerate(listed):
            if h == template:
                listed[i] = hosts[k % len(hosts)]
                k += 1
        doc["pins"]["sources"][vertex] = listed


def _add(doc: dict, add: AddHosts, sources: dict[str, int] | None) -> list[str]:
    template, model = _template(doc, add.template, sources)
    taken = {h["name"] for h in doc["hosts"]}
    names: list[str] = []
    n = 0
    while len(names) < add.count:
        n += 1
        if f"{template['name']}-add{n}" not in taken:
            names.append(f"{template['name']}-add{n}")
    for name in names:
        host = {**template, "name": name, "address": f"whatif-{name}"}
        if model is not None and model != template.get("model"):
            host["model"] = model
            if HOST_MODELS[model].cores is not None:
                for key in ("cores", "memory", "speed", "task_slots", "arch"):
                    host.pop(key, None)
        doc["hosts"].append(host)
        if template["role"] == "edge":
            link = next(dict(link) for link in doc["links"] if link["from"] == template["name"])
            doc["links"].append({**link, "from": name})
    for section in ("operators", "forbid"):
        for vertex, pinned in doc["pins"][section].items():
            listed = [pinned] if isinstance(pinned, str) else list(pinned)
            if template["name"] in listed:
                doc["pins"][section][vertex] = listed + names
    notes = [
        f"what-if: {add.count} more host{'s' if add.count > 1 else ''} like {template['name']}"
        + (f" (model {model})" if model else "")
        + f": {', '.join(names[:5])}{' …' if len(names) > 5 else ''}"
    ]
    if template["role"] == "edge":
        before = _births(doc, sources).get(template["name"], 0)
        _deal_births(doc, template["name"], names, sources)
        births = _births(doc, sources)
        idle = [n for n in names if not births.get(n)]
        if idle:
            notes.append(
                f"what-if: {len(idle)} added Pi{'s' if len(idle) > 1 else ''} ({', '.join(idle[:3])}"
                f"{' …' if len(idle) > 3 else ''}) {'take' if len(idle) > 1 else 'takes'} over no data "
                f"({template['name']} had {before} born subtask{'s' if before != 1 else ''}): nothing can run there"
            )
    return notes


PROFILE_FIGURES = ("bandwidth", "delay", "jitter", "loss", "correlation")


def _link(doc: dict, edit: LinkEdit) -> str:
    if edit.host == "*":
        return "; ".join(
            _link(doc, LinkEdit(link["from"], edit.bandwidth_mbit, edit.delay_ms, edit.profile))
            for link in list(doc["links"])
        )
    links = [link for link in doc["links"] if link["from"] == edit.host]
    if not links:
        edges = [h["name"] for h in doc["hosts"] if h["role"] == "edge"]
        raise BadInput(
            f"{edit.host!r} is not an edge host with an uplink (edge hosts: {', '.join(edges[:8])}"
            f"{' …' if len(edges) > 8 else ''})",
            field="--link",
        )
    link = links[0]
    old = f"{link['bandwidth']:g} Mbit/s"
    if edit.profile is not None:  # the profile's figures: those of the link it leaves out are its own
        for key in PROFILE_FIGURES:
            link.pop(key, None)
        link["profile"] = edit.profile
        return f"what-if: link {edit.host}→{link['to']} on WAN profile {edit.profile} (was {old})"
    link["bandwidth"] = edit.bandwidth_mbit
    link.pop("profile", None)  # a named WAN profile would override the figures set here
    if edit.delay_ms is not None:
        link["delay"] = edit.delay_ms
    return f"what-if: link {edit.host}→{link['to']} at {edit.bandwidth_mbit:g} Mbit/s (was {old})" + (
        f", {edit.delay_ms:g} ms" if edit.delay_ms is not None else ""
    )


def apply_whatif(
    inv: Inventory, adds: Sequence[AddHosts] = (), links: Sequence[LinkEdit] = (), sources: dict[str, int] | None = None
) -> tuple[Inventory, list[str]]:
    """The inventory with the edits applied (validated again), and one note per edit. ``sources``: the planned
    job's source vertices (name or id -> parallelism), whose births are the ones dealt to added Pis."""
    if not adds and not links:
        return inv, []
    doc = inv.model_dump(mode="json", by_alias=True, exclude_none=True)
    notes: list[str] = []
    for add in adds:
        notes += _add(doc, add, sources)
    for edit in links:
        notes.append(_link(doc, edit))
    doc["name"] = f"{inv.name} (what-if)"
    try:
        return Inventory.model_validate(doc), notes
    except ValueError as exc:  # an edit the inventory rules reject (e.g. a name too long)
        raise BadInput(f"the edited inventory is not valid: {str(exc).splitlines()[0]}", field="--add-host") from None
