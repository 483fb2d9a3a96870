"""The watch's observer: what the running job(s) show each tick, read from Flink's REST endpoint and the window's
profile, and nothing decided.

* :class:`JobTrack` — one watched job's state across ticks (its rolling history, windows, baseline, counters). One job
  is a fleet of one: its files are in WORK_DIR itself and nothing it logs is named; several jobs each have
  WORK_DIR/<job>/ and every blocker, note, drift and effect names its job.
* :class:`SnapshotWindows` — the window of one job: its rolling history cut (:func:`snapshot_window`), profiled with
  ``placement profile``'s own function (:mod:`.profiling`) and read for where its subtasks ran.
* :class:`Observer` — per job why no change may start now (no running job, not wholly RUNNING, warming up), its
  window (:class:`Observed`), its sources' fresh rates, and a checkpoint in progress to wait out before a change.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from placement.clock import Clock
from placement.collect import shaping
from placement.collect.layout import find_manifests
from placement.collect.rolling import snapshot_window
from placement.costmodel.jobs import dir_names
from placement.costmodel.model import Assignment
from placement.errors import PlacementError
from placement.flink.port import FlinkPort
from placement.flink.rest import TERMINAL_STATES, JobDetails
from placement.inventory import Inventory
from placement.polling import poll
from placement.profile.format import JobProfile
from placement.profile.rules import current_assignment
from placement.watch.options import Status, WatchOptions
from placement.watch.profiling import WindowProfiler
from placement.watch.signals import Baseline, Drift, Window, of_job


@dataclass
class JobTrack:
    """One watched job's own state: its rolling history and window snapshots, what its running placement is held to
    (baseline), its recent windows and its source counters. Watching one job its files are in WORK_DIR itself (as
    ever); watching several, each job's in WORK_DIR/<job>/ and ``named``: what it logs names it."""

    name: str
    root: Path
    named: bool = False
    baseline: Baseline | None = None
    windows: list[Window] = field(default_factory=list)
    made_for: Baseline | None = None  # after an apply: what its plan was made for, until a warm window
    pending_effect: tuple[int, str | None, dict[str, float]] | None = None  # (tick, job before, predicted)
    planned_links: dict[str, float] = field(default_factory=dict)  # the last re-plan's predicted Mbit/s per uplink
    planned_rates: dict[str, float] = field(default_factory=dict)  # ... and the source rates it was made for
    job_id: str | None = None  # the running job last seen
    sources: dict[str, Any] = field(default_factory=dict)  # the job whose source vertices are known, ids -> names
    counts: tuple[float, dict[str, float | None]] | None = None  # the last tick's source counters
    started_on: Assignment | None = None  # the placement running when the watch started (no plan in effect)

    @property
    def history(self) -> Path:
        return self.root / "history"

    @property
    def windows_dir(self) -> Path:
        return self.root / "windows"

    def plan_in_effect(self) -> str | None:
        held = self.made_for or self.baseline
        return held.plan_dir if held is not None else None

    def plan_json(self, plan_dir: str) -> Path:
        """This job's plan.json in a plan directory (several jobs: the fleet's, one sub-directory per job)."""
        return Path(plan_dir) / (self.root.name if self.named else "") / "plan.json"

    def labelled(self, texts: Sequence[str]) -> list[str]:
        return [f"job {self.name}: {t}" for t in texts] if self.named else list(texts)

    def own_drifts(self, drifts: Sequence[Drift]) -> list[Drift]:
        return of_job(drifts, self.name) if self.named else list(drifts)

    def tagged(self, record: dict[str, Any]) -> dict[str, Any]:
        return {**record, "job": self.name} if self.named else record


def tracks_for(options: WatchOptions) -> list[JobTrack]:
    names = options.names
    if len(names) == 1:
        return [JobTrack(names[0], options.work_dir)]
    return [JobTrack(name, options.work_dir / d, named=True) for name, d in zip(names, dir_names(names))]


@dataclass
class Seen:
    """One job's part of a tick: why no change may start, what its window showed, and its drifts."""

    track: JobTrack
    blockers: list[str]
    notes: list[str]
    job: JobDetails | None = None
    window: Window | None = None
    snapshot: Path | None = None
    profile: JobProfile | None = None
    running: Assignment | None = None
    drifts: list[Drift] = field(default_factory=list)


