"""``watch --forecast HISTORY`` deciding ahead of the load (issue #47 item 3), in simulated time (``FakeClock``) on the
in-memory cluster (``FakeFlinkRest``, ``FakeWindows``, ``FakeApply``) with the real forecaster fitted to a
constructed history of known seasonality and the real planner (``placement plan`` itself).

The world (tests/support/watch_world.py): rpi1 has one core (0.8 usable) and a 14 Mbit/s uplink (12.6 usable); job
A's source is born on rpi1, 500-byte records (4 Mbit/s per 1,000/s raw), its Reduce costs 0.15 ms a record (10:1,
1 Mbit/s per 1,000/s once reduced). Reduced on the Pi is the cheaper plan (a quarter of the WAN) while the Pi's core
carries it — up to 1,500 records/s; above that only the server can reduce (the raw records up the uplink).

Each day of the history: 1,000/s at night, 1,600/s from 09:00 to 12:00 and 13:00 to 18:00 with a lunch dip to
1,000/s between, noise of 20/s: four days and eight hours up to 08:00 on the day the watch runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from placement.cli.watch_cmd import plan_command
from placement.collect.layout import PartWriter, RunManifest, RunVertex, rows_to_table, write_manifest
from placement.profile.format import JobProfile
from placement.watch.loop import Watch
from placement.watch.options import WatchOptions
from placement.watch.record import read_log
from support import watch_world
from support.fake_clock import FakeClock
from support.fake_flink import FakeFlinkRest
from support.fake_watch import FakeApply, FakeWindows, fake_cluster_watch
from support.watch_world import one_pi_inventory

pytest.importorskip("statsmodels")

DAY_S = 86_400
START_S = 1_767_225_600  # 2026-01-01 00:00 UTC: the history's first day
WATCH_DAY_S = START_S + 4 * DAY_S  # the day the watch runs
INTERVAL_S = 300.0
ON_PI = {"Source: A": ["rpi1"], "Reduce A": ["rpi1"], "Sink: A": ["server"]}  # the cheaper plan
ON_SERVER = {"Source: A": ["rpi1"], "Reduce A": ["server"], "Sink: A": ["server"]}  # what carries the peak


def at(hour: float) -> float:
    """The watch day's wall clock at ``hour`` (UTC), epoch seconds."""
    return WATCH_DAY_S + hour * 3600


def daily_rate(t_s: float) -> float:
    hour = (t_s % DAY_S) / 3600
    return 1600.0 if 9 <= hour < 12 or 13 <= hour < 18 else 1000.0


def job(rate: float) -> JobProfile:
    return watch_world.reducing_job("A", rate, 500, reduce_ms_per_record=0.15)


def write_history(
    root: Path,
    end_s: float,
    *,
    days: float,
    noise: float = 20.0,
    seed: int = 3,
    profile: JobProfile | None = None,
    rate: Callable[[float], float] = daily_rate,
    job_id: str = "0123456789abcdef0123456789abcdef",
    step_s: int = 300,
    day_s: float = DAY_S,
) -> Path:
    """The source's rate (``rate`` at each time) every ``step_s`` for ``days`` of ``day_s`` up to ``end_s``, as
    ``metrics collect`` writes a history (``profile``: the job's, default job A's)."""
    profile = profile or job(1000)
    source = profile.sources()[0]
    rng = np.random.default_rng(seed)
    count = int(days * day_s / step_s)
    times = [int((end_s - days * day_s) * 1000) + i * step_s * 1000 for i in range(count)]
    rows = [
        {
            "ts_ms": t,
            "vertex_id": source.id,
            "subtask": 0,
            "attempt": 0,
            "attempt_start_ms": times[0],
            "running": True,
            "records_out_per_s": rate(t / 1000) + float(rng.normal(0, noise)),
        }
        for t in times
    ]
    run_id = "forecast-history"
    writer = PartWriter(root, job_id, run_id)
    writer.write(rows_to_table(rows))
    write_manifest(
        root,
        RunManifest(
            job_id=job_id,
            job_name=profile.job.name,
            run_id=run_id,
            origin="synthetic",
            started_ms=times[0],
            ended_ms=times[-1],
            interval_s=float(step_s),
            stopped="completed",
            samples=len(rows),
            files=writer.files,
            vertices=[RunVertex(id=v.id, name=v.name, parallelism=v.parallelism) for v in profile.vertices],
            edges=[{"source": e.source, "target": e.target, "ship_strategy": e.ship_strategy} for e in profile.edges],
        ),
    )
    return root


