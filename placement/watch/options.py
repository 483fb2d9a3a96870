"""What ``placement watch`` is told and what it shows: its options, the planner callables the CLI gives the loop and
their outcome, and the live status the loop updates after each step (plain values, no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from placement.errors import BadInput
from placement.planning.forecast_settings import check_forecast_settings
from placement.watch.policy import Decision, PolicyConfig, Proposal
from placement.watch.signals import Drift, DriftThresholds, Window

ApplyMode = Literal["never", "ask", "auto"]


@dataclass(frozen=True)
class PlanOutcome:
    """What the planner made of a window's profile (written to ``plan_dir`` when something fits)."""

    plan_dir: Path
    fits: bool
    wan_mbit: float | None
    violations: tuple[str, ...] = ()  # why nothing fits
    links: Mapping[str, float] = field(default_factory=dict)  # edge host -> predicted Mbit/s
    assignment: Mapping[tuple[str, int], str] = field(default_factory=dict)
    peak: float | None = None  # the busiest uplink or host as a share of its capacity (see peak_use)
    jobs: Mapping[str, PlanOutcome] = field(default_factory=dict)  # several jobs planned together: each one's part


PlanFn = Callable[[Path, Path, float], PlanOutcome]  # (profile.json, out dir, rate scale) -> outcome
# several jobs: (job -> its profile.json, out dir, job -> its rate scale) -> the joint outcome (its jobs: each job's
# part)
JobsPlanFn = Callable[[Mapping[str, Path], Path, Mapping[str, float]], PlanOutcome]
AskFn = Callable[[Decision, Proposal], bool]


@dataclass
class WatchOptions:
    inventory_path: Path
    job_name: str
    work_dir: Path
    job_names: tuple[str, ...] = ()  # several jobs watched together (empty: job_name alone)
    apply: ApplyMode = "never"
    interval_s: float = 30.0  # one decision per interval
    window_s: float = 90.0  # the span each decision profiles
    sample_s: float = 2.0  # collector sampling interval
    flush_s: float = 10.0  # a part file per flush: the window's granularity
    keep_s: float = 900.0  # the rolling history keeps this much (age) ...
    keep_bytes: int = 256 << 20  # ... and at most this much (size)
    warmup_s: float = 60.0  # as `placement profile --warmup`
    settle_s: float = 10.0  # as `placement apply --settle`
    plan_dir: Path | None = None  # the plan in effect when the watch starts (what a contingency is restored to)
    engine: Literal["spark", "pandas"] = "spark"
    spark_master: str | None = None
    max_demand_scale: float = 4.0  # plan for up to this multiple of the window's profiled source rates
    checkpoint_grace_s: float = 30.0  # before a change: wait this long at most for a checkpoint in progress to end
    thresholds: DriftThresholds = field(default_factory=DriftThresholds)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    log_path: Path | None = None
    duration_s: float | None = None  # stop after this long (None: until stopped)
    # --forecast HISTORY: a metrics directory of the jobs' past (days to weeks: the rolling history keeps minutes, a
    # forecast needs two days at least), the rolling history appended to it; None: the reactive watch alone
    forecast_history: Path | None = None
    horizon_s: float = 7200.0  # --horizon: how far ahead the forecast looks from each tick
    forecast_level: float = 0.8  # --forecast-level: the prediction interval's coverage
    season_s: float | None = None  # --season: the load's cycle, fitted as given (None: a day or a week, searched for)

    @property
    def names(self) -> tuple[str, ...]:
        """Every job watched: one (``job_name``) or several, kept placed together."""
        return self.job_names or (self.job_name,)

    def check(self) -> None:
        for name in ("interval_s", "window_s", "sample_s", "flush_s"):
            if getattr(self, name) <= 0:
                raise BadInput("must be > 0", field="--" + name.removesuffix("_s").replace("_", "-"))
        if self.window_s > self.keep_s:
            raise BadInput(
                f"the window ({self.window_s:g} s) must fit in the kept history ({self.keep_s:g} s)", field="--window"
            )
        if self.flush_s > self.window_s / 2:
            raise BadInput(
                f"a part is flushed every {self.flush_s:g} s: the window ({self.window_s:g} s) needs at least two",
                field="--flush",
            )
        if self.forecast_history is not None:
            if not self.forecast_history.is_dir():
                raise BadInput(
                    "no such metrics directory (one `placement metrics collect` wrote)"
                    if not self.forecast_history.exists()
                    else "not a directory (a metrics directory `placement metrics collect` wrote)",
                    source=str(self.forecast_history),
                    field="--forecast",
                )
            check_forecast_settings(self.horizon_s, self.forecast_level, self.season_s)
        elif self.season_s is not None:
            raise BadInput("is the load's cycle a forecast fits: add --forecast HISTORY", field="--season")


@dataclass
class Status:
    """What the live display shows; updated by the loop after each step."""

    phase: str = "starting"
    job_id: str | None = None
    collector: str = "starting"
    ticks: int = 0
    applies: int = 0
    rolled_back: int = 0
    window: Window | None = None
    drifts: list[Drift] = field(default_factory=list)
    proposal: Proposal | None = None
    decision: Decision | None = None
    next_tick_at: float = 0.0
    notes: list[str] = field(default_factory=list)
    # several jobs: each one's running job id, collector state and last window (job_id, collector, window: the first's)
    job_ids: dict[str, str | None] = field(default_factory=dict)
    collectors: dict[str, str] = field(default_factory=dict)
    windows: dict[str, Window] = field(default_factory=dict)
    foresight: dict[str, Any] | None = None  # --forecast: the last decision's forecast fields (record's "foresight")