@dataclass(frozen=True)
class Observed:
    """A job's window before it is priced: its profile, where its subtasks ran, and what REST said besides."""

    snapshot: Path
    profile: JobProfile
    running: Assignment | None
    since_ms: int
    job_id: str
    taskmanagers: frozenset[str]
    fresh_rates: dict[str, float]


@dataclass(frozen=True)
class JobWindow:
    """What a job's rolling history holds for one window: the snapshot, its profile, the placement that ran."""

    snapshot: Path
    profile: JobProfile
    running: Assignment | None
    job_id: str


class WindowSource(Protocol):
    def read(self, track: JobTrack, tick: int, since_ms: int) -> JobWindow: ...

    def close(self) -> None: ...


TICK_NAME = re.compile(r"tick-(\d+)")


def tick_dirs(directory: Path) -> list[Path]:
    """The ``tick-N`` entries of ``directory``, oldest first by number (tick-100000, after 35 days at a 30 s
    interval, comes after tick-99999 though it sorts before it as text)."""
    named = [(TICK_NAME.match(p.name), p) for p in directory.glob("tick-*")] if directory.is_dir() else []
    return [p for _, p in sorted((int(m.group(1)), p) for m, p in named if m)]


def last_tick(*directories: Path) -> int:
    """The highest tick a previous watch left in these directories (0: none). Windows and plans are named by tick
    and written once, so a watch restarted on the same WORK_DIR numbers on from here: starting again at 1 it would
    meet its predecessor's names, and prune its own new windows as the oldest."""
    ticks = [int(m.group(1)) for d in directories for p in tick_dirs(d) if (m := TICK_NAME.match(p.name))]
    return max(ticks, default=0)


class SnapshotWindows:
    """Windows cut from each job's rolling history and profiled with one Spark session for the whole watch."""

    def __init__(self, options: WatchOptions, inventory: Inventory, keep: int = 20):
        self.inventory, self.keep = inventory, keep
        self.profiler = WindowProfiler(
            engine=options.engine,
            spark_master=options.spark_master,
            inventory=options.inventory_path,
            warmup_s=options.warmup_s,
        )

    def read(self, track: JobTrack, tick: int, since_ms: int) -> JobWindow:
        snapshot = track.windows_dir / f"tick-{tick:05d}"
        if snapshot_window(track.history, snapshot, job_name=track.name, since_ms=since_ms) == 0:
            raise PlacementError("the collector has written no part in the window yet")
        for old in tick_dirs(track.windows_dir)[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)
        profile = self.profiler.profile(snapshot)
        manifest = find_manifests(snapshot)[-1][1]
        return JobWindow(snapshot, profile, current_assignment(manifest, self.inventory), manifest.job_id)

    def close(self) -> None:
        self.profiler.close()