class FakeSlowApply(FakeApply):
    """``FakeApply`` that takes ``seconds`` of the fake clock, as a savepoint and a restart do."""

    def __init__(self, clock: FakeClock, seconds: float, *args):
        super().__init__(*args)
        self.clock, self.seconds = clock, seconds
        self.at: list[float] = []

    def __call__(self, plan_dir: Path) -> dict:
        self.at.append(self.clock.now())
        self.clock.advance(self.seconds)
        return super().__call__(plan_dir)


class World:
    """A watch of job-A with --forecast HISTORY, ticking every ``INTERVAL_S`` of simulated time from ``start_s``."""

    def __init__(
        self,
        tmp_path: Path,
        placement: dict[str, list[str]],
        start_s: float,
        history: Path | None,
        apply_s: float = 90.0,
        apply: str = "auto",
        rate: Callable[[float], float] = daily_rate,
        interval_s: float = INTERVAL_S,
        **options: float,  # more of the watch's options (WatchOptions' season_s, horizon_s, warmup_s, …)
    ):
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.rate, self.interval_s = rate, interval_s
        inv = one_pi_inventory(tmp_path / "inv.yaml", ["A"], jobs=False)
        self.clock = FakeClock().at(start_s)
        self.rest = FakeFlinkRest(clock_ms=lambda: int(self.clock.now() * 1000))
        self.rest.start("job-A", placement, start_ms=int((start_s - 3600) * 1000))
        self.profiles = {"job-A": job(rate(start_s))}
        self.apply = FakeSlowApply(self.clock, apply_s, self.rest, self.profiles, "job-A")
        self.planned: list[float] = []
        self.watch = fake_cluster_watch(
            WatchOptions(
                inventory_path=inv,
                job_name="job-A",
                work_dir=tmp_path / "w",
                engine="pandas",
                apply=apply,  # type: ignore[arg-type]
                interval_s=interval_s,
                log_path=tmp_path / "w" / "decisions.jsonl",
                forecast_history=history,
                **options,  # type: ignore[arg-type]
            ),
            rest=self.rest,
            clock=self.clock,
            profiles=self.profiles,
            apply=self.apply,
            planned=self.planned,
        )

    def tick(self, rate: float | None = None) -> dict:
        """One tick an interval later, the window's source at ``rate`` (default: the history's rate then)."""
        self.clock.advance(self.interval_s)
        self.profiles["job-A"] = job(self.rate(self.clock.now()) if rate is None else rate)
        return self.watch.tick()

    def until(self, hour: float, at: Callable[[float], float] = at) -> list[dict]:
        out = []
        while self.clock.now() + self.interval_s <= at(hour):
            out.append(self.tick())
        return out

    @property
    def reduce_on(self) -> list[str]:
        return self.rest.running_job("job-A").placement["Reduce A"]


def hours(rec: dict) -> float:
    """A record's time as the watch day's hour."""
    return (rec["at_ms"] / 1000 - WATCH_DAY_S) / 3600


def noted(records: list[dict], prefix: str) -> list[str]:
    return [n for r in records for n in r["notes"] if n.startswith(prefix)]


