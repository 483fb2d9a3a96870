"""What a plan is asked for (:class:`PlanRequest`), and the one place its options are checked against each other.

Every caller — ``placement plan``, ``placement watch``, the lab and the benchmarks — builds a request and hands it
to :func:`placement.planning.plan`; a combination of options that makes no sense is refused here, as bad input naming
the option (``field``) the user would change. What needs the files read first (a ``--rate-scale JOB=X`` naming no
job planned, a latency bound ``--rescale`` cannot honour) is checked here too, by the pipeline once it has them.

Light on purpose: no solver, cost model or writer is imported, so a refused option answers at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from placement.errors import BadInput
from placement.planning.forecast_settings import check_forecast_settings
from placement.planning.notes import warn_on_stderr

if TYPE_CHECKING:
    from placement.costmodel.model import PlacementProblem
    from placement.inventory import Inventory
    from placement.planning.running import RunningPlans

Contingency = Literal["on", "off", "required"]
Solver = Literal["highs", "cbc"]
Objective = Literal["lexicographic", "weighted"]
Mode = Literal["custom", "vanilla"]
Method = Literal["auto", "exact", "decompose"]  # as placement.solver.methods.Method
FIELD = "--running-cluster"


@dataclass(frozen=True)
class ClusterRead:
    """How the running jobs are read: where, for how long, and what to do with one on TaskManagers the inventory
    does not know."""

    rest_url: str | None = None  # None: the inventory's flink.rest_url
    window_s: float = 20.0
    warmup_s: float = 60.0  # as `placement profile --warmup`: a subtask's first seconds are not its steady load
    ignore_unknown: bool = False
    keep_dir: Path | None = None  # keep each job's window (DIR/<job id>/) and profile (DIR/<job id>.profile.json)


class ClusterReader(Protocol):
    """Reads the jobs running now (all but ``planned``; ``given``: the ``--running`` plans' (job, path)) as fixed
    load. The command line's is :class:`placement.planning.cluster.LiveCluster`; a test's is a fake."""

    def __call__(
        self, inv: Inventory, planned: Sequence[str], given: Sequence[tuple[str, str]], inventory_path: str
    ) -> RunningPlans: ...


@dataclass(frozen=True)
class PlanRequest:
    """One plan of one job or of several placed together (one profile each); the options as ``placement plan``
    names them (see its ``--help``)."""

    inventory: str  # the inventory YAML's path (plan.json records it)
    profiles: tuple[str, ...]  # job profile JSONs: one job, or several placed together
    out_dir: str | None = None  # checked writable before solving (writing is write_outcome's)
    solver: Solver = "highs"
    time_limit: float = 60.0
    gap: float = 1e-4
    objective: Objective | None = None
    mode: Mode | None = None  # None: the inventory's flink.placement_mode
    rate_scale: float = 1.0  # the fleet's
    job_rate_scales: Mapping[str, float] = field(default_factory=dict)  # --rate-scale JOB=X
    rescale: bool = False
    target_rate: str | None = None
    compare: bool = False
    method: Method = "auto"
    max_rate: bool = False
    add_host: tuple[str, ...] = ()
    link: tuple[str, ...] = ()
    verbose: bool = False
    strict: bool = False
    running: tuple[str, ...] = ()  # plan.json / plan or fleet directories of jobs that keep running
    cluster: ClusterReader | None = None  # --running-cluster: what reads the jobs running now
    contingency: Contingency = "on"
    forecast: str | None = None  # --forecast HISTORY: plan for the peak of the sources' forecast rates
    horizon_s: float = 7200.0  # --horizon
    forecast_level: float = 0.8  # --forecast-level: the prediction interval's coverage
    season_s: float | None = None  # --season: the load's cycle, fitted as given (None: a day or a week, searched for)
    current: str | None = None  # --current PLAN_DIR: the plan in effect (default: the plan at the profiled rates)
    say_warning: Callable[[str], None] = warn_on_stderr  # where the input warnings go, before anything is solved

    @property
    def several(self) -> bool:
        return len(self.profiles) > 1

    def validate(self) -> None:
        """Refuse options that do not go together (the files are not read yet)."""
        if not all(x > 0 for x in (self.rate_scale, *self.job_rate_scales.values())):  # what --rate-scale parses
            raise BadInput("the scale must be a number above 0", field="--rate-scale")
        if self.several:
            if self.rescale or self.target_rate:
                raise BadInput(
                    "chooses one job's parallelism; with several --profile the jobs are placed at their "
                    "profiled parallelism: plan without --rescale",
                    field="--rescale",
                )
        else:
            if self.job_rate_scales:
                raise BadInput(
                    f"{next(iter(self.job_rate_scales))}=…: JOB=X scales one of several jobs planned "
                    "together; with one --profile give --rate-scale X",
                    field="--rate-scale",
                )
            if self.target_rate is not None and not self.rescale:
                raise BadInput(
                    "needs --rescale (the target rate is what the parallelism is chosen for)", field="--target-rate"
                )
            if self.rescale and (self.running or self.cluster):
                raise BadInput(
                    "chooses parallelism against the whole fleet's capacities; plan without --rescale "
                    "around running jobs",
                    field="--running" if self.running else "--running-cluster",
                )
        self._check_max_rate()
        self._check_forecast()

    def _check_forecast(self) -> None:
        if self.forecast is None:
            if self.current is not None:
                raise BadInput("says which plan the forecast may break: add --forecast HISTORY", field="--current")
            if self.season_s is not None:
                raise BadInput("is the load's cycle a forecast fits: add --forecast HISTORY", field="--season")
            return
        if self.rate_scale != 1.0 or self.job_rate_scales:
            raise BadInput("sets each job's rate scale from the forecast: drop --rate-scale", field="--forecast")
        if self.max_rate:
            raise BadInput(
                "plans for the forecast's peak; --max-rate finds the highest rate: use one", field="--forecast"
            )
        if self.current is not None and self.several:
            raise BadInput(
                "takes one job's plan; with several --profile the plan in effect is the plan at the "
                "profiled rates: drop --current",
                field="--current",
            )
        check_forecast_settings(self.horizon_s, self.forecast_level, self.season_s)

    def _check_max_rate(self) -> None:
        if self.max_rate and self.rescale:
            raise BadInput(
                "finds the highest rate at today's parallelism; --rescale chooses parallelism for a given "
                "rate: use one of them",
                field="--max-rate",
            )
        if self.max_rate and (self.rate_scale != 1.0 or self.job_rate_scales):
            raise BadInput("finds the scale of the rates itself: drop --rate-scale", field="--max-rate")
        if self.rescale and self.method == "decompose":
            raise BadInput(
                "the decomposition places at the profiled parallelism; --rescale chooses it: use --method "
                "exact or auto with --rescale",
                field="--method",
            )

    def check_job_scales(self, names: Sequence[str]) -> None:
        """``--rate-scale JOB=X`` names a job planned here (by its name in the fleet: a second copy is ``job-2``)."""
        for job, x in self.job_rate_scales.items():
            if job not in names:
                raise BadInput(
                    f"{job}={x:g}: no job {job!r} is planned here (the jobs: {', '.join(names)})", field="--rate-scale"
                )

    def check_latency_bounds(self, problem: PlacementProblem) -> None:
        """One job's ``--max-rate`` has no latency rows yet: its scale search is a model of its own (the exact
        model, ``--rescale`` and ``--method exact/auto`` have them)."""
        if not self.several and problem.latency_bounds and self.max_rate:
            raise BadInput(
                "--max-rate does not honour a latency bound yet: plan without it, or drop policy.max_latency_ms",
                source=self.inventory,
                field="policy.max_latency_ms",
            )


def contingency_mode(required: bool, off: bool) -> Contingency:
    """``--require-contingency`` / ``--no-contingency`` as one value."""
    if required and off:
        raise BadInput("asks for contingencies and for none", field="--require-contingency/--no-contingency")
    return "required" if required else "off" if off else "on"


def rate_scales(given: Sequence[tuple[str | None, float]]) -> tuple[float, dict[str, float]]:
    """``--rate-scale`` values (:class:`placement.cli.params.RateScale`) as (the fleet's scale, job -> its own): ``X``
    once at most (default 1), ``JOB=X`` once per job. Which jobs exist is known only once the profiles are read
    (:meth:`PlanRequest.check_job_scales`)."""
    scale: float | None = None
    per_job: dict[str, float] = {}
    for job, x in given:
        if job is None:
            if scale is not None:
                raise BadInput(f"the fleet's scale is given twice ({scale:g} and {x:g})", field="--rate-scale")
            scale = x
        elif job in per_job:
            raise BadInput(f"job {job!r} is given twice ({per_job[job]:g} and {x:g})", field="--rate-scale")
        else:
            per_job[job] = x
    return (1.0 if scale is None else scale), per_job


def cluster_read(
    on: bool, rest_url: str | None, window_s: float, warmup_s: float, ignore_unknown: bool, keep_dir: str | None = None
) -> ClusterRead | None:
    """The ``--running-cluster`` options as one value (None: not asked); its own options without it are refused."""
    if not on:
        for given, option in (
            (rest_url, "--rest"),
            (ignore_unknown, "--running-ignore-unknown"),
            (keep_dir, "--running-keep"),
        ):
            if given:
                raise BadInput("is for --running-cluster: add it, or drop this option", field=option)
        return None
    return ClusterRead(rest_url, window_s, warmup_s, ignore_unknown, Path(keep_dir) if keep_dir else None)
