"""`placement apply` of plans that change parallelism, on the real lab (custom mode: stock Flink 2.3 with the
scheduler extension, edge TaskManagers in namespaces reached over SSH with verified host keys), the IoT job submitted
unmodified and unplaced. The lab is the one tests/lab/test_lab_custom_end_to_end.py runs on next (one start for
both: support/lab.py), its job cancelled at the end; the tests run in order on it (run under
``flock /tmp/placement-lab.lock``):

* a rescaled plan (the source chain 2 -> 3 on the Pis, Window Aggregate and its sink 2 -> 3 on the server), given as
  ``--plan DIR/plan.json``: resubmitted through the JobGraph submitter on the JobManager host, every vertex at its
  planned parallelism and every subtask index on its planned TaskManager, the keyed running totals continued;
* a rescaled plan (window 3 -> 2) whose placement the lab's network cannot carry (an edge host feeding another
  edge host: only edge -> server links exist) fails after the stop and is rolled back from the same savepoint to
  the previous parallelism and placement -- a parallelism a plain jar run would not give, so through the submitter;
* vanilla mode refuses a rescaled plan in one line, nothing changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from apply_support import (
    JOB_ARGS,
    JOB_NAME,
    assert_keyed_state_continued,
    let_totals_grow,
)

from placement.flink.rest import FlinkRest
from placement.lab import chain
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.scheduler import schedulercfg_filename
from placement.writers.planjson import RescaleInfo, load_plan, render_plan_json
from support.lab import module_on_shared_lab
from support.lab import placement_cli as cli
from support.plan_dirs import running_vertex_ids, write_plan_dir

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(900)]

CHAIN = ("Source: Sensors", "Parse", "Filter", "Enrich")
RESCALED = {  # the source chain 2 -> 3 (two lanes on rpi1, one on rpi2), the window and its sink 2 -> 3
    "Source: Sensors": ["rpi1", "rpi2", "rpi1"],
    "Parse": ["rpi1", "rpi2", "rpi1"],
    "Filter": ["rpi1", "rpi2", "rpi1"],
    "Enrich": ["rpi1", "rpi2", "server"],
    "Window Aggregate": ["server"] * 3,
    "Sink: Readings": ["server"] * 3,
}
UNROUTABLE = {  # window 3 -> 2, and Filter on rpi1 feeding Enrich on rpi2 (FORWARD: subtask i -> subtask i)
    **RESCALED,
    "Enrich": ["rpi2", "rpi1", "server"],
    "Window Aggregate": ["server"] * 2,
    "Sink: Readings": ["server"] * 2,
}


@dataclass(frozen=True)
class Lab:
    work: Path  # this module's files
    rest: FlinkRest
    inventory: Path  # the running lab inventory with the IoT job as the job apply resubmits
    home: Path

    @property
    def schedulercfg(self) -> Path:
        return self.home / "placement" / "scheduler" / schedulercfg_filename(JOB_NAME)


@pytest.fixture(scope="module")
def lab(request: pytest.FixtureRequest, shared_custom_lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    work = tmp_path_factory.mktemp("rescale-lab")  # this module's plans and inventory (the lab's workdir is shared)
    with module_on_shared_lab(request, shared_custom_lab) as state:
        doc = yaml.safe_load(Path(state["lab_inventory"]).read_text())
        assert doc["flink"]["placement_mode"] == "custom"
        doc["job"] = {"name": JOB_NAME, "entry_class": IOT_SENSOR_JOB, "program_args": JOB_ARGS, "jar": state["jar"]}
        inventory = work / "inventory-rescale.yaml"
        inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
        rest = FlinkRest(state["rest_url"])
        chain.submit(rest, state["jar"], IOT_SENSOR_JOB, JOB_ARGS)  # unmodified, unplaced: parallelism 2 everywhere
        try:
            yield Lab(work, rest, inventory, Path(state["flink_home"]))
        finally:
            chain.cancel_all(rest)  # the next module starts on a lab without this one's job


def running_job(rest: FlinkRest) -> str:
    [job] = [j.id for j in rest.running_jobs() if j.name == JOB_NAME]
    return job


def by_index(rest: FlinkRest, job_id: str) -> dict[str, list[str]]:
    """vertex name -> taskmanager-id of subtask 0, 1, ... (straight from REST: its length is the parallelism)."""
    return {
        v.name: [s.taskmanager_id for s in sorted(rest.subtasks(job_id, v.id), key=lambda s: s.index)]
        for v in rest.job(job_id).vertices
    }


def rescaled_plan(lab: Lab, name: str, mapping: Mapping[str, Sequence[str]], *, mode: str = "custom") -> Path:
    """What `placement plan --rescale --out DIR` writes for ``mapping`` (the running job's vertex ids; the parallelism
    it changes recorded as the planner records it)."""
    job = running_job(lab.rest)
    ids = running_vertex_ids(lab.rest, job)
    running = {v.name: v.parallelism for v in lab.rest.job(job).vertices}
    out = write_plan_dir(lab.work / name, lab.inventory, mapping, job=JOB_NAME, mode=mode, vertex_ids=ids)
    doc = load_plan(out)
    info = RescaleInfo(
        profiled_parallelism={ids[v]: p for v, p in running.items()},
        target_records_per_s={ids["Source: Sensors"]: 600.0},
        changed={v: [running[v], len(h)] for v, h in mapping.items() if len(h) != running[v]},
    )
    (out / "plan.json").write_text(render_plan_json(doc.model_copy(update={"rescale": info})))
    return out / "plan.json"


def green_indices(stdout: str) -> int:
    """Subtask indices in the verify table's green rows (planned and actual alike)."""
    table = stdout[stdout.index("planned vs actual (subtask indices") :]
    return sum(line.count("#") for line in table.splitlines() if line.rstrip().endswith("ok │")) // 2


