"""The version matrix (issue 22): every supported Flink line other than this machine's 2.3 (which
test_placed_cluster.py and the apply/collect suites cover) on a real cluster of that release — stock Flink fetched
once into the cache, with the extension, the JobGraph submitter and the lab jobs built against its jars.

One cluster per release runs every check, in file order, on as few job runs as possible (the module's budget is
well under a minute a release on a 2-core machine):

1. the extension is installed and active, as apply's own preflight reads it (``placement.apply.prepare``: the
   JobManager's classpath, its ``placement.scheduler.dir``, the jar in ``lib/`` built for the cluster's release);
   the IoT job, unmodified, is placed subtask index by subtask index; beside it a job without a schedulercfg (the
   extension hands it to the line's stock strategy) pinned the vanilla way (its own slot sharing groups requesting
   the TaskManagers' external resources, ``--placement``);
2. stop-with-savepoint and a restore from it keep the placement;
3. ``placement apply`` of a plan that changes parallelism per vertex: stopped with a savepoint, resubmitted through
   the JobGraph submitter on the "JobManager host", every subtask index where the new schedulercfg says;
4. ``placement metrics collect --prometheus``: Flink's Prometheus reporter of that release on every TaskManager, a
   real Prometheus scraping them, the rescaled job's history read back — each subtask where REST says it runs;
5. a real extension jar built for another release in the JobManager host's ``lib/``: apply's preflight refuses it in
   one line naming both releases. The installer's refusal (from the jar's manifest) needs no cluster: the last test.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from scheduler_support import (
    ADDRESSES,
    TASKMANAGERS,
    PlacedCluster,
    lose_taskmanager,
    require_jdk,
    schedulercfg,
    start_placed_cluster,
    taskmanager_specs,
)

from placement import scheduler as S
from placement.apply import execute, prepare
from placement.apply.preflight import PreflightFailed, jar_built_for, scheduler_fix
from placement.apply.request import load_request
from placement.apply.rescale import job_jar_remote_path, submitter_remote_path
from placement.cli import main
from placement.collect.layout import find_manifests
from placement.errors import PlacementError
from placement.flink.cluster_version import cluster_version, running_version
from placement.flink.distribution import flink_home_for
from placement.lab.home import make_lab_home
from placement.lab.jobs import IOT_SENSOR_JOB, build_jobs_jar
from placement.scheduler.build import jar_info
from placement.submitter import build_submitter
from support.flink import wait_for_records
from support.plan_dirs import running_vertex_ids, write_plan_dir
from support.prometheus import RunningPrometheus, start_prometheus, with_prometheus_reporter

pytestmark = pytest.mark.flink

RELEASES = ("1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1")
JOB = "iot-sensors"
# a rate schedule: the lab jobs' own RateLimiterStrategy, whose API differs before 2.2 (an overlay of deploy/jobs)
IOT_ARGS = ["--rate-schedule", "0:40", "--parallelism", "3", "--window-parallelism", "2", "--window-ms", "1000"]
# every TaskManager gets subtasks; rpi2 is named by its address; Window Aggregate (after a HASH edge) is split
IOT_PLAN = {
    "Source: Sensors": ["rpi1", "rpi2", "server"],
    "Parse": ["rpi1", "rpi2", "server"],
    "Filter": ["rpi1", "server", "server"],
    "Enrich": ["server", "server", "server"],
    "Window Aggregate": ["rpi1", "server"],
    "Sink: Readings": ["server", "server"],
}
# the rescale: the FORWARD chain 3 -> 2 (one parallelism along FORWARD edges, as the planner keeps it), the window and
# its sink 2 -> 3, and subtasks moved (Filter 1 to rpi2, a window subtask to rpi2)
RESCALED = {
    "Source: Sensors": ["rpi1", "rpi2"],
    "Parse": ["rpi1", "rpi2"],
    "Filter": ["rpi1", "rpi2"],
    "Enrich": ["server", "server"],
    "Window Aggregate": ["rpi2", "server", "server"],
    "Sink: Readings": ["server", "server", "server"],
}
# the vanilla job: one lane, its source chain pinned to rpi2 (the one slot the placed job leaves there), the rest on
# the server
VANILLA = {
    "Source: Sensors": ["rpi2"],
    "Parse": ["rpi2"],
    "Filter": ["rpi2"],
    "Enrich": ["server"],
    "Window Aggregate": ["server"],
    "Sink: Readings": ["server"],
}


@dataclass
class Line:
    """One release's cluster, its Prometheus, and the placed job's current id (each restore makes a new one)."""

    release: str
    pc: PlacedCluster
    prom: RunningPrometheus
    work: Path
    inventory: Path
    job: str = ""


def write_inventory(line_work: Path, pc: PlacedCluster, release: str) -> Path:
    """The cluster as an inventory: every host at a loopback address of its own, so apply reaches them with local
    commands (what it does for a host whose address is this machine's) — the same reads and writes it makes over SSH.
    Not 127.0.0.1: the schedulercfg a plan writes names hosts by address, and the TaskManager table apply writes
    lists each TaskManager's RPC address too — 127.0.0.1 for all three here, which the extension refuses as
    ambiguous."""
    doc = {
        "version": 1,
        "name": f"matrix-{release}",
        "hosts": [
            {
                "name": tm,
                "address": f"127.0.0.{n}",
                "role": "server" if tm == "server" else "edge",
                **({"cores": 2, "memory": "4GiB"} if tm == "server" else {"model": "rpi4b"}),
                "task_slots": slots,
            }
            for n, (tm, (slots, *_sizes)) in enumerate(TASKMANAGERS.items(), start=2)
        ],
        "links": [
            {"from": "rpi1", "to": "server", "bandwidth": "50mbit"},
            {"from": "rpi2", "to": "server", "bandwidth": "50mbit"},
        ],
        "flink": {
            "rest_url": pc.rest.url,
            "home": str(pc.home.path),
            "placement_mode": "custom",
            "scheduler_dir": str(pc.scheduler_dir),
            "savepoint_dir": f"file://{line_work / 'savepoints'}",
            "version": release,
        },
        "job": {"name": JOB, "jar": str(pc.jobs_jar), "entry_class": IOT_SENSOR_JOB, "program_args": IOT_ARGS},
    }
    path = line_work / "inventory.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module", params=RELEASES, ids=lambda release: f"flink-{release}")
def line(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Line]:
    require_jdk()
    release = request.param
    flink = flink_home_for(release)  # the real cache: fetched once per machine
    work = tmp_path_factory.mktemp(f"line-{release}")
    # the product's own build caches (per source digest and release), as make_lab_home's extension: compiling them
    # fresh on every line is test_flink_lines_build.py's part, and would cost ~10 s a line here
    jobs = build_jobs_jar(home=flink).path
    taskmanagers, targets = with_prometheus_reporter(taskmanager_specs(), work, flink.path)
    with (
        start_placed_cluster(work, flink, jobs, taskmanagers=taskmanagers) as pc,
        start_prometheus(work / "prometheus", targets, scrape_interval="1s") as prom,
    ):
        state = Line(release, pc, prom, work, write_inventory(work, pc, release))
        yield state
        if state.job:
            pc.cancel(state.job)


def test_the_extension_is_active_as_apply_checks_it_and_places_a_job_index_by_index_beside_a_vanilla_job(
    line: Line,
) -> None:
    pc, version = line.pc, line.release
    # the release as apply and the lab read it (GET /config), a pin it does not run refused in one line, and the
    # durations as the lab writes them (plain milliseconds: 1.19 takes some as a Long) taken by its own parser
    assert running_version(pc.rest) == cluster_version(version, pc.rest, where="inv.yaml: flink.version")
    assert str(running_version(pc.rest)) == version
    with pytest.raises(PlacementError) as err:
        cluster_version("2.3.0", pc.rest, where="inv.yaml: flink.version")
    assert str(err.value) == (
        f"inv.yaml: flink.version: pinned to Flink 2.3.0, but the JobManager at {pc.rest.url} runs "
        f"{version} (correct the pin, or remove it to follow the JobManager)"
    )
    assert pc.rest.jobmanager_config()["resourcemanager.standalone.start-up-time"] == "10000"
    installed = S.installed_extension(pc.home)
    assert installed is not None and installed.name.startswith(f"placement-scheduler-{version}-")
    pc.write_schedulercfg(JOB, schedulercfg(IOT_PLAN, {"rpi2": ADDRESSES["rpi2"][0]}))
    line.job = pc.run(IOT_SENSOR_JOB, IOT_ARGS)
    # a job without a schedulercfg runs as the line's stock Flink places it: here pinned the vanilla way (submitted
    # at once, so that both deploy together)
    vanilla = pc.run(
        IOT_SENSOR_JOB, ["--rate-schedule", "0:20", "--job-name", "iot-vanilla", "--placement", json.dumps(VANILLA)]
    )
    try:
        pc.wait_running(vanilla)
        assert "no schedulercfg at" in pc.active_line(vanilla) and "stock placement" in pc.active_line(vanilla)
        assert pc.rest.placement_counts(vanilla) == Counter(
            {(vertex, tm): n for vertex, tms in VANILLA.items() for tm, n in Counter(tms).items()}
        )
    except BaseException:
        pc.cancel(vanilla)
        raise
    pc.rest.cancel(vanilla)  # it winds down (~3 s) while the checks below run; awaited at the end
    pc.wait_running(line.job)
    assert pc.rest.placement(line.job) == IOT_PLAN
    active = pc.active_line(line.job)
    assert f"(Flink {version}, build " in active
    # a TaskManager's slots: the most subtasks of one vertex it runs (Enrich's three on server)
    assert ": 16 subtasks in 1 slot(s) on rpi1, 1 slot(s) on rpi2, 3 slot(s) on server" in active

    # apply's own preflight, reading this cluster (REST, and lib/ and the config on the "JobManager host"): a plan
    # of the running placement passes every check, the scheduler extension's included, and installs nothing
    plan = write_plan_dir(
        line.work / "plan-same", line.inventory, IOT_PLAN, job=JOB, vertex_ids=running_vertex_ids(pc.rest, line.job)
    )
    prepared = prepare(load_request(plan, line.inventory, job_id=line.job), dry_run=True)
    try:
        scheduler = prepared.view.scheduler
        assert scheduler is not None and scheduler.active is True and scheduler.flink_version == version
        assert scheduler.installed_jars == (installed.name,)
        assert not scheduler_fix(prepared.request, prepared.view).needed
        assert prepared.unchecked == () and prepared.plan.restarts == ()
        # no jar to install, no JobManager restart: only the two files apply always writes (job file, TaskManager table)
        assert [s.action.kind for s in prepared.plan.steps if s.phase == "install"] == ["upload", "upload"]
    finally:
        prepared.close()

    # records went through the placed pipeline, its windows too (checked last: the first windows fire meanwhile)
    windows = next(v.id for v in pc.rest.job(line.job).vertices if v.name == "Window Aggregate")
    wait_for_records(pc.rest, line.job, windows, timeout=90)
    pc.cancel(vanilla)
    assert pc.rest.job_raw(vanilla)["state"] == "CANCELED"


def test_stop_with_savepoint_and_restore_keeps_the_placement(line: Line) -> None:
    pc = line.pc
    assert line.job, "the placed job did not start"
    savepoint = pc.rest.stop_with_savepoint(line.job, f"file://{line.work / 'savepoints'}", timeout=180)
    line.job = pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS, savepoint_path=savepoint)
    assert pc.restored_from(line.job) == savepoint.rstrip("/")
    assert pc.rest.placement(line.job) == IOT_PLAN


def test_apply_rescales_through_the_submitter_index_by_index(line: Line) -> None:
    """`placement apply` of a plan with new per-vertex parallelism: apply builds the JobGraph submitter for the
    JobManager's release (not this machine's 2.3), puts it and the job's jar on the JobManager host, stops the job
    with a savepoint and resubmits it through the submitter there."""
    pc = line.pc
    assert line.job, "the placed job did not start"
    ids = running_vertex_ids(pc.rest, line.job)
    plan = write_plan_dir(line.work / "plan-rescaled", line.inventory, RESCALED, job=JOB, vertex_ids=ids)
    request = load_request(plan, line.inventory, job_id=line.job, settle_s=2.0)
    submitter = Path(submitter_remote_path(request, line.release))
    assert not submitter.exists()
    prepared = prepare(request)
    try:
        kinds = [s.action.kind for s in prepared.plan.steps]
        assert "submit-graph" in kinds and "submit" not in kinds, kinds  # not a REST jar run: it keeps parallelism
        uploads = [s.action for s in prepared.plan.steps if s.action.kind == "upload" and s.phase == "prepare"]
        assert [u.path for u in uploads] == [str(submitter), job_jar_remote_path(request, None)]
        # the jar apply built: for this release, byte for byte what the submitter build makes of it
        assert uploads[0].content == build_submitter(flink_home_for(line.release)).path.read_bytes()
        outcome = execute(prepared, audit_path=line.work / "apply-audit.jsonl", echo=lambda _: None)
    finally:
        prepared.close()
    assert outcome.status == "applied", outcome.message
    jobs = [j.id for j in pc.rest.running_jobs() if j.name == JOB]
    assert jobs == [outcome.job_id] and outcome.job_id != line.job, jobs
    line.job = outcome.job_id
    assert {v.name: v.parallelism for v in pc.rest.job(line.job).vertices} == {v: len(t) for v, t in RESCALED.items()}
    assert pc.rest.placement(line.job) == RESCALED
    assert running_vertex_ids(pc.rest, line.job) == ids  # the same job: its vertex ids, restored from the savepoint
    assert pc.restored_from(line.job).startswith(f"file:{line.work / 'savepoints'}")
    assert submitter.is_file() and Path(job_jar_remote_path(request, None)).is_file()  # on the JobManager host
    # verify's table, index by index: every row as planned
    assert (
        outcome.rows
        and [r for r in outcome.rows if (r.planned, r.planned_subtasks) != (r.actual, r.actual_subtasks)] == []
    )


def test_prometheus_collection_reads_where_each_subtask_ran(line: Line, tmp_path: Path) -> None:
    """The rescaled job's history from Prometheus (the reporter's series of that release, scraped every second since
    the cluster started): its vertices at their new parallelism, and each subtask on the TaskManager its series' tm_id
    label names — the plan's, so Prometheus too sees the placement apply made."""
    pc, prom = line.pc, line.prom
    assert line.job, "the placed job did not start"
    started = pc.rest.job_raw(line.job)["start-time"] / 1000
    subtasks = sum(len(t) for t in RESCALED.values())
    query = f'count(flink_taskmanager_job_task_busyTimeMsPerSecond{{job_id="{line.job}"}})'

    def scraped() -> int:
        result = prom.api(f"query?query={query}")["result"]
        return int(float(result[0]["value"][1])) if result else 0

    deadline = time.monotonic() + 60
    while scraped() < subtasks and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(1.5)  # one more scrape of every series
    out = tmp_path / "history"
    with pytest.raises(SystemExit) as done:
        main(
            [
                "metrics",
                "collect",
                "--prometheus",
                prom.url,
                "--job",
                line.job,
                "--since",
                f"{started:.3f}",
                "--until",
                f"{time.time():.3f}",
                "--rest",
                pc.rest.url,
                "--out",
                str(out),
                "--quiet",
            ]
        )
    assert done.value.code == 0
    ((_, manifest),) = find_manifests(out)
    assert manifest.job_id == line.job and manifest.samples >= subtasks
    assert {v.name: v.parallelism for v in manifest.vertices} == {v: len(t) for v, t in RESCALED.items()}
    # the tm_id label of every subtask's series: the TaskManager REST says runs it, i.e. the rescaled plan's
    names = {v.id: v.name for v in manifest.vertices}
    collected: dict[str, list[str]] = {}
    for loc in sorted(manifest.locations, key=lambda loc: (loc.vertex_id, loc.subtask)):
        collected.setdefault(names[loc.vertex_id], []).append(loc.taskmanager_id)
    assert collected == RESCALED


