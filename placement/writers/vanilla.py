"""Vanilla-Flink placement: what realises a plan on an unpatched Flink 2.x (no custom scheduler).

Each TaskManager declares a unique external resource named after its host; the job puts every operator into a slot
sharing group that requests that resource (see ``deploy/jobs``), so its subtasks can only land on that TaskManager.
This writer gives, per host, the TaskManager config keys, and the program arguments carrying the mapping. The
resource amount must cover the slots the plan fills there (one unit per slot); we declare the host's task slots, which
every feasible plan respects, so one TaskManager config serves every plan.
"""

from __future__ import annotations

import json

import yaml

from placement.inventory import Inventory
from placement.writers.planjson import PlanDocument


def taskmanager_config(inv: Inventory, host: str) -> dict[str, object]:
    """Flink config keys (flat form) a host's TaskManager needs for vanilla placement."""
    h = inv.host(host)
    return {
        "taskmanager.resource-id": h.name,
        "taskmanager.numberOfTaskSlots": int(h.task_slots or 1),
        "external-resources": h.name,
        f"external-resource.{h.name}.amount": int(h.task_slots or 1),
    }


def render_taskmanager_configs(plan: PlanDocument, inv: Inventory) -> dict[str, str]:
    """``vanilla/<host>.yaml`` for every host the plan uses."""
    used = sorted({a.host for a in plan.assignment})
    return {f"vanilla/{h}.yaml": yaml.safe_dump(taskmanager_config(inv, h), sort_keys=False) for h in used}


def placement_args(plan: PlanDocument) -> list[str]:
    """The program arguments the lab jobs read: ``--placement <vertex name -> host of each subtask>``."""
    return ["--placement", json.dumps(plan.mapping(), separators=(",", ":"))]