class Observer:
    def __init__(
        self,
        options: WatchOptions,
        rest: FlinkPort,
        windows: WindowSource,
        clock: Clock,
        status: Status,
        update: Callable[[str], None],
        stopped: Callable[[], bool],
    ):
        self.o, self.rest, self.windows, self.clock = options, rest, windows, clock
        self.status, self.update, self.stopped = status, update, stopped
        self._fetch_wait_s: float | None = None  # how long a fresh counter reading may wait for a metric fetch

    def look(
        self, tracks: Sequence[JobTrack], tick: int, now_ms: int, last_change_ms: int | None
    ) -> tuple[list[Seen], dict[str, Observed]]:
        """Every job's blockers and, where it can be read, its window (observed, and logged, even while a checkpoint
        blocks a change)."""
        seen, observed = [], {}
        for track in tracks:
            blockers, job, notes = self.blockers(track, tracks[0], now_ms)
            s = Seen(track, blockers, notes, job)
            if job is not None:
                self.update("profiling the window" + (f" of {track.name}" if track.named else ""))
                try:
                    observed[track.name] = self.observe(track, tick, now_ms, job, last_change_ms)
                except PlacementError as exc:
                    s.blockers.append(f"no usable window: {exc}")
            seen.append(s)
        return seen, observed

    def blockers(self, track: JobTrack, first: JobTrack, now_ms: int) -> tuple[list[str], JobDetails | None, list[str]]:
        """Why no change may start now; the running job's REST body when its window can be read (None while there
        is no running job, it is not wholly RUNNING or still warming up); notes."""
        try:
            running = [j for j in self.rest.jobs() if j.name == track.name and j.state not in TERMINAL_STATES]
        except PlacementError as exc:
            return [f"Flink REST: {exc}"], None, []
        if len(running) != 1:
            return (
                (
                    [f"no running job named {track.name!r} (a redeploy in progress?)"]
                    if not running
                    else [f"{len(running)} jobs named {track.name!r} run"]
                ),
                None,
                [],
            )
        job = self.rest.job(running[0].id)
        track.job_id = job.id
        self.status.job_ids[track.name] = job.id
        if track is first:
            self.status.job_id = job.id
        if not job.all_running:
            return [f"job {job.id} is not wholly RUNNING (a redeploy or restart in progress)"], None, []
        # a whole window past --warmup: Flink's 60 s rate meters still carry the start in the first samples after it
        warm = job.start_ms / 1000 + self.o.warmup_s + self.o.window_s - now_ms / 1000
        if warm > 0:
            return [f"warming up: {warm:.0f} s until a whole window past --warmup"], None, []
        return [], job, []

    def observe(self, track: JobTrack, tick: int, now_ms: int, job: JobDetails, last_change_ms: int | None) -> Observed:
        since = now_ms - int(self.o.window_s * 1000)
        if last_change_ms is not None:
            since = max(since, last_change_ms)
        w = self.windows.read(track, tick, since)
        return Observed(
            w.snapshot, w.profile, w.running, since, w.job_id, self.registered(), self.fresh_rates(track, job.id)
        )

    def registered(self) -> frozenset[str]:
        """The TaskManagers registered now."""
        return frozenset(tm.id for tm in self.rest.taskmanagers())

    def fresh_rates(self, track: JobTrack, job_id: str) -> dict[str, float]:
        """Records/s of each source vertex since the previous tick, from its ``numRecordsOut`` counter (summed over
        its subtasks, and over a vanilla-placed source's lane copies); empty on a job's first tick. Each reading is
        dated when a metric fetch lands (:meth:`FlinkRest.fetched_counters`): dated when asked, readings lag by
        anything up to a fetch interval, and rates over a 10 s tick were off by ±20–40 % on a loaded lab — enough to
        look like a step still moving."""
        if track.sources.get("job") != job_id:
            vertices, edges = shaping.job_graph(self.rest.job_raw(job_id), self.rest.plan(job_id))
            fed = {e.target for e in edges}
            track.sources = {"job": job_id, "ids": {v.id: v.name for v in vertices if v.id not in fed}}
            track.counts = None
        ids = track.sources["ids"]
        if self._fetch_wait_s is None:
            self._fetch_wait_s = self.rest.metric_fetch_interval_s() + 2.0
        now, by_id = self.rest.fetched_counters(job_id, list(ids), "numRecordsOut", wait_s=self._fetch_wait_s)
        counts: dict[str, float | None] = {}
        for vid, value in by_id.items():  # by name: a vanilla-placed source is one vertex per lane, all one name
            name = ids[vid]
            counts[name] = (
                None
                if value is None or (name in counts and counts[name] is None)
                else (counts.get(name) or 0.0) + value
            )
        before, track.counts = track.counts, (now, counts)
        if before is None or now - before[0] < 1.0:
            return {}
        return {
            name: (c - was) / (now - before[0])
            for name, c in counts.items()
            if c is not None and (was := before[1].get(name)) is not None and c >= was
        }

    def checkpoint_settled(self, job_id: str) -> str | None:
        """Wait (up to ``checkpoint_grace_s``) until no checkpoint or savepoint of the job is in progress; the
        blocker when one still is. Checkpoints come every few seconds: a decision waits out the one under way
        rather than skipping its tick (ticks in step with the checkpoint interval would never find a gap)."""
        running_s, settled = poll(
            lambda: self.checkpoint_running_s(job_id, int(self.clock.now() * 1000)),
            lambda running: running is None,
            timeout=self.o.checkpoint_grace_s,
            every=0.5,
            clock=self.clock,
            give_up=self.stopped,
        )
        if settled:
            return None
        return f"a checkpoint or savepoint has been in progress for {running_s:.0f} s"

    def checkpoint_running_s(self, job_id: str, now_ms: int) -> float | None:
        """How long the oldest checkpoint or savepoint in progress has been running; None when none is."""
        try:
            body = self.rest.get(f"/jobs/{job_id}/checkpoints")
        except PlacementError:
            return None  # checkpointing off
        if not body.get("counts", {}).get("in_progress", 0):
            return None
        started = [c.get("trigger_timestamp") for c in body.get("history", []) if c.get("status") == "IN_PROGRESS"]
        started = [t for t in started if isinstance(t, (int, float))]
        return (now_ms - min(started)) / 1000 if started else 0.0
