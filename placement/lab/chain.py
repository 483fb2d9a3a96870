"""Running a lab job and moving it to a plan's placement: the steps the end-to-end test and the benchmark share.

Flink's throughput meters (``num*PerSecond``) average over 60 s, so rates read from REST are steady only a minute
after a (re)start: :data:`METER_SETTLE_S`.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.rest import FlinkRest
from placement.writers.planjson import PlanDocument

METER_SETTLE_S = 60.0


def submit(
    rest: FlinkRest,
    jar: str | Path,
    entry_class: str,
    args: Sequence[str],
    *,
    savepoint: str | None = None,
    timeout: float = 240.0,
) -> str:
    """Upload the jar, run it, wait until every subtask is RUNNING; returns the job id."""
    jar_id = rest.upload_jar(jar)
    job_id = rest.run_jar(
        jar_id,
        entry_class=entry_class,
        program_args=list(args),
        savepoint_path=savepoint,
        allow_non_restored_state=savepoint is not None,
    )
    try:
        rest.wait_until_running(job_id, timeout=timeout)
    except BaseException:
        with contextlib.suppress(PlacementError):
            rest.cancel(job_id)
        raise
    return job_id


def mapping_args(mapping: Mapping[str, Sequence[str]]) -> list[str]:
    return ["--placement", json.dumps({k: list(v) for k, v in mapping.items()}, separators=(",", ":"))]


def move(
    rest: FlinkRest,
    job_id: str,
    jar: str | Path,
    entry_class: str,
    args: Sequence[str],
    mapping: Mapping[str, Sequence[str]],
    savepoint_dir: str,
) -> str:
    """Stop ``job_id`` with a savepoint and resubmit the job from it with ``mapping`` as its ``--placement``."""
    savepoint = rest.stop_with_savepoint(job_id, savepoint_dir, timeout=180)
    return submit(rest, jar, entry_class, [*args, *mapping_args(mapping)], savepoint=savepoint)


def planned_counts(mapping: Mapping[str, Sequence[str]]) -> dict[tuple[str, str], int]:
    """(vertex name, host) -> subtasks, the form ``FlinkRest.placement_counts`` answers in."""
    return dict(Counter((vertex, host) for vertex, hosts in mapping.items() for host in hosts))


def predicted_link_mbit(plan: PlanDocument) -> dict[str, float]:
    """Edge host -> the plan's predicted uplink Mbit/s."""
    return {link.source: link.mbit for link in plan.links}


def cancel_all(rest: FlinkRest, timeout: float = 60.0) -> None:
    for job in rest.running_jobs():
        try:
            rest.cancel(job.id)
            rest.wait_for_state(job.id, ("CANCELED", "FAILED", "FINISHED"), timeout=timeout)
        except PlacementError:
            pass


def wait(seconds: float) -> None:
    time.sleep(max(0.0, seconds))