def test_a_periodic_load_is_relieved_ahead_of_its_predicted_break_by_the_lead_time(tmp_path):
    """The Pi carries the night's 1,000/s; the forecast says 1,600/s from 09:00, which the Pi's core cannot: the
    relief (Reduce to the server, planned for the forecast's peak) is applied at the last tick at least the lead time
    before 09:00 — before a single window has shown the rise."""
    history = write_history(tmp_path / "history", at(8), days=4 + 8 / 24)
    world = World(tmp_path, ON_PI, at(8), history)
    records = world.until(9.5)
    f = [r["foresight"] for r in records]
    (relief,) = [r for r in records if r["decision"]["action"] == "apply"]
    before = records[: records.index(relief)]
    # every tick before it predicted the break at 09:00 (the forecast's step where the upper bound passes 1,500/s)
    assert {r["foresight"]["breaks_at_ms"] for r in before} == {int(at(9) * 1000)}
    assert all(r["decision"]["action"] == "hold" and r["foresight"]["action"] == "hold" for r in before)
    assert not any(r["drifts"] for r in before)  # nothing measured had moved: 1,000/s all along
    assert [(d["kind"], d["message"]) for d in relief["drifts"]] == [("forecast", relief["foresight"]["reason"])]
    assert hours(relief) == pytest.approx(8 + 55 / 60)  # 300 s before the break: the next tick would be 0 s before
    assert (relief["decision"]["kind"], relief["foresight"]["action"]) == ("relief", "relieve")
    lead = relief["foresight"]["lead_s"]
    assert lead == 180.0  # no apply measured yet: 60 s (configured) + 60 s warm-up + 60 s margin
    assert world.apply.at == [at(8 + 55 / 60)] and at(9) - world.apply.at[0] >= lead
    assert relief["proposal"]["current_violations"] and not relief["proposal"]["planned_violations"]
    # planned for the forecast's peak within the horizon (the upper bound over the window's 1,000/s), as plan
    # --forecast plans
    (scale,) = world.planned
    assert scale == pytest.approx(relief["foresight"]["scales"]["job-A"]) and 1.6 < scale < 1.65
    assert world.reduce_on == ["server"]
    after = records[records.index(relief) + 1 :]
    assert after and all(r["decision"]["action"] == "hold" for r in after)  # the peak came and the plan carries it
    assert all(r["foresight"]["lead_s"] == 210.0 for r in after)  # the apply took 90 s: the next lead time is longer
    peak = next(r for r in after if hours(r) >= 9)
    lo, up = peak["foresight"]["interval"]["job-A/Source: A"]
    assert peak["foresight"]["outcome"] == {"job-A/Source: A": 1600.0} and lo <= 1600 <= up
    assert peak["foresight"]["forecast"]["job-A/Source: A"] == pytest.approx(1600, abs=40)
    assert f[0]["made_from_ms"] == int(history_end(history))
    logged = [r for r in read_log(world.watch.o.log_path) if r["record"] == "decision"]
    assert [r["foresight"] for r in logged] == f  # the decision log carries them


def history_end(history: Path) -> int:
    from placement.collect.sources import source_rates

    return source_rates(history)["job-A"]["Source: A"][-1][0]