def test_apply_refuses_an_extension_built_for_another_release_in_one_line(line: Line) -> None:
    """What a Flink upgrade (or downgrade) under an installed extension leaves: a real jar built for another release in
    the JobManager host's ``lib/``. Apply's preflight refuses it in one line naming both releases — before anything
    is stopped, with consent too (the extension relies on Flink internals: a wrong one would fail the first job).
    The running JobManager keeps the jar it loaded (moved aside, back afterwards)."""
    pc = line.pc
    other = "2.0.2" if line.release != "2.0.2" else "1.20.5"
    foreign = S.build_extension(flink_home_for(other))
    assert jar_built_for(foreign.path.name) == other
    installed = S.installed_extension(pc.home)
    assert installed is not None
    aside = line.work / installed.name
    plan = write_plan_dir(
        line.work / "plan-now", line.inventory, RESCALED, job=JOB, vertex_ids=running_vertex_ids(pc.rest, line.job)
    )
    installed.rename(aside)
    try:
        shutil.copyfile(foreign.path, pc.home.lib / foreign.path.name)
        for consent in (False, True):
            with pytest.raises(PreflightFailed) as refused:
                prepare(load_request(plan, line.inventory, job_id=line.job, consent=consent)).close()
            assert refused.value.problems == [
                f"the JobManager on server does not run the scheduler extension: the extension jar in "
                f"server:{pc.home.lib} ({foreign.path.name}) was built for Flink {other}, the JobManager runs "
                f"{line.release}: replace it with one built for that (`placement scheduler install --flink-home <its "
                "Flink home>`, or the Ansible role)"
            ]
    finally:
        (pc.home.lib / foreign.path.name).unlink(missing_ok=True)
        aside.rename(installed)
    assert pc.rest.job(line.job).all_running  # nothing was stopped


