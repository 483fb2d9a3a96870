"""Fakes of the watch's world-touching parts for its decision tests, beside :mod:`support.fake_flink`:

* ``FakeWindows`` — the window source: each tick's profile is the one the test set for the job, the placement that ran
  is where the ``FakeFlinkRest`` runs the job's subtasks (TaskManager ids are host names);
* ``FakeApply`` — ``placement apply`` of a plan directory on the ``FakeFlinkRest``: the job stopped and started again
  where plan.json puts each subtask, the outcome record as the real actor returns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from placement.cli.watch_cmd import plan_command
from placement.profile.format import JobProfile
from placement.watch.loop import Watch
from placement.watch.observing import JobTrack, JobWindow
from placement.watch.options import WatchOptions
from placement.writers.planjson import load_plan
from support.fake_flink import FakeFlinkRest


class FakeWindows:
    def __init__(self, rest: FakeFlinkRest, profiles: dict[str, JobProfile]):
        self.rest, self.profiles = rest, profiles
        self.read_ticks: list[int] = []

    def read(self, track: JobTrack, tick: int, since_ms: int) -> JobWindow:
        snapshot = track.windows_dir / f"tick-{tick:05d}"
        snapshot.mkdir(parents=True, exist_ok=True)
        profile = self.profiles[track.name]
        job = self.rest.running_job(track.name)
        ids = {v.name: v.id for v in profile.vertices}
        running = {(ids[name], i): tm for name, tms in job.placement.items() for i, tm in enumerate(tms)}
        self.read_ticks.append(tick)
        return JobWindow(snapshot, profile, running, job.id)

    def close(self) -> None:
        pass


class FakeApply:
    def __init__(self, rest: FakeFlinkRest, profiles: dict[str, JobProfile], job_name: str):
        self.rest, self.profiles, self.job_name = rest, profiles, job_name
        self.applied: list[Path] = []

    def __call__(self, plan_dir: Path) -> dict[str, Any]:
        self.applied.append(plan_dir)
        names = {v.id: v.name for v in self.profiles[self.job_name].vertices}
        placement: dict[str, list[str]] = {}
        for a in sorted(load_plan(plan_dir).assignment, key=lambda a: a.subtask):
            placement.setdefault(names[a.vertex_id], []).append(a.host)
        old = self.rest.running_job(self.job_name)
        old.state = "FINISHED"
        new = self.rest.start(self.job_name, placement, start_ms=self.rest.clock_ms())
        return {
            "status": "applied",
            "message": f"applied: job {new} runs every subtask on its planned TaskManager",
            "job_id": new,
            "savepoint": f"file:/savepoints/savepoint-{old.id}",
            "downtime_s": 2.0,
            "changed": True,
            "audit": str(plan_dir / "apply-audit.jsonl"),
        }


def fake_cluster_watch(
    options: WatchOptions,
    *,
    rest: FakeFlinkRest,
    clock: Any,
    profiles: dict[str, JobProfile],
    apply: Any,
    planned: list[float],
) -> Watch:
    """A watch of the fake cluster with the real planner (each re-plan's rate scale appended to ``planned``), its
    windows the fake's ``profiles`` and its applies ``apply``."""
    planner = plan_command(options.inventory_path, rescale=False)

    def plan(profile, out_dir, scale):
        planned.append(scale)
        return planner(profile, out_dir, scale)

    return Watch(options, plan_fn=plan, rest=rest, clock=clock, windows=FakeWindows(rest, profiles), apply=apply)