def test_a_dip_inside_the_horizon_moves_nothing_the_evening_moves_back(tmp_path):
    """The server carries the day; at 12:00 the rate falls to 1,000/s for an hour. The reactive watch moves Reduce
    back to the Pi once the cheaper plan has stabilized (and would have to relieve again at 13:00); with the forecast
    the re-plan is made for the peak within the horizon — 13:00's 1,600/s — which is the plan running: no move. At
    18:00 the next two hours stay low: the cheaper plan holds the whole horizon, and it is moved to."""
    history = write_history(tmp_path / "history", at(11.5), days=4.5)
    reactive = World(tmp_path / "reactive", ON_SERVER, at(11.5), None)
    moved = [r for r in reactive.until(12.5) if r["decision"]["action"] == "apply"]
    assert [(hours(r), r["decision"]["kind"]) for r in moved] == [(pytest.approx(12 + 5 / 60), "cheaper")]

    world = World(tmp_path / "ahead", ON_SERVER, at(11.5), history)
    day = world.until(17.95)
    assert world.apply.applied == [] and world.reduce_on == ["server"]
    dip = next(r for r in day if hours(r) >= 12)
    assert [d["kind"] for d in dip["drifts"]] == ["rate"]  # the window shows the dip ...
    assert world.planned[0] == pytest.approx(1.62, abs=0.03)  # ... and it is re-planned for 13:00's peak
    assert dip["proposal"]["moves"] == 0 and dip["decision"]["action"] == "hold"
    assert dip["foresight"]["action"] == "hold" and dip["foresight"]["breaks_at_ms"] is None

    evening = world.until(18.5)
    first, applied = evening[0], evening[1]
    assert hours(first) == pytest.approx(18) and first["foresight"]["action"] == "move_back"
    assert first["decision"]["reason"].startswith("cheaper by 75%: stabilizing")  # the policy's window still runs
    assert hours(applied) == pytest.approx(18 + 5 / 60)
    assert (applied["decision"]["action"], applied["decision"]["kind"]) == ("apply", "cheaper")
    assert applied["foresight"]["action"] == "move_back"
    assert world.planned[-1] == pytest.approx(1.02, abs=0.02)  # the night's peak: the interval's upper bound
    assert world.reduce_on == ["rpi1"] and len(world.apply.applied) == 1


def test_the_rolling_history_is_appended_to_the_history(tmp_path):
    """HISTORY ends at 07:00; the watch's own rolling history holds 07:00-08:00: the forecast is fitted to both, up to
    the last sample the watch collected."""
    history = write_history(tmp_path / "history", at(7), days=4 + 7 / 24)
    write_history(tmp_path / "w" / "history", at(8), days=1 / 24, seed=4)
    world = World(tmp_path, ON_PI, at(8), history)
    first = world.tick()["foresight"]
    assert first["made_from_ms"] == int((at(8) - 300) * 1000) > history_end(history)
    assert first["action"] == "hold" and first["breaks_at_ms"] == int(at(9) * 1000)


def test_a_cheaper_plan_is_taken_only_if_it_holds_the_whole_next_horizon(tmp_path):
    """The Pi's plan (made at 1,000/s) is cheaper all day; at 12:00 it would break at 13:00, within the horizon — at
    18:00 it holds the two hours ahead."""
    from placement.profile.pipeline import write_profile
    from placement.watch.observing import Seen

    history = write_history(tmp_path / "history", at(11.5), days=4.5)
    world = World(tmp_path, ON_SERVER, at(11.5), history, apply="never")
    profile = tmp_path / "profile.json"
    write_profile(job(1000), profile)
    on_pi = plan_command(world.watch.o.inventory_path, rescale=False)(profile, tmp_path / "on-pi", 1.0)
    assert on_pi.fits and on_pi.assignment[("reduce-a", 0)] == "rpi1"
    seen = [Seen(world.watch.tracks[0], [], [], profile=job(1000))]
    world.until(12.1)
    assert world.watch.foreseer is not None
    assert not world.watch.foreseer.holds(seen, str(on_pi.plan_dir))
    world.until(18.1)
    assert world.watch.foreseer.holds(seen, str(on_pi.plan_dir))


