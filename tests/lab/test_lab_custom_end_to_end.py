"""Custom mode on the real lab: stock Flink 2.3 with the scheduler extension, jobs submitted WITHOUT `--placement`,
placed from outside by `placement apply` with the lab inventory, exactly as against real hosts (SSH with verified
host keys to each edge namespace's sshd, REST to the JobManager).

One lab for the module (`lab up`, custom mode: the default; the one tests/apply/test_apply_rescale_lab.py ran on
before, its job cancelled: one start for both, support/lab.py); the tests run in order on it:

* the lab runs the extension and its hosts answer over SSH;
* each of the three lab jobs, unmodified: apply -> every subtask INDEX on its planned TaskManager (verify table green,
  REST agrees), keyed state carried over;
* a job with what the lab jobs lack (a union, broadcast state, two two-input operators, fan-out, a side output, three
  sinks, a keyed operator split across an edge host and the server after a HASH edge): placed the same way; a plain
  stop-with-savepoint + restore keeps the placement and the keyed totals;
* a Table/SQL job, whose vertex names change with every submission: placed (found by vertex id);
* two jobs placed in one cluster, each by its own schedulercfg;
* a TaskManager killed: apply refuses in preflight with nothing changed; restarted: the job is back on plan;
* a plan the lab's network cannot carry (data from one edge host to another: only edge -> server links exist) fails
  after the stop and is rolled back to the previous placement from the same savepoint, files restored;
* a partial schedulercfg: one line, exit 2, nothing changed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from placement.errors import PlacementError
from placement.flink.home import find_flink_home
from placement.flink.rest import FlinkRest
from placement.inventory import load_inventory
from placement.lab import chain
from placement.lab.flink import relaunch_from_state
from placement.lab.jobs import BRANCHING_JOB, IOT_SENSOR_JOB, NEXMARK_BIDS_JOB
from placement.remote import HostUnreachable, SshExecutor
from placement.scheduler import ACTIVE_LOG_LINE, extension_active, schedulercfg_filename
from support.lab import ROOT, module_on_shared_lab
from support.lab import placement_cli as cli
from support.plan_dirs import mapping_for, running_vertex_ids, write_plan_dir

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(1800)]

ZOO_JOB = "placement.lab.ZooJob"
SQL_JOB = "placement.lab.SqlJob"


@dataclass(frozen=True)
class Lab:
    work: Path
    state: dict
    rest: FlinkRest

    @property
    def inventory(self) -> Path:
        return Path(self.state["lab_inventory"])

    @property
    def jar(self) -> str:
        return self.state["jar"]

    @property
    def scheduler_dir(self) -> Path:
        return Path(self.state["flink_home"]) / "placement" / "scheduler"

    def job_inventory(self, name: str, entry_class: str, args: list[str]) -> Path:
        """The running lab inventory with this job as the one apply resubmits (the unchanged jar and arguments)."""
        doc = yaml.safe_load(self.inventory.read_text())
        doc["job"] = {"name": name, "entry_class": entry_class, "program_args": args, "jar": self.jar}
        # the plans here are made by hand, each where its test says (IOT2_PLAN's sources both on rpi2): lab.yaml's
        # birth pins would have apply refuse them as a plan.json edited against its pins
        doc.pop("pins", None)
        path = self.work / f"inventory-{name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@pytest.fixture(scope="module")
def lab(request: pytest.FixtureRequest, shared_custom_lab) -> Iterator[Lab]:
    with module_on_shared_lab(request, shared_custom_lab) as state:
        yield Lab(shared_custom_lab.work, state, FlinkRest(state["rest_url"]))


def apply(plan: Path, inventory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli("apply", str(plan), "--inventory", str(inventory), *extra)


def place(
    lab: Lab, name: str, entry_class: str, args: list[str], hosts_of, *, job_id: str | None = None, tag: str = ""
) -> tuple[str, dict[str, list[str]], subprocess.CompletedProcess[str]]:
    """Submit the job unplaced (unless ``job_id`` runs already), write its plan, apply it: (new job, mapping,
    result)."""
    job_id = job_id or chain.submit(lab.rest, lab.jar, entry_class, args)
    inventory = lab.job_inventory(name, entry_class, args)
    mapping = mapping_for(lab.rest, job_id, hosts_of)
    plan = write_plan_dir(
        lab.work / f"plan-{name}{tag}",
        inventory,
        mapping,
        job=name,
        mode="custom",
        vertex_ids=running_vertex_ids(lab.rest, job_id),
    )
    result = apply(plan, inventory)
    new = next((j.id for j in lab.rest.running_jobs() if j.name == name), job_id)
    return new, mapping, result


def by_index(rest: FlinkRest, job_id: str) -> dict[str, list[str]]:
    """vertex name -> taskmanager-id of subtask 0, 1, ... (straight from REST)."""
    return {
        v.name: [s.taskmanager_id for s in sorted(rest.subtasks(job_id, v.id), key=lambda s: s.index)]
        for v in rest.job(job_id).vertices
    }


def assert_green(result: subprocess.CompletedProcess[str], subtasks: int) -> None:
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    assert "WRONG" not in result.stdout and "runs every subtask on its planned TaskManager" in result.stdout
    table = result.stdout[result.stdout.index("planned vs actual (subtask indices") :]
    indices = sum(line.count("#") for line in table.splitlines() if line.rstrip().endswith("ok │")) // 2
    assert indices == subtasks, table  # every subtask index is in the table, planned and actual alike


def gauge_max(rest: FlinkRest, job_id: str, vertex: str, metric: str = "maxKeyTotal", refresh: float = 1.0) -> float:
    vid = rest.job(job_id).vertex_named(vertex).id
    names = [
        m["id"] for m in rest.get(f"/jobs/{job_id}/vertices/{vid}/subtasks/metrics") if m["id"].endswith("." + metric)
    ]
    if not names:
        return 0.0
    return rest.vertex_metrics(job_id, vid, names[:1], agg="max", refresh=refresh).get(names[0], 0.0)


def wait_gauge(rest: FlinkRest, job_id: str, vertex: str, at_least: float, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    value = 0.0
    while time.monotonic() < deadline:
        value = gauge_max(rest, job_id, vertex)
        if value >= at_least:
            break
        time.sleep(1.0)
    return value


def assert_restored(
    rest: FlinkRest,
    job_id: str,
    before: float,
    since: float,
    *,
    vertex: str = "Device Totals",
    per_key_max: float | None = None,
) -> None:
    """The vertex's largest per-key running count continues from ``before`` (read before the stop at ``since``): a
    fresh start gains at most ``per_key_max`` per second, too little to be there already."""
    after = wait_gauge(rest, job_id, vertex, before)
    age = time.time() - rest.job_raw(job_id)["start-time"] / 1000.0  # a fresh start counts from the job's own start
    elapsed = min(time.monotonic() - since, age)
    assert after >= before > 0, (before, after)
    rate = ZOO_PER_KEY_RATE_MAX if per_key_max is None else per_key_max
    assert rate * elapsed < before, f"too slow to tell a restore from a fresh start ({elapsed:.0f} s)"


def records_in(rest: FlinkRest, job_id: str, vertex: str) -> float:
    vid = rest.job(job_id).vertex_named(vertex).id
    return rest.vertex_metrics(job_id, vid, ["numRecordsIn"], refresh=1.0).get("numRecordsIn", 0.0)


def wait_records(rest: FlinkRest, job_id: str, vertex: str, timeout: float = 60.0) -> float:
    deadline = time.monotonic() + timeout
    got = 0.0
    while got <= 0 and time.monotonic() < deadline:
        got = records_in(rest, job_id, vertex)
    return got


# ---- the lab ---------------------------------------------------------------------------------------------------------


def test_the_lab_runs_the_extension_and_its_edge_hosts_answer_over_ssh_with_verified_keys(lab: Lab, tmp_path):
    st = json.loads(cli("lab", "status", "--workdir", str(lab.work), "--json").stdout)
    assert st["up"] and st["mode"] == "custom"
    inv = load_inventory(lab.inventory)
    assert inv.flink.placement_mode == "custom" and extension_active(lab.rest) is True
    assert lab.rest.jobmanager_config()["placement.scheduler.dir"] == str(lab.scheduler_dir)
    # the lab's Flink home is its own: symlinks to the wheel's jars plus the extension; the wheel's lib/ is untouched
    lib = Path(inv.flink.home, "lib")
    own = [p.name for p in lib.iterdir() if not p.is_symlink()]
    assert len(own) == 1 and own[0].startswith("placement-scheduler-2.3.0-"), own
    assert not list(find_flink_home().lib.glob("placement-scheduler-*"))
    for name in ("rpi1", "rpi2"):
        host = inv.host(name)
        with SshExecutor(name, host.address, inv.ssh_for(host)) as ex:
            addresses = ex.run(["ip", "-o", "-4", "addr", "show"]).stdout
        assert host.address in addresses and "10.203.0.1/32" not in addresses  # inside that host's namespace
    # host keys are checked: a known_hosts without the key refuses the connection
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    host = inv.host("rpi1")
    settings = inv.ssh_for(host).model_copy(update={"known_hosts": str(empty)})
    with pytest.raises(HostUnreachable, match="host key not in"):
        SshExecutor("rpi1", host.address, settings).run(["true"])


# ---- the three lab jobs, unmodified --------------------------------------------------------------------------------

LAB_JOBS = {
    # the FORWARD chain leaves each Pi at its own stage; once on the server it stays there (data flows up only)
    "iot": (
        IOT_SENSOR_JOB,
        ["--rate", "100", "--parallelism", "2", "--window-parallelism", "2", "--sensors", "10", "--window-ms", "1000"],
        {
            "Source: Sensors": ["rpi1", "rpi2"],
            "Parse": ["rpi1", "rpi2"],
            "Filter": ["rpi1", "rpi2"],
            "Enrich": ["rpi1", "server"],
            "Window Aggregate": ["server", "server"],
            "Sink: Readings": ["server", "server"],
        },
    ),
    "nexmark": (
        NEXMARK_BIDS_JOB,
        ["--rate", "100", "--parallelism", "2"],
        {
            "Source: Bids": ["rpi1", "rpi2"],
            "Parse Bids": ["rpi1", "rpi2"],
            "Currency Convert": ["rpi1", "server"],
            "Filter Auctions": ["server", "server"],
            "Hot Items": ["server"],
            "Sink: HotItems": ["server"],
        },
    ),
    "branching": (
        BRANCHING_JOB,
        ["--camera-rate", "10", "--meter-rate", "50"],
        {
            "Source: Cameras": ["rpi1"],
            "Detect Objects": ["rpi1"],
            "Source: Meters": ["rpi2"],
            "Parse Meters": ["server"],
            "Join Frames Meters": ["server"],
            "Sink: Alerts": ["server"],
        },
    ),
}


@pytest.mark.parametrize("key", list(LAB_JOBS))
def test_a_lab_job_submitted_without_placement_gets_every_subtask_index_on_its_planned_taskmanager(lab: Lab, key):
    entry, args, mapping = LAB_JOBS[key]
    name = f"custom-{key}"
    args = [*args, "--job-name", name]
    job = chain.submit(lab.rest, lab.jar, entry, args)
    new, planned, result = place(lab, name, entry, args, lambda v, p: mapping[v], job_id=job)
    try:
        assert_green(result, sum(map(len, mapping.values())))
        assert new != job and by_index(lab.rest, new) == planned == mapping
        assert '"--placement"' not in result.stdout  # resubmitted unchanged
        assert (lab.scheduler_dir / schedulercfg_filename(name)).is_file()
        log = (lab.work / "flink" / "jobmanager" / "jobmanager.log").read_text()
        assert f"{ACTIVE_LOG_LINE}" in log and f"job '{name}' ({new}): placed by" in log
    finally:
        chain.cancel_all(lab.rest)


# ---- a job with what the lab jobs lack -----------------------------------------------------------------------------

ZOO_ARGS = ["--rate", "40", "--parallelism", "2", "--devices", "16", "--restart-attempts", "60", "--job-name", "zoo"]
# 80 events/s over 16 devices: 5/s per device, ~9/s for device 0 (which also counts the malformed events)
ZOO_PER_KEY_RATE_MAX = 10.0
ZOO_PLAN = {
    # Events are born on rpi1: its chain, Device Totals' first subtask (after the HASH edge) and Merge's first run
    # there; their second subtasks on the server. Rules are born on rpi2 and broadcast up to Apply Rules.
    "Source: Events": ["rpi1", "rpi1"],
    "Parse Events": ["rpi1", "rpi1"],
    "Split": ["rpi1", "server"],
    "Sink: Invalid": ["server"],
    "Source: Commands": ["rpi1"],
    "Parse Commands": ["rpi1"],
    "Merge": ["rpi1", "server"],
    "Source: Rules": ["rpi2"],
    "Apply Rules": ["server", "server"],
    "Device Totals": ["rpi1", "server"],
    "Sink: Totals": ["server", "server"],
    "Correlate": ["server"],
    "Sink: Correlated": ["server"],
}


def zoo_job(lab: Lab) -> str:
    return next(j.id for j in lab.rest.running_jobs() if j.name == "zoo")


def test_unions_broadcast_state_two_inputs_fan_out_side_outputs_sinks_and_a_split_keyed_operator_are_placed(lab: Lab):
    job = chain.submit(lab.rest, lab.jar, ZOO_JOB, ZOO_ARGS)
    plan = lab.rest.plan(job)
    strategies = sorted(i["ship_strategy"] for n in plan["nodes"] for i in n.get("inputs", []))
    assert {"BROADCAST", "HASH", "FORWARD"} <= set(strategies)
    assert sum(1 for n in plan["nodes"] if len(n.get("inputs", [])) >= 2) >= 3  # Merge (union), Apply Rules, Correlate
    before = wait_gauge(lab.rest, job, "Device Totals", 300, timeout=120)
    t0 = time.monotonic()
    new, _planned, result = place(lab, "zoo", ZOO_JOB, ZOO_ARGS, lambda v, p: ZOO_PLAN[v], job_id=job)
    assert_green(result, sum(map(len, ZOO_PLAN.values())))
    assert by_index(lab.rest, new) == ZOO_PLAN
    assert_restored(lab.rest, new, before, t0)
    for sink in (
        "Sink: Invalid",
        "Sink: Totals",
        "Sink: Correlated",
    ):  # the side output, the fan-out, the two-input path
        assert wait_records(lab.rest, new, sink) > 0, sink


def test_a_plain_savepoint_restore_keeps_every_subtask_on_its_taskmanager(lab: Lab):
    job = zoo_job(lab)
    before = wait_gauge(lab.rest, job, "Device Totals", 300, timeout=120)
    t0 = time.monotonic()
    savepoint = lab.rest.stop_with_savepoint(job, (lab.work / "savepoints").as_uri(), timeout=180)
    restored = chain.submit(lab.rest, lab.jar, ZOO_JOB, ZOO_ARGS, savepoint=savepoint)
    assert by_index(lab.rest, restored) == ZOO_PLAN  # the extension read the job's file again at the restore
    assert_restored(lab.rest, restored, before, t0)


# ---- a SQL job -----------------------------------------------------------------------------------------------------


def sql_hosts(vertex: str, parallelism: int) -> list[str]:
    if vertex.startswith("Source:"):
        return ["rpi1", "rpi1"]
    if vertex.startswith("Calc"):  # the filter: one subtask on the Pi, one on the server
        return ["rpi1", "server"]
    return ["server"] * parallelism


def test_a_sql_job_is_placed_although_its_vertex_names_change_with_every_submission(lab: Lab):
    args = ["--rate", "100", "--parallelism", "2", "--job-name", "sql-readings"]
    job = chain.submit(lab.rest, lab.jar, SQL_JOB, args)
    names_before = {v.id: v.name for v in lab.rest.job(job).vertices}
    new, planned, result = place(lab, "sql-readings", SQL_JOB, args, sql_hosts, job_id=job)
    assert_green(result, 8)
    names_after = {v.id: v.name for v in lab.rest.job(new).vertices}
    assert set(names_after) == set(names_before) and names_after != names_before  # same ids, other [n] counters
    assert "(now Calc[" in result.stdout
    placed = by_index(lab.rest, new)
    assert {names_before[vid]: placed[name] for vid, name in names_after.items()} == planned
    # a second apply of the same plan: already in effect, although the names changed again since the plan
    again = apply(lab.work / "plan-sql-readings", lab.job_inventory("sql-readings", SQL_JOB, args))
    assert again.returncode == 0 and "plan already in effect" in again.stdout, again.stdout + again.stderr
    lab.rest.cancel(new)
    lab.rest.wait_for_state(new, ("CANCELED",), timeout=60)


# ---- two jobs, one cluster -----------------------------------------------------------------------------------------

IOT2_ARGS = [
    "--rate",
    "100",
    "--parallelism",
    "2",
    "--sensors",
    "10",
    "--window-ms",
    "1000",
    "--job-name",
    "iot-next-to-zoo",
]
IOT2_PER_KEY_RATE_MAX = 9.0  # 200 readings/s, 30 % pass the filter, over 10 sensors: 6/s each on average
IOT2_PLAN = {
    "Source: Sensors": ["rpi2", "rpi2"],
    "Parse": ["rpi2", "rpi2"],
    "Filter": ["rpi2", "server"],
    "Enrich": ["server", "server"],
    "Window Aggregate": ["server"],
    "Sink: Readings": ["server"],
}


def test_two_jobs_are_placed_in_one_cluster_each_by_its_own_schedulercfg(lab: Lab):
    zoo = zoo_job(lab)
    new, _planned, result = place(lab, "iot-next-to-zoo", IOT_SENSOR_JOB, IOT2_ARGS, lambda v, p: IOT2_PLAN[v])
    assert_green(result, 10)
    assert by_index(lab.rest, new) == IOT2_PLAN
    assert zoo_job(lab) == zoo and by_index(lab.rest, zoo) == ZOO_PLAN  # the other job untouched
    files = sorted(p.name for p in lab.scheduler_dir.glob("*.schedulercfg"))
    assert {"zoo.schedulercfg", "iot-next-to-zoo.schedulercfg"} <= set(files)


# ---- a TaskManager lost and back ------------------------------------------------------------------------------------
# before the roll back test: the IoT job placed beside the zoo (rpi2 and the server, untouched by rpi1's loss) gains
# meanwhile the keyed totals that test waits for (500 at ~6/s per sensor, ~80 s from its start)


def test_a_killed_taskmanager_is_refused_in_preflight_and_once_restarted_the_job_is_back_on_plan(lab: Lab):
    zoo = zoo_job(lab)
    cluster = json.loads((lab.work / "flink" / "cluster.json").read_text())
    pid = next(p["pid"] for p in cluster["processes"] if p["name"] == "taskmanager rpi1")
    os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while "rpi1" in {t.id for t in lab.rest.taskmanagers()} and time.monotonic() < deadline:
        time.sleep(1)
    assert "rpi1" not in {t.id for t in lab.rest.taskmanagers()}
    # a plan naming rpi1 now: refused before anything changes
    inventory = lab.job_inventory("zoo", ZOO_JOB, ZOO_ARGS)
    cfg = lab.scheduler_dir / "zoo.schedulercfg"
    text = cfg.read_text()
    refused = apply(lab.work / "plan-zoo", inventory)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert "preflight refused, nothing was changed" in refused.stderr
    assert "no TaskManager with resource id 'rpi1' is registered" in refused.stderr
    assert cfg.read_text() == text and not Path(f"{cfg}.new").exists()
    # the TaskManager's host restarts it (same config, same resource id): the job comes back where the file says
    relaunch_from_state(lab.work / "flink", "taskmanager rpi1")
    deadline = time.monotonic() + 240
    placed: dict[str, list[str]] = {}
    while time.monotonic() < deadline:
        try:
            details = lab.rest.job(zoo)
            if details.all_running:
                placed = by_index(lab.rest, zoo)
                if placed == ZOO_PLAN:
                    break
        except PlacementError:
            pass
        time.sleep(2)
    assert placed == ZOO_PLAN, placed


# ---- a failure after the stop: rolled back ------------------------------------------------------------------------


def test_a_plan_the_network_cannot_carry_is_rolled_back_from_the_same_savepoint(lab: Lab):
    """Filter on rpi2 feeding Enrich on rpi1: the lab has uplinks to the server only, so the resubmitted job fails
    (no route from rpi1 to rpi2) -- a real failure after the stop. The previous schedulercfg comes back and the job
    runs again, as before, from the savepoint apply took."""
    name = "iot-next-to-zoo"
    job = next(j.id for j in lab.rest.running_jobs() if j.name == name)
    cfg = lab.scheduler_dir / schedulercfg_filename(name)
    installed = cfg.read_text()
    before = wait_gauge(lab.rest, job, "Window Aggregate", 500, timeout=150)
    t0 = time.monotonic()
    bad = {
        **IOT2_PLAN,
        "Source: Sensors": ["rpi1", "rpi2"],
        "Parse": ["rpi1", "rpi2"],
        "Filter": ["rpi1", "rpi2"],
        "Enrich": ["rpi2", "rpi1"],
    }
    inventory = lab.job_inventory(name, IOT_SENSOR_JOB, IOT2_ARGS)
    plan = write_plan_dir(
        lab.work / "plan-unroutable",
        inventory,
        bad,
        job=name,
        mode="custom",
        vertex_ids=running_vertex_ids(lab.rest, job),
    )
    result = apply(plan, inventory)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert "rolled back: job" in result.stderr and f"restored server:{cfg}" in result.stderr
    assert cfg.read_text() == installed
    again = next(j.id for j in lab.rest.running_jobs() if j.name == name)
    assert again != job and by_index(lab.rest, again) == IOT2_PLAN
    assert_restored(lab.rest, again, before, t0, vertex="Window Aggregate", per_key_max=IOT2_PER_KEY_RATE_MAX)


# ---- bad input -----------------------------------------------------------------------------------------------------


def test_a_partial_schedulercfg_is_one_line_exit_2_and_nothing_changes(lab: Lab, tmp_path):
    zoo = zoo_job(lab)
    inventory = lab.job_inventory("zoo", ZOO_JOB, ZOO_ARGS)
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "plan.json").write_text((lab.work / "plan-zoo" / "plan.json").read_text())
    lines = (lab.work / "plan-zoo" / "schedulercfg").read_text().splitlines(keepends=True)
    (plan / "schedulercfg").write_text("".join(lines[:-3]))
    result = apply(plan, inventory)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: {plan / 'schedulercfg'}: no line for ")
    assert zoo_job(lab) == zoo and lab.rest.job(zoo).state == "RUNNING"


# ---- the same lab in vanilla mode ----------------------------------------------------------------------------------


def test_asking_for_vanilla_mode_restarts_the_lab_without_the_extension_and_apply_places_a_helper_job(lab: Lab):
    up = cli(
        "lab",
        "up",
        "--inventory",
        str(ROOT / "inventory" / "lab.yaml"),
        "--workdir",
        str(lab.work),
        "--mode",
        "vanilla",
    )
    assert up.returncode == 0, up.stderr
    assert up.stdout.startswith("note: the lab was up in custom mode; restarted in vanilla mode\nlab up (vanilla mode)")
    state = json.loads((lab.work / "lab.json").read_text())
    rest = FlinkRest(state["rest_url"])
    inv = load_inventory(state["lab_inventory"])
    assert inv.flink.placement_mode == "vanilla" and extension_active(rest) is False
    assert "placement.scheduler.dir" not in rest.jobmanager_config()
    # a job written against the Placement helper, moved by `placement apply` in vanilla mode (--placement mapping)
    name = "iot-vanilla"
    args = ["--rate", "100", "--parallelism", "2", "--job-name", name]
    vanilla = Lab(lab.work, state, rest)
    job = chain.submit(rest, vanilla.jar, IOT_SENSOR_JOB, args)
    inventory = vanilla.job_inventory(name, IOT_SENSOR_JOB, args)
    mapping = {
        "Source: Sensors": ["rpi1", "rpi2"],
        "Parse": ["rpi1", "rpi2"],
        "Filter": ["rpi1", "rpi2"],
        "Enrich": ["rpi1", "server"],
        "Window Aggregate": ["server"],
        "Sink: Readings": ["server"],
    }
    plan = write_plan_dir(lab.work / "plan-vanilla", inventory, mapping, job=name, mode="vanilla")
    result = apply(plan, inventory)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert '"--placement"' in result.stdout and "WRONG" not in result.stdout
    moved = next(j.id for j in rest.running_jobs() if j.name == name)
    assert moved != job and rest.placement_counts(moved) == chain.planned_counts(mapping)
