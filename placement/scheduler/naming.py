"""What the extension and the cluster must agree on: config keys, file names, resource names, the TaskManager table.

Pure functions; the Java side (``scheduler/src/.../PlacementNames.java``) implements the same mappings, and
``tests/scheduler`` checks the two agree by running the Java ones.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:  # annotations only: `placement plan` names schedulercfg files without loading an HTTP client
    from placement.flink.rest import TaskManagerInfo

SCHEDULER_DIR_KEY = "placement.scheduler.dir"  # JobManager config: the directory holding one schedulercfg per job
JOB_FILE_KEY = "placement.scheduler.file"  # a job's own configuration: the schedulercfg of this job (overrides the dir)
TASKMANAGERS_FILENAME = "taskmanagers.cfg"  # in the scheduler dir: each TaskManager's addresses, slots, slot size
SCHEDULERCFG_SUFFIX = ".schedulercfg"
# The stable prefix of the line the extension logs (JobManager log, INFO) for every job it sees.
ACTIVE_LOG_LINE = "placement scheduler extension active"

_FILE_SAFE = re.compile(r"[A-Za-z0-9_.-]")
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_MAX_STEM = 200  # file names stay well below the usual 255-byte limit


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_stem(job_name: str) -> str:
    """``job_name`` as a file name stem, distinct names giving distinct stems: characters outside ``[A-Za-z0-9_.-]``
    (and a leading ``.``) are percent-encoded as UTF-8 bytes (``IoT Sensors`` -> ``IoT%20Sensors``); a very long name
    is cut and gets a hash of the whole name."""
    out = []
    for n, ch in enumerate(job_name):
        if _FILE_SAFE.fullmatch(ch) and not (n == 0 and ch == "."):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    stem = "".join(out) or "%00"
    if len(stem) > _MAX_STEM:
        stem = f"{stem[: _MAX_STEM - 17]}-{_short_hash(job_name)[:16]}"
    return stem


def schedulercfg_filename(job_name: str) -> str:
    """The file the extension looks for in the scheduler dir for a job called ``job_name`` (:func:`file_stem`, which
    the Java side implements too: ``IoT Sensors`` -> ``IoT%20Sensors.schedulercfg``)."""
    return file_stem(job_name) + SCHEDULERCFG_SUFFIX


def taskmanager_resource_name(host: str) -> str:
    """The external-resource name a TaskManager declares and placed slots request.

    A name made of ``[A-Za-z0-9_-]`` is kept as is (inventory host names always are); any other (``10.0.0.5``,
    ``edge.local``) has each other character replaced by ``_`` and 8 hex digits of its SHA-256 appended, so two
    different names never share a resource (``10.0.0.5`` -> ``10_0_0_5-<hash>``)."""
    if not host:
        raise ValueError("empty TaskManager name")
    if _RESOURCE_NAME.fullmatch(host):
        return host
    return re.sub(r"[^A-Za-z0-9_-]", "_", host) + "-" + _short_hash(host)[:8]


def taskmanager_config(host: str, slots: int) -> dict[str, object]:
    """Flat Flink config keys a TaskManager needs so the extension can place subtasks on it.

    ``host`` becomes its ``taskmanager.resource-id`` (what REST shows and what schedulercfg lines name) and its
    external resource, one unit per slot: a placed slot requests one unit, so only this TaskManager can hold it. The
    same keys serve vanilla mode (the lab jobs' slot sharing groups request the same resource)."""
    if slots < 1:
        raise ValueError(f"TaskManager {host}: slots must be >= 1, not {slots}")
    name = taskmanager_resource_name(host)
    return {
        "taskmanager.resource-id": host,
        "taskmanager.numberOfTaskSlots": slots,
        "external-resources": [name],
        f"external-resource.{name}.amount": slots,
    }


def jobmanager_config(scheduler_dir: str) -> dict[str, object]:
    """Flat Flink config keys the JobManager needs: where the per-job schedulercfgs live, and the default scheduler
    (the adaptive schedulers do not use the slot-sharing allocator the extension replaces)."""
    return {SCHEDULER_DIR_KEY: str(scheduler_dir), "jobmanager.scheduler": "default"}


# ---- the TaskManager table ---------------------------------------------------------------------------------------

_PROFILE_KEYS = (  # REST totalResource key -> table key
    ("taskHeapMemory", "task-heap"),
    ("taskOffHeapMemory", "task-off-heap"),
    ("managedMemory", "managed"),
    ("networkMemory", "network"),
)


def taskmanager_address(info: TaskManagerInfo) -> str | None:
    """The host a TaskManager runs on, from its RPC path (``pekko.tcp://flink@10.0.0.5:6122/user/rpc/taskmanager_0``)."""
    try:
        host = urlsplit(info.path.replace("pekko.tcp://", "tcp://", 1)).hostname
    except ValueError:
        return None
    return host or None


def render_taskmanagers(
    taskmanagers: Sequence[TaskManagerInfo], addresses: Mapping[str, Sequence[str]] | None = None
) -> str:
    """``taskmanagers.cfg``: one line per TaskManager with the addresses that name it and the size of one of its slots.

    The slot size is the TaskManager's total resources (``GET /taskmanagers``) divided by its slots, rounded down to
    whole MiB (so ``slots`` placed slots always fit); a placed slot requests exactly that, so a Pi's slot is a Pi's and
    the server keeps its managed memory (RocksDB). ``addresses`` adds names per resource id (e.g. the inventory's
    address), to the address of its RPC endpoint."""
    lines = ["# placement scheduler: the cluster's TaskManagers (resource id; addresses; slots; size of one slot)\n"]
    for tm in sorted(taskmanagers, key=lambda t: t.id):
        if tm.slots < 1:
            continue
        names = [a for a in (*(addresses or {}).get(tm.id, ()), taskmanager_address(tm)) if a and a != tm.id]
        unique = list(dict.fromkeys(names))
        total = tm.total_resource
        cpu = math.floor(float(total.get("cpuCores", 0.0)) / tm.slots * 1000) / 1000
        fields = [tm.id, f"addresses={','.join(unique)}", f"slots={tm.slots}", f"cpu={cpu:g}"]
        for rest_key, key in _PROFILE_KEYS:
            fields.append(f"{key}={int(float(total.get(rest_key, 0)) // tm.slots)}m")
        lines.append("; ".join(fields) + "\n")
    return "".join(lines)