def test_a_spike_outside_the_interval_is_the_reactive_watch_as_today(tmp_path):
    """08:10, 2,000/s where the forecast says about 1,000: a departure; the tick is the reactive watch's — a rate
    drift, a re-plan for the window's demand (not the forecast's peak), the relief applied — as without --forecast."""
    history = write_history(tmp_path / "history", at(8), days=4 + 8 / 24)
    runs = {}
    for name, given in (("ahead", history), ("reactive", None)):
        world = World(tmp_path / name, ON_PI, at(8), given)
        world.tick()
        runs[name] = (world, world.tick(rate=2000.0))
    world, spike = runs["ahead"]
    reactive = runs["reactive"][1]
    f = spike["foresight"]
    assert f["action"] == "reactive" and "departure from the forecast" in f["reason"]
    assert "job-A/Source: A 2,000/s outside" in f["reason"] and f["outcome"] == {"job-A/Source: A": 2000.0}
    assert [d["kind"] for d in spike["drifts"]] == [d["kind"] for d in reactive["drifts"]] == ["rate"]
    assert spike["decision"] == reactive["decision"] and spike["decision"]["kind"] == "relief"
    assert world.planned == runs["reactive"][0].planned == [1.0]  # the window's demand, not a forecast's scale
    assert world.reduce_on == runs["reactive"][0].reduce_on == ["server"]
    assert "foresight" not in reactive
    import io

    from rich.console import Console

    from placement.cli.watch_cmd import render

    console = Console(record=True, width=240, file=io.StringIO())  # the live view, as text
    console.print(render(world.watch.status, world.watch.o))
    assert "forecast: reactive: departure from the forecast (job-A/Source: A 2,000/s outside" in console.export_text()


@pytest.mark.parametrize(
    ("days", "reason"),
    [
        (1.5, "no forecast: job-A/Source: A: the history covers 36.0 h: a forecast needs two days at least"),
        (None, "no forecast: "),
    ],
)
def test_too_little_history_is_said_once_and_the_watch_is_reactive(tmp_path, days, reason):
    history = tmp_path / "history"
    if days is None:
        history.mkdir()  # a directory with nothing collected in it
    else:
        write_history(history, at(8), days=days)
    world = World(tmp_path, ON_PI, at(8), history)
    records = [world.tick(), world.tick(), world.tick(), world.tick(rate=2000.0), world.tick(rate=2000.0)]
    said = noted(records, "no forecast")
    assert len(said) == 1 and said[0].startswith(reason) and reason in records[0]["notes"][-1], said
    assert all(r["foresight"]["action"] == "reactive" for r in records)
    assert all("forecast" not in r["foresight"] for r in records)
    step = records[3]
    assert (step["decision"]["action"], step["decision"]["kind"]) == ("apply", "relief")  # the reactive relief
    assert world.planned == [1.0] and world.reduce_on == ["server"]
    if days is None:
        assert "no runs found" in said[0]
    from placement.cli.watch_cmd import forecast_notes
    from placement.watch.options import Status

    assert forecast_notes(Status(notes=records[0]["notes"])) == said  # printed on a pipe above the decision line
    assert forecast_notes(Status(notes=records[1]["notes"])) == []