# while rpi2 is lost: its subtasks on the server (by resource id: apply's TaskManager table of the tests before lists
# the inventory's addresses)
IN_CONTINGENCY = {v: [("server" if tm == "rpi2" else tm) for tm in tms] for v, tms in IOT_PLAN.items()}
SECTION = "\n[lost rpi2]\n" + "".join(
    f"{v} ({i + 1}/{len(tms)}); server\n" for v, tms in IOT_PLAN.items() for i, tm in enumerate(tms) if tm == "rpi2"
)


def test_a_lost_taskmanager_restarts_the_job_in_its_contingency(line: Line) -> None:
    """Issue 43 on every line: rpi2 SIGKILLed under a job whose schedulercfg has a section for it — the job is never
    FAILED and runs again where the section says (the last test on the cluster: rpi2 stays down)."""
    pc = line.pc
    if line.job:
        pc.cancel(line.job)
    pc.write_schedulercfg(JOB, schedulercfg(IOT_PLAN) + SECTION)
    line.job = pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS)
    assert pc.rest.placement(line.job) == IOT_PLAN
    seconds = lose_taskmanager(pc, line.job, "rpi2", IN_CONTINGENCY, 90)
    print(f"\nFlink {line.release}: kill of rpi2 -> RUNNING in its contingency: {seconds:.1f} s")
    assert f"job '{JOB}': TaskManager rpi2 lost: placed by its contingency" in pc.jobmanager_log()


def test_the_installer_refuses_an_extension_built_for_another_release(tmp_path: Path) -> None:
    """Without a cluster: the jar's manifest records its release, and installing it into another release's home is
    refused in one line, nothing installed."""
    require_jdk()
    foreign = S.build_extension(flink_home_for("2.0.2"))
    assert jar_info(foreign.path).flink_version == "2.0.2"
    home = make_lab_home(tmp_path / "lab", flink_home_for("1.20.5"), with_extension=False)
    with pytest.raises(PlacementError) as refused:
        S.install_extension(home, foreign)
    assert str(refused.value) == (
        f"{foreign.path} was built for Flink 2.0.2, {home.path} is Flink 1.20.5: build it "
        "for this installation (placement scheduler build --flink-home)"
    )
    assert S.installed_extension(home) is None