def test_a_rescaled_plan_runs_at_its_parallelism_every_index_on_its_taskmanager_with_keyed_state_continued(lab: Lab):
    job = running_job(lab.rest)
    assert {len(h) for h in by_index(lab.rest, job).values()} == {2}
    plan = rescaled_plan(lab, "plan-rescaled", RESCALED)
    before = let_totals_grow(lab.rest, job)
    t0 = time.monotonic()
    result = cli("apply", "--plan", str(plan), "--inventory", str(lab.inventory))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr
    out = result.stdout
    assert "resubmitted through the JobGraph submitter on server" in out and "placement.submitter.SubmitJobGraph" in out
    assert "--parallelism-overrides" in out and "/run " not in out and "POST /jars/upload" not in out  # no jar run
    assert "WRONG" not in out and green_indices(out) == sum(map(len, RESCALED.values())) == 18
    new = running_job(lab.rest)
    assert new != job and by_index(lab.rest, new) == RESCALED  # parallelism and every index, from REST
    assert_keyed_state_continued(lab.rest, new, before, t0)
    state = json.loads((lab.home / "placement" / "state.json").read_text())
    ids = running_vertex_ids(lab.rest, new)
    assert state["job_id"] == new and state["parallelism_overrides"] == {ids[v]: len(h) for v, h in RESCALED.items()}
    assert state["previous"]["parallelism"] == {v: 2 for v in RESCALED}


def test_a_rescale_that_fails_after_the_stop_rolls_back_to_the_previous_parallelism_and_placement(lab: Lab):
    job = running_job(lab.rest)
    installed = lab.schedulercfg.read_text()
    plan = rescaled_plan(lab, "plan-unroutable", UNROUTABLE)
    before = let_totals_grow(lab.rest, job, min_total=300)
    t0 = time.monotonic()
    result = cli("apply", str(plan.parent), "--inventory", str(lab.inventory))
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr
    assert "rolled back: job" in result.stderr and f"restored server:{lab.schedulercfg}" in result.stderr
    back = running_job(lab.rest)
    # the previous job's parallelism (3, which a plain jar run would not give: 2) and placement, index by index
    assert back != job and by_index(lab.rest, back) == RESCALED
    assert lab.schedulercfg.read_text() == installed
    assert_keyed_state_continued(lab.rest, back, before, t0)
    audit = [json.loads(line) for line in (plan.parent / "apply-audit.jsonl").read_text().splitlines()]
    # the submitter resubmitted the rescaled job, which then failed on the cluster (not a refusal before the stop)
    ok = {(e.get("seq"), e.get("kind")) for e in audit if e["event"] == "ok"}
    failed = [e["kind"] for e in audit if e["event"] == "failed"]
    assert {("step", "stop"), ("step", "submit-graph"), ("rollback", "submit-graph")} <= ok, audit
    assert failed in (["wait"], ["watch"], ["verify"]), failed


def test_vanilla_mode_refuses_a_rescaled_plan_in_one_line_and_nothing_changes(lab: Lab):
    job = running_job(lab.rest)
    installed = lab.schedulercfg.read_text()
    plan = rescaled_plan(
        lab,
        "plan-vanilla",
        {**RESCALED, "Window Aggregate": ["server"] * 2, "Sink: Readings": ["server"] * 2},
        mode="vanilla",
    )
    result = cli("apply", "--plan", str(plan), "--inventory", str(lab.inventory))
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert (
        "the plan changes parallelism (Window Aggregate 3→2, Sink: Readings 3→2), which vanilla mode cannot apply"
        in result.stderr
    )
    assert running_job(lab.rest) == job and by_index(lab.rest, job) == RESCALED
    assert lab.schedulercfg.read_text() == installed