def test_several_jobs_are_relieved_together_ahead_of_the_break_they_share(tmp_path):
    """Two jobs share rpi1's uplink: A reduces on the Pi (1 Mbit/s), B ships its raw 3,750-byte records to the
    server (10 Mbit/s at 333/s). B's history triples from 09:00, which the uplink cannot carry so placed: at 08:55 the
    joint re-plan is made for each job's own forecast peak (A about 1x, B about 3x) — one decision for the set."""
    from placement.cli.watch_cmd import plan_jobs_command

    def fleet_job(tag: str, rate: float, record_bytes: float) -> JobProfile:
        return watch_world.reducing_job(tag, rate, record_bytes, reduce_ms_per_record=0.18)

    def b_rate(t_s: float) -> float:
        return 1000.0 if 9 <= (t_s % DAY_S) / 3600 < 18 else 1000 / 3

    days = 4 + 8 / 24
    write_history(tmp_path / "history", at(8), days=days, profile=fleet_job("A", 1000, 1250), rate=lambda t: 1000.0)
    write_history(
        tmp_path / "history",
        at(8),
        days=days,
        noise=5.0,
        profile=fleet_job("B", 1000, 3750),
        rate=b_rate,
        job_id="fedcba9876543210fedcba9876543210",
    )
    inv = one_pi_inventory(tmp_path / "inv.yaml", ["A", "B"], jobs=True)
    clock = FakeClock().at(at(8))
    rest = FakeFlinkRest(clock_ms=lambda: int(clock.now() * 1000))
    rest.start("job-A", ON_PI, start_ms=int((at(8) - 3600) * 1000))
    rest.start(
        "job-B",
        {"Source: B": ["rpi1"], "Reduce B": ["server"], "Sink: B": ["server"]},
        start_ms=int((at(8) - 3600) * 1000),
    )
    profiles = {"job-A": fleet_job("A", 1000, 1250), "job-B": fleet_job("B", 1000 / 3, 3750)}
    watch = Watch(
        WatchOptions(
            inventory_path=inv,
            job_name="job-A",
            job_names=("job-A", "job-B"),
            work_dir=tmp_path / "w",
            engine="pandas",
            interval_s=INTERVAL_S,
            log_path=tmp_path / "w" / "decisions.jsonl",
            forecast_history=tmp_path / "history",
        ),
        plan_jobs_fn=plan_jobs_command(inv),
        rest=rest,
        clock=clock,
        windows=FakeWindows(rest, profiles),
    )
    records = []
    while clock.now() + INTERVAL_S <= at(9) - 1:
        clock.advance(INTERVAL_S)
        records.append(watch.tick())
    assert [r["foresight"]["action"] for r in records] == ["hold"] * 10 + ["relieve"]
    assert {r["foresight"]["breaks_at_ms"] for r in records} == {int(at(9) * 1000)}
    relief = records[-1]
    scales = relief["foresight"]["scales"]
    assert scales["job-A"] == pytest.approx(1.0, abs=0.05) and scales["job-B"] == pytest.approx(3.0, abs=0.1)
    assert (relief["decision"]["action"], relief["decision"]["kind"]) == ("apply", "relief")
    assert relief["apply"]["status"] == "not-applied"  # --apply never: recorded only
    assert relief["proposal"]["current_violations"] and not relief["proposal"]["planned_violations"]
    assert any(n.startswith("planned job job-B for 3.0") and "forecast's peak" in n for n in relief["notes"])
    assert set(relief["foresight"]["forecast"]) == {"job-A/Source: A", "job-B/Source: B"}


SHORT_DAY_S = 1440  # the lab's compressed day (--season 24min): an hour of it is a minute


def short_at(hour: float) -> float:
    """The watch day's compressed clock at ``hour``, epoch seconds (the compressed days start at the history's)."""
    return WATCH_DAY_S + hour * SHORT_DAY_S / 24


def short_rate(t_s: float) -> float:
    """``daily_rate`` in a 24-min day."""
    return daily_rate((t_s - START_S) % SHORT_DAY_S * DAY_S / SHORT_DAY_S)


def test_a_compressed_day_is_relieved_ahead_of_its_predicted_break_with_season(tmp_path):
    """The same day in 24 min (--season 24min), sampled every minute: its 09:00 is 540 s into it. Ticks every 30 s,
    a 30 s warm-up and a 6-min horizon (6 of its hours): the lead time is 150 s (60 s apply until one is measured,
    30 s warm-up, 60 s margin), so the relief is applied at 06:30 of the short day — the last tick at least the lead
    time before the break — and the peak is carried."""
    history = write_history(
        tmp_path / "history", short_at(4), days=4 + 4 / 24, step_s=60, day_s=SHORT_DAY_S, rate=short_rate
    )
    world = World(
        tmp_path,
        ON_PI,
        short_at(4),
        history,
        apply_s=20.0,
        rate=short_rate,
        interval_s=30.0,
        season_s=SHORT_DAY_S,
        horizon_s=360.0,
        warmup_s=30.0,
        window_s=60.0,
    )
    records = world.until(11, at=short_at)
    (relief,) = [r for r in records if r["decision"]["action"] == "apply"]
    before = records[: records.index(relief)]
    break_ms = int(short_at(9) * 1000)
    assert {r["foresight"]["breaks_at_ms"] for r in before if r["foresight"]["breaks_at_ms"]} == {break_ms}
    assert all(r["decision"]["action"] == "hold" and r["foresight"]["action"] == "hold" for r in before)
    assert not any(r["drifts"] for r in before)
    assert relief["at_ms"] == int(short_at(6.5) * 1000) and relief["foresight"]["lead_s"] == 150.0
    assert (break_ms - relief["at_ms"]) / 1000 >= relief["foresight"]["lead_s"]
    assert (relief["decision"]["kind"], relief["foresight"]["action"]) == ("relief", "relieve")
    assert 1.6 < world.planned[0] < 1.7 and world.reduce_on == ["server"]  # planned for the forecast's peak
    after = records[records.index(relief) + 1 :]
    assert after and all(r["decision"]["action"] in ("wait", "hold") for r in after)  # waits: the warm-up
    assert all(r["foresight"]["lead_s"] == 110.0 for r in after if "foresight" in r)  # the apply took 20 s
    assert len(world.apply.applied) == 1
    assert world.watch.foreseer is not None
    (fitted,) = world.watch.foreseer.fitted
    assert (fitted.forecast.period_s, fitted.forecast.step_s) == (SHORT_DAY_S, 60)  # the season given, 24 steps
    peak = next(r for r in after if r["at_ms"] >= break_ms)
    lo, up = peak["foresight"]["interval"]["job-A/Source: A"]
    assert peak["foresight"]["outcome"] == {"job-A/Source: A": 1600.0} and lo <= 1600 <= up


REPO = Path(__file__).resolve().parents[2]


def watch_args(tmp_path: Path, *args: object) -> list[object]:
    inventory = REPO / "inventory" / "lab.yaml"
    return ["watch", "--inventory", inventory, "--job-name", "j", "--work-dir", tmp_path / "w", *args]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--horizon", "3h"], "error: --horizon: is how far a forecast looks ahead: add --forecast HISTORY"),
        (["--forecast", "{nowhere}"], "{nowhere}: --forecast: no such metrics directory"),
        (["--forecast", "{history}", "--horizon", "2"], "error: --horizon: '2' is not a duration such as 2h"),
        (["--forecast", "{history}", "--horizon", "soon"], "error: --horizon: 'soon' is not a duration"),
        (["--forecast", "{history}", "--horizon", "0min"], "error: --horizon: must be a duration above 0"),
        (["--forecast", "{history}", "--forecast-level", "100"], "'--forecast-level': 100.0 is not in the range"),
        (["--season", "24min"], "error: --season: is the load's cycle a forecast fits: add --forecast HISTORY"),
        (["--forecast", "{history}", "--season", "24"], "error: --season: '24' is not a duration such as 24min"),
        (["--forecast", "{history}", "--season", "0s"], "error: --season: must be a duration above 0"),
    ],
)
def test_bad_forecast_options_are_one_line_and_start_nothing(args, message, capsys, tmp_path):
    from support.cli import run_main

    history = tmp_path / "history"
    history.mkdir()
    paths = {"nowhere": tmp_path / "nowhere", "history": history}
    args, message = [a.format(**paths) for a in args], message.format(**paths)
    code, _, err = run_main(watch_args(tmp_path, *args), capsys)
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "w").exists()


def test_without_statsmodels_forecast_is_one_line(capsys, tmp_path, monkeypatch):
    import sys

    from support.cli import run_main

    monkeypatch.setitem(sys.modules, "statsmodels", None)  # as if the forecast extra were not installed
    code, _, err = run_main(watch_args(tmp_path, "--forecast", tmp_path), capsys)
    assert code != 0 and "--forecast needs statsmodels: pip install 'placement[forecast]'" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "w").exists()
